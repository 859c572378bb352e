//===- GPUToSPIRV.cpp - convert-gpu-to-spirv with exchange and CAS --------===//
//
// Upstream's convert-gpu-to-spirv for Vulkan shaders, plus what MLIR 19 does not
// lower (or lowers without ordering storage buffers): integer `memref.atomic_rmw`
// with acquire-release semantics on the buffer, the compare-and-swap and xor
// that MemoryToGPU writes as generic_atomic_rmw, bitwise subgroup reductions and
// a few GLSL math functions; and loops that run no iteration keep their
// initial values.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/KilnGPU/IR/KilnGPUDialect.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUTOSPIRV
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The pointer to element `indices` of `memref`, and the scope and
/// acquire-release semantics of an atomic on it.
struct AtomicTarget {
  Value pointer;
  spirv::Scope scope;
  spirv::MemorySemantics semantics;
};

FailureOr<AtomicTarget> atomicTarget(const SPIRVTypeConverter &converter, MemRefType type,
                                     Value memref, ValueRange indices, Location loc,
                                     OpBuilder &b) {
  auto storage = dyn_cast_or_null<spirv::StorageClassAttr>(type.getMemorySpace());
  if (!storage)
    return failure();
  AtomicTarget t;
  switch (storage.getValue()) {
  case spirv::StorageClass::StorageBuffer:
    t.scope = spirv::Scope::Device;
    t.semantics = spirv::MemorySemantics::UniformMemory;
    break;
  case spirv::StorageClass::Workgroup:
    t.scope = spirv::Scope::Workgroup;
    t.semantics = spirv::MemorySemantics::WorkgroupMemory;
    break;
  default:
    return failure();
  }
  t.pointer = spirv::getElementPtr(converter, type, memref, indices, loc, b);
  if (!t.pointer)
    return failure();
  return t;
}

/// A gpu.barrier marked kiln_gpu.device_memory (around atomics that release or
/// acquire) -> a workgroup control barrier whose memory semantics also cover
/// storage buffers; upstream's covers workgroup memory only.
struct DeviceMemoryBarrierPattern : OpConversionPattern<gpu::BarrierOp> {
  DeviceMemoryBarrierPattern(const TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(gpu::BarrierOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op->hasAttr(kiln::gpu::kDeviceMemoryBarrierAttr))
      return failure();
    using S = spirv::MemorySemantics;
    rewriter.replaceOpWithNewOp<spirv::ControlBarrierOp>(
        op, spirv::Scope::Workgroup, spirv::Scope::Workgroup,
        S::AcquireRelease | S::WorkgroupMemory | S::UniformMemory);
    return success();
  }
};

/// A type as a value, to pick an op class in a generic lambda.
template <typename OpT> struct OpTag {
  using type = OpT;
};

