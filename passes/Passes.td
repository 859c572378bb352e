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
                           "mlir::arith::ArithDialect"];
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

def KilnVectorizeElementwise : Pass<"kiln-vectorize-elementwise", "mlir::func::FuncOp"> {
  let summary = "Turn elementwise linalg ops on tiles into vector ops";
  let description = [{
    A `linalg.generic` on statically shaped tiles whose iterators are all parallel and
    whose body is straight-line arithmetic (no memory access, no nested regions)
    becomes vector ops over the whole tile. Ops that read memory under masks stay
    scalar; tiles above `max-elements` are left alone.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"4096",
           "Largest tile (in elements) turned into one vector op">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect"];
}

#endif // KILN_PASSES_TD
