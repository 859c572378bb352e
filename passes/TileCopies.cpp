//===- TileCopies.cpp - CPU: tile copies as vector rows, and prefetched ---===//
//
// A block load inside its tensor is, after bufferization, a copy into the tile's
// stack buffer: a linalg.generic whose body reads the tensor at
// `offset + linalg.index` through a view with unit inner stride (the unguarded
// fast path of `convert-kiln-to-linalg`). Two passes work on those copies:
//
// - kiln-cpu-prefetch-tiles: a blocked matmul copies, at every step of its K
//   loop, one tile of each operand. At large sizes those rows come from L3 or
//   memory, a few cache lines each and whole pages apart, so the hardware
//   prefetchers do not see them coming and the copies stall while the
//   micro-kernel waits. Each such copy is followed by a prefetch of every cache
//   line of the tile the next iteration will copy; the lines arrive while the
//   micro-kernel multiplies the current tiles.
// - kiln-cpu-vectorize-tile-copies: the copy becomes a loop over rows of vector
//   loads and stores. Left as scalar loops, LLVM fully unrolls them into blocks
//   of thousands of scalar loads and stores before its SLP vectorizer puts them
//   back together, and its memory passes (DSE, GVN) spend most of a compile on
//   those blocks.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

namespace kiln {
#define GEN_PASS_DEF_KILNCPUPREFETCHTILES
#define GEN_PASS_DEF_KILNCPUVECTORIZETILECOPIES
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

/// A tile copy: `tile[i...] = source[offset_d + i_d]`.
struct TileCopy {
  linalg::GenericOp copy;
  memref::LoadOp load;
  /// Per source dimension: the offset (defined outside the copy; null for
  /// none) and the tile dimension added to it, or -1 when the index is the
  /// offset alone.
  SmallVector<Value> offsets;
  SmallVector<int64_t> tileDims;
};

/// `offset + index`, or `index` alone without an offset.
Value addOffset(OpBuilder &b, Location loc, Value offset, Value index) {
  return offset ? b.create<arith::AddIOp>(loc, offset, index).getResult() : index;
}

/// Matches a linalg.generic that only fills its one static buffer with loads of
/// `source` at `offset + linalg.index` (no guards: the fast path).
std::optional<TileCopy> matchTileCopy(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 0 || generic.getNumDpsInits() != 1)
    return std::nullopt;
  auto tileType = dyn_cast<MemRefType>(generic.getDpsInits()[0].getType());
  if (!tileType || !tileType.hasStaticShape() || tileType.getRank() == 0 ||
      tileType.getNumElements() == 0 || !tileType.getElementType().isIntOrFloat())
    return std::nullopt;
  // linalg.index d is tile dimension d only under an identity output map.
  if (!generic.getIndexingMapsArray()[0].isIdentity())
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

  // Nothing else happens in the body: the copy can be replaced whole.
  for (Operation &op : body)
    if (!isa<linalg::IndexOp, arith::AddIOp, memref::LoadOp, linalg::YieldOp>(op))
      return std::nullopt;

  TileCopy match{generic, load, {}, {}};
  for (Value index : load.getIndices()) {
    Value offset = index;
    int64_t dim = -1;
    if (auto li = index.getDefiningOp<linalg::IndexOp>()) {
      dim = li.getDim();
      offset = Value();
    } else if (auto add = index.getDefiningOp<arith::AddIOp>()) {
      for (auto [tileIndex, other] : {std::pair(add.getLhs(), add.getRhs()),
                                      std::pair(add.getRhs(), add.getLhs())}) {
        if (auto li = tileIndex.getDefiningOp<linalg::IndexOp>()) {
          dim = li.getDim();
          offset = other;
          break;
        }
      }
    }
    if (offset && generic->isAncestor(offset.getParentBlock()->getParentOp()))
      return std::nullopt;
    match.offsets.push_back(offset);
    match.tileDims.push_back(dim);
  }
  // Only tiles laid out as the source: the tile's dimensions run, in order, along
  // source dimensions, its innermost along the source's innermost.
  int64_t previous = -1;
  for (int64_t tileDim : match.tileDims) {
    if (tileDim == -1)
      continue;
    if (tileDim <= previous)
      return std::nullopt;
    previous = tileDim;
  }
  if (match.tileDims.empty() || match.tileDims.back() != tileType.getRank() - 1)
    return std::nullopt;
  return match;
}

