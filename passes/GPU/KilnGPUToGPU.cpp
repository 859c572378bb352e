//===- KilnGPUToGPU.cpp - laid-out kiln kernels to gpu.func ---------------===//
//
// The driver: builds the gpu.module and each kernel's signature, walks the body
// and dispatches to the op-family emitters; handles scf control flow, whose
// loop-carried tiles become one iter_arg per register.
//
//===----------------------------------------------------------------------===//

#include "kiln/KernelInfo.h"
#include "passes/Common.h"
#include "passes/GPU/Layouts.h"
#include "passes/GPU/Lowering.h"
#include "passes/GPU/SharedMemory.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNGPUTOGPU
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::gpu;

//===----------------------------------------------------------------------===//
// Layout arithmetic
//===----------------------------------------------------------------------===//

Value ThreadEmitter::i32(int64_t v) { return b.create<arith::ConstantIntOp>(loc, v, 32); }

int64_t ThreadEmitter::registers(Type tileType) const {
  return layout.registersPerThread(cast<RankedTensorType>(tileType).getNumElements());
}

Value ThreadEmitter::elementIndex(int64_t reg) {
  Value &cached = elementIndexCache[reg];
  if (!cached) {
    // Built at the kernel's entry so every region can use it.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(threadId);
    Value base = b.create<arith::MulIOp>(loc, threadId, i32(layout.getVec()));
    cached = b.create<arith::AddIOp>(loc, base, i32(layout.elementOfRegister(reg)));
  }
  return cached;
}

Value ThreadEmitter::registerValid(int64_t reg, int64_t numElements) {
  int64_t last = layout.elementOfRegister(reg) +
                 int64_t(layout.getThreads() - 1) * layout.getVec();
  if (last < numElements)
    return b.create<arith::ConstantIntOp>(loc, 1, 1);
  return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, elementIndex(reg),
                                 i32(numElements));
}

SmallVector<Value> ThreadEmitter::delinearize(Value flat, ArrayRef<int64_t> shape) {
  SmallVector<Value> index(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) {
      index[d] = i32(0);
      continue;
    }
    index[d] = d == 0 ? flat : b.create<arith::RemUIOp>(loc, flat, i32(shape[d]));
    if (d > 0)
      flat = b.create<arith::DivUIOp>(loc, flat, i32(shape[d]));
  }
  return index;
}

Value ThreadEmitter::linearize(ValueRange index, ArrayRef<int64_t> shape) {
  Value flat = i32(0);
  for (auto [i, size] : llvm::zip(index, shape)) {
    flat = b.create<arith::MulIOp>(loc, flat, i32(size));
    flat = b.create<arith::AddIOp>(loc, flat, i);
  }
  return flat;
}

Value ThreadEmitter::combine(ReduceKind kind, Value a, Value acc) {
  return combineReduction(b, loc, kind, a, acc);
}

Value ThreadEmitter::identity(ReduceKind kind, Type type) {
  return b.create<arith::ConstantOp>(loc, reductionIdentity(b, kind, type));
}

Value ThreadEmitter::element(Value original, int64_t reg) const {
  if (isa<RankedTensorType>(original.getType()))
    return regs(original)[reg];
  return scalar(original);
}

scf::IfOp ThreadEmitter::emitIfElse(Value cond, TypeRange types,
                                    function_ref<SmallVector<Value>()> thenFn,
                                    function_ref<SmallVector<Value>()> elseFn) {
  auto ifOp = b.create<scf::IfOp>(loc, types, cond, /*withElseRegion=*/bool(elseFn));
  auto fill = [&](Region &region, function_ref<SmallVector<Value>()> fn) {
    OpBuilder::InsertionGuard guard(b);
    if (region.empty())
      region.emplaceBlock();
    Block *block = &region.front();
    if (!block->empty())
      block->back().erase();
    b.setInsertionPointToEnd(block);
    SmallVector<Value> yields = fn();
    b.create<scf::YieldOp>(loc, yields);
  };
  fill(ifOp.getThenRegion(), thenFn);
  if (elseFn)
    fill(ifOp.getElseRegion(), elseFn);
  return ifOp;
}

SmallVector<int64_t> kiln::gpu::dynamicSharedLayout(func::FuncOp kernel, MatrixUnits units) {
  SmallVector<int64_t> bytes;
  for (Type type : sharedBufferTypes(kernel, Attribute())) {
    auto memref = cast<MemRefType>(type);
    bytes.push_back(memref.getNumElements() * memref.getElementTypeBitWidth() / 8);
  }
  return packSharedBuffers(bytes, sharedAlignment(units));
}

SmallVector<Type> kiln::gpu::sharedBufferTypes(func::FuncOp kernel, Attribute memorySpace) {
  SmallVector<Type> types;
  if (auto entries = kernel->getAttrOfType<ArrayAttr>(kSharedElementsAttr))
    for (Attribute entry : entries) {
      auto pair = cast<ArrayAttr>(entry);
      types.push_back(MemRefType::get({cast<IntegerAttr>(pair[1]).getInt()},
                                      cast<TypeAttr>(pair[0]).getValue(), AffineMap(),
                                      memorySpace));
    }
  return types;
}

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

/// storageOf for a kernel's argument: the kernel carries float-atomic-add.
static Type argumentStorage(BlockArgument arg, MemoryModel memory) {
  return kiln::gpu::storageOf(arg, memory == MemoryModel::SPIRVBuffers,
                              arg.getOwner()->getParentOp()->hasAttr(kFloatAtomicAddAttr));
}

