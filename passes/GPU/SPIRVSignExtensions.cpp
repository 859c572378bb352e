//===- SPIRVSignExtensions.cpp - i32 -> i64 without OpSConvert --------------===//
//
// Mesa 22.3's lavapipe miscompiles an i32 -> i64 `OpSConvert` whose result a
// signed comparison or a shift reads: `cast<i64>(x) < 0` was false for x = -10,
// `cast<i64>(x) >> 63` was 0, and so `x % y` of an i32 x and an i64 y came out
// as the remainder of 2^64 - 10. The value itself was right (stores, equality
// and products were), and narrower sources were not affected. The extension
// is written instead as `(zext(x) ^ 2^31) - 2^31`, which every driver
// computes as it reads.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSPIRVSIGNEXTENSIONS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct SPIRVSignExtensions : kiln::impl::KilnSPIRVSignExtensionsBase<SPIRVSignExtensions> {
  void runOnOperation() override {
    SmallVector<arith::ExtSIOp> extensions;
    getOperation()->walk([&](arith::ExtSIOp op) {
      if (getElementTypeOrSelf(op.getIn().getType()).isInteger(32) &&
          getElementTypeOrSelf(op.getType()).isInteger(64))
        extensions.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (arith::ExtSIOp op : extensions) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      Type type = op.getType();
      TypedAttr bit31 = rewriter.getI64IntegerAttr(int64_t(1) << 31);
      if (auto shaped = dyn_cast<ShapedType>(type))
        bit31 = SplatElementsAttr::get(shaped, bit31);
      Value sign = rewriter.create<arith::ConstantOp>(loc, type, bit31);
      Value wide = rewriter.create<arith::ExtUIOp>(loc, type, op.getIn());
      Value flipped = rewriter.create<arith::XOrIOp>(loc, wide, sign);
      rewriter.replaceOpWithNewOp<arith::SubIOp>(op, flipped, sign);
    }
  }
};
} // namespace