/// Whether `value` can be rebuilt for another iteration of `loop`: every op
/// between it and the loop's induction variable is a pure op of the body.
/// `moves` is set when it depends on the induction variable.
bool isRebuildable(scf::ForOp loop, Value value, bool &moves) {
  if (!value)
    return true;
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
  if (!value)
    return value;
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

  // The source is the same buffer every iteration (it may be a view made in the
  // body, before the copy).
  Value source = copy.load.getMemRef();
  bool sourceMoves = false;
  if (!isRebuildable(loop, source, sourceMoves) || sourceMoves)
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
    auto dimLoop = b.create<scf::ForOp>(loc, zero, upper, alongRow ? lineStep : one);
    b.setInsertionPointToStart(dimLoop.getBody());
    Value index = dimLoop.getInductionVar();
    if (alongRow)
      index = b.create<arith::MinSIOp>(loc, index, last);
    indices.push_back(addOffset(b, loc, offset, index));
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

/// Bytes one vector op of a copied row moves: four AVX-512 registers.
constexpr int64_t kRowChunkBytes = 256;
/// Tiles of up to this many chunks are copied in straight-line code; else rows
/// of up to an eighth of it.
constexpr int64_t kUnrolledPieces = 64;

/// Whether `copy` can be written with vector loads and stores: every tile
/// dimension indexes the source once, the source's innermost stride is a static
/// 1, the tile's rows are contiguous and its elements 8- to 64-bit integers or
/// f16/bf16/f32/f64 (an i24 vector is packed, its memref is not; fp8 is emulated).
bool isVectorizable(TileCopy &copy) {
  auto tileType = cast<MemRefType>(copy.copy.getDpsInits()[0].getType());
  if (llvm::count_if(copy.tileDims, [](int64_t d) { return d != -1; }) != tileType.getRank())
    return false;
  Type element = tileType.getElementType();
  if (!(element.isF16() || element.isBF16() || element.isF32() || element.isF64() ||
        (element.isSignlessInteger() && element.getIntOrFloatBitWidth() >= 8 &&
         llvm::isPowerOf2_32(element.getIntOrFloatBitWidth()))))
    return false;
  auto innerStrideIsOne = [](Type type) {
    SmallVector<int64_t> strides;
    int64_t offset;
    auto memref = cast<MemRefType>(type);
    return succeeded(getStridesAndOffset(memref, strides, offset)) && strides.back() == 1;
  };
  return innerStrideIsOne(tileType) && innerStrideIsOne(copy.load.getMemRef().getType());
}

/// Replaces `copy` with loops over the tile's outer dimensions around vector
/// loads and stores of its rows, kRowChunkBytes at a time.
void vectorizeCopy(TileCopy copy) {
  linalg::GenericOp generic = copy.copy;
  Location loc = generic.getLoc();
  Value tile = generic.getDpsInits()[0];
  auto tileType = cast<MemRefType>(tile.getType());
  ArrayRef<int64_t> shape = tileType.getShape();
  int64_t rank = tileType.getRank();
  int64_t rowLength = shape.back();
  int64_t chunk = std::max<int64_t>(1, kRowChunkBytes * 8 / tileType.getElementTypeBitWidth());
  chunk = std::min(chunk, rowLength);

  int64_t whole = rowLength - rowLength % chunk;
  int64_t piecesPerRow = whole / chunk + (whole != rowLength);
  int64_t rows = ShapedType::getNumElements(shape.drop_back());
  // Small tiles are copied in straight-line code, which LLVM's SROA and GVN see
  // through (a tile read once is often never stored at all).
  bool unrollRows = rows * piecesPerRow <= kUnrolledPieces;
  bool unrollRow = unrollRows || piecesPerRow <= kUnrolledPieces / 8;

  OpBuilder b(generic);
  auto constant = [&](OpBuilder &cb, int64_t v) {
    return cb.create<arith::ConstantIndexOp>(loc, v).getResult();
  };
  auto copyPiece = [&](OpBuilder &pb, ArrayRef<Value> at, int64_t lanes) {
    SmallVector<Value> from;
    for (auto [offset, tileDim] : llvm::zip(copy.offsets, copy.tileDims))
      from.push_back(tileDim == -1 ? offset : addOffset(pb, loc, offset, at[tileDim]));
    auto type = VectorType::get({lanes}, tileType.getElementType());
    Value row = pb.create<vector::LoadOp>(loc, type, copy.load.getMemRef(), from);
    pb.create<vector::StoreOp>(loc, row, tile, at);
  };
  // One row, at `at` (its outer coordinates): whole chunks, then the rest.
  auto copyRow = [&](OpBuilder &rb, SmallVector<Value> at) {
    at.push_back(Value());
    if (unrollRow) {
      for (int64_t column = 0; column < whole; column += chunk) {
        at.back() = constant(rb, column);
        copyPiece(rb, at, chunk);
      }
    } else {
      auto loop = rb.create<scf::ForOp>(loc, constant(rb, 0), constant(rb, whole),
                                        constant(rb, chunk));
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      at.back() = loop.getInductionVar();
      copyPiece(lb, at, chunk);
    }
    if (whole != rowLength) {
      at.back() = constant(rb, whole);
      copyPiece(rb, at, rowLength - whole);
    }
  };
  // The outer dimensions, from the outermost: unrolled or loops.
  std::function<void(OpBuilder &, SmallVector<Value>)> copyRows =
      [&](OpBuilder &ob, SmallVector<Value> at) {
        int64_t d = at.size();
        if (d + 1 == rank)
          return copyRow(ob, at);
        at.push_back(Value());
        if (unrollRows) {
          for (int64_t i = 0; i < shape[d]; ++i) {
            at.back() = constant(ob, i);
            copyRows(ob, at);
          }
          return;
        }
        auto loop = ob.create<scf::ForOp>(loc, constant(ob, 0), constant(ob, shape[d]),
                                          constant(ob, 1));
        OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
        at.back() = loop.getInductionVar();
        copyRows(lb, at);
      };
  copyRows(b, {});
  generic.erase();
}

struct CPUVectorizeTileCopies
    : kiln::impl::KilnCPUVectorizeTileCopiesBase<CPUVectorizeTileCopies> {
  void runOnOperation() override {
    SmallVector<TileCopy> copies;
    getOperation().walk([&](linalg::GenericOp generic) {
      if (std::optional<TileCopy> copy = matchTileCopy(generic); copy && isVectorizable(*copy))
        copies.push_back(*copy);
    });
    for (TileCopy &copy : copies)
      vectorizeCopy(copy);
  }
};

} // namespace