int64_t kiln::gpu::argumentWords(TypeRange kernelArgs) {
  int64_t words = 0;
  for (Type t : kernelArgs) {
    if (auto mem = dyn_cast<MemRefType>(t))
      words += 2 * mem.getRank(); // sizes, then strides
    else
      words += t.getIntOrFloatBitWidth() > 32 ? 2 : 1;
  }
  return words;
}

bool ThreadEmitter::takesDebugBuffer(func::FuncOp kernel, MemoryModel memory) {
  if (memory != MemoryModel::SPIRVBuffers)
    return false;
  return kernel
      .walk([](Operation *op) {
        return isa<AssertOp, PrintOp>(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

SmallVector<Type> ThreadEmitter::abiTypes(func::FuncOp kernel, MemoryModel memory) {
  MLIRContext *ctx = kernel.getContext();
  SmallVector<Type> types;
  auto i32Type = IntegerType::get(ctx, 32);
  for (BlockArgument arg : kernel.getArguments()) {
    Type t = arg.getType();
    if (auto mem = dyn_cast<MemRefType>(t)) {
      if (memory == MemoryModel::LLVMPointers) {
        types.push_back(LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1));
        types.append(2 * mem.getRank(), i32Type); // sizes, then strides
      } else {
        types.push_back(MemRefType::get({ShapedType::kDynamic}, argumentStorage(arg, memory)));
      }
    } else if (memory == MemoryModel::LLVMPointers) {
      types.push_back(t.isInteger(1) ? i32Type : t); // bools travel as i32
    }
  }
  if (takesDebugBuffer(kernel, memory))
    types.push_back(MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 32)));
  // Vulkan: the grid words, then every size, stride and scalar in push
  // constants while they fit, else the argument words in the argument buffer
  // (a storage buffer) before the push constants (kiln/KernelInfo.h).
  if (memory == MemoryModel::SPIRVBuffers) {
    int64_t words = argumentWords(kernel.getArgumentTypes());
    auto push = spirv::StorageClassAttr::get(ctx, spirv::StorageClass::PushConstant);
    if (argumentsArePushed(words)) {
      types.push_back(MemRefType::get({kGridWords + words}, i32Type, AffineMap(), push));
    } else {
      types.push_back(MemRefType::get({words}, i32Type));
      types.push_back(MemRefType::get({kGridWords}, i32Type, AffineMap(), push));
    }
  }
  return types;
}

bool ThreadEmitter::argumentsArePushed(int64_t words) {
  return (kGridWords + words) * 4 <= kMaxPushConstantBytes;
}

Value ThreadEmitter::gridWord(int64_t word) {
  Value index = b.create<arith::ConstantIndexOp>(loc, word);
  return b.create<memref::LoadOp>(loc, gridWords, index);
}

Value ThreadEmitter::decodeWords(Value block, int64_t &word, Type type) {
  auto read = [&]() -> Value {
    Value index = b.create<arith::ConstantIndexOp>(loc, word++);
    return b.create<memref::LoadOp>(loc, block, index);
  };
  if (type.getIntOrFloatBitWidth() > 32) {
    // Two words, low first.
    Value lo = b.create<arith::ExtUIOp>(loc, b.getI64Type(), read());
    Value hi = b.create<arith::ExtUIOp>(loc, b.getI64Type(), read());
    Value v = b.create<arith::OrIOp>(
        loc, lo, b.create<arith::ShLIOp>(loc, hi, b.create<arith::ConstantIntOp>(loc, 32, 64)));
    return type.isF64() ? (Value)b.create<arith::BitcastOp>(loc, type, v) : v;
  }
  Value v = read();
  if (type.isInteger(1))
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v, i32(0));
  if (type.isF32())
    return b.create<arith::BitcastOp>(loc, type, v);
  if (type.getIntOrFloatBitWidth() < 32) {
    auto narrow = b.getIntegerType(type.getIntOrFloatBitWidth());
    Value n = b.create<arith::TruncIOp>(loc, narrow, v);
    return isa<FloatType>(type) ? (Value)b.create<arith::BitcastOp>(loc, type, n) : n;
  }
  return v;
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

LogicalResult ThreadEmitter::emitKernel(func::FuncOp kernel, mlir::gpu::GPUFuncOp gpuFunc) {
  Block &entry = gpuFunc.getBody().front();
  b.setInsertionPointToStart(&entry);
  loc = kernel.getLoc();
  threadId = b.create<arith::IndexCastOp>(
      loc, b.getI32Type(), b.create<mlir::gpu::ThreadIdOp>(loc, mlir::gpu::Dimension::x));

  unsigned next = 0;
  bool inWords = memory == MemoryModel::SPIRVBuffers; // see abiTypes
  Value words;
  int64_t word = 0;
  if (inWords) {
    gridWords = entry.getArgument(entry.getNumArguments() - 1);
    words = gridWords;
    word = kGridWords;
    if (!argumentsArePushed(argumentWords(kernel.getArgumentTypes()))) {
      words = entry.getArgument(entry.getNumArguments() - 2);
      word = 0;
    }
  }
  auto scalarArg = [&](Type type) -> Value {
    return inWords ? decodeWords(words, word, type) : entry.getArgument(next++);
  };
  for (BlockArgument arg : kernel.getArguments()) {
    if (auto mem = dyn_cast<MemRefType>(arg.getType())) {
      TensorArg t;
      t.base = entry.getArgument(next++);
      t.elementType = mem.getElementType();
      t.storageType = argumentStorage(arg, memory);
      for (int64_t d = 0; d < mem.getRank(); ++d)
        t.sizes.push_back(scalarArg(b.getI32Type()));
      for (int64_t d = 0; d < mem.getRank(); ++d)
        t.strides.push_back(scalarArg(b.getI32Type()));
      tensors[arg] = t;
      continue;
    }
    Value v = scalarArg(inWords ? arg.getType() : arg.getType().isInteger(1) ? b.getI32Type()
                                                                             : arg.getType());
    if (!inWords && arg.getType().isInteger(1))
      v = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v, i32(0));
    scalars.map(arg, v);
  }
  unsigned debugIndex = next;
  if (takesDebugBuffer(kernel, memory))
    debugBuffer = entry.getArgument(next++);
  for (BlockArgument attribution : gpuFunc.getWorkgroupAttributions())
    shared[cast<MemRefType>(attribution.getType()).getElementType()] = attribution;
  if (gpuFunc->hasAttr(kDynamicSharedAttr)) {
    // One dynamic shared block, carved into the per-type buffers at aligned
    // offsets.
    auto workgroup =
        mlir::gpu::AddressSpaceAttr::get(b.getContext(), mlir::gpu::AddressSpace::Workgroup);
    Value block = b.create<mlir::gpu::DynamicSharedMemoryOp>(
        loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), workgroup));
    SmallVector<int64_t> offsets = dynamicSharedLayout(kernel, matrixUnits);
    for (auto [type, offset] : llvm::zip(sharedBufferTypes(kernel, workgroup), offsets)) {
      auto memref = cast<MemRefType>(type);
      Value shift = b.create<arith::ConstantIndexOp>(loc, offset);
      shared[memref.getElementType()] =
          b.create<memref::ViewOp>(loc, memref, block, shift, ValueRange{});
    }
  }
  if (memory == MemoryModel::SPIRVBuffers) {
    auto workgroup = spirv::StorageClassAttr::get(b.getContext(), spirv::StorageClass::Workgroup);
    for (Type type : sharedBufferTypes(kernel, workgroup)) {
      auto memref = cast<MemRefType>(type);
      shared[memref.getElementType()] = b.create<memref::AllocOp>(loc, memref);
    }
  }

  if (failed(emitBlock(kernel.getBody().front())))
    return failure();
  if (loopLimit && memory == MemoryModel::SPIRVBuffers)
    guardLoopLimit(gpuFunc, debugIndex);
  b.create<mlir::gpu::ReturnOp>(loc);
  return success();
}

