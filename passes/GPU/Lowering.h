//===- Lowering.h - per-thread code for laid-out kiln kernels ---*- C++ -*-===//
//
// The conversion from kiln (with #kiln_gpu.blocked tiles) to gpu.func walks each
// kernel once, mapping every tile value to the registers (scalars) the running
// thread holds, and every scalar to a scalar. One file per op family implements the
// emit* methods: ElementwiseToGPU, MemoryToGPU, ExchangeToGPU; KilnGPUToGPU holds
// the driver, the kernel signature and control flow.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/KilnGPU/IR/KilnGPUDialect.h"
#include "passes/GPU/MatrixUnits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <array>
#include <functional>

namespace kiln::gpu {

/// How global memory is reached: through LLVM global pointers (NVVM, ROCDL) or
/// through 1-D memrefs that become SPIR-V storage buffers.
enum class MemoryModel { LLVMPointers, SPIRVBuffers };

/// A tensor argument inside the kernel: its base and i32 sizes and strides.
struct TensorArg {
  mlir::Value base;
  mlir::Type elementType;       // the element type in the tile
  mlir::Type storageType;       // the element type in memory (i1 and fp8 as i8)
  llvm::SmallVector<mlir::Value> sizes, strides;

  /// A tile element as it is stored, and a stored element as the tile holds it.
  mlir::Value toStorage(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v) const;
  mlir::Value fromStorage(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v) const;
  /// SPIR-V, which has no 16-bit atomics: 16-bit floats that atomics update
  /// are held two to a 32-bit word, the even element in the low half.
  bool holdsHalves() const;
  /// The memref index of the stored element (or word) that holds element
  /// `offset` (i32), then the element in it, and it with the element replaced.
  mlir::Value storedIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value offset) const;
  mlir::Value elementIn(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stored,
                        mlir::Value offset) const;
  mlir::Value withElement(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stored,
                          mlir::Value offset, mlir::Value element) const;
};

/// One shared-memory buffer type per element type the kernel exchanges, sized by
/// kiln-gpu-allocate-shared-memory, in `memorySpace`.
llvm::SmallVector<mlir::Type> sharedBufferTypes(mlir::func::FuncOp kernel,
                                                mlir::Attribute memorySpace);

/// Byte offsets of the shared buffers (sharedBufferTypes' order) inside one
/// dynamic shared block, sharedAlignment(units) aligned, followed by the
/// block's size.
llvm::SmallVector<int64_t> dynamicSharedLayout(mlir::func::FuncOp kernel, MatrixUnits units);

/// SPIR-V kernels receive every size, stride and scalar argument in one block of
/// 32-bit words (64-bit values take two, low first): push constants after the
/// grid words, or an argument buffer when they do not fit (kiln/KernelInfo.h).
int64_t argumentWords(mlir::TypeRange kernelArgs);

/// A tile as one thread sees it: the registers it holds, one scalar each.
using Registers = llvm::SmallVector<mlir::Value>;

/// Inline PTX returning `results` values of `type` (none when 0).
llvm::SmallVector<mlir::Value> inlinePTX(mlir::OpBuilder &b, mlir::Location loc,
                                         llvm::StringRef text, llvm::StringRef constraints,
                                         unsigned results, mlir::Type type,
                                         mlir::ValueRange operands);

class ThreadEmitter {
public:
  /// How a whole-tile reduction crosses the lanes of a subgroup.
  enum class SubgroupReduce { Shuffle, AMDSwizzle, Native };
  /// Whose GPU the code is for, where the IR alone does not say (with LLVM
  /// pointers: which fences order a lock's atomics).
  enum class Vendor { NVIDIA, AMD, Any };

  ThreadEmitter(mlir::OpBuilder &builder, BlockedEncodingAttr layout, MemoryModel memory,
                SubgroupReduce subgroupReduce, Vendor vendor,
                MatrixUnits matrixUnits = MatrixUnits::None)
      : b(builder), layout(layout), memory(memory),
        nativeSubgroupReduce(subgroupReduce == SubgroupReduce::Native),
        amdSwizzle(subgroupReduce == SubgroupReduce::AMDSwizzle), vendor(vendor),
        matrixUnits(matrixUnits) {}

