//===- Passes.td - Kiln's transforms and conversions -------------*- tablegen -*-===//

#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnLowerProgramIds : Pass<"kiln-lower-program-ids", "mlir::ModuleOp"> {
  let summary = "Pass the program coordinates to CPU kernels as arguments";
  let description = [{
    On the CPU a program instance is a call of the kernel function. This pass appends
    six `i32` arguments to every `kiln.kernel` function (program id x, y, z, then the
    grid size x, y, z) and replaces `kiln.program_id` and `kiln.num_programs` with them.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertKilnToLinalg : Pass<"convert-kiln-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln tile ops to linalg, tensor, scf and memref";
  let description = [{
    Tile construction, shape ops, reductions and dot become linalg ops on tensors;
    masked loads become `linalg.generic` bodies that read memory under `scf.if`;
    stores become loop nests of guarded `memref.store`. Elementwise arith and math on
    tensors are left for `convert-elementwise-to-linalg`.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def KilnExpandAssociativeScans : Pass<"kiln-expand-associative-scans", "mlir::ModuleOp"> {
  let summary = "Expand kiln.associative_scan into trees of gathers";
  let description = [{
    Each scan becomes ceil(log2(n)) steps: every operand's partner `s` lanes
    earlier (later with `reverse`) is gathered along the axis, the combine
    function's tile specialization is called on the partners and the tiles, and
    a select keeps the combination where the partner exists. Runs before
    `inline`. With `keep-foldable` (the CPU pipeline) scans whose scalar combine
    function only computes (no kiln op, no memory effect, also in what it calls)
    are left for convert-kiln-to-linalg to fold row by row.
  }];
  let options = [
    Option<"keepFoldable", "keep-foldable", "bool", /*default=*/"false",
           "Leave scans whose scalar combine function only computes">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def KilnSimplifyMasks : Pass<"kiln-simplify-masks", "mlir::ModuleOp"> {
  let summary = "Fold load/store masks that are uniform constants";
  let description = [{
    A mask that is a splat of `true` (for example after params fold a comparison)
    guards nothing: the op is rewritten without it, and the automatic bounds checks
    remain. A splat of `false` means nothing is touched: the load becomes its
    `other` value (or zero) and the store disappears.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnFuseElementwise : Pass<"kiln-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg ops, recomputing cheap shared producers";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` with one change: a producer with
    several uses is also fused into each consumer when its body is at most
    `max-recomputed-ops` arithmetic ops (no divisions, math calls or memory
    reads). Index tiles, the masks compared from them and broadcasts are cheaper
    to recompute than to store and reload, and a shared `i1` mask would keep
    every consumer from being vectorized.

    A fusion whose body would exceed `max-fused-ops` ops is not made: each
    fusion clones both bodies, so fusing a chain of n steps (an unrolled
    `static_range` accumulation) into one op would cost n^2 / 2 clones.
  }];
  let options = [
    Option<"maxRecomputedOps", "max-recomputed-ops", "int64_t", /*default=*/"4",
           "Largest producer body (in ops) recomputed by each of several consumers">,
    Option<"maxFusedOps", "max-fused-ops", "int64_t", /*default=*/"256",
           "Largest body (in ops) a fusion may make">
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::affine::AffineDialect"];
}

def KilnWidenBoolTiles : Pass<"kiln-widen-bool-tiles", "mlir::func::FuncOp"> {
  let summary = "Pass bool tiles between linalg ops as bytes";
  let description = [{
    A `linalg.generic` that produces a statically shaped `i1` tile (and never
    reads its init) produces `i8` 0/1 instead. Generic consumers read the bytes
    and truncate them in their payload, `tensor.extract` users truncate the byte
    they read, and any other user gets an `i1` tile back from a narrowing
    generic. LLVM reads an `i1` buffer one element at a time (a vector mask is
    assembled bit by bit) and `kiln-vectorize-elementwise` cannot store a
    `vector<Nxi1>` into one, so without this every op touching a mask tile stays
    scalar.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def KilnVectorizeElementwise : Pass<"kiln-vectorize-elementwise", "mlir::func::FuncOp"> {
  let summary = "Turn elementwise linalg ops on tiles into vector ops";
  let description = [{
    A `linalg.generic` on statically shaped tiles whose body is straight-line
    arithmetic (no memory access, no nested regions) becomes vector ops over the
    tile: elementwise ops, and reductions (`vector.multi_reduction`, which the CPU
    pipeline lowers with reassociation, so sums add in trees as on GPUs). Tiles
    above `chunk-elements` first become loops over chunks of that many elements
    (whole-tile reductions accumulate chunk-wide partial results, then reduce those
    once), so that each vector op spans a few registers.
    Ops that read memory under masks stay scalar; tiles above `max-elements` are
    left to LLVM, except reductions along inner dimensions of a tile whose rows
    (below the outermost dimension) fit `max-elements`: they are vectorized row by
    row, as LLVM keeps a float reduction loop scalar (it may not reassociate it).
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"4096",
           "Largest tile (in elements) turned into vector ops; for row "
           "reductions, the largest row">,
    Option<"chunkElements", "chunk-elements", "int64_t", /*default=*/"64",
           "Elements one vector op covers: larger tiles become loops over chunks">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect", "mlir::linalg::LinalgDialect"];
}

def KilnReuseInputBuffers : Pass<"kiln-reuse-input-buffers", "mlir::func::FuncOp"> {
  let summary = "Let elementwise linalg.generic ops write over a dead input";
  let description = [{
    A parallel `linalg.generic` whose init is a `tensor.empty` that its body does
    not read, and one of whose inputs has the result's type, an identity indexing
    map and no other use, takes that input as its init. One-shot bufferization
    then writes the result in place: a loop-carried `acc += x` tile updates one
    buffer instead of allocating a new one every iteration.
  }];
}

def KilnSplitEmptyTensors : Pass<"kiln-split-empty-tensors", "mlir::func::FuncOp"> {
  let summary = "Give each top-level user of a tensor.empty a copy of its own";
  let description = [{
    Runs just before one-shot bufferization. CSE leaves one `tensor.empty` per
    shape, shared by every tile an unrolled loop makes; bufferization's analysis
    of that one value grew cubically with its uses (3.5 s for 100 loads), and
    its single buffer gave LLVM thousands of addresses into one stack slot. Each
    operation in the empty's block that uses it, directly or inside its regions,
    gets its own copy, placed just before it; uses within one operation (the
    branches of a guarded load) still share one.
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def KilnAnnotateAccessLoops : Pass<"kiln-annotate-access-loops", "mlir::func::FuncOp"> {
  let summary = "LLVM loop hints for the edge and strided paths of block accesses";
  let description = [{
    Runs after `convert-scf-to-cf`. `convert-kiln-to-linalg` marks the memory
    accesses of the path a block access takes across the tensor's edge
    (`kiln.loops_rolled`) and of the one for rows that are not contiguous
    (`kiln.loops_scalar`), with the number of loops around each that belong to
    the access. Each of those loops, found in the CFG, gets a `loop_annotation`
    on its latch branch: no unrolling, and for the strided path no
    vectorization and an interleave count of 1. LLVM had unrolled the edge
    paths row by row and lane by lane, and vectorized the strided one with
    gathers or versioned it on a unit stride the dense paths already take: a
    kernel of 100 loads and stores took 11 s to compile. MLIR 19's scf-to-cf
    drops the annotations of `scf.for`, hence the marks. They are removed.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::cf::ControlFlowDialect"];
}

def KilnPromoteTilesToStack : Pass<"kiln-promote-tiles-to-stack", "mlir::func::FuncOp"> {
  let summary = "Put a CPU kernel's function-level tile buffers on the stack";
  let description = [{
    Runs after bufferization and loop hoisting, before deallocation. Every
    `memref.alloc` with a static shape and identity layout that sits directly in
    the function body (never in a loop) becomes a `memref.alloca`, while the
    function's promoted bytes stay within `max-bytes`; the rest stay on the heap.
    On the CPU a kernel function runs once per program, so this removes a
    malloc/free pair per tile per program.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"262144",
           "Stack bytes one kernel call may use for tiles">
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnHoistLoopAllocas : Pass<"kiln-hoist-loop-allocas", "mlir::func::FuncOp"> {
  let summary = "Move static stack buffers out of loops to the function's entry";
  let description = [{
    Runs after `convert-vector-to-scf`, whose n-D vector transfers use
    `memref.alloca` scratch buffers placed inside loops: each trip would reserve
    new stack until the function returns. Every `memref.alloca` without dynamic
    sizes that is not in the entry block (nor in a `memref.alloca_scope` or a
    nested allocation scope) moves to the start of the entry block. Such a
    buffer carries nothing from one trip to the next, so one is enough.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnCPUPrefetchTiles : Pass<"kiln-cpu-prefetch-tiles", "mlir::func::FuncOp"> {
  let summary = "CPU: prefetch the tiles the next step of a dot's loop loads";
  let description = [{
    Runs after bufferization, before the micro-kernel. In an `scf.for` whose body
    multiplies tiles (`linalg.matmul`), every unguarded tile copy (a
    `linalg.generic` filling a static buffer from `source[offset + linalg.index]`)
    whose offsets move with the induction variable gets, right after it, a
    `memref.prefetch` of each cache line of the tile the next iteration copies
    (guarded by `iv + step < upper bound`). The offsets are rebuilt from the
    induction variable by cloning the pure ops between them. At large sizes a
    tile's rows are pages apart in L3 or memory, where the hardware prefetchers do
    not follow them; prefetched during the multiply, they are in cache by the time
    the next copy reads them.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def KilnCPUVectorizeTileCopies
    : Pass<"kiln-cpu-vectorize-tile-copies", "mlir::func::FuncOp"> {
  let summary = "CPU: unguarded tile copies as loops of vector row loads and stores";
  let description = [{
    Runs after bufferization. A `linalg.generic` that fills a static buffer
    with contiguous rows from `source[offset + linalg.index]`, where `source`
    has a static unit inner stride (the fast path of a block load), every tile
    dimension indexes the source once, in order, and the elements are 8- to
    64-bit integers or f16, bf16, f32, f64, becomes loops over the tile's outer
    dimensions around `vector.load`/`vector.store` of its rows, 256 bytes at a
    time. Left to `convert-linalg-to-loops`, LLVM fully unrolls such copies into
    thousands of scalar loads and stores and re-vectorizes them with its SLP
    vectorizer; its DSE and GVN passes on those blocks took most of the compile
    time of examples/attention.kiln.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnLowerOuterReductions : Pass<"kiln-lower-outer-reductions", "mlir::func::FuncOp"> {
  let summary = "CPU: vector reductions over outer dimensions as elementwise row combines";
  let description = [{
    Lowers each `vector.multi_reduction` whose reduced dimensions exclude the
    innermost one with MLIR's inner-parallel strategy: the rows of the source
    are combined elementwise into the accumulator, one vector operation per
    row (for a rank-2 source; a rank-3 one reduced along its middle dimension
    is transposed first, as the inner-reduction strategy would too). Run before
    `lower-vector-multi-reduction{lowering-strategy=inner-reduction}`,
    which would transpose such a reduction (a column sum of a tile) into a
    shuffle network and one horizontal reduction per column.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect"];
}

def KilnCPUMatmulMicroKernel : Pass<"kiln-cpu-matmul-microkernel", "mlir::func::FuncOp"> {
  let summary = "Register-blocked micro-kernel for linalg.matmul on tile buffers";
  let description = [{
    Runs after bufferization. A `linalg.matmul` whose three buffers have static
    shapes and contiguous rows is walked in MR x NR blocks of C: the block's
    accumulators are vectors carried through the K loop, every K step loads NR/VL
    vectors of a B row and broadcasts MR values of an A column into fused
    multiply-adds. MR and NR are chosen so that accumulators, the B row and the
    broadcast fit in `registers` vector registers of `register-bits` bits (the
    CPU pipeline sets both from the host). Other matmuls are left to
    `convert-linalg-to-loops`.

    With `x86-pmaddwd` (x86 with SSE2, AVX2 or AVX-512BW at `register-bits`),
    8- and 16-bit integer operands into an i32 accumulator take K two steps at
    a time: each time the matmul runs, B's tile is packed into a stack buffer
    of (k, k + 1) pairs widened to i16 (the pipeline's kiln-hoist-loop-allocas
    moves the buffer out of loops), each A pair is broadcast as one 32-bit
    value, and `pmaddwd` sums both products per lane (`vpdpwssd` where the CPU
    has VNNI), in place of two widening multiplies and adds. K must be even.
  }];
  let options = [
    Option<"registerBits", "register-bits", "int64_t", /*default=*/"512",
           "Width of one vector register in bits">,
    Option<"registers", "registers", "int64_t", /*default=*/"32",
           "Vector registers the blocking may occupy">,
    Option<"x86Pmaddwd", "x86-pmaddwd", "bool", /*default=*/"false",
           "Multiply 8- and 16-bit integer pairs with x86's pmaddwd">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// GPU: the layout level and the conversion to per-thread code
//===----------------------------------------------------------------------===//

def ConvertKilnToKilnGPU : Pass<"convert-kiln-to-kiln-gpu", "mlir::ModuleOp"> {
  let summary = "Give every tile of every kernel a blocked thread layout";
  let description = [{
    Attaches `#kiln_gpu.blocked<vec = 1, ...>` to each tensor type in `kiln.kernel`
    functions and records the program's thread count. `kiln-gpu-coalesce` then
    widens `vec` for the memory accesses. Targets whose barriers and shared-memory
    exchanges are dear (Vulkan on a CPU) give elementwise kernels their own warp
    count (`elementwise-warps`) and kernels that exchange as few warps as their
    tiles allow (`exchange-registers`).
  }];
  let options = [
    Option<"numWarps", "num-warps", "unsigned", /*default=*/"4",
           "Warps (subgroups) per program, unless the kernel sets kiln.num_warps "
           "(its NUM_WARPS param)">,
    Option<"elementwiseWarps", "elementwise-warps", "unsigned", /*default=*/"0",
           "Warps per program for kernels whose threads never exchange elements "
           "(no reduce, scan, dot, trans or broadcast), unless the kernel sets "
           "kiln.num_warps; 0 means num-warps">,
    Option<"exchangeRegisters", "exchange-registers", "unsigned", /*default=*/"0",
           "When nonzero, kernels that exchange elements get the fewest warps (a "
           "power of two, at most num-warps) that keep every tile at or under "
           "this many elements per thread, unless the kernel sets kiln.num_warps">,
    Option<"warpSize", "warp-size", "unsigned", /*default=*/"32",
           "Threads per warp: 32 on NVIDIA, 64 on AMD CDNA, the subgroup size on Vulkan">
  ];
  let dependentDialects = ["kiln::gpu::KilnGPUDialect"];
}

def KilnGPUCoalesce : Pass<"kiln-gpu-coalesce", "mlir::ModuleOp"> {
  let summary = "Choose the per-thread vector width for 128-bit memory accesses";
  let description = [{
    Sets `vec` so that one thread's run of consecutive elements spans 128 bits of the
    widest element type the kernel loads or stores (4 for f32, 8 for f16), so
    contiguous rows become `ld.global.v4` / `global_load_dwordx4` accesses and
    neighbouring threads touch neighbouring runs.
  }];
  let options = [
    Option<"accessBits", "access-bits", "unsigned", /*default=*/"128",
           "Widest memory access per thread, in bits">
  ];
  let dependentDialects = ["kiln::gpu::KilnGPUDialect"];
}

def KilnGPUAllocateSharedMemory : Pass<"kiln-gpu-allocate-shared-memory", "mlir::ModuleOp"> {
  let summary = "Size the shared memory that layout changes need";
  let description = [{
    `broadcast`, `trans`, `reduce`, `scan` and `dot` exchange elements between
    threads through shared (workgroup) memory. Every exchange is fenced by barriers,
    so all of them reuse one buffer per element type; this pass records each
    buffer's element count (`kiln_gpu.shared_elements`) and the total bytes
    (`kiln_gpu.shared_bytes`) on the kernel, and rejects kernels that exceed the
    target's limit.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"49152",
           "Shared memory available to one program">,
    Option<"matrixUnits", "matrix-units", "std::string", /*default=*/"\"none\"",
           "Matrix instructions dots may use: none, mma-sync (NVIDIA sm_80+), wgmma "
           "(NVIDIA sm_90a), mfma (AMD CDNA2), mfma-cdna3 (AMD gfx94x) or wmma "
           "(AMD RDNA3); those dots also "
           "stage their accumulator in shared memory">,
    Option<"integerAtomicsOnly", "integer-atomics-only", "bool", /*default=*/"false",
           "The target has integer atomics only (SPIR-V): a float atomic retries "
           "compare-and-swaps while any thread has one to make, which takes an i32 "
           "per thread">,
    Option<"floatAtomicAdd", "float-atomic-add", "bool", /*default=*/"false",
           "With integer-atomics-only: the device adds f32 atomically, so f32 "
           "tensors that atomics only add to need no swaps">
  ];
  let dependentDialects = ["kiln::gpu::KilnGPUDialect"];
}

def ConvertKilnGPUToGPU : Pass<"convert-kiln-gpu-to-gpu", "mlir::ModuleOp"> {
  let summary = "Lower laid-out kiln kernels to per-thread code in gpu.func";
  let description = [{
    Each tile becomes the scalars its thread holds under the blocked layout; the
    kernel becomes a `gpu.func` in a `gpu.module`, one program per block. Loads and
    stores compute their element offsets from the sizes and strides passed after
    each tensor's base pointer, check bounds per element, and take a `vec`-wide
    access when the run is in bounds, contiguous and aligned. Reductions of a whole
    tile combine per thread, then across the subgroup (shuffles, or a subgroup
    reduction), then across subgroups through shared memory.

    `memory=llvm` passes tensors as `!llvm.ptr<1>` (NVVM, ROCDL); `memory=spirv`
    passes them as 1-D memrefs that become storage buffers.

    With `matrix-units`, a dot of f16, bf16 or fp8 tiles into an f32 accumulator,
    or of s8 tiles into an i32 one (on NVIDIA also f32 with tf32), whose shape is a multiple
    of the instruction's runs on the matrix units: the operands
    go to shared memory, each warp takes instruction-sized tiles of the result
    round-robin (mma-sync: `ldmatrix.x4` for A, `ldmatrix.x2.trans` for B from
    row-major operands with swizzled 16-byte chunks,
    `mma.sync.aligned.m16n8k16.row.col.f32`, or `m16n8k8.tf32` for f32 dots
    with tf32; wgmma: each warpgroup of four warps issues
    `wgmma.mma_async.m64nNk16` with shared-memory descriptors over 128-, 64- or
    32-byte swizzled layouts (A K-major, B N-major), falling back to mma-sync when
    the tile is not a multiple of 64 rows; mfma, mfma-cdna3 and wmma:
    `rocdl.mfma.f32.16x16x16` / `rocdl.wmma.f32.16x16x16`, and for s8
    `rocdl.mfma.i32.16x16x16i8` / `16x16x32.i8` (CDNA3) /
    `rocdl.wmma.i32.16x16x16.iu8`, fed from shared memory). Block loads that only feed such a dot are copied into its operand
    buffers with `cp.async` (NVIDIA), pipelined across `stages` buffers in loops
    that ask for it. A loop accumulator updated only by the dot stays in the
    instruction's fragment layout; other accumulators return through shared
    memory to the result's blocked layout, where the incoming accumulator is
    added.
  }];
  let options = [
    Option<"memoryModel", "memory", "std::string", /*default=*/"\"llvm\"",
           "How tensors reach the kernel: llvm (global pointers) or spirv (buffers)">,
    Option<"subgroupReduce", "subgroup-reduce", "std::string", /*default=*/"\"shuffle\"",
           "shuffle: xor butterflies of gpu.shuffle; amd-swizzle: ds_swizzle within 32 "
           "lanes (AMDGPU); native: gpu.subgroup_reduce (SPIR-V)">,
    Option<"vendor", "vendor", "std::string", /*default=*/"\"nvidia\"",
           "nvidia, amd or any (SPIR-V): with memory=llvm, an atomic exchange or "
           "compare-and-swap sits between PTX fence.acq_rel.gpu (nvidia) or LLVM "
           "agent-scope fences (amd)">,
    Option<"matrixUnits", "matrix-units", "std::string", /*default=*/"\"none\"",
           "Lower eligible dots with warp-level matrix instructions: none, mma-sync "
           "(ldmatrix + mma.sync.m16n8k16, NVIDIA sm_80+), wgmma "
           "(wgmma.mma_async.m64nNk16, NVIDIA sm_90a), mfma "
           "(v_mfma_f32_16x16x16, v_mfma_i32_16x16x16i8: AMD gfx90a), mfma-cdna3 "
           "(the same, int8 by v_mfma_i32_16x16x32_i8: AMD gfx94x) or wmma "
           "(v_wmma_f32_16x16x16_{f16,bf16}, v_wmma_i32_16x16x16_iu8: AMD gfx11)">,
    Option<"dynamicSharedAbove", "dynamic-shared-above", "int64_t", /*default=*/"0",
           "With memory=llvm: kernels needing more shared memory than this many bytes "
           "take it as views of gpu.dynamic_shared_memory (sized at launch) instead "
           "of workgroup attributions; 0 never does">,
    Option<"floatAtomicAdd", "float-atomic-add", "bool", /*default=*/"false",
           "With memory=spirv: an f32 tensor that atomics only add to stays f32 and "
           "each add is one OpAtomicFAddEXT (VK_EXT_shader_atomic_float); otherwise "
           "float atomics are compare-and-swap loops on its bits">,
    Option<"loopLimit", "loop-limit", "int64_t", /*default=*/"0",
           "With memory=spirv: the loop iterations one invocation may run in all "
           "before the device ends its loops (lavapipe: 65535). A kernel whose loops "
           "may run longer records in each loop whether it reached its end and fails "
           "the launch through the debug buffer when one was cut; 0: no limit">
  ];
  let dependentDialects = ["kiln::gpu::KilnGPUDialect", "mlir::gpu::GPUDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::spirv::SPIRVDialect", "mlir::ROCDL::ROCDLDialect"];
}

def KilnAttachSPIRVTarget : Pass<"kiln-attach-spirv-target", "mlir::ModuleOp"> {
  let summary = "Describe the Vulkan profile and the kernel ABI for SPIR-V conversion";
  let description = [{
    Attaches a `spirv.target_env` to every `gpu.module`: the SPIR-V version of the
    Vulkan `client` version, with the capabilities and extensions Kiln kernels use
    (subgroup arithmetic and shuffles, 8/16/64-bit integers, f16, f64 and 8/16-bit
    storage). Each kernel gets its workgroup size as `spirv.entry_point_abi` and one
    descriptor binding per argument (set 0, in argument order).
  }];
  let options = [
    Option<"client", "client", "std::string", /*default=*/"\"vulkan1.2\"",
           "vulkan1.1, vulkan1.2 or vulkan1.3">,
    Option<"floatAtomicAdd", "float-atomic-add", "bool", /*default=*/"false",
           "The device adds f32 atomically (VK_EXT_shader_atomic_float's "
           "shaderBufferFloat32AtomicAdd): allow AtomicFloat32AddEXT">
  ];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnApproximateMath : Pass<"kiln-approximate-math", "mlir::ModuleOp"> {
  let summary = "Replace math functions a target lacks with expansions";
  let description = [{
    With `target=spirv`: `math.erf` (f32; GLSL.std.450 has none) becomes MLIR's
    polynomial approximation (+-0 kept), `math.trunc(x)` becomes
    `x < 0 ? ceil(x) : floor(x)`, and f64 `math.roundeven(x)` is rebuilt
    from `trunc` (lavapipe's f64 RoundEven rounded 3.5 to 3). `math.atan2(y, x)` becomes `atan(y / x)`
    corrected by quadrant (signed zeros and infinities as C's `atan2`) and by
    the quotient's remainder, and `asin` and `acos` `atan2`s of `x` and
    `sqrt(1 - x^2)` (GLSL's own were off by 2e-4), by ExactMath's patterns
    below. `log1p` takes a
    series near 0 (passes/AccurateMath.h): MLIR's log(1 + x) gave 0 for 1e-10.
    GLSL.std.450 has no f64 `exp`, `log`, `sin` or any other transcendental
    function, and Vulkan lets its f32 `exp`, `log`, `sin`, `cos`, `tan`, `atan`
    and `pow` be far off (lavapipe's `sin(1e9)` was 1.0): these, f64 and f32,
    and `exp2`, `expm1`, `log2`, `log10` and `cosh`, are computed from
    arithmetic (passes/GPU/ExactMath.h), each within 2.5 ulps of the exact
    result: exact
    argument reductions (Cody and Waite's for sin, cos and tan below 2^26 pi,
    f32 2^11 pi, Payne and Hanek's beyond, in an `scf.if`), Taylor series,
    double-double or double-float where the reduction cancels (pow's log).

    With `target=nvvm`: MLIR 19's GPU-to-NVVM lowering calls libdevice for most
    functions but not `asin`, `acos`, `sinh` and `cosh`: `asin(x)` becomes
    `atan2(x, sqrt((1 - x)(1 + x)))`, `acos(x)` `atan2(sqrt((1 - x)(1 + x)), x)`,
    and `sinh`/`cosh` MLIR's expansions through `exp`.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"spirv\"",
           "spirv (Vulkan and Metal) or nvvm (NVIDIA)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnSPIRVSignExtensions : Pass<"kiln-spirv-sign-extensions"> {
  let summary = "Sign-extend i32 to i64 without OpSConvert (lavapipe miscompiles it)";
  let description = [{
    Mesa 22.3's lavapipe computes an i32 -> i64 `OpSConvert` right but reads it
    wrong in signed comparisons and shifts: `cast<i64>(x) < 0` was false for
    x = -10, and `x % y` of an i32 x and an i64 y took the remainder of
    2^64 - 10. Each `arith.extsi` from i32 to i64 (scalar or vector) becomes
    `(extui(x) ^ 2^31) - 2^31`, the same value.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnSPIRVRemainders : Pass<"kiln-spirv-remainders", "mlir::ModuleOp"> {
  let summary = "Remainders SPIR-V gets wrong: INT_MIN's sign and inexact float %";
  let description = [{
    Signed integers: MLIR 19's arith-to-spirv emulates `arith.remsi` as
    `UMod(SAbs(x), SAbs(y))`, negated unless `x == SAbs(x)`; for x = INT_MIN,
    `SAbs(x)` is x itself, so `INT_MIN % 1000` came out as 648 instead of -648.
    This pass rewrites `arith.remsi` first as `select(x < 0, -r, r)` with
    `r = remui(|x|, |y|)`, the same arithmetic with the sign read from x.

    f32 and f64: SPIR-V's `OpFRem` is `x - y * trunc(x / y)`, off by up to `|y|`
    where `x / y` rounds to an integer (`-7.7 % 0.11` gave 0 instead of -0.11 on
    lavapipe). `arith.remf` of f32 and f64 becomes C's `fmodf` and `fmod`, exact:
    with integer significands `|x| = mx * 2^ex` and `|y| = my * 2^ey`, the
    remainder is `(mx * 2^(ex - ey) mod my) * 2^ey`, taken by long division in
    i32 eight bits a step (f32) or in i64 eleven bits a step (f64): an `scf.for`
    of `ceil((ex - ey) / step)` steps, none when `|x / y| < 2^24` (f32) or `2^53`
    (f64). The result is rebuilt from its bits, normal or subnormal, with the
    sign of x. NaN and infinite x, NaN y or zero y give NaN; an infinite y gives x.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::math::MathDialect"];
}

def KilnGPUToSPIRV : Pass<"kiln-gpu-to-spirv", "mlir::ModuleOp"> {
  let summary = "convert-gpu-to-spirv (Vulkan) with atomic exchange and compare-and-swap";
  let description = [{
    Upstream's `convert-gpu-to-spirv` for shader targets: each `gpu.module` is
    cloned into a `spirv.module` placed before it and converted with the GPU,
    SCF, arith, memref and func patterns. MLIR 19's memref patterns lower only
    read-modify-write atomics, so this pass adds two more: `memref.atomic_rmw
    assign` becomes `spirv.AtomicExchange`, and a `memref.generic_atomic_rmw`
    whose body is a compare-and-swap (`select(current == c, v, current)`)
    becomes `spirv.AtomicCompareExchange`. Both are acquire-release on the
    storage buffer (device scope), so kernels can build locks from them.

    MLIR 19's `scf.for` lowering stores a loop's results only from its body, so
    a loop that ran no iteration returned undefined values instead of its
    initial ones; every `scf.for` with results whose constant bounds do not
    show it runs is first wrapped as `scf.if lb < ub { for } else { inits }`.
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect", "mlir::scf::SCFDialect"];
}

def KilnSPIRVInt64Atomics : Pass<"kiln-spirv-int64-atomics", "mlir::ModuleOp"> {
  let summary = "Declare the Int64Atomics capability in modules with 64-bit atomics";
  let description = [{
    `spirv-update-vce` (MLIR 19) does not deduce `Int64Atomics` from atomics on
    64-bit integers, and spirv-val rejects such a module without it. Run after
    `spirv-update-vce`, this pass adds the capability to each `spirv.module`
    that has one (Vulkan devices expose it as shaderBufferInt64Atomics).
  }];
}

def KilnSPIRVExactFloats : Pass<"kiln-spirv-exact-floats", "mlir::ModuleOp"> {
  let summary = "Decorate SPIR-V float arithmetic NoContraction";
  let description = [{
    Without the decoration a Vulkan driver may contract `a * b + c` into one
    fma and reassociate float arithmetic as if it were exact (Mesa's NIR folds
    `(1 + x) - 1` to `x`). Kiln's float operations round as written, as on
    the CPU; the f64 math expansions and exact remainders depend on it (their
    error terms, `(a - (s - v)) + (b - v)`, are zero in exact arithmetic).
    This pass marks every `spirv.FAdd`, `FSub`, `FMul`, `FDiv`, `FRem`,
    `FMod`, `FNegate` and `GL.Fma` with `NoContraction`. (GLSL.std.450 still
    lets an `fma` round twice, as lavapipe's f64 one does; nothing relies on
    it rounding once.) Vulkan only: SPIRV-Cross writes decorated arithmetic in
    MSL as calls of `[[clang::optnone]]` helpers.

    With `preserve-specials` (the default) each entry point also declares the
    `SignedZeroInfNanPreserve` execution mode for every float width the module
    computes in, so that infinities, NaNs and the sign of zero survive as IEEE
    754 says: without it a driver may fold `x * 0.0` to `0.0` for an infinite
    or NaN `x` (lavapipe does). The mode (SPV_KHR_float_controls) is core in Vulkan 1.2;
    modules for older targets are left without it, and the runtime asks for
    `preserve-specials=0` (the `:loose-specials` target) on a device that does
    not support it.
  }];
  let options = [
    Option<"preserveSpecials", "preserve-specials", "bool", /*default=*/"true",
           "Declare SignedZeroInfNanPreserve for the float widths used (Vulkan 1.2+)">,
  ];
}

def KilnSPIRVUnbindPushConstants : Pass<"kiln-spirv-unbind-push-constants", "mlir::ModuleOp"> {
  let summary = "Drop descriptor bindings from push-constant variables";
  let description = [{
    `spirv-lower-abi-attrs` gives every entry-point argument a descriptor set and
    binding. Vulkan forbids them on push-constant variables (the block Kiln passes
    sizes, strides and scalars in), so this pass removes them after the lowering.
  }];
}

def KilnLowerStridedCopies : Pass<"kiln-lower-strided-copies", "mlir::func::FuncOp"> {
  let summary = "CPU: memref.copy to or from a strided buffer as a linalg.copy";
  let description = [{
    Bufferization copies between buffers with `memref.copy`. `finalize-memref-to-llvm`
    makes a copy between two contiguous buffers a `memcpy`, and any other a call of
    `memrefCopy` from MLIR's runtime library, which Kiln's CPU modules do not link
    (a bool scan along the rows of a tile needed one: the module failed to load).
    This pass rewrites those copies as `linalg.copy`, which become loops.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnLowerCompareAndSwap : Pass<"kiln-lower-compare-and-swap", "mlir::func::FuncOp"> {
  let summary = "CPU: one lane's compare-and-swap or xor to memref.generic_atomic_rmw";
  let description = [{
    `convert-kiln-to-linalg` lowers a compare-and-swap and an atomic xor lane by
    lane but leaves each lane a scalar `kiln.atomic_swap ... compare` or
    `kiln.atomic_rmw xor`: their memref form, `memref.generic_atomic_rmw`, has a
    region without RegionBranchOpInterface, which the buffer deallocation
    pipeline rejects (and MLIR 19's `memref.atomic_rmw` has no xor). Run after
    deallocation, this pass writes each as `generic_atomic_rmw`: selecting the
    new value where the current one equals `compare`, or `xori` (a cmpxchg loop
    once lowered to LLVM). An `f32` compare-and-swap is one `llvm.cmpxchg` of the
    element's bits at its address (LLVM's cmpxchg takes integers only). A float
    `max`/`min` lane is a loop of such compare-and-swaps around `arith.maximumf`
    (`minimumf`), so that NaN propagates as in an elementwise `max`: LLVM's
    `atomicrmw fmax` ignores NaN.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnBranchMemRefSelects : Pass<"kiln-branch-memref-selects", "mlir::func::FuncOp"> {
  let summary = "Turn arith.select of memrefs into a conditional branch";
  let description = [{
    Bufferization and scf.if canonicalization leave `arith.select` choosing
    between two buffers. MLIR 19's `arith-emulate-unsupported-floats` treats such
    a select on f16 or bf16 buffers as f16 arithmetic and wraps the buffers in
    `arith.extf`, which does not verify. Run after `convert-scf-to-cf`, this pass
    chooses the buffer with `cf.cond_br` to a block argument instead.
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect"];
}

def KilnCPUVectorMath : Pass<"kiln-cpu-vector-math"> {
  let summary = "Polynomial exp, log and tanh for f32 vectors on the CPU";
  let description = [{
    `convert-math-to-libm` scalarizes vector math into one libm call per lane.
    This pass rewrites f32 vector `math.exp`, `math.log` and `math.tanh` with
    MLIR's polynomial approximations (vector arithmetic: exp and log within 1
    ulp of the correctly rounded result in the normal range, 4 near exp's
    overflow, tanh within 4 ulp). Lanes whose exp result or log argument is
    subnormal, which the approximations flush, go through a scaled argument
    (`x + 64 ln 2`, `x * 2^64`). Scalar math still calls libm. First, `expm1`
    and `log1p` of every type take series near 0 (passes/AccurateMath.h):
    convert-math-to-llvm's exp(x) - 1 and log(1 + x) gave 0 for 1e-10.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnExpandF8 : Pass<"kiln-expand-f8"> {
  let summary = "Lower conversions to and from fp8 to integer arithmetic";
  let description = [{
    `arith.extf` from and `arith.truncf` to `f8E4M3FN` / `f8E5M2` (Kiln's
    `f8e4m3` and `f8e5m2`) become integer operations on the bits, the same on
    every target: decoding is exact; encoding rounds to nearest even and
    saturates to the largest finite value (448 and 57344, as NVIDIA's
    `cvt.rn.satfinite` does), NaN stays NaN. Runs after
    `arith-emulate-unsupported-floats` has widened other fp8 arithmetic to f32.

    A select that the emulation widened (`truncf(select(c, extf(a), extf(b)))`
    back to the type of `a` and `b`, for fp8, bf16 and f16) becomes a select of
    the operands' bits, so `where` returns an operand unchanged (fp8 `min` and
    `max` are such selects too; on bf16 and f16 they compute in f32).

    With `narrow-bf16`, `arith.truncf` to `bf16` is written out too: round to
    nearest even, a NaN keeps its sign and the top of its payload (quieted), as
    the CPU's conversion does; `arith-expand{include-bf16}` would make every NaN
    `0x7FC0`. f64 sources round once, as for fp8.
  }];
  let options = [
    Option<"narrowBF16", "narrow-bf16", "bool", /*default=*/"false",
           "Also lower truncf to bf16 (targets without a native conversion)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnExpandMinMax : Pass<"kiln-expand-min-max"> {
  let summary = "Write bf16 and f32 maximumf/minimumf as compares and selects";
  let description = [{
    For NVIDIA before sm_80, which has no bf16 arithmetic and no NaN-propagating
    max: run before `arith-emulate-unsupported-floats`, so that LLVM cannot
    narrow an f32 maximum of widened bf16 values back to a bf16 one, which its
    NVPTX backend cannot select there (it aborted). NaN operands give NaN and +0
    is above -0, as `arith.maximumf` says; f16 and f64 are left alone.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnKeepFloatRoundings : Pass<"kiln-keep-float-roundings"> {
  let summary = "Keep the roundings of the narrow floats that run in f32";
  let description = [{
    `arith-emulate-unsupported-floats` (bf16, f16 and fp8 arithmetic) and
    `math-legalize-to-f32` (their math) compute in f32 and mark the
    `arith.truncf` that rounds each result, and the `arith.extf` that widens it
    again, `contract`; `arith.extf` folds such a pair away, so any later greedy
    pass dropped the rounding: `cast<bf16>(i)` compared as the exact integer,
    `(a + b) - a` on f16 kept the low bits f16 loses, and `sin(exp(x))` on bf16
    took the unrounded exp. Run right after either, this pass clears
    `contract` from every `arith.extf` and `arith.truncf` (Kiln sets no
    fast-math flags of its own), so each operation rounds to its type as
    native arithmetic would.
  }];
}

def KilnRetypeUnsupportedFloats : Pass<"kiln-retype-unsupported-floats", "mlir::ModuleOp"> {
  let summary = "Give fp8 and bf16 values, buffers and constants integer types (for SPIR-V)";
  let description = [{
    SPIR-V has no 8-bit float and no bfloat16 type. After `kiln-expand-f8` and
    `arith-expand{include-bf16}` every conversion to or from `f8E4M3FN`,
    `f8E5M2` and `bf16` is integer arithmetic on the bits, and what is left of
    such a value is moved (loaded, stored, selected, carried by loops, exchanged
    through workgroup memory) and reinterpreted by `arith.bitcast`. This pass
    retypes all of it to `i8` / `i16`, constants keeping their bits, and drops
    the bitcasts that became no-ops.
  }];
}

def KilnBitcastBF16Casts : Pass<"kiln-bitcast-bf16-casts", "mlir::ModuleOp"> {
  let summary = "Turn the ROCDL lowering's bf16/i16 casts into LLVM bitcasts";
  let description = [{
    MLIR 19's ROCDL lowering converts `bf16` to `i16`, but the LLVM dialect
    operations Kiln's thread code already emits (loads, stores, vector inserts
    over `bf16`) keep their types, so the conversion leaves
    `unrealized_conversion_cast`s between the two that LLVM translation rejects.
    Both are 16-bit values with the same bits: this pass, run after
    `reconcile-unrealized-casts`, replaces each remaining cast between `bf16` and
    `i16` (or vectors of them) with an `llvm.bitcast`. Arithmetic on `bf16` has
    been widened to `f32` before the lowering, as the CPU pipeline does.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def KilnExternDynamicShared : Pass<"kiln-extern-dynamic-shared", "mlir::ModuleOp"> {
  let summary = "Declare dynamic shared memory as an extern array";
  let description = [{
    MLIR 19 lowers `gpu.dynamic_shared_memory` to an internal zero-length
    shared global, which NVPTX emits as a one-byte static variable: the dynamic
    block then starts after it, and the kernel's last bytes would fall outside
    the launch's request. This pass turns those globals into external
    declarations, which become `.extern .shared .b8 name[]` at the very start of
    the dynamic block, as CUDA's `extern __shared__` arrays are, aligned to
    1024 bytes: the period of wgmma's 128-byte swizzle, which acts on
    shared-memory addresses.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // KILN_PASSES_TD