SmallVector<Value> ThreadEmitter::programIds() {
  SmallVector<Value> ids;
  for (int64_t axis = 0; axis < 3; ++axis) {
    Value id = b.create<mlir::gpu::BlockIdOp>(loc, mlir::gpu::Dimension(axis));
    id = b.create<arith::IndexCastOp>(loc, b.getI32Type(), id);
    if (gridWords) // this dispatch's first program id (kiln/KernelInfo.h)
      id = b.create<arith::AddIOp>(loc, id, gridWord(axis));
    ids.push_back(id);
  }
  return ids;
}

LogicalResult ThreadEmitter::emitBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

SmallVector<Value> ThreadEmitter::flatten(ValueRange values) {
  SmallVector<Value> flat;
  for (Value v : values) {
    if (isa<RankedTensorType>(v.getType()))
      llvm::append_range(flat, regs(v));
    else
      flat.push_back(scalar(v));
  }
  return flat;
}

void ThreadEmitter::unflatten(ValueRange originals, ValueRange flat) {
  size_t i = 0;
  for (Value v : originals) {
    if (isa<RankedTensorType>(v.getType())) {
      int64_t n = registers(v.getType());
      tiles[v] = Registers(flat.begin() + i, flat.begin() + i + n);
      i += n;
    } else {
      scalars.map(v, flat[i++]);
    }
  }
}

int64_t ThreadEmitter::flatCount(Value v, DotOp carriedBy) {
  if (carriedBy)
    return fragmentLayout(carriedBy, matrixUnits, layout.getNumWarps()).registers();
  return isa<RankedTensorType>(v.getType()) ? registers(v.getType()) : 1;
}

SmallVector<DotOp> ThreadEmitter::fragmentCarried(scf::ForOp op) {
  SmallVector<DotOp> dots(op.getNumRegionIterArgs());
  if (matrixUnits == MatrixUnits::None)
    return dots;
  auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
  for (auto [i, arg] : llvm::enumerate(op.getRegionIterArgs())) {
    if (!arg.hasOneUse())
      continue;
    auto dot = dyn_cast<DotOp>(arg.use_begin()->getOwner());
    if (dot && dot.getAcc() == arg && dot->getBlock() == op.getBody() &&
        yield.getOperand(i) == dot.getResult() && dot.getResult().hasOneUse() &&
        matrixInstruction(dot, matrixUnits, layout.getNumWarps()))
      dots[i] = dot;
  }
  return dots;
}

SmallVector<Value> ThreadEmitter::loopValues(ValueRange values, ArrayRef<DotOp> carried,
                                             bool fromBlocked) {
  SmallVector<Value> flat;
  for (auto [value, dot] : llvm::zip(values, carried)) {
    if (!dot) {
      llvm::append_range(flat, flatten(value));
    } else if (!fromBlocked) {
      llvm::append_range(flat, fragmentTiles.lookup(value));
    } else {
      // A zero accumulator needs no trip through shared memory.
      DenseElementsAttr constant;
      Type type = cast<RankedTensorType>(value.getType()).getElementType();
      if (matchPattern(value, m_Constant(&constant)) && constant.isSplat() &&
          (isa<FloatType>(type) ? constant.getSplatValue<APFloat>().isPosZero()
                                : constant.getSplatValue<APInt>().isZero()))
        flat.append(flatCount(value, dot), b.create<arith::ConstantOp>(loc, b.getZeroAttr(type)));
      else
        llvm::append_range(flat, toFragments(dot, regs(value)));
    }
  }
  return flat;
}