  /// Emits the body of `kernel` into the entry block of `gpuFunc`.
  mlir::LogicalResult emitKernel(mlir::func::FuncOp kernel, mlir::gpu::GPUFuncOp gpuFunc);

  /// The gpu.func argument types for a kiln kernel's arguments (with the debug
  /// buffer after the tensors where `takesDebugBuffer`).
  static llvm::SmallVector<mlir::Type> abiTypes(mlir::func::FuncOp kernel, MemoryModel memory);
  /// Whether `kernel` compiled for `memory` takes a debug buffer: on Vulkan and
  /// Metal, where a kernel cannot print, print and device_assert write there
  /// for the runtime to report (kiln/KernelInfo.h).
  static bool takesDebugBuffer(mlir::func::FuncOp kernel, MemoryModel memory);

  /// Loop iterations one invocation may run in all on this device, or 0 for no
  /// limit. lavapipe (llvmpipe) ends every loop of an invocation once its loops
  /// have iterated 65535 times together, silently; LoopLimit.cpp makes such a
  /// cut loop fail the launch instead.
  int64_t loopLimit = 0;

private:
  /// LoopLimit.cpp: when the loops emitted into `gpuFunc` may iterate past
  /// `loopLimit`, records in each loop whether it ran to its end and reports
  /// through the debug buffer (added at argument `debugIndex` if the kernel has
  /// none) when one did not.
  void guardLoopLimit(mlir::gpu::GPUFuncOp gpuFunc, unsigned debugIndex);
  /// This program's ids (i32), as program_id gives them.
  llvm::SmallVector<mlir::Value> programIds();

  // KilnGPUToGPU.cpp: dispatch and control flow.
  mlir::LogicalResult emitBlock(mlir::Block &block);
  mlir::LogicalResult emitOp(mlir::Operation *op);
  mlir::LogicalResult emitFor(mlir::scf::ForOp op);
  /// Per iter_arg of `op`: the tensor-core dot that alone updates it (its only
  /// use is that dot's accumulator, and the dot's result is yielded straight
  /// back), so the loop may carry it as fragments; null elsewhere.
  llvm::SmallVector<DotOp> fragmentCarried(mlir::scf::ForOp op);
  /// How many flat loop values `v` takes (fragments when `carriedBy` is set).
  int64_t flatCount(mlir::Value v, DotOp carriedBy);
  /// The flat loop values of `values` (inits or yields); those `carried` by a
  /// dot are fragments, converted from their blocked registers when
  /// `fromBlocked` (inits) or already fragments (yields).
  llvm::SmallVector<mlir::Value> loopValues(mlir::ValueRange values,
                                            llvm::ArrayRef<DotOp> carried, bool fromBlocked);
  /// Binds `originals` (iter_args, or results when `toBlocked`: fragments back
  /// to the blocked layout) to consecutive slices of `flat`.
  void bindLoopValues(mlir::ValueRange originals, mlir::ValueRange flat,
                      llvm::ArrayRef<DotOp> carried, bool toBlocked);

  /// A loop with `kiln.stages` = S whose tile loads feed one tensor-core dot:
  /// those loads (and the scalar ops their offsets need) run S - 1 iterations
  /// ahead with cp.async into S operand buffers (PipelineToGPU.cpp); nullopt
  /// when the loop does not qualify.
  struct Pipeline {
    int64_t stages;
    DotOp dot;
    struct Prefetch {
      LoadBlockOp load;
      unsigned operand;
      llvm::SmallVector<mlir::Operation *> slice; // offset computations, in order
    };
    llvm::SmallVector<Prefetch> prefetches;
  };
  std::optional<Pipeline> planPipeline(mlir::scf::ForOp op);
  /// Issues (and commits) the copies of iteration `iv` into stage `stage`, or an
  /// empty group when `iv` is past the loop's end `upper`.
  mlir::LogicalResult issueStage(const Pipeline &p, mlir::scf::ForOp op, mlir::Value iv,
                                 mlir::Value upper, mlir::Value stage);
  /// Elements one stage of `dot`'s operands takes in shared memory.
  static int64_t stageElements(DotOp dot);
  mlir::LogicalResult emitIf(mlir::scf::IfOp op);
  /// A `while` loop: its condition is a program-wide scalar, so every thread
  /// of a program takes the same number of trips (barriers inside are safe).
  mlir::LogicalResult emitWhile(mlir::scf::WhileOp op);
  llvm::SmallVector<mlir::Value> flatten(mlir::ValueRange values);
  /// The types of flatten's values for values of `types`.
  llvm::SmallVector<mlir::Type> flatTypes(mlir::TypeRange types);
  void unflatten(mlir::ValueRange originals, mlir::ValueRange flat);

