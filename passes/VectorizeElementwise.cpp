//===- VectorizeElementwise.cpp - elementwise tile math as vector ops -----===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// The number of points `op` iterates over; above `limit` when a range is dynamic.
static int64_t staticElements(linalg::LinalgOp op, int64_t limit) {
  int64_t elements = 1;
  for (int64_t size : op.getStaticLoopRanges())
    elements = ShapedType::isDynamic(size) ? limit + 1 : elements * size;
  return elements;
}

/// Straight-line scalar arithmetic on a static tile small enough for one vector,
/// elementwise or reducing it along some dimensions (Kiln leaves the order of a
/// reduction's terms unspecified, as GPUs add in trees).
static bool isVectorizable(linalg::GenericOp op, int64_t maxElements) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 || op.getNumDpsInits() == 0)
    return false;
  auto shape = op.getStaticLoopRanges();
  int64_t elements = staticElements(op, maxElements);
  // Larger tiles are left to LLVM's loop vectorizer, except reductions along
  // inner dimensions, row by row: LLVM keeps a float reduction loop scalar (one
  // chain of dependent additions; it may not reassociate them, which Kiln
  // allows). Their pieces (one row after splitIntoChunks) are small enough.
  auto iterators = op.getIteratorTypesArray();
  bool rowReduction = op.getNumReductionLoops() > 0 &&
                      iterators.front() == utils::IteratorType::parallel &&
                      llvm::none_of(shape, ShapedType::isDynamic) &&
                      elements / shape.front() <= maxElements;
  if (elements > maxElements && !rowReduction)
    return false;
  // Bool tiles stay scalar: a vector<Nxi1> is stored bit-packed, while the
  // tensor<Nxi1> it would land in is read back one byte per element.
  auto isBool = [](Type t) { return getElementTypeOrSelf(t).isInteger(1); };
  if (llvm::any_of(op->getOperandTypes(), isBool) || llvm::any_of(op->getResultTypes(), isBool))
    return false;
  for (Operation &inner : op.getRegion().front()) {
    if (inner.getNumRegions() != 0 || !isMemoryEffectFree(&inner))
      return false;
    // arith-to-llvm lowers these two-result ops on 1-D vectors only: umulhi of
    // a 2-D tile failed to translate.
    if (isa<arith::MulUIExtendedOp, arith::MulSIExtendedOp>(inner) && op.getNumLoops() > 1)
      return false;
  }
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

/// The largest divisor of `n` that is at most `limit`.
static int64_t divisorUpTo(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

/// Splits `op` into a loop over pieces of at most `chunk` elements along its
/// innermost dimensions, so that each vector op spans a few registers instead
/// of the whole tile (a 1024-lane vector op becomes 64 machine operations that
/// LLVM must schedule one by one). Returns the ops to vectorize: `op` itself when
/// it is small enough or cannot be split.
static SmallVector<Operation *> splitIntoChunks(IRRewriter &rewriter, linalg::GenericOp op,
                                                int64_t chunk) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t total = 1, reduced = 1;
  for (auto [range, iterator] : llvm::zip(ranges, iterators)) {
    total *= range;
    if (iterator == utils::IteratorType::reduction)
      reduced *= range;
  }
  if (total <= chunk)
    return {op};
  rewriter.setInsertionPoint(op);
  SmallVector<int64_t> sizes(ranges.size(), 0);
  if (reduced == total) {
    // A whole-tile reduction: partial results in a chunk-sized accumulator, one
    // final reduction of it. MLIR 19's tileReductionUsingScf does not offset
    // linalg.index in the chunks (every chunk would see 0..63: `arange` fused
    // into a reduction, as in argmax idioms), so those stay whole.
    if (op.hasIndexSemantics())
      return {op};
    int64_t inner = ranges.size() - 1;
    sizes[inner] = divisorUpTo(ranges[inner], chunk);
    if (sizes[inner] == 1 || sizes[inner] == ranges[inner])
      return {op};
    FailureOr<scf::SCFReductionTilingResult> tiled = scf::tileReductionUsingScf(
        rewriter, cast<PartialReductionOpInterface>(op.getOperation()),
        getAsIndexOpFoldResult(rewriter.getContext(), sizes));
    if (failed(tiled))
      return {op};
    // Unlike tileUsingSCF, tileReductionUsingScf has replaced `op` already.
    SmallVector<Operation *> pieces(tiled->parallelTiledOps);
    llvm::append_range(pieces, tiled->mergeOps);
    return pieces;
  }
  // Otherwise one parallel dimension becomes the loop: the outermost one whose
  // inner extent fits `chunk` (rows stay contiguous), else the outermost one.
  int64_t dim = -1, inner = total, innerAtDim = total;
  for (int64_t d = 0; d < static_cast<int64_t>(ranges.size()); ++d) {
    inner /= ranges[d];
    if (iterators[d] == utils::IteratorType::parallel && (inner <= chunk || dim < 0)) {
      dim = d;
      innerAtDim = inner;
      if (inner <= chunk)
        break;
    }
  }
  int64_t perStep = std::max<int64_t>(1, chunk / std::max<int64_t>(1, innerAtDim));
  sizes[dim] = divisorUpTo(ranges[dim], perStep);
  if (sizes[dim] == ranges[dim])
    return {op};
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->loops.size() != 1 || tiled->tiledOps.size() != 1)
    return {op};
  rewriter.replaceOp(op, tiled->replacements);
  // An input that is also the result's buffer (kiln-reuse-input-buffers) and is
  // read at the element being written: read it through the loop's iteration
  // argument, as the chunk not yet written holds the original values. Reading
  // the loop's initial value instead would make bufferization copy the tile.
  auto loop = dyn_cast<scf::ForOp>(tiled->loops[0].getOperation());
  auto piece = dyn_cast<linalg::GenericOp>(tiled->tiledOps[0]);
  if (loop && piece && int64_t(loop.getInitArgs().size()) == piece.getNumDpsInits()) {
    // The loop carries the generic's results in order.
    for (auto [k, init, iterArg] :
         llvm::enumerate(loop.getInitArgs(), loop.getRegionIterArgs())) {
      AffineMap written = piece.getMatchingIndexingMap(piece.getDpsInitOperand(k));
      for (OpOperand *input : piece.getDpsInputOperands()) {
        auto slice = input->get().getDefiningOp<tensor::ExtractSliceOp>();
        if (slice && slice.getSource() == init &&
            piece.getMatchingIndexingMap(input) == written)
          rewriter.modifyOpInPlace(slice, [&] { slice.getSourceMutable().assign(iterArg); });
      }
    }
  }
  return tiled->tiledOps;
}

namespace {
struct VectorizeElementwise
    : kiln::impl::KilnVectorizeElementwiseBase<VectorizeElementwise> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isVectorizable(op, maxElements))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp candidate : candidates) {
      for (Operation *op : splitIntoChunks(rewriter, candidate, chunkElements)) {
        auto piece = dyn_cast<linalg::LinalgOp>(op);
        if (!piece)
          continue;
        // A row reduction above max-elements that could not be split stays
        // scalar rather than becoming one huge vector op.
        if (staticElements(piece, maxElements) > maxElements)
          continue;
        rewriter.setInsertionPoint(op);
        // Failure leaves the op as it was, to be lowered to loops.
        (void)linalg::vectorize(rewriter, op);
      }
    }
  }
};
} // namespace