void ThreadEmitter::bindLoopValues(ValueRange originals, ValueRange flat, ArrayRef<DotOp> carried,
                                   bool toBlocked) {
  for (auto [original, dot] : llvm::zip(originals, carried)) {
    int64_t count = flatCount(original, dot);
    Registers values(flat.take_front(count));
    flat = flat.drop_front(count);
    if (!dot)
      unflatten(original, values);
    else if (!toBlocked)
      fragmentTiles[original] = std::move(values);
    else
      tiles[original] = fromFragments(dot, values, nullptr);
  }
}

LogicalResult ThreadEmitter::emitFor(scf::ForOp op) {
  Value lower = scalar(op.getLowerBound()), upper = scalar(op.getUpperBound()),
        step = scalar(op.getStep());
  auto add = [&](Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y).getResult(); };
  auto mul = [&](Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y).getResult(); };
  std::optional<Pipeline> pipeline = planPipeline(op);
  if (pipeline) // prologue: stages 0 .. S-2 take iterations 0 .. S-2
    for (int64_t s = 0; s + 1 < pipeline->stages; ++s)
      if (failed(issueStage(*pipeline, op, add(lower, mul(step, i32(s))), upper, i32(s))))
        return failure();

  // Accumulators that only a tensor-core dot updates stay in its fragment layout
  // from iteration to iteration; they change layout once before and once after.
  SmallVector<DotOp> carriedDots = fragmentCarried(op);
  SmallVector<Value> inits = loopValues(op.getInitArgs(), carriedDots, /*fromBlocked=*/true);
  // Device loops count in index: SPIR-V's loop lowering expects it.
  auto toIndex = [&](Value v) { return b.create<arith::IndexCastOp>(loc, b.getIndexType(), v); };
  auto loop = b.create<scf::ForOp>(loc, toIndex(lower), toIndex(upper), toIndex(step), inits);
  Block *body = loop.getBody();
  if (!body->empty())
    body->back().erase(); // the implicit yield of a loop without iter_args
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    Value iv = b.create<arith::IndexCastOp>(loc, op.getInductionVar().getType(),
                                            loop.getInductionVar());
    if (pipeline) {
      // Iteration i fetches iteration i + S - 1 into stage (i + S - 1) % S (the
      // stage iteration i - 1 multiplied from), then multiplies stage i % S.
      int64_t s = pipeline->stages;
      Value i = b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, iv, lower), step);
      Value ahead = add(i, i32(s - 1));
      if (failed(issueStage(*pipeline, op, add(iv, mul(step, i32(s - 1))), upper,
                            b.create<arith::RemUIOp>(loc, ahead, i32(s)))))
        return failure();
      Value current = b.create<arith::RemUIOp>(loc, i, i32(s));
      stagedDots[pipeline->dot] = {mul(current, i32(stageElements(pipeline->dot))), s - 1};
      for (auto &prefetch : pipeline->prefetches)
        prefetched.insert(prefetch.load);
    }
    scalars.map(op.getInductionVar(), iv);
    bindLoopValues(op.getRegionIterArgs(), loop.getRegionIterArgs(), carriedDots,
                   /*toBlocked=*/false);
    for (DotOp dot : carriedDots)
      if (dot)
        fragmentResultDots.insert(dot);
    if (failed(emitBlock(*op.getBody())))
      return failure();
    auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
    b.create<scf::YieldOp>(loc,
                           loopValues(yield.getOperands(), carriedDots, /*fromBlocked=*/false));
  }
  bindLoopValues(op.getResults(), loop.getResults(), carriedDots, /*toBlocked=*/true);
  if (pipeline) // the groups past the end were empty; drain anyway
    inlinePTX(b, loc, "cp.async.wait_all;", "", 0, Type(), {});
  return success();
}

SmallVector<Type> ThreadEmitter::flatTypes(TypeRange types) {
  SmallVector<Type> flat;
  for (Type t : types) {
    if (auto tile = dyn_cast<RankedTensorType>(t))
      flat.append(registers(tile), tile.getElementType());
    else
      flat.push_back(t);
  }
  return flat;
}

LogicalResult ThreadEmitter::emitIf(scf::IfOp op) {
  auto ifOp = b.create<scf::IfOp>(loc, flatTypes(op.getResultTypes()), scalar(op.getCondition()),
                                  /*withElse=*/true);
  for (auto [from, to] : {std::make_pair(&op.getThenRegion(), &ifOp.getThenRegion()),
                          std::make_pair(&op.getElseRegion(), &ifOp.getElseRegion())}) {
    OpBuilder::InsertionGuard guard(b);
    if (to->empty())
      to->emplaceBlock();
    Block *block = &to->front();
    if (!block->empty())
      block->back().erase();
    b.setInsertionPointToEnd(block);
    SmallVector<Value> yields;
    if (!from->empty()) {
      if (failed(emitBlock(from->front())))
        return failure();
      yields = flatten(cast<scf::YieldOp>(from->front().getTerminator()).getOperands());
    }
    b.create<scf::YieldOp>(loc, yields);
  }
  unflatten(op.getResults(), ifOp.getResults());
  return success();
}