  // ElementwiseToGPU.cpp
  mlir::LogicalResult emitElementwise(mlir::Operation *op);
  void emitArange(ArangeOp op);
  void emitSplat(SplatOp op);

  /// Reads a value of `type` from the push-constant block at `word`, advancing it.
  mlir::Value decodeWords(mlir::Value block, int64_t &word, mlir::Type type);
  /// SPIR-V: word `word` of the grid words (first program ids, then the grid).
  mlir::Value gridWord(int64_t word);
  /// SPIR-V: whether the grid words and `words` argument words fit in push
  /// constants together (else the argument words take the argument buffer).
  static bool argumentsArePushed(int64_t words);

  // MemoryToGPU.cpp
  mlir::LogicalResult emitLoad(mlir::Operation *op);
  mlir::LogicalResult emitStore(mlir::Operation *op);
  /// kiln.atomic_rmw and kiln.atomic_swap: the thread that owns each element
  /// updates it. A scalar atomic waits for all the program's threads first, is
  /// made by thread 0, and its old value is shared through shared memory.
  mlir::LogicalResult emitAtomic(mlir::Operation *op);
  /// The atomic update of one element of `t` at `offset`; returns its old value.
  mlir::Value atomicUpdate(mlir::Operation *op, const TensorArg &t, mlir::Value offset,
                           mlir::Value value, mlir::Value compare);
  /// SPIR-V: swaps `desired` into element `index` (memref index) of `t` where it
  /// holds `expected`; returns what it held.
  mlir::Value compareAndSwap(const TensorArg &t, mlir::Value index, mlir::Value expected,
                             mlir::Value desired);
  /// SPIR-V float atomics on a tensor held as integers: replaces each
  /// register's element (at `offsets`, where `oks`) with `update(element, r)`
  /// by compare-and-swap loops; returns the old values (0 where not ok). In
  /// uniform control flow: it reduces across the program (`numElements` in its
  /// tile, 1 for a scalar).
  Registers updateBySwaps(const TensorArg &t, llvm::ArrayRef<mlir::Value> offsets,
                          llvm::ArrayRef<mlir::Value> oks,
                          llvm::function_ref<mlir::Value(mlir::Value, int64_t)> update,
                          int64_t numElements);
  /// `value`, as thread 0 has it, in every thread.
  mlir::Value broadcastFromThread0(mlir::Value value);
  /// Whether this thread writes register `reg` of a stored `tile` (null for a
  /// scalar): each element is written by exactly one thread, and only where
  /// `mask` (optional) holds.
  mlir::Value writerOk(mlir::RankedTensorType tile, mlir::Value mask, int64_t reg);
  /// The per-dimension coordinates of register r's element for a gather access
  /// (`indices`) or a block access (`offsets` of a `tile`-shaped block).
  std::function<llvm::SmallVector<mlir::Value>(int64_t)>
  coordinates(mlir::ValueRange indices, mlir::ValueRange offsets, mlir::RankedTensorType tile);
  /// Whether `numRegisters` registers of `t` can move as aligned runs of `vec`
  /// elements (LLVM pointers, 4-, 8- or 16-byte vector accesses).
  bool canAccessRuns(const TensorArg &t, int64_t numRegisters);
  mlir::Value loadElement(const TensorArg &t, mlir::Value offset);
  /// The element at `offset` where `ok` holds, else `other` (no access made).
  mlir::Value loadElementOr(const TensorArg &t, mlir::Value offset, mlir::Value ok,
                            mlir::Value other);
  void storeElement(const TensorArg &t, mlir::Value offset, mlir::Value value);
  /// Loads `vec` consecutive elements at `offset` with one aligned vector access.
  mlir::Value loadRun(const TensorArg &t, mlir::Value offset, unsigned vec);
  void storeRun(const TensorArg &t, mlir::Value offset, mlir::ValueRange values);
  mlir::Value isAlignedRun(const TensorArg &t, mlir::Value offset, unsigned vec);

