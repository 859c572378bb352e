//===- Common.cpp - helpers shared by the CPU and GPU lowerings -----------===//

#include "passes/Common.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"

#include <tuple>
#include <utility>

using namespace mlir;
using namespace kiln;

TypedAttr kiln::reductionIdentity(OpBuilder &b, ReduceKind kind, Type elem) {
  if (auto f = dyn_cast<FloatType>(elem)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (kind) {
    // -0.0: the one value x + v leaves every v unchanged; with 0.0, sums and
    // prefixes of negative zeros came out positive (as in neither IEEE nor Triton).
    case ReduceKind::Sum: return b.getFloatAttr(elem, -0.0);
    case ReduceKind::Prod: return b.getFloatAttr(elem, 1.0);
    case ReduceKind::Max: return b.getFloatAttr(elem, llvm::APFloat::getInf(sem, true));
    case ReduceKind::Min: return b.getFloatAttr(elem, llvm::APFloat::getInf(sem, false));
    default: return {}; // bitwise kinds take integers (the verifiers say so)
    }
  }
  unsigned bits = elem.getIntOrFloatBitWidth();
  switch (kind) {
  case ReduceKind::Sum: return b.getIntegerAttr(elem, 0);
  case ReduceKind::Prod: return b.getIntegerAttr(elem, 1);
  case ReduceKind::Max: return b.getIntegerAttr(elem, APInt::getSignedMinValue(bits));
  case ReduceKind::Min: return b.getIntegerAttr(elem, APInt::getSignedMaxValue(bits));
  case ReduceKind::UMax: return b.getIntegerAttr(elem, 0);
  case ReduceKind::UMin:
  case ReduceKind::And: return b.getIntegerAttr(elem, APInt::getAllOnes(bits));
  case ReduceKind::Or:
  case ReduceKind::Xor: return b.getIntegerAttr(elem, 0);
  }
  return {};
}

Value kiln::combineReduction(OpBuilder &b, Location loc, ReduceKind kind, Value x, Value acc) {
  bool f = isa<FloatType>(getElementTypeOrSelf(x.getType()));
  switch (kind) {
  case ReduceKind::Sum:
    return f ? (Value)b.create<arith::AddFOp>(loc, x, acc) : b.create<arith::AddIOp>(loc, x, acc);
  case ReduceKind::Prod:
    return f ? (Value)b.create<arith::MulFOp>(loc, x, acc) : b.create<arith::MulIOp>(loc, x, acc);
  case ReduceKind::Max:
    return f ? (Value)b.create<arith::MaximumFOp>(loc, x, acc) : b.create<arith::MaxSIOp>(loc, x, acc);
  case ReduceKind::Min:
    return f ? (Value)b.create<arith::MinimumFOp>(loc, x, acc) : b.create<arith::MinSIOp>(loc, x, acc);
  case ReduceKind::UMax: return b.create<arith::MaxUIOp>(loc, x, acc);
  case ReduceKind::UMin: return b.create<arith::MinUIOp>(loc, x, acc);
  case ReduceKind::And: return b.create<arith::AndIOp>(loc, x, acc);
  case ReduceKind::Or: return b.create<arith::OrIOp>(loc, x, acc);
  case ReduceKind::Xor: return b.create<arith::XOrIOp>(loc, x, acc);
  }
  return {};
}


std::optional<arith::AtomicRMWKind> kiln::atomicKind(ReduceKind kind, bool isFloat) {
  switch (kind) {
  case ReduceKind::Max: return isFloat ? arith::AtomicRMWKind::maximumf : arith::AtomicRMWKind::maxs;
  case ReduceKind::Min: return isFloat ? arith::AtomicRMWKind::minimumf : arith::AtomicRMWKind::mins;
  case ReduceKind::UMax: return arith::AtomicRMWKind::maxu;
  case ReduceKind::UMin: return arith::AtomicRMWKind::minu;
  case ReduceKind::And: return arith::AtomicRMWKind::andi;
  case ReduceKind::Or: return arith::AtomicRMWKind::ori;
  case ReduceKind::Xor: return std::nullopt;
  default: return isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
  }
}

Value kiln::atomicUpdate(OpBuilder &b, Location loc, ReduceKind kind, Value value,
                         Value memref, ValueRange indices) {
  if (auto k = atomicKind(kind, isa<FloatType>(value.getType())))
    return b.create<memref::AtomicRMWOp>(loc, *k, value, memref, indices);
  auto rmw = b.create<memref::GenericAtomicRMWOp>(loc, memref, indices);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(rmw.getBody());
  Value updated = combineReduction(b, loc, kind, rmw.getCurrentValue(), value);
  b.create<memref::AtomicYieldOp>(loc, updated);
  return rmw.getResult();
}

