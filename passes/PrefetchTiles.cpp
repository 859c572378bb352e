//===- PrefetchTiles.cpp - prefetch the next K step's tiles of a dot loop -===//
//
// A blocked matmul loads, at every step of its K loop, one tile of each operand
// into a stack buffer (the unguarded fast path of a block load: a linalg.generic
// whose body reads the tensor at `offset + linalg.index`). At large sizes those
// rows come from L3 or memory, a few cache lines each and whole pages apart, so
// the hardware prefetchers do not see them coming and the copies stall while the
// micro-kernel waits. This pass issues, right after each such copy, a prefetch of
// every cache line of the tile the next iteration will load; the lines arrive
// while the micro-kernel multiplies the current tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUPREFETCHTILES
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

constexpr int64_t kCacheLineBytes = 64;
/// Locality 2 is x86's prefetcht1: into L2, not L1. A tile's rows a power of two
/// apart share a few L1 sets, so lines prefetched into L1 evict each other (and
/// the tiles being multiplied) before the next copy reads them: on an AMD EPYC
/// with 32 KiB of L1, locality 3 gained nothing on sgemm 2048^3, locality 2 cut
/// 17%.
constexpr uint32_t kLocality = 2;

/// A tile copy the pass can prefetch for: `tile[i...] = source[offset_d + i_d]`.
struct TileCopy {
  linalg::GenericOp copy;
  memref::LoadOp load;
  /// Per source dimension: the offset (defined outside the copy) and the tile
  /// dimension added to it, or -1 when the index is the offset alone.
  SmallVector<Value> offsets;
  SmallVector<int64_t> tileDims;
};

/// Matches a linalg.generic that only fills its one static buffer with loads of
/// `source` at `offset + linalg.index` (no guards: the fast path).
std::optional<TileCopy> matchTileCopy(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 0 || generic.getNumDpsInits() != 1)
    return std::nullopt;
  auto tileType = dyn_cast<MemRefType>(generic.getDpsInits()[0].getType());
  if (!tileType || !tileType.hasStaticShape())
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto load = yield.getValues()[0].getDefiningOp<memref::LoadOp>();
  if (!load || load->getBlock() != &body)
    return std::nullopt;
  // The source must be a buffer that lives across iterations, not a tile.
  if (generic->isAncestor(load.getMemRef().getParentBlock()->getParentOp()) ||
      isa_and_nonnull<memref::AllocaOp, memref::AllocOp>(load.getMemRef().getDefiningOp()))
    return std::nullopt;

  TileCopy match{generic, load, {}, {}};
  for (Value index : load.getIndices()) {
    Value offset = index;
    int64_t dim = -1;
    if (auto add = index.getDefiningOp<arith::AddIOp>()) {
      for (auto [tileIndex, other] : {std::pair(add.getLhs(), add.getRhs()),
                                      std::pair(add.getRhs(), add.getLhs())}) {
        if (auto li = tileIndex.getDefiningOp<linalg::IndexOp>()) {
          dim = li.getDim();
          offset = other;
          break;
        }
      }
    }
    if (Operation *def = offset.getDefiningOp(); def && generic->isAncestor(def))
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(offset);
        arg && generic->isAncestor(arg.getOwner()->getParentOp()))
      return std::nullopt;
    match.offsets.push_back(offset);
    match.tileDims.push_back(dim);
  }
  // Only tiles laid out as the source: tile dimension d reads source dimension d.
  for (auto [sourceDim, tileDim] : llvm::enumerate(match.tileDims))
    if (tileDim != -1 && tileDim != static_cast<int64_t>(sourceDim))
      return std::nullopt;
  if (match.tileDims.empty() || match.tileDims.back() == -1)
    return std::nullopt;
  return match;
}

/// Whether `value` can be rebuilt for another iteration of `loop`: every op
/// between it and the loop's induction variable is a pure op of the body.
/// `moves` is set when it depends on the induction variable.
bool isRebuildable(scf::ForOp loop, Value value, bool &moves) {
  if (value == loop.getInductionVar()) {
    moves = true;
    return true;
  }
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return !loop->isAncestor(value.getParentBlock()->getParentOp()); // loop-invariant
  if (!isPure(def) || def->getNumRegions() != 0)
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return isRebuildable(loop, operand, moves); });
}