  /// Copies a block load that only feeds a tensor-core dot straight into that
  /// dot's shared-memory operand with cp.async (one 4- to 16-byte chunk per
  /// run of registers), when
  /// `asyncOperand` allows it; the dot then reads it in place.
  /// `stageBase` (i32 elements, null for 0) selects a pipeline stage's operand
  /// buffer; `commit` closes the copy group (a pipelined loop commits one group
  /// per iteration instead).
  void emitAsyncCopy(LoadBlockOp op, DotOp dot, unsigned operand,
                     mlir::Value stageBase = nullptr, bool commit = true);

  // ExchangeToGPU.cpp
  void emitBroadcast(BroadcastOp op);
  void emitTrans(TransOp op);
  /// The source goes through shared memory; each result register reads the
  /// element its index register names.
  void emitGather(GatherOp op);
  void emitReduce(ReduceOp op);
  /// gpu.printf per element by the thread that holds it (a scalar: thread 0).
  mlir::LogicalResult emitPrint(PrintOp op);
  mlir::LogicalResult emitAssert(AssertOp op);
  /// SPIR-V: appends `entry` to the kernel's `table` (kiln_gpu.asserts or
  /// kiln_gpu.prints), which becomes the kernel's metadata; returns its index.
  int64_t addToDebugTable(llvm::StringRef table, llvm::ArrayRef<mlir::NamedAttribute> entry);
  /// SPIR-V: adds `op` to the assert table and returns what records a failure
  /// at a flat tile index in the debug buffer.
  std::function<void(mlir::Value)> reportToBuffer(AssertOp op,
                                                  llvm::ArrayRef<mlir::Value> programIds);
  /// The same for a failure of `shape` (empty: a scalar) that `message` describes.
  std::function<void(mlir::Value)> reportToBuffer(mlir::StringAttr message,
                                                  mlir::DenseI64ArrayAttr shape,
                                                  llvm::ArrayRef<mlir::Value> programIds);
  /// SPIR-V: adds `op` to the print table and returns what writes a record of
  /// an element (flat tile index, value or null) to the debug buffer.
  std::function<void(mlir::Value, mlir::Value)>
  printToBuffer(PrintOp op, llvm::ArrayRef<mlir::Value> programIds);
  /// For each element of `tile` this thread holds (its register `reg`), or for
  /// a scalar (null tile; reg -1) once per program: `fn(held, flat, reg)`, with
  /// `held` whether this thread has the element and `flat` its index in the tile.
  void forEachElement(mlir::RankedTensorType tile,
                      llvm::function_ref<void(mlir::Value held, mlir::Value flat, int64_t reg)> fn);
  /// gpu.printf of one element in print's format: the program ids, the
  /// element's coordinates in `tile` (when not null), then `element` (if any,
  /// zero-extended when `isUnsigned`).
  void printElement(llvm::StringRef format, llvm::ArrayRef<mlir::Value> pids,
                    mlir::RankedTensorType tile, mlir::Value flat, mlir::Value element,
                    bool isUnsigned = false);
  void emitScan(ScanOp op);
  void emitDot(DotOp op);
  /// A dot on the target's matrix instructions (MatrixToGPU.cpp).
  void emitMatrixDot(DotOp op);
  /// The dot (and its operand number) that `load` may be copied into
  /// asynchronously: its only use, in the same block, on mma-sync or wgmma,
  /// with no shared-memory exchange in between, and rows made of whole runs.
  std::optional<std::pair<DotOp, unsigned>> asyncOperand(LoadBlockOp load);
  /// The tile origin (row0, col0) of fragment slot `slot` for this thread, and
  /// whether the slot holds a tile at all.
  std::array<mlir::Value, 3> fragmentTile(const FragmentLayout &f, int64_t slot);
  /// The (row, col) in the result of register `reg` of the tile at (row0, col0).
  std::pair<mlir::Value, mlir::Value> fragmentElement(const FragmentLayout &f, mlir::Value row0,
                                                      mlir::Value col0, int64_t reg);
  /// A blocked-layout accumulator of `dot` in its fragment layout, and back
  /// (adding `addend`, a blocked tile, when given); both go through shared memory.
  Registers toFragments(DotOp dot, const Registers &blocked);
  Registers fromFragments(DotOp dot, const Registers &fragments, const Registers *addend);
  /// The shared-memory element index of element `e` (row-major in the operand
  /// tile) of operand `operand` (0: A, 1: B) of a matrix dot.
  mlir::Value matrixOperandIndex(DotOp dot, unsigned operand, mlir::Value e,
                                 mlir::Value stageBase = nullptr);
  /// Writes `source` to shared memory and builds each register of a `result` tile
  /// from its element's index with `compute` (which reads shared memory); barriers
  /// fence both sides.
  Registers exchange(mlir::Value source, mlir::RankedTensorType result,
                     llvm::function_ref<mlir::Value(llvm::ArrayRef<mlir::Value>)> compute);
  /// exchange's second half, once shared memory holds what `compute` reads.
  Registers readExchanged(mlir::RankedTensorType result,
                          llvm::function_ref<mlir::Value(llvm::ArrayRef<mlir::Value>)> compute);
  mlir::Value reduceWholeTile(const Registers &regs, int64_t numElements, ReduceKind kind,
                              mlir::Type type);
  /// A reduction along the last axis of rows that each thread holds in whole
  /// segments of `segment` elements (a divisor of the row and of the layout's
  /// vec): each segment is folded in registers and shared as one partial, so a
  /// result reads row / segment partials instead of the row's elements.
  Registers reduceRowSegments(ReduceOp op, int64_t segment);
  /// A reduction along the last axis of rows that span whole waves of the
  /// program's threads (a [4, 1024] tile over 128 threads of 4-element runs):
  /// each row is reduced like a whole tile, in registers, across the subgroup
  /// and through shared memory, so every thread holds every row's total.
  Registers reduceLongRows(ReduceOp op);
  /// For a reduction along an axis other than the last: where a thread's
  /// registers hold several elements of one result (the tile repeats its thread
  /// layout along the axis), folds them in registers and writes one partial a
  /// group to shared memory, where the group's first element lies. Returns how
  /// many positions from the start of the axis the partials fill (a result
  /// reads those), or 0, having written nothing, where the tile does not repeat
  /// the layout in whole waves (n % wave or the slab % lcm(wave, stride) is not
  /// 0) or no two registers fold.
  int64_t foldAlongAxis(ReduceOp op);
  /// An inclusive scan in log2(length) steps (Hillis and Steele): at step s
  /// every element combines the partial 2^s places before it along the axis,
  /// through shared memory; along the last axis each thread first scans its
  /// runs in registers and only their totals take the steps. For long axes,
  /// where folding each prefix would read length / 2 elements per element.
  Registers scanByDoubling(ScanOp op);
  /// Writes a tile's valid registers to shared memory at `base` + element index,
  /// or at `base` + place(element index) when `place` is given; `place` keeps
  /// runs of `together` elements (a power of two dividing the layout's vec)
  /// contiguous, so it is asked once a run.
  void writeShared(const Registers &regs, int64_t numElements, mlir::Type type,
                   int64_t base = 0,
                   llvm::function_ref<mlir::Value(mlir::Value)> place = nullptr,
                   int64_t together = 1);
  /// Stores `v` at element `index` (i32) of the shared buffer for `type` where
  /// `valid` holds.
  void writeSharedAt(mlir::Value v, mlir::Value index, mlir::Value valid, mlir::Type type);
  mlir::Value readShared(mlir::Value index, mlir::Type type);
  /// `v` as shared memory holds it (sharedStorageType's bits).
  mlir::Value toSharedStorage(mlir::Value v);
  mlir::Value sharedBuffer(mlir::Type elementType);
  /// A barrier of the program's threads. With `deviceMemory` it also orders
  /// their accesses to tensors, for atomics that release or acquire: a GPU's
  /// barrier does that already, SPIR-V's workgroup barrier only for shared
  /// memory (kiln-gpu-to-spirv adds UniformMemory to barriers marked so).
  void barrier(bool deviceMemory = false);