LogicalResult ThreadEmitter::emitWhile(scf::WhileOp op) {
  Location at = loc;
  SmallVector<Value> inits = flatten(op.getInits());
  SmallVector<Type> beforeTypes = flatTypes(op.getBefore().getArgumentTypes());
  SmallVector<Type> afterTypes = flatTypes(op.getAfter().getArgumentTypes());
  auto loop = b.create<scf::WhileOp>(at, flatTypes(op.getResultTypes()), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *before = b.createBlock(&loop.getBefore(), {}, beforeTypes,
                                  SmallVector<Location>(beforeTypes.size(), at));
    unflatten(op.getBeforeArguments(), before->getArguments());
    if (failed(emitBlock(op.getBefore().front())))
      return failure();
    scf::ConditionOp condition = op.getConditionOp();
    b.create<scf::ConditionOp>(at, scalar(condition.getCondition()),
                               flatten(condition.getArgs()));
    Block *after = b.createBlock(&loop.getAfter(), {}, afterTypes,
                                 SmallVector<Location>(afterTypes.size(), at));
    unflatten(op.getAfterArguments(), after->getArguments());
    if (failed(emitBlock(op.getAfter().front())))
      return failure();
    b.create<scf::YieldOp>(at, flatten(op.getYieldOp().getOperands()));
  }
  unflatten(op.getResults(), loop.getResults());
  return success();
}

