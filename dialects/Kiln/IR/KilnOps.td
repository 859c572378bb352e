//===- KilnOps.td - the kiln tile dialect ------------------------*- tablegen -*-===//
//
// The kiln dialect is the tile level of the compiler. Values are statically shaped
// tiles (builtin ranked tensors) or scalars; elementwise math on tiles reuses the
// arith and math dialects, which accept tensors. Global memory is reached through
// strided memrefs (one per kernel tensor argument) with automatic bounds masks.
//
//===----------------------------------------------------------------------------===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tile-level kernel programs";
  let description = [{
    A kiln kernel is a `func.func` carrying the `kiln.kernel` attribute. Each program
    instance of the grid runs the body once; `kiln.program_id` tells which. Tiles are
    ranked tensors with static shapes; tensor arguments are strided memrefs with
    dynamic sizes and strides. Loads and stores go through index tiles (gather style)
    or through a block offset (block style); out-of-bounds lanes are masked
    automatically.
  }];
  let hasConstantMaterializer = 1;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

def Kiln_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Prod", 1, "prod">,
    I32EnumAttrCase<"Max", 2, "max">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"And", 4, "and">,
    I32EnumAttrCase<"Or", 5, "or">,
    I32EnumAttrCase<"Xor", 6, "xor">,
    I32EnumAttrCase<"UMax", 7, "umax">,
    I32EnumAttrCase<"UMin", 8, "umin">
  ]> {
  let cppNamespace = "::kiln";
}

def Kiln_MemoryOrder : I32EnumAttr<"MemoryOrder", "the ordering an atomic gives", [
    I32EnumAttrCase<"Relaxed", 0, "relaxed">,
    I32EnumAttrCase<"Acquire", 1, "acquire">,
    I32EnumAttrCase<"Release", 2, "release">,
    I32EnumAttrCase<"AcqRel", 3, "acq_rel">
  ]> {
  let cppNamespace = "::kiln";
}

// A tile has a static shape of positive sizes: the lowerings size registers,
// vectors and loops by it.
class Kiln_TileOf<list<Type> allowed> : RankedTensorOf<allowed,
    [HasStaticShapePred,
     CPred<"::llvm::all_of(::llvm::cast<::mlir::ShapedType>($_self).getShape(), "
           "[](int64_t d) { return d > 0; })">],
    "tile (tensor of static, positive sizes)">;
def Kiln_Tile : Kiln_TileOf<[AnyType]>;
def Kiln_IndexTile : Kiln_TileOf<[I32]>;
def Kiln_MaskTile : Kiln_TileOf<[I1]>;
def Kiln_Memory : MemRefOf<[AnyType]>;
def Kiln_Scalar : AnyTypeOf<[AnySignlessInteger, AnyFloat]>;
def Kiln_TileOrScalar : AnyTypeOf<[Kiln_Tile, Kiln_Scalar]>;

//===----------------------------------------------------------------------===//
// Program identity
//===----------------------------------------------------------------------===//

