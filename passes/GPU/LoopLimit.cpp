//===- LoopLimit.cpp - loops that lavapipe would cut short fail the launch -===//
//
// lavapipe (Mesa's llvmpipe) counts the loop iterations of each shader
// invocation, all its loops together, and once 65535 have run it ends every
// loop at its next back edge (LP_MAX_TGSI_LOOP_ITERATIONS): the kernel goes on
// with short loops and writes wrong results, silently. A recurrence over 70000
// steps, or 1000 steps of an inner loop of 64, is enough.
//
// Counting iterations cannot tell when that happens (NIR unrolls small loops,
// which then do not count), so each loop records instead whether it reached
// its own end, in a private word written where only a complete loop leaves it
// set: an scf.for sets it in the body's last iteration (or before a loop that
// runs none), an scf.while when its condition fails, and clears it at the end
// of its body. A loop cut at a back edge leaves it clear; after every loop the
// word is folded into a second, and at the end of the kernel a thread with a
// cut loop reports through the debug buffer, so the launch fails with a
// message instead. Kernels whose loops cannot run 65535 iterations in all
// (counted without unrolling, each loop one more than its trips, as llvmpipe
// counts) are left alone. The loops kiln-spirv-remainders adds later for float
// `%` are counted here and record their ends there (LoopLimit.h).
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/LoopLimit.h"
#include "passes/GPU/Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVEnums.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

/// The constant behind `v`, seeing through the casts between i32 and index
/// that the emitter puts around loop bounds.
static std::optional<int64_t> constantOf(Value v) {
  while (auto cast = v.getDefiningOp<arith::IndexCastOp>())
    v = cast.getIn();
  return getConstantIntValue(v);
}

/// The most loop iterations one invocation can run in `region` as llvmpipe
/// counts them, saturated at `cap` (which stands for "unknown or too many"). A
/// loop entered costs one more than its trips: the exit test at its top runs
/// once more (measured: 1000 trips of an inner loop of 64 are cut, 1000 x (1 +
/// 65) + 1 = 66001 past the limit).
static int64_t iterationBound(Region &region, int64_t cap);

static int64_t iterationBound(Operation *op, int64_t cap) {
  auto add = [cap](int64_t x, int64_t y) { return std::min(cap, x + y); };
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    auto lo = constantOf(loop.getLowerBound()), hi = constantOf(loop.getUpperBound()),
         step = constantOf(loop.getStep());
    if (!lo || !hi || !step || *step <= 0)
      return cap;
    int64_t trips = *hi > *lo ? (*hi - *lo + *step - 1) / *step : 0;
    int64_t perTrip = add(1, iterationBound(loop.getRegion(), cap));
    return trips && perTrip > cap / trips ? cap : add(1, trips * perTrip);
  }
  if (isa<scf::WhileOp>(op))
    return cap;
  if (isa<arith::RemFOp>(op))
    if (std::optional<int64_t> trips = exactRemainderTrips(op->getResult(0).getType()))
      return add(1, *trips);
  int64_t total = 0;
  for (Region &region : op->getRegions())
    total = add(total, iterationBound(region, cap));
  return total;
}

static int64_t iterationBound(Region &region, int64_t cap) {
  int64_t total = 0;
  for (Block &block : region)
    for (Operation &op : block)
      total = std::min(cap, total + iterationBound(&op, cap));
  return total;
}

/// The attributes naming the two words on their allocas.
static constexpr llvm::StringLiteral endedAttr = "kiln.loop_ended", cutAttr = "kiln.loop_cut";

/// Stores `flag` (i1) as the `ended` word.
static void setEnded(OpBuilder &b, Location loc, Value flag, LoopEndWords words) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  b.create<memref::StoreOp>(loc, b.create<arith::ExtUIOp>(loc, b.getI32Type(), flag),
                            words.ended, zero);
}