LogicalResult ThreadEmitter::emitOp(Operation *op) {
  loc = op->getLoc();
  if (auto o = dyn_cast<scf::ForOp>(op))
    return emitFor(o);
  if (auto o = dyn_cast<scf::IfOp>(op))
    return emitIf(o);
  if (auto o = dyn_cast<scf::WhileOp>(op))
    return emitWhile(o);
  if (auto o = dyn_cast<ProgramIdOp>(op)) {
    Value id = b.create<mlir::gpu::BlockIdOp>(loc, mlir::gpu::Dimension(o.getAxis()));
    id = b.create<arith::IndexCastOp>(loc, b.getI32Type(), id);
    if (gridWords) // this dispatch's first program id (kiln/KernelInfo.h)
      id = b.create<arith::AddIOp>(loc, id, gridWord(o.getAxis()));
    scalars.map(o.getResult(), id);
    return success();
  }
  if (auto o = dyn_cast<NumProgramsOp>(op)) {
    if (gridWords) {
      scalars.map(o.getResult(), gridWord(3 + o.getAxis()));
      return success();
    }
    Value n = b.create<mlir::gpu::GridDimOp>(loc, mlir::gpu::Dimension(o.getAxis()));
    scalars.map(o.getResult(), b.create<arith::IndexCastOp>(loc, b.getI32Type(), n));
    return success();
  }
  if (auto o = dyn_cast<memref::DimOp>(op)) {
    std::optional<int64_t> d = o.getConstantIndex();
    auto it = tensors.find(o.getSource());
    if (!d || it == tensors.end())
      return op->emitError("unsupported memref.dim in a GPU kernel");
    scalars.map(o.getResult(),
                b.create<arith::IndexCastOp>(loc, b.getIndexType(), it->second.sizes[*d]));
    return success();
  }
  if (auto o = dyn_cast<memref::ExtractStridedMetadataOp>(op)) {
    auto it = tensors.find(o.getSource());
    if (it == tensors.end())
      return op->emitError("unsupported memref.extract_strided_metadata in a GPU kernel");
    for (auto [result, stride] : llvm::zip(o.getStrides(), it->second.strides))
      scalars.map(result, b.create<arith::IndexCastOp>(loc, b.getIndexType(), stride));
    // Only the strides have a meaning on the device; other results must be unused.
    if (!o.getBaseBuffer().use_empty() || !o.getOffset().use_empty() ||
        llvm::any_of(o.getSizes(), [](Value v) { return !v.use_empty(); }))
      return op->emitError("only the strides of a tensor are available in GPU kernels");
    return success();
  }
  if (auto o = dyn_cast<ArangeOp>(op))
    return emitArange(o), success();
  if (auto o = dyn_cast<SplatOp>(op))
    return emitSplat(o), success();
  if (isa<ReshapeOp, ExpandDimsOp>(op)) {
    // Row-major order is unchanged, and so is every thread's share of it. Copy
    // before inserting: inserting may grow the map and move the source entry.
    Registers same = regs(op->getOperand(0));
    tiles[op->getResult(0)] = std::move(same);
    if (auto held = heldByEveryThread.find(op->getOperand(0)); held != heldByEveryThread.end()) {
      SmallVector<Value> elements = held->second;
      heldByEveryThread[op->getResult(0)] = std::move(elements);
    }
    return success();
  }
  if (auto o = dyn_cast<BroadcastOp>(op))
    return emitBroadcast(o), success();
  if (auto o = dyn_cast<TransOp>(op))
    return emitTrans(o), success();
  if (auto o = dyn_cast<GatherOp>(op))
    return emitGather(o), success();
  if (auto o = dyn_cast<ReduceOp>(op))
    return emitReduce(o), success();
  if (auto o = dyn_cast<ScanOp>(op))
    return emitScan(o), success();
  if (auto o = dyn_cast<DotOp>(op))
    return matrixInstruction(o, matrixUnits, layout.getNumWarps()) ? emitMatrixDot(o) : emitDot(o), success();
  if (prefetched.contains(op))
    return copiedToShared.insert(op->getResult(0)), success();
  if (auto block = dyn_cast<LoadBlockOp>(op))
    if (auto use = asyncOperand(block))
      return emitAsyncCopy(block, use->first, use->second), success();
  if (isa<LoadOp, LoadBlockOp>(op))
    return emitLoad(op);
  if (isa<StoreOp, StoreBlockOp>(op))
    return emitStore(op);
  if (isa<AtomicRMWOp, AtomicSwapOp>(op))
    return emitAtomic(op);
  if (auto o = dyn_cast<PrintOp>(op))
    return emitPrint(o);
  if (auto o = dyn_cast<AssertOp>(op))
    return emitAssert(o);
  if (isa<func::ReturnOp>(op))
    return success();
  return emitElementwise(op);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct ConvertKilnGPUToGPUPass
    : kiln::impl::ConvertKilnGPUToGPUBase<ConvertKilnGPUToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    MemoryModel model;
    if (memoryModel == "llvm")
      model = MemoryModel::LLVMPointers;
    else if (memoryModel == "spirv")
      model = MemoryModel::SPIRVBuffers;
    else {
      module.emitError("memory must be llvm or spirv, not '") << memoryModel << "'";
      return signalPassFailure();
    }
    ThreadEmitter::SubgroupReduce reduce;
    if (subgroupReduce == "shuffle")
      reduce = ThreadEmitter::SubgroupReduce::Shuffle;
    else if (subgroupReduce == "amd-swizzle")
      reduce = ThreadEmitter::SubgroupReduce::AMDSwizzle;
    else if (subgroupReduce == "native")
      reduce = ThreadEmitter::SubgroupReduce::Native;
    else {
      module.emitError("subgroup-reduce must be shuffle, amd-swizzle or native");
      return signalPassFailure();
    }
    std::optional<ThreadEmitter::Vendor> gpuVendor =
        llvm::StringSwitch<std::optional<ThreadEmitter::Vendor>>(vendor)
            .Case("nvidia", ThreadEmitter::Vendor::NVIDIA)
            .Case("amd", ThreadEmitter::Vendor::AMD)
            .Case("any", ThreadEmitter::Vendor::Any)
            .Default(std::nullopt);
    if (!gpuVendor) {
      module.emitError("vendor must be nvidia, amd or any, not '") << vendor << "'";
      return signalPassFailure();
    }
    std::optional<MatrixUnits> units = parseMatrixUnits(matrixUnits);
    if (!units) {
      module.emitError("matrix-units must be none, mma-sync, wgmma, mfma, mfma-cdna3 or wmma, "
                       "not '")
          << matrixUnits << "'";
      return signalPassFailure();
    }
    module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = b.create<mlir::gpu::GPUModuleOp>(module.getLoc(), "kiln_kernels");
    auto atModuleEnd = [&] {
      Block *body = gpuModule.getBody();
      if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
        b.setInsertionPoint(&body->back());
      else
        b.setInsertionPointToEnd(body);
    };

    SmallVector<func::FuncOp> kernels(module.getOps<func::FuncOp>());
    for (func::FuncOp kernel : kernels) {
      if (!kernel->hasAttr(kKernelAttr)) {
        kernel.erase(); // grid functions run on the host from the rule's text
        continue;
      }
      if (floatAtomicAdd && model == MemoryModel::SPIRVBuffers)
        kernel->setAttr(kFloatAtomicAddAttr, b.getUnitAttr());
      BlockedEncodingAttr layout = getKernelThreads(kernel);
      auto threadsAttr = kernel->getAttrOfType<IntegerAttr>(kThreadsAttr);
      int64_t threads = threadsAttr ? threadsAttr.getInt() : layout.getThreads();

      // Shared memory: workgroup attributions for the LLVM-based targets, or
      // views of dynamic shared memory above `dynamic-shared-above` bytes; SPIR-V's
      // lowering wants workgroup allocations instead (see emitKernel).
      SmallVector<Type> workgroup;
      auto sharedBytes = kernel->getAttrOfType<IntegerAttr>(kSharedBytesAttr);
      bool dynamicShared = model == MemoryModel::LLVMPointers && dynamicSharedAbove > 0 &&
                           sharedBytes && sharedBytes.getInt() > dynamicSharedAbove;
      if (model == MemoryModel::LLVMPointers && !dynamicShared)
        workgroup = sharedBufferTypes(kernel, mlir::gpu::AddressSpaceAttr::get(
                                                  ctx, mlir::gpu::AddressSpace::Workgroup));
      atModuleEnd();
      auto func = b.create<mlir::gpu::GPUFuncOp>(
          kernel.getLoc(), kernel.getName(),
          b.getFunctionType(ThreadEmitter::abiTypes(kernel, model), {}),
          workgroup, TypeRange{});
      for (unsigned i = 0; i < workgroup.size(); ++i)
        func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                         b.getI64IntegerAttr(sharedAlignment(*units)));
      func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
      func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
      for (StringRef name : {kThreadsAttr, kSharedBytesAttr})
        if (Attribute a = kernel->getAttr(name))
          func->setAttr(name, a);
      if (dynamicShared) {
        func->setAttr(kDynamicSharedAttr, b.getUnitAttr());
        func->setAttr(kSharedBytesAttr,
                      b.getI64IntegerAttr(dynamicSharedLayout(kernel, *units).back()));
      }

      OpBuilder bodyBuilder(ctx);
      ThreadEmitter emitter(bodyBuilder, layout, model, reduce, *gpuVendor, *units);
      emitter.loopLimit = loopLimit;
      if (failed(emitter.emitKernel(kernel, func)))
        return signalPassFailure();
      kernel.erase();
    }
  }
};
} // namespace

void ThreadEmitter::forEachElement(RankedTensorType tile,
                                   function_ref<void(Value held, Value flat, int64_t reg)> fn) {
  if (!tile) { // a uniform value: the first thread stands for the program
    fn(b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, threadId, i32(0)), i32(0), -1);
    return;
  }
  for (int64_t r = 0, n = registers(tile); r < n; ++r)
    fn(registerValid(r, tile.getNumElements()), elementIndex(r), r);
}