  /// An scf.if whose branches are emitted through this emitter's builder; each
  /// branch returns the values it yields. `elseFn` may be null when nothing is
  /// yielded.
  mlir::scf::IfOp emitIfElse(mlir::Value cond, mlir::TypeRange types,
                             llvm::function_ref<llvm::SmallVector<mlir::Value>()> thenFn,
                             llvm::function_ref<llvm::SmallVector<mlir::Value>()> elseFn);

  // Layout arithmetic (KilnGPUToGPU.cpp).
  mlir::Value elementIndex(int64_t reg);
  mlir::Value registerValid(int64_t reg, int64_t numElements);
  llvm::SmallVector<mlir::Value> delinearize(mlir::Value flat, llvm::ArrayRef<int64_t> shape);
  mlir::Value linearize(mlir::ValueRange index, llvm::ArrayRef<int64_t> shape);
  int64_t registers(mlir::Type tileType) const;
  mlir::Value i32(int64_t v);
  mlir::Value combine(ReduceKind kind, mlir::Value a, mlir::Value b);
  mlir::Value identity(ReduceKind kind, mlir::Type type);

  mlir::Value scalar(mlir::Value original) const { return scalars.lookup(original); }
  /// The registers of an already emitted tile. The reference is invalidated by
  /// the next insertion into `tiles`.
  const Registers &regs(mlir::Value original) const {
    auto it = tiles.find(original);
    assert(it != tiles.end() && "tile used before it was emitted");
    return it->second;
  }
  /// A register of an operand that may be a tile or a (uniform) scalar.
  mlir::Value element(mlir::Value original, int64_t reg) const;

