//===- Coalesce.cpp - 128-bit per-thread runs for memory accesses ---------===//

#include "passes/Common.h"
#include "passes/GPU/Layouts.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUCOALESCE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

void kiln::gpu::setLayout(func::FuncOp func, BlockedEncodingAttr layout) {
  auto retype = [&](Type type) -> Type {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), layout);
    return type;
  };
  func.walk([&](Operation *op) {
    retypeResultsAndArguments(op, retype);
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
        constant.setValueAttr(dense.reshape(cast<ShapedType>(constant.getType())));
  });
  SmallVector<Type> results;
  for (Type t : func.getResultTypes())
    results.push_back(retype(t));
  func.setType(FunctionType::get(func.getContext(), func.getBody().getArgumentTypes(), results));
}

kiln::gpu::BlockedEncodingAttr kiln::gpu::getKernelLayout(func::FuncOp func) {
  BlockedEncodingAttr found;
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (auto layout = getLayout(result.getType())) {
        found = layout;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}

kiln::gpu::BlockedEncodingAttr kiln::gpu::getKernelThreads(func::FuncOp func) {
  if (BlockedEncodingAttr layout = getKernelLayout(func))
    return layout;
  // No tile carries a layout: the threads AssignLayouts chose for the kernel
  // (kiln_gpu.threads), as warps of 32; one warp before it ran.
  int64_t threads = 32;
  if (auto attr = func->getAttrOfType<IntegerAttr>(kThreadsAttr))
    threads = attr.getInt();
  return BlockedEncodingAttr::get(func.getContext(), 1, 32,
                                  std::max<int64_t>(1, threads / 32));
}

namespace {
struct Coalesce : kiln::impl::KilnGPUCoalesceBase<Coalesce> {
  using Base::Base;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      auto layout = kiln::gpu::getKernelLayout(func);
      if (!layout)
        continue;
      // The widest element moved through memory decides the run length.
      unsigned widest = 0;
      func.walk([&](Operation *op) {
        if (isa<LoadOp, LoadBlockOp, StoreOp, StoreBlockOp>(op)) {
          auto memory = cast<MemRefType>(op->getOperand(0).getType());
          widest = std::max(widest, std::max(8u, memory.getElementTypeBitWidth()));
        }
      });
      unsigned vec = widest ? std::max(1u, std::min(16u, accessBits / widest)) : 1;
      kiln::gpu::setLayout(func, kiln::gpu::BlockedEncodingAttr::get(&getContext(), vec,
                                                         layout.getWarpSize(),
                                                         layout.getNumWarps()));
    }
  }
};
} // namespace