void ThreadEmitter::printElement(StringRef format, ArrayRef<Value> pids, RankedTensorType tile,
                                 Value flat, Value element, bool isUnsigned) {
  SmallVector<Value> args(pids);
  if (tile)
    args.append(delinearize(flat, tile.getShape()));
  if (element)
    args.push_back(printArgument(b, loc, element, isUnsigned));
  b.create<mlir::gpu::PrintfOp>(loc, b.getStringAttr(format), args);
}

LogicalResult ThreadEmitter::emitPrint(PrintOp op) {
  Value value = op.getValue();
  auto tile = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
  SmallVector<Value> pids{scalar(op.getPidX()), scalar(op.getPidY()), scalar(op.getPidZ())};
  // `print(flat, element)` prints the element at flat index `flat` of the tile
  // (0 for a scalar or no value).
  std::function<void(Value, Value)> print;
  if (memory == MemoryModel::SPIRVBuffers) {
    print = printToBuffer(op, pids);
  } else {
    bool isUnsigned = printsUnsigned(op);
    std::string format = printFormat(op.getPrefix(), tile ? tile.getRank() : 0,
                                     value ? getElementTypeOrSelf(value.getType()) : Type(),
                                     isUnsigned, printHexDigits(op));
    print = [=](Value flat, Value element) {
      printElement(format, pids, tile, flat, element, isUnsigned);
    };
  }
  Registers values = tile ? regs(value) : Registers();
  forEachElement(tile, [&](Value held, Value flat, int64_t r) {
    Value element = tile ? values[r] : value ? scalar(value) : Value();
    emitIfElse(held, {}, [&] {
      print(flat, element);
      return SmallVector<Value>{};
    }, nullptr);
  });
  return success();
}

/// A private constant NUL-terminated string in the GPU module being emitted
/// into, named after `base`; returns its address.
static Value gpuString(OpBuilder &b, Location loc, StringRef base, StringRef text) {
  auto module = b.getInsertionBlock()->getParent()->getParentOfType<mlir::gpu::GPUModuleOp>();
  std::string name;
  for (unsigned n = 0; name.empty() || module.lookupSymbol(name); ++n)
    name = (base + "_" + Twine(n)).str();
  std::string bytes = text.str() + std::string(1, '\0');
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    b.create<LLVM::GlobalOp>(loc, LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
                             /*isConstant=*/true, LLVM::Linkage::Internal, name,
                             b.getStringAttr(bytes));
  }
  return b.create<LLVM::AddressOfOp>(loc, LLVM::LLVMPointerType::get(b.getContext()), name);
}

LogicalResult ThreadEmitter::emitAssert(AssertOp op) {
  Value cond = op.getCondition();
  auto tile = dyn_cast<RankedTensorType>(cond.getType());
  SmallVector<Value> pids{scalar(op.getPidX()), scalar(op.getPidY()), scalar(op.getPidZ())};
  Value yes = b.create<arith::ConstantIntOp>(loc, 1, 1);
  // `fail(flat)` reports the element at flat index `flat` of the tile (0 for a
  // scalar condition).
  std::function<void(Value)> fail;
  if (memory == MemoryModel::SPIRVBuffers) {
    fail = reportToBuffer(op, pids);
  } else {
    // The failing element is printed as print prints it; then NVIDIA GPUs
    // call CUDA's __assertfail (the launch fails with a device-side assert,
    // whose message the driver prints), AMD GPUs trap. __assertfail's operands
    // are made once, before the checks.
    std::string format = printFormat(op.getMessage(), tile ? tile.getRank() : 0, Type());
    LLVM::LLVMFuncOp assertfail;
    SmallVector<Value> assertArgs;
    if (vendor == Vendor::NVIDIA) {
      auto module = b.getInsertionBlock()->getParent()->getParentOfType<mlir::gpu::GPUModuleOp>();
      auto ptr = LLVM::LLVMPointerType::get(b.getContext());
      assertfail = module.lookupSymbol<LLVM::LLVMFuncOp>("__assertfail");
      if (!assertfail) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(module.getBody());
        assertfail = b.create<LLVM::LLVMFuncOp>(
            loc, "__assertfail",
            LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                        {ptr, ptr, b.getI32Type(), ptr, b.getI64Type()}));
      }
      auto at = dyn_cast<FileLineColLoc>(op.getLoc());
      auto kernel = b.getInsertionBlock()->getParent()->getParentOfType<mlir::gpu::GPUFuncOp>();
      assertArgs = {gpuString(b, loc, "kiln_assert_message", op.getMessage()),
                    gpuString(b, loc, "kiln_assert_file", at ? at.getFilename().strref() : ""),
                    i32(at ? at.getLine() : 0),
                    gpuString(b, loc, "kiln_assert_function", kernel.getName()),
                    b.create<arith::ConstantIntOp>(loc, 1, 64)};
    }
    fail = [=](Value flat) {
      printElement(format, pids, tile, flat, Value());
      if (assertfail)
        b.create<LLVM::CallOp>(loc, assertfail, assertArgs);
      else
        b.create<LLVM::Trap>(loc);
    };
  }
  Registers holds = tile ? regs(cond) : Registers();
  forEachElement(tile, [&](Value held, Value flat, int64_t r) {
    Value fails = b.create<arith::XOrIOp>(loc, tile ? holds[r] : scalar(cond), yes);
    emitIfElse(b.create<arith::AndIOp>(loc, held, fails), {}, [&] {
      fail(flat);
      return SmallVector<Value>{};
    }, nullptr);
  });
  return success();
}