  mlir::OpBuilder &b;
  BlockedEncodingAttr layout;
  MemoryModel memory;
  bool nativeSubgroupReduce;
  bool amdSwizzle; // subgroup reductions by ds_swizzle
  Vendor vendor;
  MatrixUnits matrixUnits;
  mlir::Location loc = mlir::UnknownLoc::get(b.getContext());
  mlir::Value threadId; // i32
  mlir::Value debugBuffer; // memref<?xi32>, SPIR-V kernels with asserts or prints
  mlir::Value gridWords;   // memref<Nxi32> push constants, SPIR-V kernels
  mlir::IRMapping scalars;
  llvm::DenseMap<mlir::Value, Registers> tiles;
  /// Tiles every thread also holds whole, as scalars in row-major order
  /// (reduceLongRows' results, and reshapes of them): broadcasts of them take
  /// no exchange.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Value>> heldByEveryThread;
  llvm::DenseMap<mlir::Value, TensorArg> tensors;
  llvm::DenseMap<mlir::Type, mlir::Value> shared;
  llvm::DenseMap<int64_t, mlir::Value> elementIndexCache;
  /// Dot operands already copied into shared memory by emitAsyncCopy.
  llvm::DenseSet<mlir::Value> copiedToShared;
  /// Loads a pipelined loop issued ahead; the loop body skips them.
  llvm::DenseSet<mlir::Operation *> prefetched;
  /// Dots of pipelined loops: the current stage's operand base (i32 elements)
  /// and how many copy groups may stay in flight when the dot starts.
  struct StagedDot {
    mlir::Value stageBase;
    int64_t inFlight;
  };
  llvm::DenseMap<mlir::Operation *, StagedDot> stagedDots;
  /// Accumulators a loop carries in their dot's fragment layout (see emitFor),
  /// and the dots whose results stay in it.
  llvm::DenseMap<mlir::Value, Registers> fragmentTiles;
  llvm::DenseSet<mlir::Operation *> fragmentResultDots;
};

} // namespace kiln::gpu