/// cut |= !ended, after a loop.
static void foldIntoCut(OpBuilder &b, Location loc, LoopEndWords words) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIntOp>(loc, 1, 32);
  Value incomplete = b.create<arith::XOrIOp>(
      loc, b.create<memref::LoadOp>(loc, words.ended, zero), one);
  Value cut = b.create<memref::LoadOp>(loc, words.cut, zero);
  b.create<memref::StoreOp>(loc, b.create<arith::OrIOp>(loc, cut, incomplete), words.cut,
                            zero);
}

void kiln::gpu::recordLoopEnd(OpBuilder &b, scf::ForOp loop, LoopEndWords words) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = loop.getLoc();
  b.setInsertionPoint(loop);
  setEnded(b, loc,
           b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, loop.getLowerBound(),
                                   loop.getUpperBound()),
           words);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value next = b.create<arith::AddIOp>(loc, loop.getInductionVar(), loop.getStep());
  setEnded(b, loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, next,
                                           loop.getUpperBound()),
           words);
  b.setInsertionPointAfter(loop);
  foldIntoCut(b, loc, words);
}

std::optional<LoopEndWords> kiln::gpu::loopEndWords(Operation *func) {
  LoopEndWords words;
  for (auto alloca : func->getRegion(0).front().getOps<memref::AllocaOp>()) {
    if (alloca->hasAttr(endedAttr))
      words.ended = alloca;
    if (alloca->hasAttr(cutAttr))
      words.cut = alloca;
  }
  if (!words.ended || !words.cut)
    return std::nullopt;
  return words;
}

void ThreadEmitter::guardLoopLimit(mlir::gpu::GPUFuncOp gpuFunc, unsigned debugIndex) {
  if (iterationBound(gpuFunc.getBody(), loopLimit) < loopLimit)
    return;
  SmallVector<Operation *> loops;
  gpuFunc.walk([&](Operation *op) {
    if (isa<scf::ForOp, scf::WhileOp>(op))
      loops.push_back(op);
  });

  OpBuilder::InsertionGuard guard(b);
  Block &entry = gpuFunc.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto word = MemRefType::get({1}, b.getI32Type(), AffineMap(),
                              spirv::StorageClassAttr::get(b.getContext(),
                                                           spirv::StorageClass::Function));
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  auto ended = b.create<memref::AllocaOp>(loc, word), cut = b.create<memref::AllocaOp>(loc, word);
  ended->setAttr(endedAttr, b.getUnitAttr());
  cut->setAttr(cutAttr, b.getUnitAttr());
  LoopEndWords words{ended, cut};
  b.create<memref::StoreOp>(loc, i32(0), words.cut, zero);

  for (Operation *op : loops) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      recordLoopEnd(b, loop, words);
      continue;
    }
    auto whileLoop = cast<scf::WhileOp>(op);
    scf::ConditionOp condition = whileLoop.getConditionOp();
    b.setInsertionPoint(condition);
    Value yes = b.create<arith::ConstantIntOp>(loc, 1, 1);
    setEnded(b, loc, b.create<arith::XOrIOp>(loc, condition.getCondition(), yes), words);
    b.setInsertionPoint(whileLoop.getAfterBody()->getTerminator());
    setEnded(b, loc, b.create<arith::ConstantIntOp>(loc, 0, 1), words);
    b.setInsertionPointAfter(op);
    foldIntoCut(b, loc, words);
  }

  if (!debugBuffer) {
    auto type = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
    gpuFunc.insertArgument(debugIndex, type, DictionaryAttr(), loc);
    debugBuffer = entry.getArgument(debugIndex);
  }
  b.setInsertionPointToEnd(&entry);
  std::string message =
      "ran a loop past lavapipe's limit: llvmpipe ends every loop of a thread once its loops "
      "have run " +
      std::to_string(loopLimit) +
      " iterations in all, and the results would be wrong (give each program less work, "
      "or run on another device)";
  auto report = reportToBuffer(b.getStringAttr(message), b.getDenseI64ArrayAttr({}),
                               programIds());
  Value wasCut = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne,
                                         b.create<memref::LoadOp>(loc, words.cut, zero), i32(0));
  emitIfElse(wasCut, {}, [&] {
    report(i32(0));
    return SmallVector<Value>{};
  }, nullptr);
}
