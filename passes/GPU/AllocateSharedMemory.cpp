//===- AllocateSharedMemory.cpp - size the layout-change buffers ----------===//

#include "passes/GPU/Layouts.h"
#include "passes/GPU/SharedMemory.h"
#include "passes/GPU/OperandLayouts.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUALLOCATESHAREDMEMORY
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

Type kiln::gpu::sharedStorageType(Type elementType) {
  if (elementType.isInteger(1) || elementType.isInteger(32))
    return Float32Type::get(elementType.getContext());
  return elementType;
}

int64_t kiln::gpu::sharedAlignment(MatrixUnits units) {
  return units == MatrixUnits::Wgmma ? WgmmaOperand::kAlignment : 16;
}

SmallVector<int64_t> kiln::gpu::packSharedBuffers(ArrayRef<int64_t> bytes, int64_t alignment) {
  SmallVector<int64_t> offsets;
  int64_t end = 0;
  for (int64_t size : bytes) {
    offsets.push_back(llvm::alignTo(end, alignment));
    end = offsets.back() + size;
  }
  offsets.push_back(end);
  return offsets;
}

int64_t kiln::gpu::pipelineStages(DotOp dot, const MatrixShape &shape) {
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  if (!loop || (shape.units != MatrixUnits::MmaSync && shape.units != MatrixUnits::Wgmma))
    return 1;
  auto attr = loop->getAttrOfType<IntegerAttr>(kStagesAttr);
  return attr ? std::max<int64_t>(1, attr.getInt()) : 1;
}

int64_t kiln::gpu::matrixResultsOffset(DotOp dot, const MatrixShape &shape) {
  auto a = dot.getA().getType(), b = dot.getB().getType();
  if (sharedStorageType(a.getElementType()) != sharedStorageType(dot.getType().getElementType()))
    return 0;
  return pipelineStages(dot, shape) * (a.getNumElements() + b.getNumElements());
}

SmallVector<std::pair<Type, int64_t>, 2>
kiln::gpu::sharedRequirement(Operation *op, BlockedEncodingAttr layout, MatrixUnits units,
                             bool integerAtomicsOnly, bool floatAtomicAdd) {
  auto tile = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  using Need = std::pair<Type, int64_t>;
  auto need = [](RankedTensorType t, int64_t count) -> SmallVector<Need, 2> {
    return {Need(sharedStorageType(t.getElementType()), count)};
  };
  if (isa<BroadcastOp, TransOp, ScanOp, GatherOp>(op))
    return need(tile(op->getOperand(0)), tile(op->getOperand(0)).getNumElements());
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    RankedTensorType src = tile(reduce.getSource());
    // A whole-tile reduction exchanges one partial per subgroup (at most one per
    // thread when the subgroup size is only known on the device).
    if (src.getRank() == 1)
      return need(src, layout.getThreads());
    return need(src, src.getNumElements());
  }
  if (auto dot = dyn_cast<DotOp>(op)) {
    RankedTensorType a = tile(dot.getA()), b = tile(dot.getB()), c = tile(dot.getResult());
    // Matrix instructions also pass their accumulator fragments back through
    // shared memory into the tile's blocked layout. In a loop pipelined
    // `stages` deep (NVIDIA, PipelineToGPU.cpp) each stage has its operands.
    if (auto shape = matrixInstruction(dot, units, layout.getNumWarps())) {
      int64_t operands = pipelineStages(dot, *shape) * (a.getNumElements() + b.getNumElements());
      if (int64_t offset = matrixResultsOffset(dot, *shape)) // f32 operands share the buffer
        return need(c, offset + c.getNumElements());
      return {need(a, operands)[0], need(c, c.getNumElements())[0]};
    }
    return need(a, a.getNumElements() + b.getNumElements());
  }
  SmallVector<Need, 2> needs;
  // An update by swaps retries while any thread of the program has one to
  // make: an i32 flag per thread (MemoryToGPU.cpp, updateBySwaps).
  if (isa<AtomicRMWOp, AtomicSwapOp, StoreOp, StoreBlockOp>(op) &&
      updatesBySwaps(op, storageOf(op->getOperand(0), integerAtomicsOnly, floatAtomicAdd)))
    needs.push_back(Need(sharedStorageType(IntegerType::get(op->getContext(), 32)),
                         layout.getThreads()));
  // A scalar atomic's old value goes from thread 0 to every thread.
  if (isa<AtomicRMWOp, AtomicSwapOp>(op) && !isa<RankedTensorType>(op->getResult(0).getType()) &&
      !op->getResult(0).use_empty())
    needs.push_back(Need(sharedStorageType(op->getResult(0).getType()), 1));
  return needs;
}

