//===- KilnGPUOps.td - the kiln_gpu layout dialect ---------------*- tablegen -*-===//
//
// The layout level between tiles and per-thread code: an encoding on each tile's
// tensor type says which thread of a program's thread block holds which element.
//
//===----------------------------------------------------------------------------===//

#ifndef KILN_GPU_OPS_TD
#define KILN_GPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def KilnGPU_Dialect : Dialect {
  let name = "kiln_gpu";
  let cppNamespace = "::kiln::gpu";
  let summary = "Layouts that distribute kiln tiles over GPU threads";
  let description = [{
    A kernel at this level still computes on whole tiles, but every tile type carries
    a `#kiln_gpu.blocked` encoding that fixes how its elements are spread over the
    threads of one program (a thread block / workgroup). Functions carry the thread
    count and the shared memory that layout changes need, so the conversion to
    `gpu.func` is a local rewrite.
  }];
  let useDefaultAttributePrinterParser = 1;
}

def KilnGPU_BlockedEncodingAttr : AttrDef<KilnGPU_Dialect, "BlockedEncoding"> {
  let mnemonic = "blocked";
  let summary = "row-major tile elements dealt to threads in runs of `vec`";
  let description = [{
    The tile's elements are numbered in row-major order. Element `e` belongs to
    thread `(e / vec) % (warpSize * numWarps)`, which keeps it in register
    `(e / (vec * threads)) * vec + e % vec`. Runs of `vec` consecutive elements stay
    in one thread, so a contiguous row is read with `vec`-wide (ideally 128-bit)
    accesses, and consecutive threads touch consecutive runs (coalescing).

    Because the numbering ignores the shape, elementwise ops, `expand_dims` and
    `reshape` move no data; `broadcast`, `trans`, `reduce`, `scan` and `dot` exchange
    elements through shared memory or subgroup shuffles.

    ```mlir
    tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>
    ```
  }];
  let parameters = (ins "unsigned":$vec, "unsigned":$warpSize, "unsigned":$numWarps);
  let assemblyFormat = "`<` `vec` `=` $vec `,` `warpSize` `=` $warpSize `,` `numWarps` `=` $numWarps `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getThreads() const { return getWarpSize() * getNumWarps(); }
    /// Registers each thread needs for a tile of `numElements` elements.
    int64_t registersPerThread(int64_t numElements) const {
      int64_t chunk = int64_t(getVec()) * getThreads();
      return (numElements + chunk - 1) / chunk * getVec();
    }
    /// The element register `r` of thread 0 holds; thread t holds this + t * vec.
    int64_t elementOfRegister(int64_t r) const {
      return (r / getVec()) * int64_t(getVec()) * getThreads() + r % getVec();
    }
  }];
}

#endif // KILN_GPU_OPS_TD