int64_t ThreadEmitter::addToDebugTable(StringRef table, ArrayRef<NamedAttribute> entry) {
  auto func = b.getInsertionBlock()->getParent()->getParentOfType<mlir::gpu::GPUFuncOp>();
  SmallVector<Attribute> entries;
  if (auto existing = func->getAttrOfType<ArrayAttr>(table))
    entries.assign(existing.begin(), existing.end());
  entries.push_back(b.getDictionaryAttr(entry));
  func->setAttr(table, b.getArrayAttr(entries));
  return static_cast<int64_t>(entries.size()) - 1;
}

/// The shape of `v`'s tile, empty for a scalar or no value.
static DenseI64ArrayAttr shapeAttr(OpBuilder &b, Value v) {
  auto tile = v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
  return b.getDenseI64ArrayAttr(tile ? tile.getShape() : ArrayRef<int64_t>{});
}

std::function<void(Value)> ThreadEmitter::reportToBuffer(AssertOp op,
                                                         ArrayRef<Value> programIds) {
  return reportToBuffer(op.getMessageAttr(), shapeAttr(b, op.getCondition()), programIds);
}

std::function<void(Value)> ThreadEmitter::reportToBuffer(StringAttr message,
                                                         DenseI64ArrayAttr shape,
                                                         ArrayRef<Value> programIds) {
  Value which = i32(addToDebugTable(kAssertsAttr, {b.getNamedAttr("message", message),
                                                   b.getNamedAttr("shape", shape)}));
  SmallVector<Value> pids(programIds);
  // Every failure counts itself in word 0; the first also writes its details.
  return [this, which, pids](Value flat) {
    auto word = [&](int64_t w) -> Value { return b.create<arith::ConstantIndexOp>(loc, w); };
    Value before = b.create<memref::AtomicRMWOp>(loc, arith::AtomicRMWKind::addi, i32(1),
                                                 debugBuffer, word(0));
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, before, i32(0));
    emitIfElse(first, {}, [&] {
      SmallVector<Value> details{which, pids[0], pids[1], pids[2], flat};
      for (auto [w, value] : llvm::enumerate(details))
        b.create<memref::StoreOp>(loc, value, debugBuffer, word(w + 1));
      return SmallVector<Value>{};
    }, nullptr);
  };
}

std::function<void(Value, Value)> ThreadEmitter::printToBuffer(PrintOp op,
                                                               ArrayRef<Value> programIds) {
  // The value travels as one or two i32 words of the type the runtime prints:
  // narrow floats as f32, narrow integers and bools as i32 (u32 when unsigned).
  Value value = op.getValue();
  Type element = value ? getElementTypeOrSelf(value.getType()) : Type();
  bool isUnsigned = printsUnsigned(op);
  StringRef printed = "";
  if (element && isa<FloatType>(element))
    printed = element.isF64() ? "f64" : "f32";
  else if (element)
    printed = element.isInteger(64) ? (isUnsigned ? "u64" : "i64") : (isUnsigned ? "u32" : "i32");
  Value which = i32(addToDebugTable(
      kPrintsAttr, {b.getNamedAttr("prefix", op.getPrefixAttr()),
                    b.getNamedAttr("shape", shapeAttr(b, value)),
                    b.getNamedAttr("dtype", b.getStringAttr(printed)),
                    b.getNamedAttr("hex", b.getI32IntegerAttr(printHexDigits(op)))}));
  SmallVector<Value> pids(programIds);
  return [this, which, pids, isUnsigned](Value flat, Value v) {
    Value lo = i32(0), hi = i32(0);
    if (v) {
      Type type = v.getType();
      if (type.isF64() || type.isInteger(64)) {
        Value bits = type.isF64() ? b.create<arith::BitcastOp>(loc, b.getI64Type(), v) : v;
        lo = b.create<arith::TruncIOp>(loc, b.getI32Type(), bits);
        Value shift = b.create<arith::ConstantIntOp>(loc, 32, 64);
        hi = b.create<arith::TruncIOp>(loc, b.getI32Type(),
                                       b.create<arith::ShRUIOp>(loc, bits, shift));
      } else if (isa<FloatType>(type)) {
        Value f = type.isF32() ? v : b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
        lo = b.create<arith::BitcastOp>(loc, b.getI32Type(), f);
      } else {
        lo = printArgument(b, loc, v, isUnsigned); // i32, or bools and narrow ints widened
      }
    }
    // Claim a record; past the buffer's end the record is dropped (the runtime
    // reports how many were).
    Value count = b.create<arith::ConstantIndexOp>(loc, kPrintCountWord);
    Value slot = b.create<memref::AtomicRMWOp>(loc, arith::AtomicRMWKind::addi, i32(1),
                                               debugBuffer, count);
    Value fits = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, slot, i32(kPrintRecords));
    emitIfElse(fits, {}, [&] {
      Value base = b.create<arith::AddIOp>(
          loc, i32(kDebugHeaderWords), b.create<arith::MulIOp>(loc, slot, i32(kPrintRecordWords)));
      SmallVector<Value> record{which, pids[0], pids[1], pids[2], flat, lo, hi};
      for (auto [w, word] : llvm::enumerate(record)) {
        Value at = b.create<arith::AddIOp>(loc, base, i32(w));
        Value index = b.create<arith::IndexCastOp>(loc, b.getIndexType(), at);
        b.create<memref::StoreOp>(loc, word, debugBuffer, index);
      }
      return SmallVector<Value>{};
    }, nullptr);
  };
}