/// Rebuilds a rebuildable `value` at the builder's point, with the ops between it
/// and the induction variable cloned through `mapping` (which maps the induction
/// variable to the next iteration's).
Value rebuild(OpBuilder &b, scf::ForOp loop, Value value, IRMapping &mapping) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return value;
  for (Value operand : def->getOperands())
    rebuild(b, loop, operand, mapping);
  return b.clone(*def, mapping)->getResult(cast<OpResult>(value).getResultNumber());
}

/// Emits, after `copy`'s ancestor in the body of `loop`, prefetches of every
/// cache line of the tile the next iteration copies. Does nothing when the tile
/// does not move from one iteration to the next or its offsets cannot be rebuilt.
void prefetchNextTile(scf::ForOp loop, TileCopy copy) {
  Operation *anchor = loop.getBody()->findAncestorOpInBlock(*copy.copy);
  Location loc = copy.copy.getLoc();
  OpBuilder b(loop.getContext());
  b.setInsertionPointAfter(anchor);

  Value source = copy.load.getMemRef();
  if (loop->isAncestor(source.getParentBlock()->getParentOp()))
    return;
  bool moves = false;
  for (Value offset : copy.offsets)
    if (!isRebuildable(loop, offset, moves))
      return;
  if (!moves)
    return; // the same tile every iteration

  Value next = b.create<arith::AddIOp>(loc, loop.getInductionVar(), loop.getStep());
  IRMapping mapping;
  mapping.map(loop.getInductionVar(), next);
  SmallVector<Value> nextOffsets;
  for (Value offset : copy.offsets)
    nextOffsets.push_back(rebuild(b, loop, offset, mapping));

  // The last iteration has no next tile.
  Value more = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, next, loop.getUpperBound());
  auto guard = b.create<scf::IfOp>(loc, more, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());

  // One prefetch per cache line: a loop over each tile dimension the source is
  // indexed with and, along the innermost, line by line with the last element
  // too (a row that does not start on a line boundary spans one line more).
  auto tileType = cast<MemRefType>(copy.copy.getDpsInits()[0].getType());
  ArrayRef<int64_t> shape = tileType.getShape();
  int64_t elementBytes = std::max<int64_t>(1, tileType.getElementTypeBitWidth() / 8);
  int64_t lineElements = std::max<int64_t>(1, kCacheLineBytes / elementBytes);
  int64_t innermost = copy.tileDims.back();
  auto constant = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); };
  Value zero = constant(0), one = constant(1);
  Value lineStep = constant(lineElements);
  Value last = constant(shape[innermost] - 1);
  SmallVector<Value> indices;
  for (auto [offset, tileDim] : llvm::zip(nextOffsets, copy.tileDims)) {
    if (tileDim == -1) {
      indices.push_back(offset);
      continue;
    }
    bool alongRow = tileDim == innermost;
    Value upper = constant(alongRow ? shape[tileDim] + lineElements - 1 : shape[tileDim]);
    auto loop = b.create<scf::ForOp>(loc, zero, upper, alongRow ? lineStep : one);
    b.setInsertionPointToStart(loop.getBody());
    Value index = loop.getInductionVar();
    if (alongRow)
      index = b.create<arith::MinSIOp>(loc, index, last);
    indices.push_back(b.create<arith::AddIOp>(loc, offset, index));
  }
  b.create<memref::PrefetchOp>(loc, source, indices, /*isWrite=*/false,
                               /*localityHint=*/kLocality, /*isDataCache=*/true);
}

struct CPUPrefetchTiles : kiln::impl::KilnCPUPrefetchTilesBase<CPUPrefetchTiles> {
  void runOnOperation() override {
    // The loops that step through K: those whose body (not a nested loop's)
    // multiplies tiles.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](linalg::MatmulOp matmul) {
      if (auto loop = matmul->getParentOfType<scf::ForOp>();
          loop && !llvm::is_contained(loops, loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      SmallVector<TileCopy> copies;
      loop.getBody()->walk([&](linalg::GenericOp generic) {
        if (generic->getParentOfType<scf::ForOp>() != loop)
          return;
        if (std::optional<TileCopy> copy = matchTileCopy(generic))
          copies.push_back(*copy);
      });
      for (TileCopy &copy : copies)
        prefetchNextTile(loop, copy);
    }
  }
};

} // namespace