/// Integer (and f32 addf) memref.atomic_rmw -> the SPIR-V atomic of its kind, acquire-release
/// on the memory it updates. Upstream's pattern (which this one, with a higher
/// benefit, replaces) lacks assign and gives AcquireRelease without a storage
/// class, which orders no storage-buffer access: an atomic that publishes
/// results (a ticket counter, a lock) would not make them visible.
struct AtomicRMWPattern : OpConversionPattern<memref::AtomicRMWOp> {
  AtomicRMWPattern(const TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(memref::AtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    bool floatAdd = op.getKind() == arith::AtomicRMWKind::addf && op.getType().isF32();
    if (!op.getType().isSignlessInteger() && !floatAdd)
      return failure();
    FailureOr<AtomicTarget> t =
        atomicTarget(*getTypeConverter<SPIRVTypeConverter>(), op.getMemRefType(),
                     adaptor.getMemref(), adaptor.getIndices(), op.getLoc(), rewriter);
    if (failed(t))
      return failure();
    auto semantics = t->semantics | spirv::MemorySemantics::AcquireRelease;
    Type type = op.getType();
    Value v = adaptor.getValue();
    auto replace = [&](auto tag) {
      using SPIRVOp = typename decltype(tag)::type;
      rewriter.replaceOpWithNewOp<SPIRVOp>(op, type, t->pointer, t->scope, semantics, v);
      return success();
    };
    using Kind = arith::AtomicRMWKind;
    switch (op.getKind()) {
    case Kind::assign: return replace(OpTag<spirv::AtomicExchangeOp>());
    case Kind::addi: return replace(OpTag<spirv::AtomicIAddOp>());
    case Kind::addf: return replace(OpTag<spirv::EXTAtomicFAddOp>()); // float-atomic-add
    case Kind::maxs: return replace(OpTag<spirv::AtomicSMaxOp>());
    case Kind::mins: return replace(OpTag<spirv::AtomicSMinOp>());
    case Kind::maxu: return replace(OpTag<spirv::AtomicUMaxOp>());
    case Kind::minu: return replace(OpTag<spirv::AtomicUMinOp>());
    case Kind::andi: return replace(OpTag<spirv::AtomicAndOp>());
    case Kind::ori: return replace(OpTag<spirv::AtomicOrOp>());
    default: return failure();
    }
  }
};

/// Patterns for the memref.generic_atomic_rmw forms SPIR-V has an atomic for.
struct GenericAtomicPattern : OpConversionPattern<memref::GenericAtomicRMWOp> {
  using OpConversionPattern::OpConversionPattern;

protected:
  /// The element `op` updates.
  FailureOr<AtomicTarget> target(memref::GenericAtomicRMWOp op, OpAdaptor adaptor,
                                 ConversionPatternRewriter &rewriter) const {
    return atomicTarget(*getTypeConverter<SPIRVTypeConverter>(), op.getMemref().getType(),
                        adaptor.getMemref(), adaptor.getIndices(), op.getLoc(), rewriter);
  }
};

/// A memref.generic_atomic_rmw whose body is exactly
///   %eq = arith.cmpi eq, %current, %compare
///   %new = arith.select %eq, %value, %current
///   memref.atomic_yield %new
/// with %compare and %value from outside -> spirv.AtomicCompareExchange.
struct CompareAndSwapPattern : GenericAtomicPattern {
  using GenericAtomicPattern::GenericAtomicPattern;
  LogicalResult matchAndRewrite(memref::GenericAtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Block *body = op.getBody();
    Value current = op.getCurrentValue();
    auto yield = cast<memref::AtomicYieldOp>(body->getTerminator());
    auto select = yield.getResult().getDefiningOp<arith::SelectOp>();
    if (body->getOperations().size() != 3 || !select || select.getFalseValue() != current)
      return failure();
    auto equal = select.getCondition().getDefiningOp<arith::CmpIOp>();
    if (!equal || equal.getPredicate() != arith::CmpIPredicate::eq || equal.getLhs() != current)
      return failure();
    Value compare = equal.getRhs(), value = select.getTrueValue();
    if (compare.getParentBlock() == body || value.getParentBlock() == body)
      return failure();
    FailureOr<AtomicTarget> t = target(op, adaptor, rewriter);
    if (failed(t))
      return failure();
    // A failed comparison writes nothing, so it only acquires.
    rewriter.replaceOpWithNewOp<spirv::AtomicCompareExchangeOp>(
        op, op.getType(), t->pointer, t->scope,
        t->semantics | spirv::MemorySemantics::AcquireRelease,
        t->semantics | spirv::MemorySemantics::Acquire, rewriter.getRemappedValue(value),
        rewriter.getRemappedValue(compare));
    return success();
  }
};

/// A memref.generic_atomic_rmw whose body is one `arith.xori %current, %value`
/// (kiln::atomicUpdate's xor; MLIR 19's atomic_rmw has no xor kind), with
/// %value from outside -> spirv.AtomicXor.
struct XorPattern : GenericAtomicPattern {
  using GenericAtomicPattern::GenericAtomicPattern;
  LogicalResult matchAndRewrite(memref::GenericAtomicRMWOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Block *body = op.getBody();
    auto yield = cast<memref::AtomicYieldOp>(body->getTerminator());
    auto xorOp = yield.getResult().getDefiningOp<arith::XOrIOp>();
    if (body->getOperations().size() != 2 || !xorOp)
      return failure();
    Value current = op.getCurrentValue();
    Value value = xorOp.getLhs() == current ? xorOp.getRhs() : xorOp.getLhs();
    if (value.getParentBlock() == body ||
        (xorOp.getLhs() != current && xorOp.getRhs() != current))
      return failure();
    FailureOr<AtomicTarget> t = target(op, adaptor, rewriter);
    if (failed(t))
      return failure();
    rewriter.replaceOpWithNewOp<spirv::AtomicXorOp>(
        op, op.getType(), t->pointer, t->scope,
        t->semantics | spirv::MemorySemantics::AcquireRelease, rewriter.getRemappedValue(value));
    return success();
  }
};

/// gpu.subgroup_reduce and/or/xor -> spirv.GroupNonUniformBitwiseAnd/Or/Xor,
/// which MLIR 19's gpu-to-spirv leaves out.
struct BitwiseSubgroupReducePattern : OpConversionPattern<gpu::SubgroupReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(gpu::SubgroupReduceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!op.getType().isSignlessInteger())
      return failure();
    Location loc = op.getLoc();
    auto scope = spirv::Scope::Subgroup;
    auto reduce = spirv::GroupOperation::Reduce;
    Value value = adaptor.getValue(), result;
    switch (op.getOp()) {
    case gpu::AllReduceOperation::AND:
      result = rewriter.create<spirv::GroupNonUniformBitwiseAndOp>(loc, value.getType(), scope,
                                                                    reduce, value, Value());
      break;
    case gpu::AllReduceOperation::OR:
      result = rewriter.create<spirv::GroupNonUniformBitwiseOrOp>(loc, value.getType(), scope,
                                                                   reduce, value, Value());
      break;
    case gpu::AllReduceOperation::XOR:
      result = rewriter.create<spirv::GroupNonUniformBitwiseXorOp>(loc, value.getType(), scope,
                                                                    reduce, value, Value());
      break;
    default: return failure();
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// math.X -> spirv.GL.X for the GLSL.std.450 functions MLIR 19's math-to-spirv
/// leaves out (one operand). GLSL leaves them undefined for NaN (lavapipe's
/// atan(NaN) is 0), so a NaN operand is passed through.
template <typename MathOp, typename GLOp>
struct GLMathPattern : OpConversionPattern<MathOp> {
  using OpConversionPattern<MathOp>::OpConversionPattern;
  LogicalResult matchAndRewrite(MathOp op, typename MathOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Type type = this->getTypeConverter()->convertType(op.getType());
    if (!type)
      return failure();
    Location loc = op.getLoc();
    Value x = adaptor.getOperand();
    Value result = rewriter.create<GLOp>(loc, type, x);
    Value nan = rewriter.create<spirv::IsNanOp>(loc, x);
    rewriter.replaceOpWithNewOp<spirv::SelectOp>(op, nan, x, result);
    return success();
  }
};

/// MLIR 19's scf.for -> spirv.mlir.loop stores the loop's results into their
/// variables only from the body's scf.yield, so a loop that ran no iteration
/// returned whatever the variables held (0 on lavapipe: `for j in range(0, n)`
/// with n = 0 lost the initial values of everything the loop carries). Each
/// scf.for with results whose bounds may not run it is wrapped as
/// `scf.if lb < ub { for } else { inits }`; the conversion stores an scf.if's
/// results on both branches.
static void guardZeroTripLoops(Operation *root) {
  SmallVector<scf::ForOp> loops; // innermost first: each is guarded before it is cloned
  root->walk([&](scf::ForOp loop) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    if (loop.getNumResults() && !(lb && ub && *lb < *ub))
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    OpBuilder builder(loop);
    Location loc = loop.getLoc();
    Value runs = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt,
                                               loop.getLowerBound(), loop.getUpperBound());
    auto guard = builder.create<scf::IfOp>(
        loc, runs,
        [&](OpBuilder &b, Location l) {
          b.create<scf::YieldOp>(l, b.clone(*loop)->getResults());
        },
        [&](OpBuilder &b, Location l) { b.create<scf::YieldOp>(l, loop.getInitArgs()); });
    loop.replaceAllUsesWith(guard.getResults());
    loop.erase();
  }
}

struct GPUToSPIRV : kiln::impl::KilnGPUToSPIRVBase<GPUToSPIRV> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ModuleOp module = getOperation();
    // The gpu.modules stay (the host side refers to them); each is converted as
    // a copy placed before it, as upstream does for Vulkan.
    SmallVector<Operation *> copies;
    OpBuilder builder(ctx);
    module.walk([&](gpu::GPUModuleOp gpuModule) {
      builder.setInsertionPoint(gpuModule);
      copies.push_back(builder.clone(*gpuModule));
    });
    for (Operation *copy : copies) {
      guardZeroTripLoops(copy);
      spirv::TargetEnvAttr targetAttr = spirv::lookupTargetEnvOrDefault(copy);
      std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(targetAttr);
      SPIRVTypeConverter converter(targetAttr, SPIRVConversionOptions());
      RewritePatternSet patterns(ctx);
      populateGPUToSPIRVPatterns(converter, patterns);
      ScfToSPIRVContext scfContext;
      populateSCFToSPIRVPatterns(converter, scfContext, patterns);
      arith::populateArithToSPIRVPatterns(converter, patterns);
      populateMemRefToSPIRVPatterns(converter, patterns);
      populateFuncToSPIRVPatterns(converter, patterns);
      patterns.add<AtomicRMWPattern, DeviceMemoryBarrierPattern, CompareAndSwapPattern,
                   XorPattern, BitwiseSubgroupReducePattern,
                   GLMathPattern<math::TanOp, spirv::GLTanOp>,
                   GLMathPattern<math::AtanOp, spirv::GLAtanOp>,
                   GLMathPattern<math::SinhOp, spirv::GLSinhOp>,
                   GLMathPattern<math::CoshOp, spirv::GLCoshOp>>(converter, ctx);
      if (failed(applyFullConversion(copy, *target, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