Value kiln::floatAtomicMinMax(OpBuilder &b, Location loc, ReduceKind kind, Value ptr,
                              Value value, LLVM::AtomicOrdering ordering, StringRef scope) {
  Type type = value.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  Type bits = b.getIntegerType(width);
  Value first = b.create<LLVM::LoadOp>(loc, bits, ptr, width / 8, /*isVolatile=*/false,
                                       /*isNonTemporal=*/false, /*isInvariant=*/false,
                                       LLVM::AtomicOrdering::monotonic, scope);
  // Retry with the element as the failed exchange saw it until one succeeds;
  // the loop's result is then the element before this update.
  auto loop = b.create<scf::WhileOp>(loc, TypeRange{bits}, ValueRange{first});
  {
    Block *before = b.createBlock(&loop.getBefore(), {}, {bits}, {loc});
    Value current = before->getArgument(0);
    Value updated = b.create<arith::BitcastOp>(
        loc, bits,
        combineReduction(b, loc, kind, b.create<arith::BitcastOp>(loc, type, current), value));
    // Whether to retry, and the element as the exchange saw it.
    auto exchange = [&]() -> std::pair<Value, Value> {
      auto cas = b.create<LLVM::AtomicCmpXchgOp>(loc, ptr, current, updated, ordering,
                                                 LLVM::AtomicOrdering::monotonic, scope);
      Value swapped = b.create<LLVM::ExtractValueOp>(loc, cas, ArrayRef<int64_t>{1});
      return {b.create<arith::XOrIOp>(loc, swapped, b.create<arith::ConstantIntOp>(loc, 1, 1)),
              b.create<LLVM::ExtractValueOp>(loc, cas, ArrayRef<int64_t>{0})};
    };
    Value retry, seen;
    if (ordering == LLVM::AtomicOrdering::monotonic) {
      // A relaxed update that leaves the element as it is writes nothing (most
      // of a max reduction's updates, whose exchanges would contend for it).
      Value unchanged = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, updated, current);
      auto branch = b.create<scf::IfOp>(loc, TypeRange{b.getI1Type(), bits}, unchanged,
                                        /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      b.create<scf::YieldOp>(loc, ValueRange{b.create<arith::ConstantIntOp>(loc, 0, 1), current});
      b.setInsertionPointToStart(branch.elseBlock());
      auto [again, saw] = exchange();
      b.create<scf::YieldOp>(loc, ValueRange{again, saw});
      retry = branch.getResult(0), seen = branch.getResult(1);
    } else {
      std::tie(retry, seen) = exchange();
    }
    b.create<scf::ConditionOp>(loc, retry, ValueRange{seen});
    Block *after = b.createBlock(&loop.getAfter(), {}, {bits}, {loc});
    b.create<scf::YieldOp>(loc, after->getArgument(0));
  }
  b.setInsertionPointAfter(loop);
  return b.create<arith::BitcastOp>(loc, type, loop.getResult(0));
}

Value kiln::roundToTF32(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  auto shaped = dyn_cast<ShapedType>(v.getType());
  Type bitsType = shaped ? shaped.clone(i32) : i32;
  auto constant = [&](int64_t bits) -> Value {
    TypedAttr attr = b.getI32IntegerAttr(static_cast<int32_t>(bits));
    if (shaped)
      attr = SplatElementsAttr::get(cast<ShapedType>(bitsType), attr);
    return b.create<arith::ConstantOp>(loc, attr);
  };
  Value bits = b.create<arith::BitcastOp>(loc, bitsType, v);
  // Adding half of the dropped range to the magnitude's bits rounds ties away
  // from zero (a carry into the exponent is the correct result).
  Value rounded = b.create<arith::AndIOp>(
      loc, b.create<arith::AddIOp>(loc, bits, constant(0x1000)), constant(0xFFFFE000));
  Value exponent = b.create<arith::AndIOp>(loc, bits, constant(0x7F800000));
  Value special =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, exponent, constant(0x7F800000));
  Value result = b.create<arith::SelectOp>(loc, special, bits, rounded);
  return b.create<arith::BitcastOp>(loc, v.getType(), result);
}

void kiln::retypeResultsAndArguments(Operation *op, function_ref<Type(Type)> retype) {
  for (Value result : op->getResults())
    result.setType(retype(result.getType()));
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        arg.setType(retype(arg.getType()));
}

unsigned kiln::printHexDigits(PrintOp op) {
  if (!op.getHex() || !op.getValue())
    return 0;
  return std::max(1u, getElementTypeOrSelf(op.getValue().getType()).getIntOrFloatBitWidth() / 4);
}

std::string kiln::printFormat(llvm::StringRef prefix, unsigned rank, Type element,
                              bool isUnsigned, unsigned hexDigits) {
  std::string format = "pid (%d, %d, %d)";
  if (rank) {
    format += " idx (";
    for (unsigned d = 0; d < rank; ++d)
      format += d ? ", %d" : "%d";
    format += ")";
  }
  format += " ";
  for (char c : prefix)
    format += c == '%' ? std::string("%%") : std::string(1, c);
  if (element) {
    if (auto f = dyn_cast<FloatType>(element))
      format += f.getWidth() == 64 ? ": %.17g" : ": %.9g";
    else if (hexDigits)
      format += ": 0x%0" + std::to_string(hexDigits) +
                (element.getIntOrFloatBitWidth() == 64 ? "llx" : "x");
    else
      format += element.getIntOrFloatBitWidth() == 64 ? (isUnsigned ? ": %llu" : ": %lld")
                                                      : (isUnsigned ? ": %u" : ": %d");
  }
  return format + "\n";
}

Value kiln::printArgument(OpBuilder &b, Location loc, Value element, bool isUnsigned) {
  Type type = element.getType();
  if (isa<FloatType>(type)) {
    if (type.isF64())
      return element;
    // Narrow floats through f32: the bf16 -> f32 widening is the one that
    // arith-expand turns into bit operations (AMD's lowering keeps bf16 as i16).
    if (type.getIntOrFloatBitWidth() < 32)
      element = b.create<arith::ExtFOp>(loc, b.getF32Type(), element);
    return b.create<arith::ExtFOp>(loc, b.getF64Type(), element);
  }
  if (type.isInteger(1) || (isUnsigned && type.getIntOrFloatBitWidth() < 32)) // true prints as 1
    return b.create<arith::ExtUIOp>(loc, b.getI32Type(), element);
  if (type.getIntOrFloatBitWidth() < 32)
    return b.create<arith::ExtSIOp>(loc, b.getI32Type(), element);
  return element;
}