def Kiln_ProgramIdOp : Kiln_Op<"program_id", [Pure]> {
  let summary = "index of this program instance along a grid axis";
  let description = [{
    Returns the coordinate of the running program along `axis` (0, 1 or 2).

    ```mlir
    %pid = kiln.program_id 0 : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Kiln_NumProgramsOp : Kiln_Op<"num_programs", [Pure]> {
  let summary = "number of program instances along a grid axis";
  let description = [{
    ```mlir
    %n = kiln.num_programs 1 : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Tile construction and shape manipulation
//===----------------------------------------------------------------------===//

def Kiln_ArangeOp : Kiln_Op<"arange", [Pure]> {
  let summary = "tile of consecutive integers";
  let description = [{
    Produces `[start, start + 1, ..., end - 1]`; the result length is `end - start`.

    ```mlir
    %cols = kiln.arange 0, 128 : tensor<128xi32>
    ```
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Kiln_IndexTile:$result);
  let assemblyFormat = "$start `,` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The bounds as the signed i32 values they are (getStart() and getEnd()
    // read the attributes' bits unsigned: -3 as 4294967293).
    int64_t getFirst() { return static_cast<int32_t>(getStart()); }
    int64_t getLimit() { return static_cast<int32_t>(getEnd()); }
  }];
}

def Kiln_SplatOp : Kiln_Op<"splat", [Pure,
    TypesMatchWith<"result element type matches the scalar", "result", "value",
                   "::llvm::cast<::mlir::ShapedType>($_self).getElementType()">]> {
  let summary = "tile with every element equal to a scalar";
  let description = [{
    ```mlir
    %t = kiln.splat %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Scalar:$value);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Kiln_BroadcastOp : Kiln_Op<"broadcast", [Pure, SameOperandsAndResultElementType]> {
  let summary = "numpy-style broadcast of size-1 dimensions";
  let description = [{
    Every dimension of the source is either 1 or equal to the result's; dimensions of
    size 1 are repeated. Source and result have the same rank (see `kiln.expand_dims`).

    ```mlir
    %b = kiln.broadcast %row : tensor<1x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$source);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_ExpandDimsOp : Kiln_Op<"expand_dims", [Pure, SameOperandsAndResultElementType]> {
  let summary = "insert a dimension of size 1";
  let description = [{
    ```mlir
    %e = kiln.expand_dims %v, 1 : tensor<32xf32> -> tensor<32x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$source, I32Attr:$axis);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$source `,` $axis attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure, SameOperandsAndResultElementType]> {
  let summary = "reinterpret a tile with another shape of the same size";
  let description = [{
    Elements keep their row-major order.

    ```mlir
    %r = kiln.reshape %t : tensor<4x8xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$source);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransOp : Kiln_Op<"trans", [Pure, SameOperandsAndResultElementType]> {
  let summary = "permute the dimensions of a tile";
  let description = [{
    Result dimension `i` is source dimension `perm[i]`.

    ```mlir
    %t = kiln.trans %a [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$source, DenseI32ArrayAttr:$perm);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$source $perm attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure]> {
  let summary = "pick elements of a tile along one axis by index";
  let description = [{
    The result has the index tile's shape; element `p` is the source element at
    `p` with coordinate `axis` replaced by `index[p]`. The index has the source's
    rank and its sizes in every other dimension. An index outside
    `[0, size(axis))` gives 0.

    ```mlir
    %g = kiln.gather %src[%idx] axis 1 : tensor<4x64xf32>, tensor<4x8xi32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$source, Kiln_IndexTile:$index, I32Attr:$axis);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = [{
    $source `[` $index `]` `axis` $axis attr-dict `:` type($source) `,` type($index) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and dot
//===----------------------------------------------------------------------===//

def Kiln_ReduceOp : Kiln_Op<"reduce", [Pure]> {
  let summary = "combine a tile along one axis";
  let description = [{
    Removes `axis` from the shape; reducing a rank-1 tile gives a scalar. `max` and
    `min` on floats propagate NaN.

    ```mlir
    %m = kiln.reduce max %v, 1 : tensor<32x64xf32> -> tensor<32xf32>
    %s = kiln.reduce sum %e, 0 : tensor<128xf32> -> f32
    ```
  }];
  let arguments = (ins Kiln_ReduceKind:$kind, Kiln_Tile:$source, I32Attr:$axis);
  let results = (outs Kiln_TileOrScalar:$result);
  let assemblyFormat =
      "$kind $source `,` $axis attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_ScanOp : Kiln_Op<"scan", [Pure, SameOperandsAndResultType]> {
  let summary = "inclusive prefix combination along one axis";
  let description = [{
    Element `i` along `axis` of the result combines elements `0..i` of the source
    (an inclusive scan); the shape is unchanged.

    ```mlir
    %c = kiln.scan sum %v, 0 : tensor<128xf32>
    ```
  }];
  let arguments = (ins Kiln_ReduceKind:$kind, Kiln_Tile:$source, I32Attr:$axis);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = "$kind $source `,` $axis attr-dict `:` type($source)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_AssociativeScanOp : Kiln_Op<"associative_scan",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "inclusive scan of tiles with a combine function";
  let description = [{
    Scans one or more tiles of one shape along `axis` together: element `i` of
    result `k` is the combination of elements `0..i` (with `reverse`, `i..n-1`)
    of the sources, folded with the combine function, which takes the earlier
    range's elements (with `reverse`, the later range's) and then the element's
    own, one of each source, and returns one of each. It need not commute, only
    associate. `combine` is the function specialized for the sources' element
    types (scalars), `tile_combine` the same function specialized for the
    sources' tile types.

    Targets choose the evaluation. The CPU folds along the axis one row at a
    time with `combine` (`n - 1` combinations, vectorized across the row) when
    that function is a pure computation. Otherwise, and on GPUs, SPIR-V and
    Metal, `kiln-expand-associative-scans` expands the op, first in the
    pipeline, into a tree of gathers and calls of `tile_combine` (`log2(n)`
    steps of whole-tile combinations), so a function that prints or asserts
    keeps its effects.

    ```mlir
    %a, %x = kiln.associative_scan @compose, @compose_tiles(%a0, %x0) axis 0
        : tensor<16x128xf32>, tensor<16x128xf32> -> tensor<16x128xf32>, tensor<16x128xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tile>:$sources, FlatSymbolRefAttr:$combine,
                       FlatSymbolRefAttr:$tile_combine, I32Attr:$axis, UnitAttr:$reverse);
  let results = (outs Variadic<Kiln_Tile>:$results);
  let assemblyFormat = [{
    $combine `,` $tile_combine `(` $sources `)` `axis` $axis (`reverse` $reverse^)? attr-dict
    `:` type($sources) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Kiln_PrintOp : Kiln_Op<"print", [MemoryEffects<[MemWrite]>]> {
  let summary = "print a message, and a scalar or every element of a tile";
  let description = [{
    Prints one line per element of `value` (one line for a scalar or no value):
    `pid (X, Y, Z) idx (I, J) PREFIX: VALUE`, where X, Y, Z are the program's
    coordinates (`pids`), I, J the element's, and PREFIX the `prefix` attribute.
    Integers print as signed values unless `value_unsigned` is set; `hex`
    prints an integer's bits as hex digits, one per four bits of its type.
    Lines of different programs (and threads) may interleave.

    ```mlir
    kiln.print "row max" %x, %y, %z, %m : tensor<4xf32>
    ```
  }];
  let arguments = (ins StrAttr:$prefix, I32:$pidX, I32:$pidY, I32:$pidZ,
                       Optional<Kiln_TileOrScalar>:$value, UnitAttr:$value_unsigned,
                       UnitAttr:$hex);
  let assemblyFormat =
      "$prefix $pidX `,` $pidY `,` $pidZ (`,` $value^ `:` type($value))? attr-dict";
}

def Kiln_AssertOp : Kiln_Op<"assert", [MemoryEffects<[MemWrite]>]> {
  let summary = "stop the kernel when a condition fails (device_assert)";
  let description = [{
    Where `condition` (a bool, or every element of a bool tile) is false, prints
    `pid (X, Y, Z) idx (I, J) MESSAGE` for a failing element, as `kiln.print`
    does, and stops: the CPU aborts the process after the first failing element;
    NVIDIA GPUs call `__assertfail` (the launch reports a device-side assert);
    AMD GPUs trap after printing. Vulkan and Metal cannot report from a kernel
    and do not check it.

    ```mlir
    kiln.assert %ok, "f.kiln:3:3: device_assert failed: n > 0" %x, %y, %z : tensor<64xi1>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Kiln_MaskTile, I1]>:$condition, StrAttr:$message,
                       I32:$pidX, I32:$pidY, I32:$pidZ);
  let assemblyFormat =
      "$condition `,` $message $pidX `,` $pidY `,` $pidZ attr-dict `:` type($condition)";
}

def Kiln_DotOp : Kiln_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matrix product with accumulator";
  let description = [{
    `result = a * b + acc` for `a: MxK`, `b: KxN`, `acc: MxN`. Products are formed and
    summed in the accumulator's element type.

    With `tf32` (f32 operands only), each operand element is first rounded to
    TensorFloat-32 (10 mantissa bits, to nearest with ties away from zero; Inf and
    NaN unchanged), as NVIDIA's tensor cores read f32; every target rounds the
    same way, so results agree across targets.

    ```mlir
    %c = kiln.dot %a, %b, %acc : tensor<64x32xf16>, tensor<32x64xf16> -> tensor<64x64xf32>
    %d = kiln.dot %x, %y, %acc {tf32} : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tile:$a, Kiln_Tile:$b, Kiln_Tile:$acc, UnitAttr:$tf32);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat =
      "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Kiln_LoadOp : Kiln_Op<"load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>]> {
  let summary = "gather-style masked load";
  let description = [{
    Reads `memory[indices[0][p], ..., indices[r-1][p]]` for every position `p` of the
    result. All index tiles have the result's shape (scalars load a scalar). Lanes
    whose indices fall outside the memory's sizes, or where `mask` is false, yield
    `other` (zero when absent) and touch no memory.

    ```mlir
    %v = kiln.load %x[%rows, %cols] other %ninf : tensor<128xf32>
        : memref<?x?xf32, strided<[?, ?], offset: ?>>[tensor<128xi32>, tensor<128xi32>]
        -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Kiln_Memory:$memory, Variadic<AnyTypeOf<[Kiln_IndexTile, I32]>>:$indices,
                   Optional<AnyTypeOf<[Kiln_MaskTile, I1]>>:$mask,
                   Optional<Kiln_TileOrScalar>:$other);
  let results = (outs Kiln_TileOrScalar:$result);
  let assemblyFormat = [{
    $memory `[` $indices `]` (`mask` $mask^ `:` type($mask))?
    (`other` $other^ `:` type($other))? attr-dict
    `:` type($memory) `[` type($indices) `]` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_StoreOp : Kiln_Op<"store", [AttrSizedOperandSegments,
    MemoryEffects<[MemWrite]>]> {
  let summary = "scatter-style masked store";
  let description = [{
    Writes `value[p]` to `memory[indices[0][p], ...]` for every in-bounds, unmasked
    position `p`.

    ```mlir
    kiln.store %y[%rows, %cols], %v
        : memref<?x?xf32, strided<[?, ?], offset: ?>>[tensor<128xi32>, tensor<128xi32>],
          tensor<128xf32>
    ```
  }];
  let arguments = (ins Kiln_Memory:$memory, Variadic<AnyTypeOf<[Kiln_IndexTile, I32]>>:$indices,
                   Kiln_TileOrScalar:$value, Optional<AnyTypeOf<[Kiln_MaskTile, I1]>>:$mask);
  let assemblyFormat = [{
    $memory `[` $indices `]` `,` $value (`mask` $mask^ `:` type($mask))? attr-dict
    `:` type($memory) `[` type($indices) `]` `,` type($value)
  }];
  let hasVerifier = 1;
}

def Kiln_AtomicRMWOp : Kiln_Op<"atomic_rmw", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["value", "old"]>]> {
  let summary = "scatter-style masked atomic read-modify-write";
  let description = [{
    For every in-bounds, unmasked position `p`, atomically replaces
    `memory[indices[0][p], ...]` with `memory[...] (kind) value[p]`; positions that
    address the same element all take effect. `kind` is `sum`, `max` or `min`
    (float max/min propagate NaN), or the bitwise `and`, `or` or `xor` on
    integers; the element type is `i32`, `i64` or `f32`.
    `old[p]` is the element's value just before lane `p`'s update (0 for masked
    and out-of-bounds lanes). The updates are relaxed unless `sem` says otherwise:
    with release (or acq_rel) ordering every access the program made before the
    atomic happens before it, with acquire (or acq_rel) every access after it
    happens after it; targets may order more strongly.

    ```mlir
    %old = kiln.atomic_rmw sum %hist[%bins], %ones mask %valid : tensor<256xi1>
        : memref<?xi32, strided<[?], offset: ?>>[tensor<256xi32>], tensor<256xi32>
    %ticket = kiln.atomic_rmw sum %count[%c0], %c1 sem acq_rel
        : memref<?xi32, strided<[?], offset: ?>>[i32], i32
    ```
  }];
  // `value` comes before the variadic `indices`: the result type ODS infers
  // from it (AllTypesMatch) reads a fixed operand position.
  let arguments = (ins Kiln_ReduceKind:$kind, Kiln_Memory:$memory, Kiln_TileOrScalar:$value,
                   Variadic<AnyTypeOf<[Kiln_IndexTile, I32]>>:$indices,
                   Optional<AnyTypeOf<[Kiln_MaskTile, I1]>>:$mask,
                   DefaultValuedAttr<Kiln_MemoryOrder, "::kiln::MemoryOrder::Relaxed">:$sem);
  let results = (outs Kiln_TileOrScalar:$old);
  let assemblyFormat = [{
    $kind $memory `[` $indices `]` `,` $value (`mask` $mask^ `:` type($mask))?
    (`sem` $sem^)? attr-dict `:` type($memory) `[` type($indices) `]` `,` type($value)
  }];
  let hasVerifier = 1;
}

def Kiln_AtomicSwapOp : Kiln_Op<"atomic_swap", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite]>, AllTypesMatch<["value", "old"]>]> {
  let summary = "scatter-style masked atomic exchange or compare-and-swap";
  let description = [{
    For every in-bounds, unmasked position `p`, atomically reads the element
    `memory[indices[0][p], ...]` into `old[p]` and writes `value[p]` in its place;
    with `compare`, only if the element equals `compare[p]` (compare-and-swap).
    Masked and out-of-bounds lanes give 0. The element type is `i32`, `i64` or `f32`
    (an `f32` compare-and-swap compares the bits: `-0.0` is not `0.0`, and a NaN
    equals a NaN of the same bits). The
    swap has acquire-release ordering unless `sem` says otherwise, so a program
    can take a lock with a compare-and-swap and release it with an exchange.

    ```mlir
    %was = kiln.atomic_swap %lock[%c0], %one compare %zero : i32
        : memref<?xi32, strided<[?], offset: ?>>[i32], i32
    ```
  }];
  // `value` before the variadic `indices`, as in kiln.atomic_rmw.
  let arguments = (ins Kiln_Memory:$memory, Kiln_TileOrScalar:$value,
                   Variadic<AnyTypeOf<[Kiln_IndexTile, I32]>>:$indices,
                   Optional<Kiln_TileOrScalar>:$compare,
                   Optional<AnyTypeOf<[Kiln_MaskTile, I1]>>:$mask,
                   DefaultValuedAttr<Kiln_MemoryOrder, "::kiln::MemoryOrder::AcqRel">:$sem);
  let results = (outs Kiln_TileOrScalar:$old);
  let assemblyFormat = [{
    $memory `[` $indices `]` `,` $value (`compare` $compare^ `:` type($compare))?
    (`mask` $mask^ `:` type($mask))? (`sem` $sem^)? attr-dict
    `:` type($memory) `[` type($indices) `]` `,` type($value)
  }];
  let hasVerifier = 1;
}

def Kiln_LoadBlockOp : Kiln_Op<"load_block", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>]> {
  let summary = "block-style load of a rectangular tile";
  let description = [{
    Reads the block whose first element is at `offsets` and whose shape is the
    result's. Out-of-bounds elements yield `other` (zero when absent).

    ```mlir
    %a = kiln.load_block %A[%m0, %k]
        : memref<?x?xf32, strided<[?, ?], offset: ?>> -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Kiln_Memory:$memory, Variadic<I32>:$offsets,
                   Optional<Kiln_Scalar>:$other);
  let results = (outs Kiln_Tile:$result);
  let assemblyFormat = [{
    $memory `[` $offsets `]` (`other` $other^ `:` type($other))? attr-dict
    `:` type($memory) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_StoreBlockOp : Kiln_Op<"store_block", [MemoryEffects<[MemWrite]>]> {
  let summary = "block-style store of a rectangular tile";
  let description = [{
    Writes `value` to the block whose first element is at `offsets`; elements outside
    the memory's sizes are dropped.

    ```mlir
    kiln.store_block %C[%m0, %n0], %acc
        : memref<?x?xf32, strided<[?, ?], offset: ?>>, tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Memory:$memory, Variadic<I32>:$offsets, Kiln_Tile:$value);
  let assemblyFormat = [{
    $memory `[` $offsets `]` `,` $value attr-dict `:` type($memory) `,` type($value)
  }];
  let hasVerifier = 1;
}

#endif // KILN_OPS_TD
