//===- WidenBoolTiles.cpp - bool tiles travel as bytes between ops ---------===//
//
// A `tensor<Nxi1>` becomes a buffer of one byte per element, and LLVM reads an
// `i1` element by element: a vector mask is assembled a bit at a time (on
// AVX-512, a dozen mask-register instructions per 16 lanes), and a vector<Nxi1>
// could not be stored into such a buffer at all, so kiln-vectorize-elementwise
// leaves every linalg op that touches a bool tile scalar. An explicit load mask
// (`mask = cols < n`) made a kernel several times slower than the same kernel
// relying on the implicit bounds.
//
// This pass makes every elementwise linalg.generic that produces a bool tile
// produce bytes (0 or 1) instead, and its consumers read the bytes: a generic
// consumer truncates its block argument, a tensor.extract the element it reads;
// any other user gets the bool tile back from a narrowing generic. Bytes load as
// vectors and compare into masks in one instruction.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNWIDENBOOLTILES
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

static bool isBoolTile(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getElementType().isInteger(1);
}

/// Result `k` of `op` can be widened: a static bool tile whose init the payload
/// never reads (so a fresh byte tile can replace it).
static bool widenable(linalg::GenericOp op, unsigned k) {
  return isBoolTile(op->getResult(k).getType()) &&
         op.getMatchingBlockArgument(op.getDpsInitOperand(k)).use_empty();
}

/// Rewrites `use` of a bool tile to read `bytes` instead, where the user can.
static bool readBytes(RewriterBase &rewriter, OpOperand &use, Value bytes) {
  Operation *user = use.getOwner();
  Location loc = user->getLoc();
  Type i1 = rewriter.getI1Type();
  if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
    if (!generic.isDpsInput(&use))
      return false;
    BlockArgument arg = generic.getMatchingBlockArgument(&use);
    rewriter.modifyOpInPlace(generic, [&] {
      use.set(bytes);
      arg.setType(rewriter.getI8Type());
    });
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(arg.getOwner());
    Value bit = rewriter.create<arith::TruncIOp>(loc, i1, arg);
    rewriter.replaceAllUsesExcept(arg, bit, bit.getDefiningOp());
    return true;
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
    rewriter.setInsertionPoint(extract);
    Value byte = rewriter.create<tensor::ExtractOp>(loc, bytes, extract.getIndices());
    rewriter.replaceOpWithNewOp<arith::TruncIOp>(extract, i1, byte);
    return true;
  }
  return false;
}

/// `bytes` as a bool tile again, for users that need one.
static Value narrow(RewriterBase &rewriter, Location loc, Value bytes) {
  auto type = cast<RankedTensorType>(bytes.getType());
  auto boolType = RankedTensorType::get(type.getShape(), rewriter.getI1Type());
  Value init = rewriter.create<tensor::EmptyOp>(loc, type.getShape(), rewriter.getI1Type());
  AffineMap id = rewriter.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(), utils::IteratorType::parallel);
  return rewriter
      .create<linalg::GenericOp>(
          loc, boolType, bytes, init, ArrayRef<AffineMap>{id, id}, parallel,
          [](OpBuilder &b, Location l, ValueRange args) {
            b.create<linalg::YieldOp>(l, b.create<arith::TruncIOp>(l, b.getI1Type(), args[0])
                                             .getResult());
          })
      .getResult(0);
}

static void widen(RewriterBase &rewriter, linalg::GenericOp op) {
  Location loc = op.getLoc();
  Type i8 = rewriter.getI8Type();
  SmallVector<unsigned> widened;
  for (unsigned k = 0; k < op->getNumResults(); ++k)
    if (widenable(op, k))
      widened.push_back(k);
  if (widened.empty())
    return;
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inits(op.getDpsInits());
  SmallVector<Type> types(op->getResultTypes());
  for (unsigned k : widened) {
    auto type = cast<RankedTensorType>(types[k]);
    inits[k] = rewriter.create<tensor::EmptyOp>(loc, type.getShape(), i8);
    types[k] = inits[k].getType();
  }
  auto wide = rewriter.create<linalg::GenericOp>(loc, types, op.getDpsInputs(), inits,
                                                 op.getIndexingMapsArray(),
                                                 op.getIteratorTypesArray());
  rewriter.inlineRegionBefore(op.getRegion(), wide.getRegion(), wide.getRegion().end());
  Block &body = wide.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  rewriter.setInsertionPoint(yield);
  for (unsigned k : widened) {
    body.getArgument(wide.getNumDpsInputs() + k).setType(i8);
    Value bit = yield.getOperand(k);
    rewriter.modifyOpInPlace(yield, [&] {
      yield->setOperand(k, rewriter.create<arith::ExtUIOp>(loc, i8, bit));
    });
  }
  for (unsigned k = 0; k < op->getNumResults(); ++k) {
    Value old = op->getResult(k), now = wide->getResult(k);
    if (!llvm::is_contained(widened, k)) {
      rewriter.replaceAllUsesWith(old, now);
      continue;
    }
    for (OpOperand &use : llvm::make_early_inc_range(old.getUses())) {
      OpBuilder::InsertionGuard guard(rewriter);
      (void)readBytes(rewriter, use, now);
    }
    if (!old.use_empty()) { // users that need bools get them back
      rewriter.setInsertionPointAfter(wide);
      rewriter.replaceAllUsesWith(old, narrow(rewriter, loc, now));
    }
  }
  rewriter.eraseOp(op);
}

namespace {
struct WidenBoolTiles : kiln::impl::KilnWidenBoolTilesBase<WidenBoolTiles> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> producers;
    getOperation().walk([&](linalg::GenericOp op) {
      for (unsigned k = 0; k < op->getNumResults(); ++k)
        if (widenable(op, k)) {
          producers.push_back(op);
          return;
        }
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : producers)
      widen(rewriter, op);
  }
};
} // namespace