namespace {
/// "[128, 64] f16": a tile as the error names it.
std::string describeTile(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(type.getShape(), os);
  os << "] " << type.getElementType();
  return text;
}

/// What `op` keeps in shared memory and what would shrink it, for the note on
/// the largest user when a kernel does not fit.
std::string describeSharedUse(Operation *op, int64_t bytes, kiln::gpu::MatrixUnits units,
                              kiln::gpu::BlockedEncodingAttr layout) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "the largest user (" << bytes << " bytes) is here: ";
  if (auto dot = dyn_cast<DotOp>(op)) {
    os << "this dot's operand tiles " << describeTile(dot.getA()) << " and "
       << describeTile(dot.getB());
    auto shape = kiln::gpu::matrixInstruction(dot, units, layout.getNumWarps());
    if (!shape)
      return os << " pass between threads through it; use smaller tiles", text;
    int64_t stages = kiln::gpu::pipelineStages(dot, *shape);
    if (stages > 1)
      os << ", " << stages << " of each for the loop's stages=" << stages;
    os << ", and its " << describeTile(dot.getResult())
       << " result; use ";
    return os << (stages > 1 ? "fewer stages or " : "") << "smaller tiles", text;
  }
  if (isa<ReduceOp>(op))
    return os << "a reduction of a " << describeTile(op->getOperand(0))
              << " tile; reduce smaller tiles", text;
  if (isa<BroadcastOp, TransOp, ScanOp, GatherOp>(op))
    return os << "this " << op->getName().stripDialect() << " moves a "
              << describeTile(op->getOperand(0))
              << " tile between threads; use smaller tiles", text;
  return os << "use smaller tiles", text;
}

struct AllocateSharedMemory
    : kiln::impl::KilnGPUAllocateSharedMemoryBase<AllocateSharedMemory> {
  using Base::Base;
  void runOnOperation() override {
    Builder b(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      auto layout = kiln::gpu::getKernelThreads(func);
      llvm::MapVector<Type, int64_t> elements;
      Operation *largest = nullptr;
      int64_t largestBytes = 0;
      auto units = kiln::gpu::parseMatrixUnits(matrixUnits);
      if (!units) {
        func.emitError() << "unknown matrix-units '" << matrixUnits << "'";
        return signalPassFailure();
      }
      func.walk([&](Operation *op) {
        int64_t bytes = 0;
        for (auto [type, elementCount] : kiln::gpu::sharedRequirement(
                 op, layout, *units, integerAtomicsOnly, floatAtomicAdd)) {
          int64_t &count = elements[type];
          count = std::max(count, elementCount);
          bytes += elementCount * type.getIntOrFloatBitWidth() / 8;
        }
        if (bytes > largestBytes) {
          largestBytes = bytes;
          largest = op;
        }
      });
      SmallVector<int64_t> bytes;
      SmallVector<Attribute> entries;
      for (auto [type, count] : elements) {
        bytes.push_back(count * type.getIntOrFloatBitWidth() / 8);
        entries.push_back(b.getArrayAttr({TypeAttr::get(type), b.getI64IntegerAttr(count)}));
      }
      int64_t total =
          kiln::gpu::packSharedBuffers(bytes, kiln::gpu::sharedAlignment(*units)).back();
      if (total > static_cast<int64_t>(maxBytes)) {
        InFlightDiagnostic diag = func.emitError()
                                  << "kernel needs " << total
                                  << " bytes of shared memory for the tiles its threads "
                                     "share; the target allows "
                                  << static_cast<int64_t>(maxBytes);
        diag.attachNote(largest->getLoc())
            << describeSharedUse(largest, largestBytes, *units, layout);
        return signalPassFailure();
      }
      func->setAttr(kiln::gpu::kSharedElementsAttr, b.getArrayAttr(entries));
      func->setAttr(kiln::gpu::kSharedBytesAttr, b.getI64IntegerAttr(total));
    }
  }
};
} // namespace
