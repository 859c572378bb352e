//===- PipelineToGPU.cpp - software-pipelined tile loads (cp.async) -------===//
//
// `for k in range(lo, hi, step, stages=S)` whose body loads the tiles of one
// tensor-core dot keeps S - 1 iterations of those tiles in flight:
//
//   prologue:     copy the tiles of iterations 0 .. S-2 into stages 0 .. S-2
//   iteration i:  copy the tiles of iteration i + S - 1 into stage (i + S - 1) % S
//                 wait for iteration i's group (cp.async.wait_group S - 1)
//                 multiply from stage i % S; the rest of the body as written
//
// Each stage is one copy of the dot's operand buffers in shared memory, and every
// iteration commits exactly one copy group (empty past the loop's end) so that
// wait_group's count lines up. The stage written in iteration i is the one
// iteration i - 1 multiplied from: the dot's closing barrier orders those reads
// before the new copies.
//
// Only loads whose offsets can be computed S - 1 iterations early are hoisted:
// the offsets may depend on the induction variable and on values from outside
// the loop through side-effect-free scalar ops of the body, which are emitted
// again with the induction variable advanced. Nothing else in the body may use
// the shared buffer of the operands' element type. Loops that do not qualify
// run unpipelined (their loads still use cp.async when they can).
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/Lowering.h"
#include "passes/GPU/SharedMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

/// The ops of `loop`'s body that compute `load`'s offsets, in program order, or
/// false when an offset depends on anything but the induction variable, values
/// from outside the loop and pure scalar ops of the body.
static bool offsetSlice(scf::ForOp loop, LoadBlockOp load, SmallVectorImpl<Operation *> &slice) {
  llvm::SetVector<Operation *> ops;
  SmallVector<Value> work(load.getOffsets());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == loop.getBody() && arg != loop.getInductionVar())
        return false; // loop-carried: unknown S - 1 iterations early
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!loop->isAncestor(def) || ops.contains(def))
      continue;
    if (def->getBlock() != loop.getBody() || def->getNumRegions() != 0 ||
        !isMemoryEffectFree(def) ||
        llvm::any_of(def->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }))
      return false;
    ops.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  slice.assign(ops.begin(), ops.end());
  llvm::sort(slice, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return true;
}

std::optional<ThreadEmitter::Pipeline> ThreadEmitter::planPipeline(scf::ForOp op) {
  auto stages = op->getAttrOfType<IntegerAttr>(kStagesAttr);
  if (!stages || stages.getInt() < 2 || memory != MemoryModel::LLVMPointers)
    return std::nullopt;
  Pipeline p{stages.getInt(), DotOp(), {}};
  for (Operation &inner : op.getBody()->without_terminator()) {
    auto load = dyn_cast<LoadBlockOp>(&inner);
    auto use = load ? asyncOperand(load) : std::nullopt;
    if (!use)
      continue;
    if (p.dot && p.dot != use->first)
      return std::nullopt; // one dot's operands per pipelined loop
    p.dot = use->first;
    Pipeline::Prefetch prefetch{load, use->second, {}};
    if (!offsetSlice(op, load, prefetch.slice))
      return std::nullopt;
    p.prefetches.push_back(std::move(prefetch));
  }
  if (!p.dot)
    return std::nullopt;
  // The stages stay live across the whole body: no other exchange may reuse
  // their buffer.
  Type operandType = sharedStorageType(p.dot.getA().getType().getElementType());
  bool shared = false;
  op.getBody()->walk([&](Operation *inner) {
    if (inner != p.dot.getOperation())
      for (auto [type, count] : sharedRequirement(inner, layout, matrixUnits))
        shared |= type == operandType;
  });
  if (shared)
    return std::nullopt;
  return p;
}

LogicalResult ThreadEmitter::issueStage(const Pipeline &p, scf::ForOp op, Value iv, Value upper,
                                        Value stage) {
  Value inRange = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, iv, upper);
  LogicalResult result = success();
  emitIfElse(
      inRange, {},
      [&]() -> SmallVector<Value> {
        // The offsets' computations again, with the induction variable at `iv`.
        IRMapping current = scalars;
        scalars.map(op.getInductionVar(), iv);
        Value stageBase = b.create<arith::MulIOp>(loc, stage, i32(stageElements(p.dot)));
        for (const Pipeline::Prefetch &prefetch : p.prefetches) {
          for (Operation *sliceOp : prefetch.slice)
            if (failed(emitOp(sliceOp)))
              result = failure();
          emitAsyncCopy(prefetch.load, p.dot, prefetch.operand, stageBase, /*commit=*/false);
        }
        scalars = current;
        return {};
      },
      nullptr);
  inlinePTX(b, loc, "cp.async.commit_group;", "", 0, Type(), {});
  return result;
}
