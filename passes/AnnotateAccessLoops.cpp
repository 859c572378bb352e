//===- AnnotateAccessLoops.cpp - LLVM loop hints for a block access's paths ===//
//
// convert-kiln-to-linalg marks the memory accesses of two paths a block access
// may take, with the number of loops around each that belong to the access:
// `kiln.loops_rolled` where the block crosses the tensor's edge (each lane
// checks its bounds; the innermost loop still becomes masked vector loads or
// stores) and `kiln.loops_scalar` where its rows are not contiguous. MLIR 19's
// scf-to-cf drops loop annotations, so this pass runs after it: each of those
// loops, found in the CFG, gets a `loop_annotation` on its latch branch, which
// the translation to LLVM IR keeps as `!llvm.loop` metadata. Rolled loops are
// not unrolled; scalar ones are also neither vectorized nor interleaved. The
// marks are removed.
//
//===----------------------------------------------------------------------===//

#include "passes/Common.h"
#include "passes/Passes.h"

#include "mlir/Analysis/CFGLoopInfo.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"

namespace kiln {
#define GEN_PASS_DEF_KILNANNOTATEACCESSLOOPS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct AnnotateAccessLoops : kiln::impl::KilnAnnotateAccessLoopsBase<AnnotateAccessLoops> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // (access, its loops, whether they stay scalar)
    SmallVector<std::tuple<Operation *, int64_t, bool>> marked;
    func.walk([&](Operation *op) {
      for (auto [mark, scalar] : {std::pair(kiln::kAccessLoopsRolled, false),
                                  std::pair(kiln::kAccessLoopsScalar, true)})
        if (auto loops = op->getAttrOfType<IntegerAttr>(mark)) {
          op->removeAttr(mark);
          marked.emplace_back(op, loops.getInt(), scalar);
        }
    });
    if (marked.empty() || func.getBody().hasOneBlock())
      return;
    MLIRContext *context = &getContext();
    Attribute rolled = parseAttribute("#llvm.loop_annotation<unroll = <disable = true>>", context);
    Attribute scalar = parseAttribute("#llvm.loop_annotation<vectorize = <disable = true>, "
                                      "interleave = <count = 1>, unroll = <disable = true>>",
                                      context);
    DominanceInfo dominance(func);
    CFGLoopInfo loops(dominance.getDomTree(&func.getBody()));
    for (auto [op, depth, keepScalar] : marked) {
      if (op->getBlock()->getParent() != &func.getBody())
        continue;
      CFGLoop *loop = loops.getLoopFor(op->getBlock());
      for (int64_t d = 0; loop && d < depth; ++d, loop = loop->getParentLoop()) {
        // Loops lowered from scf.for have one latch, ending in a branch; a
        // loop that holds both kinds of access stays scalar.
        Block *latch = loop->getLoopLatch();
        Operation *branch = latch ? latch->getTerminator() : nullptr;
        if (!isa_and_nonnull<cf::BranchOp>(branch))
          continue;
        if (keepScalar || !branch->hasAttr("loop_annotation"))
          branch->setAttr("loop_annotation", keepScalar ? scalar : rolled);
      }
    }
  }
};
} // namespace
