//===- ExactMath.cpp - math functions for SPIR-V from arithmetic ----------===//
//
// Each function reduces its argument exactly (or in double-word arithmetic,
// where the reduction cancels) to a short interval and evaluates a polynomial
// there: Taylor series (rational coefficients rounded to the type), except for
// erf, whose Chebyshev fits (made with mpmath) are listed with their intervals.
// Results are rebuilt from the reduction with the exponent set through the
// bits. The special values (NaN, infinities, signed zeros, subnormals) follow
// C's libm. The f32 functions are the f64 ones with shorter series and their
// own constants, except for Payne and Hanek's reduction, which f32 does in
// 64-bit integers. DeviceAgreement.DoubleMathAgreesWithLibmOnEveryDevice and
// FloatMathAgreesWithLibmOnEveryDevice measure each in ulps against long
// double references on the CPU and on Vulkan.
//
//===----------------------------------------------------------------------===//

#include "passes/GPU/ExactMath.h"
#include "passes/FloatBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

using namespace mlir;

namespace {
// ln 2 and log10(2) split so that k * hi is exact for |k| < 2^21.
constexpr double kLn2Hi = 0.6931471803691238, kLn2Lo = 1.9082149292705877e-10;
constexpr double kLog10Of2Hi = 0.3010299955494702, kLog10Of2Lo = 1.1451100898021838e-10;
// ln 2 as a double-double, and 1 / ln 2, 1 / ln 10.
constexpr double kLn2 = 0.6931471805599453, kLn2Tail = 2.3190468138462996e-17;
constexpr double kInvLn2 = 1.4426950408889634, kInvLn10 = 0.4342944819032518;
// pi / 2 as four 26-bit parts and a double: n * part is exact for n < 2^27.
constexpr double kPio2[5] = {1.5707963109016418, 1.5893254712295857e-08,
                             6.123233932053594e-17, 6.368317055225283e-25,
                             1.082856673921914e-32};
constexpr double kTwoOverPi = 0.6366197723675814;
// pi / 2 as a double-double.
constexpr double kHalfPi = 1.5707963267948966, kHalfPiTail = 6.123233995736766e-17;

// The same for f32 (double-float pairs; k * kLn2Hi32 is exact for |k| < 2^9,
// n * part for n <= 2^12).
constexpr double kLn2Hi32 = 0.693145751953125, kLn2Lo32 = 1.4286068203094173e-06;
constexpr double kLog10Of2Hi32 = 0.301025390625, kLog10Of2Lo32 = 4.605038981195214e-06;
constexpr double kLn232 = 0.6931471824645996, kLn2Tail32 = -1.9046542121259336e-09;
constexpr double kPio232[5] = {1.5703125, 0.0004837512969970703, 7.549533620476723e-08,
                               2.5632829192545614e-12, 6.123234262925839e-17};
constexpr double kHalfPi32 = 1.5707963705062866, kHalfPiTail32 = -4.371138828673793e-08;

/// A value as the unevaluated sum hi + lo, |lo| <= ulp(hi) / 2.
struct DD {
  Value hi, lo;
};

/// Builds f64 or f32 arithmetic, the integer arithmetic on its bits (i64 or
/// i32, and i64 for f32's Payne-Hanek reduction), and double-word arithmetic
/// (double-double, double-float) at one location.
class Exact : public kiln::FloatBuilder {
public:
  Exact(ImplicitLocOpBuilder &b, FloatType type)
      : FloatBuilder(b, type), f64(type.isF64()), width(type.getWidth()),
        mantissa(f64 ? 52 : 23), bias(f64 ? 1023 : 127) {}
  using FloatBuilder::add;
  using FloatBuilder::mul;

  /// f64 or f32 (the choice of series lengths and constants).
  const bool f64;
  const unsigned width, mantissa;
  const int64_t bias;
  /// v for f64, else v32.
  double pick(double v, double v32) const { return f64 ? v : v32; }
  int64_t pick(int64_t v, int64_t v32) const { return f64 ? v : v32; }

  Type intType() { return b.getIntegerType(width); }
  /// An integer constant as wide as the float (or of `bits` bits).
  Value ci(int64_t v, unsigned bits = 0) {
    return b.create<arith::ConstantIntOp>(v, bits ? bits : width);
  }
  Value bits(Value x) { return b.create<arith::BitcastOp>(intType(), x); }
  Value fromBits(Value i) { return b.create<arith::BitcastOp>(type, i); }
  Value toInt(Value x) { return b.create<arith::FPToSIOp>(intType(), x); }
  Value toFloat(Value i) { return b.create<arith::SIToFPOp>(type, i); }
  Value widen(Value i) { return b.create<arith::ExtUIOp>(b.getI64Type(), i); }
  Value narrow(Value i) { return b.create<arith::TruncIOp>(intType(), i); }
  Value iadd(Value x, Value y) { return b.create<arith::AddIOp>(x, y); }
  Value isub(Value x, Value y) { return b.create<arith::SubIOp>(x, y); }
  Value iand(Value x, Value y) { return b.create<arith::AndIOp>(x, y); }
  Value shl(Value x, Value y) { return b.create<arith::ShLIOp>(x, y); }
  Value shrs(Value x, Value y) { return b.create<arith::ShRSIOp>(x, y); }
  Value shru(Value x, Value y) { return b.create<arith::ShRUIOp>(x, y); }
  Value ior(Value x, Value y) { return b.create<arith::OrIOp>(x, y); }
  Value imul(Value x, Value y) { return b.create<arith::MulIOp>(x, y); }
  Value icmp(arith::CmpIPredicate p, Value x, Value y) { return b.create<arith::CmpIOp>(p, x, y); }
  Value udiv(Value x, Value y) { return b.create<arith::DivUIOp>(x, y); }
  Value ieq(Value x, int64_t y) { return icmp(arith::CmpIPredicate::eq, x, ci(y)); }

  /// 2^n for an integral n in the normal exponents' range.
  Value pow2(Value n) { return fromBits(shl(iadd(toInt(n), ci(bias)), ci(mantissa))); }
  /// x * 2^n for an integral n in twice that range, rounded once.
  Value scale(Value x, Value n) {
    Value half = floor(mul(n, c(0.5)));
    return mul(mul(x, pow2(half)), pow2(sub(n, half)));
  }

  // Error-free transformations and double-word arithmetic.
  DD twoSum(Value x, Value y) {
    Value s = add(x, y), v = sub(s, x);
    return {s, add(sub(x, sub(s, v)), sub(y, v))};
  }
  DD fastTwoSum(Value x, Value y) { // |x| >= |y|
    Value s = add(x, y);
    return {s, sub(y, sub(s, x))};
  }
  /// x = hi + lo exactly, hi the top half of the significand (26 of 53 bits,
  /// 12 of 24; masked, so it never overflows) and lo the rest.
  DD split(Value x) {
    int64_t low = f64 ? 0x7ffffff : 0xfff;
    Value hi = fromBits(iand(bits(x), ci(~low)));
    return {hi, sub(x, hi)};
  }
  /// x * y = hi + lo (Dekker's product; exact but for lo's last bits, which
  /// lo * lo may round). Vulkan's fma may round twice (lavapipe's f64 fma
  /// does), so exact products take no fma. lo is 0 where the product or its
  /// parts overflow.
  DD twoProd(Value x, Value y) {
    Value p = mul(x, y);
    DD a = split(x), b = split(y);
    Value e = add(add(sub(mul(a.hi, b.hi), p), mul(a.hi, b.lo)), mul(a.lo, b.hi));
    e = add(e, mul(a.lo, b.lo));
    return {p, select(lt(abs(p), pick(0x1p1023, 0x1p127)), e, c(0))};
  }
  DD add(DD x, DD y) {
    DD s = twoSum(x.hi, y.hi);
    return fastTwoSum(s.hi, add(s.lo, add(x.lo, y.lo)));
  }
  DD mul(DD x, DD y) {
    DD p = twoProd(x.hi, y.hi);
    return fastTwoSum(p.hi, fma(x.hi, y.lo, fma(x.lo, y.hi, p.lo)));
  }
  DD mul(DD x, Value y) {
    DD p = twoProd(x.hi, y);
    return fastTwoSum(p.hi, fma(x.lo, y, p.lo));
  }
};

/// (y.hi + y.lo) / (x.hi + x.lo) as a double-word q + dq: q = y.hi / x.hi, and
/// dq from the remainder; 0 where that is not finite (a zero or infinite
/// divisor) or not exact (q or y.hi near the subnormals, where the product's
/// low part underflows: atan2 of subnormal quotients was 2.5 ulps off).
DD quotientWords(Exact &f, DD y, DD x) {
  Value q = f.div(y.hi, x.hi);
  DD p = f.twoProd(q, x.hi);
  Value remainder = f.sub(f.add(f.sub(f.sub(y.hi, p.hi), p.lo), y.lo), f.mul(q, x.lo));
  Value dq = f.div(remainder, x.hi);
  double tiny = f.pick(0x1p-960, 0x1p-100);
  Value exact = f.both(f.both(f.gt(f.abs(q), tiny), f.gt(f.abs(y.hi), tiny)),
                       f.lt(f.abs(dq), INFINITY));
  return {q, f.select(exact, dq, f.c(0))};
}

/// x / y, for f32 corrected once by the exact remainder: Vulkan lets an f32
/// division be 2.5 ulp off, where the quotient is most of a result.
Value quotient(Exact &f, Value x, Value y) {
  if (f.f64)
    return f.div(x, y);
  DD q = quotientWords(f, DD{x, f.c(0)}, DD{y, f.c(0)});
  return f.add(q.hi, q.lo);
}

/// Taylor coefficients term(n) for n = first, first + step, ... (count terms).
template <typename Term>
llvm::SmallVector<double> series(int first, int step, int count, Term term) {
  llvm::SmallVector<double> c;
  for (int i = 0; i < count; ++i)
    c.push_back(term(first + i * step));
  return c;
}
double inverseFactorial(int n) {
  double f = 1;
  for (int i = 2; i <= n; ++i)
    f *= i; // exact up to 22!
  return 1 / f;
}

//===- exp family ---------------------------------------------------------===//

/// e^r for |r| <= ln 2 / 2 (1 + r + r^2/2! + ... + r^13/13!; the next term is
/// below 2^-57; for f32 up to r^7/7!, the next below 2^-27).
llvm::SmallVector<double> expSeries(Exact &f) {
  return series(0, 1, f.f64 ? 14 : 8, inverseFactorial);
}
/// (e^r - 1 - r) / r^2 = 1/2! + r/3! + ... + r^15/17! for |r| <= 1/2 (f32: to
/// r^9/11!).
llvm::SmallVector<double> expm1Tail(Exact &f) {
  return series(2, 1, f.f64 ? 16 : 10, inverseFactorial);
}

/// e^(hi + lo) * 2^shift, for |lo| < 2^-40 |hi| or so. hi = k ln 2 + r exactly
/// (k * kLn2Hi is exact and the subtraction cancels exactly); r - lo - k kLn2Lo
/// is rounded once and its error carried as c: e^(r + c) = e^r (1 + c).
/// Arguments past +-1100 (f32: +-170) are clamped (and lo, which may be NaN
/// there, dropped): the result has overflowed or underflowed.
Value expOf(Exact &f, Value hi, Value lo, double shift = 0) {
  double limit = f.pick(1100.0, 170.0);
  lo = f.select(f.le(f.abs(hi), limit), lo, f.c(0));
  hi = f.clamp(hi, -limit, limit);
  Value k = f.rint(f.mul(hi, f.c(kInvLn2)));
  Value rh = f.sub(hi, f.mul(k, f.c(f.pick(kLn2Hi, kLn2Hi32))));
  Value rl = f.sub(f.mul(k, f.c(f.pick(kLn2Lo, kLn2Lo32))), lo);
  Value r = f.sub(rh, rl);
  Value c = f.sub(f.sub(rh, r), rl);
  Value p = f.poly(r, expSeries(f));
  return f.scale(f.fma(p, c, p), f.add(k, f.c(shift)));
}

Value expandExp(Exact &f, ValueRange x) { return expOf(f, x[0], f.c(0)); }

/// 2^x = 2^k e^(r ln 2), r = x - rint(x) exact, r ln 2 as a double-double.
/// x is clamped to +-2000 (f32: +-250), past the overflow and underflow.
Value expandExp2(Exact &f, ValueRange ops) {
  double limit = f.pick(2000.0, 250.0);
  Value x = f.clamp(ops[0], -limit, limit);
  Value k = f.rint(x);
  Value r = f.sub(x, k);
  DD t = f.twoProd(r, f.c(f.pick(kLn2, kLn232)));
  Value lo = f.fma(r, f.c(f.pick(kLn2Tail, kLn2Tail32)), t.lo);
  Value p = f.poly(t.hi, expSeries(f));
  return f.scale(f.fma(p, lo, p), k);
}

/// expm1(x): the series itself for |x| <= 1/2; beyond it, with
/// x = k ln 2 + r and e = expm1(r), expm1(x) = 2 (2^(k-1) e + (2^(k-1) - 1/2)),
/// whose terms are exact or of one sign (and cancel by at most 1.5 past 1/2).
/// x is clamped to [-40, 710] (f32: [-20, 89]): expm1 is -1 below (to the
/// nearest double) and overflows above.
Value expandExpm1(Exact &f, ValueRange ops) {
  Value x = ops[0];
  auto expm1Series = [&](Value r) { return f.fma(f.mul(r, r), f.poly(r, expm1Tail(f)), r); };
  Value small = expm1Series(x);
  Value xc = f.clamp(x, f.pick(-40.0, -20.0), f.pick(710.0, 89.0));
  Value k = f.rint(f.mul(xc, f.c(kInvLn2)));
  Value rh = f.sub(xc, f.mul(k, f.c(f.pick(kLn2Hi, kLn2Hi32))));
  Value rl = f.mul(k, f.c(f.pick(kLn2Lo, kLn2Lo32)));
  Value r = f.sub(rh, rl);
  Value c = f.sub(f.sub(rh, r), rl);
  Value e = expm1Series(r);
  e = f.fma(c, f.add(e, f.c(1)), e); // expm1(r + c) = e + c e^r
  Value s = f.pow2(f.sub(k, f.c(1)));
  Value large = f.mul(f.c(2), f.fma(s, e, f.sub(s, f.c(0.5))));
  Value result = f.select(f.le(f.abs(x), 0.5), small, large);
  return f.select(f.eq(x, 0), x, result); // -0
}

//===- log family ---------------------------------------------------------===//

/// x = 2^k (1 + m) with 1 + m in [sqrt(1/2), sqrt(2)), for positive finite x
/// (subnormals scaled by 2^54, f32's by 2^24, first); k is integral, m exact.
struct LogReduced {
  Value k, m;
};
LogReduced reduceLog(Exact &f, Value x) {
  const int64_t sqrtHalfBits = f.pick(int64_t(0x3fe6a09e667f3bcd), 0x3f3504f3);
  const int64_t oneBits = int64_t(f.bias) << f.mantissa;
  const int shift = f.f64 ? 54 : 24;
  Value subnormal = f.lt(x, f.pick(0x1p-1022, 0x1p-126));
  Value xs = f.select(subnormal, f.mul(x, f.c(std::ldexp(1.0, shift))), x);
  // Adding 1 - sqrt(1/2) (in bits) carries into the exponent exactly when the
  // significand is at least sqrt(2).
  Value t = f.iadd(f.bits(xs), f.ci(oneBits - sqrtHalfBits));
  Value e = f.isub(f.shrs(t, f.ci(f.mantissa)), f.ci(f.bias));
  Value fraction = f.iand(t, f.ci((int64_t(1) << f.mantissa) - 1));
  Value one = f.fromBits(f.iadd(fraction, f.ci(sqrtHalfBits)));
  Value k = f.add(f.toFloat(e), f.select(subnormal, f.c(-shift), f.c(0)));
  return {k, f.sub(one, f.c(1))};
}

/// 2 (z/3 + z^2/5 + ... + z^11/23) / z: log(1 + m) = 2s + s R for s = m / (2 + m),
/// z = s^2 <= 0.0295, the next term below 2^-58 (for f32 up to z^6/13, the
/// next below 2^-39).
llvm::SmallVector<double> logTail(Exact &f) {
  return series(3, 2, f.f64 ? 11 : 6, [](int n) { return 2.0 / n; });
}

/// log(1 + m) for |m| < sqrt(2) - 1, as m - (m^2/2 - s (m^2/2 + R)).
Value logOnePlus(Exact &f, Value m) {
  Value s = f.div(m, f.add(f.c(2), m));
  Value z = f.mul(s, s);
  Value r = f.mul(z, f.poly(z, logTail(f)));
  Value halfSquare = f.mul(f.mul(f.c(0.5), m), m);
  return f.sub(m, f.sub(halfSquare, f.mul(s, f.add(halfSquare, r))));
}

/// `value` for positive finite x; log's results elsewhere: NaN below 0 (and
/// for NaN), -inf at +-0, inf at inf.
Value logSpecials(Exact &f, Value x, Value value) {
  value = f.select(f.eq(x, INFINITY), x, value);
  value = f.select(f.eq(x, 0), f.c(-INFINITY), value);
  return f.select(f.either(f.lt(x, 0), f.isNaN(x)), f.c(NAN), value);
}

Value expandLog(Exact &f, ValueRange x) {
  LogReduced r = reduceLog(f, x[0]);
  Value small = f.add(logOnePlus(f, r.m), f.mul(r.k, f.c(f.pick(kLn2Lo, kLn2Lo32))));
  return logSpecials(f, x[0], f.add(f.mul(r.k, f.c(f.pick(kLn2Hi, kLn2Hi32))), small));
}

/// k + log(1 + m) / ln 2: exact at powers of 2.
Value expandLog2(Exact &f, ValueRange x) {
  LogReduced r = reduceLog(f, x[0]);
  return logSpecials(f, x[0], f.fma(logOnePlus(f, r.m), f.c(kInvLn2), r.k));
}

Value expandLog10(Exact &f, ValueRange x) {
  LogReduced r = reduceLog(f, x[0]);
  Value lo = f.c(f.pick(kLog10Of2Lo, kLog10Of2Lo32));
  Value hi = f.c(f.pick(kLog10Of2Hi, kLog10Of2Hi32));
  Value small = f.fma(logOnePlus(f, r.m), f.c(kInvLn10), f.mul(r.k, lo));
  return logSpecials(f, x[0], f.add(f.mul(r.k, hi), small));
}

/// |x|^y for a positive finite x (the special cases are kiln-approximate-math's):
/// log|x| in double-double, to about 2^-64 (the series' tail is a double), times
/// y, then e^(hi + lo): under 0.1 ulp of error while |y log x| <= 709. The
/// series in s = m / (2 + m) runs in double-double where its terms are large.
/// f32 does the same in double-float: log|x| to about 2^-40, which keeps
/// e^(y log x) within an ulp wherever it is finite and normal.
Value expandPositivePow(Exact &f, ValueRange ops) {
  Value x = ops[0], y = ops[1];
  LogReduced r = reduceLog(f, x);
  // s = m / (2 + m) as a double-double: d = 2 + m exactly as dh + dl, then the
  // division's remainder, m - sh dh exactly (the product cancels m).
  DD d = f.fastTwoSum(f.c(2), r.m);
  Value sh = f.div(r.m, d.hi);
  DD product = f.twoProd(sh, d.hi);
  Value remainder = f.sub(f.sub(f.sub(r.m, product.hi), product.lo), f.mul(sh, d.lo));
  DD s{sh, f.div(remainder, d.hi)};
  s = f.fastTwoSum(s.hi, s.lo);
  // log(1 + m) = s (2 + z (2/3 + z (2/5 + ...))), z = s^2.
  DD z = f.mul(s, s);
  DD twoThirds{f.c(f.pick(0.6666666666666666, 0.6666666865348816)),
               f.c(f.pick(3.700743415417188e-17, -1.9868215517249155e-08))};
  llvm::SmallVector<double> tail = logTail(f);
  Value rest = f.mul(z.hi, f.poly(z.hi, llvm::ArrayRef<double>(tail).drop_front()));
  DD inner = f.add(twoThirds, DD{rest, f.c(0)});
  DD series = f.add(f.mul(z, inner), DD{f.c(2), f.c(0)});
  DD ln2{f.c(f.pick(kLn2, kLn232)), f.c(f.pick(kLn2Tail, kLn2Tail32))};
  DD logX = f.add(f.mul(ln2, r.k), f.mul(s, series));
  DD power = f.mul(logX, y);
  return expOf(f, power.hi, power.lo);
}

//===- trigonometric functions --------------------------------------------===//

/// x = n pi/2 + (rh + rl), |rh + rl| <= pi/4 (a little more where x * 2/pi
/// rounds), quadrant = n mod 4 (an integer as wide as the float).
struct TrigReduced {
  Value rh, rl, quadrant;
};

/// Below this, Cody and Waite's reduction; above, Payne and Hanek's.
constexpr double kCodyWaiteLimit = 0x1p26 * 3.141592653589793;
constexpr double kCodyWaiteLimit32 = 0x1p11 * 3.141592653589793;

/// Cody and Waite's reduction, for |x| < kCodyWaiteLimit: n * part is exact for
/// each 26-bit part of pi/2 (n < 2^27), and x - n p1 - n p2 is exact too (a
/// multiple of ulp(x) or 2^-51 below 1); the rest is subtracted in
/// double-double, pi/2 known to 2^-157. f32 cuts pi/2 into 12-bit parts
/// (n <= 2^12), known to 2^-78.
TrigReduced reduceTrigCodyWaite(Exact &f, Value x) {
  const double *part = f.f64 ? kPio2 : kPio232;
  Value n = f.rint(f.mul(x, f.c(kTwoOverPi)));
  Value exact = f.sub(f.sub(x, f.mul(n, f.c(part[0]))), f.mul(n, f.c(part[1])));
  DD s = f.twoSum(exact, f.neg(f.mul(n, f.c(part[2]))));
  Value lo = f.sub(f.sub(s.lo, f.mul(n, f.c(part[3]))), f.mul(n, f.c(part[4])));
  DD r = f.fastTwoSum(s.hi, lo);
  Value q = f.sub(n, f.mul(f.c(4), f.floor(f.mul(n, f.c(0.25)))));
  return {r.hi, r.lo, f.toInt(q)};
}

/// 2/pi in 24-bit digits: 2/pi = sum g[j] 2^(-24 (j + 1)). Fifty reach the
/// largest double's exponent plus the 168 bits the reduction keeps.
constexpr int64_t kTwoOverPiDigits[50] = {
    0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163,
    0xabdebb, 0xc561b7, 0x246e3a, 0x424dd2, 0xe00649, 0x2eea09, 0xd1921c, 0xfe1deb, 0x1cb129,
    0xa73ee8, 0x8235f5, 0x2ebb44, 0x84e99c, 0x7026b4, 0x5f7e41, 0x3991d6, 0x398353, 0x39f49c,
    0x845f8b, 0xbdf928, 0x3b1ff8, 0x97ffde, 0x05980f, 0xef2f11, 0x8b5a0a, 0x6d1f6d, 0x367ecf,
    0x27cb09, 0xb74f46, 0x3f669e, 0x5fea2d, 0x7527ba, 0xc7ebe5, 0xf17b3d, 0x0739f7, 0x8a5292,
    0xea6bfb, 0x5fb11f, 0x8d5d08, 0x560330, 0x46fc7b};

/// Payne and Hanek's reduction, for finite |x| >= kCodyWaiteLimit, in exact
/// integer-valued doubles. |x| = X 2^e is cut at multiples of 24 bits,
/// |x| = sum a[i] 2^(24 (t + i)), so every product a[i] g[j] lands in a base-2^24
/// digit of |x| 2/pi: the digits of weight 2^24 and up are multiples of 4 and
/// dropped, digit 0 holds the quadrant, digits -1..-6 the fraction (the rest
/// is below 2^-118). After the carries, a fraction of 1/2 or more is taken as
/// its complement to 1 (n + 1), digit by digit, so the remainder is summed from
/// exact digits of one sign: no cancellation, however close x is to a
/// multiple of pi/2.
TrigReduced reduceTrigPayneHanek(Exact &f, Value x) {
  using P = arith::CmpIPredicate;
  Value bits = f.bits(f.abs(x));
  Value significand = f.ior(f.iand(bits, f.ci(0x000fffffffffffff)), f.ci(int64_t(1) << 52));
  Value e = f.isub(f.shru(bits, f.ci(52)), f.ci(1075)); // |x| = significand 2^e, e >= -25
  Value t = f.isub(f.udiv(f.iadd(e, f.ci(48)), f.ci(24)), f.ci(2)); // floor(e / 24)
  Value shift = f.isub(e, f.imul(t, f.ci(24)));                   // 0..23
  // The significand shifted left by `shift`, in 24-bit digits a[0..3].
  Value mask = f.ci(0xffffff);
  Value a[4] = {
      f.iand(f.shl(significand, shift), mask),
      f.iand(f.shru(significand, f.isub(f.ci(24), shift)), mask),
      f.iand(f.shru(significand, f.isub(f.ci(48), shift)), mask),
      f.shru(significand, f.select(f.icmp(P::ugt, shift, f.ci(8)),
                                   f.isub(f.ci(72), shift), f.ci(63)))};
  Value digit[4];
  for (int i = 0; i < 4; ++i)
    digit[i] = f.toFloat(a[i]);
  // g[t - 1 + m] for m = 0..9 (g[-1] = 0; the largest index is 48).
  Value g[10];
  for (int m = 0; m < 10; ++m) {
    Value index = f.iadd(t, f.ci(m - 1));
    g[m] = f.c(0);
    for (int j = 0; j < 50; ++j)
      g[m] = f.select(f.icmp(P::eq, index, f.ci(j)), f.c(double(kTwoOverPiDigits[j])), g[m]);
  }
  // d[k]: the digit of weight 2^(-24 k), each a sum of four exact 48-bit products.
  Value d[7];
  for (int k = 0; k < 7; ++k) {
    d[k] = f.mul(digit[0], g[k]);
    for (int i = 1; i < 4; ++i)
      d[k] = f.add(d[k], f.mul(digit[i], g[i + k]));
  }
  for (int k = 6; k > 0; --k) {
    Value carry = f.floor(f.mul(d[k], f.c(0x1p-24)));
    d[k] = f.sub(d[k], f.mul(carry, f.c(0x1p24)));
    d[k - 1] = f.add(d[k - 1], carry);
  }
  Value n = f.sub(d[0], f.mul(f.c(4), f.floor(f.mul(d[0], f.c(0.25)))));
  Value upper = f.cmp(arith::CmpFPredicate::OGE, d[1], f.c(0x1p23));
  n = f.select(upper, f.add(n, f.c(1)), n);
  DD fraction{f.c(0), f.c(0)};
  for (int k = 6; k > 0; --k) {
    Value complement = f.sub(f.c(k == 6 ? 0x1p24 : 0x1p24 - 1), d[k]);
    Value term = f.mul(f.select(upper, complement, d[k]), f.c(std::ldexp(1.0, -24 * k)));
    fraction = f.add(DD{term, f.c(0)}, fraction);
  }
  DD r = f.mul(fraction, DD{f.c(kHalfPi), f.c(kHalfPiTail)});
  // Negative for a complement, and for negative x (whose quadrant is -n).
  Value negate = f.differ(upper, f.lt(x, 0));
  Value q = f.iand(f.toInt(n), f.ci(3));
  q = f.select(f.lt(x, 0), f.iand(f.isub(f.ci(0), q), f.ci(3)), q);
  return {f.select(negate, f.neg(r.hi), r.hi), f.select(negate, f.neg(r.lo), r.lo), q};
}

/// Bits [32 k, 32 k + 32) of 32 zero bits followed by 2/pi's fraction.
uint64_t twoOverPiWord(int k) {
  uint64_t word = 0;
  for (int i = 32 * k - 32; i < 32 * k; ++i) // i: the index of a bit of 2/pi
    word = word << 1 | (i < 0 ? 0 : (kTwoOverPiDigits[i / 24] >> (23 - i % 24)) & 1);
  return word;
}

/// Payne and Hanek's reduction for f32, for finite |x| >= kCodyWaiteLimit32,
/// in 64-bit integers. |x| = M 2^e (M < 2^24, e >= -11): the bits of 2/pi of
/// weight 2^(1-e) to 2^(-e-94), a 96-bit W in three 32-bit words, times M
/// give |x| 2/pi mod 4 as the 120-bit P = M W times 2^-94 (bits of 2/pi above
/// the window only add multiples of 4; those below, less than 2^-70). P's bits
/// 94 and 95 are the quadrant, bits 30 to 93 the fraction, read as a signed
/// 64-bit integer: from 1/2 on, the fraction less 1 and the next quadrant. The
/// remainder is summed from the digits of that fraction's magnitude, which are
/// of one sign: no cancellation, however close x is to a multiple of pi/2
/// (digits of both signs lost 4 ulps of cos(14173733 2^88), 1e-8).
TrigReduced reduceTrigPayneHanek32(Exact &f, Value x) {
  using P = arith::CmpIPredicate;
  auto c64 = [&](int64_t v) { return f.ci(v, 64); };
  Value bits = f.widen(f.bits(f.abs(x)));
  Value m = f.ior(f.iand(bits, c64(0x7fffff)), c64(0x800000));
  // The window starts at bit e + 30 of the words, in word j at bit `shift`.
  Value start = f.isub(f.shru(bits, c64(23)), c64(150 - 30));
  Value j = f.shru(start, c64(5)), shift = f.iand(start, c64(31));
  Value w[3]; // W's words, the highest first
  for (int i = 0; i < 3; ++i) {
    Value pair = c64(0); // words j + i and j + i + 1; j <= 4 for the largest float
    for (int k = 0; k <= 4; ++k) {
      uint64_t words = twoOverPiWord(k + i) << 32 | twoOverPiWord(k + i + 1);
      pair = f.select(f.icmp(P::eq, j, c64(k)), c64(int64_t(words)), pair);
    }
    w[i] = f.shru(f.shl(pair, shift), c64(32));
  }
  Value low = f.imul(m, w[2]);
  Value mid = f.iadd(f.imul(m, w[1]), f.shru(low, c64(32)));
  Value high = f.iadd(f.imul(m, w[0]), f.shru(mid, c64(32)));
  Value mask32 = c64(0xffffffff);
  Value fraction = f.ior(f.ior(f.shl(f.iand(high, c64(0x3fffffff)), c64(34)),
                               f.shl(f.iand(mid, mask32), c64(2))),
                         f.shru(f.iand(low, mask32), c64(30)));
  Value upper = f.icmp(P::slt, fraction, c64(0));
  Value q = f.iadd(f.shru(high, c64(30)), f.select(upper, c64(1), c64(0)));
  q = f.select(f.lt(x, 0), f.isub(c64(0), q), q); // negative x: quadrant -n
  // |fraction| 2^-64 = a 2^-24 + b 2^-48 + c 2^-64, each exact in f32 (2^63,
  // the magnitude of -1/2, is read unsigned).
  Value magnitude = f.select(upper, f.isub(c64(0), fraction), fraction);
  Value a = f.toFloat(f.shru(magnitude, c64(40)));
  Value b = f.toFloat(f.iand(f.shru(magnitude, c64(16)), c64(0xffffff)));
  Value c = f.toFloat(f.iand(magnitude, c64(0xffff)));
  DD sum = f.add(DD{f.mul(a, f.c(0x1p-24)), f.mul(b, f.c(0x1p-48))},
                 DD{f.mul(c, f.c(0x1p-64)), f.c(0)});
  DD r = f.mul(f.fastTwoSum(sum.hi, sum.lo), DD{f.c(kHalfPi32), f.c(kHalfPiTail32)});
  // Negative for a fraction past 1/2, and for negative x (whose quadrant is -n).
  Value negative = f.differ(upper, f.lt(x, 0));
  return {f.select(negative, f.neg(r.hi), r.hi), f.select(negative, f.neg(r.lo), r.lo),
          f.narrow(f.iand(q, c64(3)))};
}

/// Cody and Waite's reduction, or Payne and Hanek's past its limit (an scf.if:
/// the long path runs only where an argument needs it, on a GPU; lavapipe
/// runs both and selects, which makes its f32 sin 2.8 times as slow as
/// GLSL's, and as slow as with no branch). Infinities and NaN take the short
/// path; their results are replaced by NaN.
TrigReduced reduceTrig(Exact &f, Value x) {
  ImplicitLocOpBuilder &b = f.b;
  double limit = f.pick(kCodyWaiteLimit, kCodyWaiteLimit32);
  Value large = f.both(f.cmp(arith::CmpFPredicate::OGE, f.abs(x), f.c(limit)),
                       f.cmp(arith::CmpFPredicate::OLT, f.abs(x), f.c(INFINITY)));
  auto branch = b.create<scf::IfOp>(TypeRange{f.type, f.type, f.intType()}, large,
                                    /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  for (bool payneHanek : {true, false}) {
    Region &region = payneHanek ? branch.getThenRegion() : branch.getElseRegion();
    b.setInsertionPointToEnd(&region.front());
    TrigReduced r = !payneHanek ? reduceTrigCodyWaite(f, x)
                    : f.f64     ? reduceTrigPayneHanek(f, x)
                                : reduceTrigPayneHanek32(f, x);
    b.create<scf::YieldOp>(ValueRange{r.rh, r.rl, r.quadrant});
  }
  return {branch.getResult(0), branch.getResult(1), branch.getResult(2)};
}

/// (sin(r) - r) / r^3 = -1/3! + z/5! - ... + z^8/19!, z = r^2 (|r| <= pi/4:
/// the next term is below 2^-62; for f32 up to z^3/9!, the next below 2^-28).
llvm::SmallVector<double> sinTail(Exact &f) {
  return series(3, 2, f.f64 ? 9 : 4,
                [](int n) { return (n % 4 == 3 ? -1 : 1) * inverseFactorial(n); });
}
/// (cos(r) - 1 + z/2) / z^2 = 1/4! - z/6! + ... + z^8/20! (f32: to z^3/10!).
llvm::SmallVector<double> cosTail(Exact &f) {
  return series(4, 2, f.f64 ? 9 : 4,
                [](int n) { return (n % 4 == 0 ? 1 : -1) * inverseFactorial(n); });
}

/// sin(rh + rl) = sin(rh) + rl cos(rh), with cos(rh) ~ 1 - rh^2/2.
/// As the unevaluated sum of rh and a tail.
DD sinKernelWords(Exact &f, Value rh, Value rl) {
  Value z = f.mul(rh, rh);
  Value cosFactor = f.fma(f.c(-0.5), z, f.c(1));
  return {rh, f.fma(f.mul(rh, z), f.poly(z, sinTail(f)), f.mul(rl, cosFactor))};
}
Value sinKernel(Exact &f, Value rh, Value rl) {
  DD v = sinKernelWords(f, rh, rl);
  return f.add(v.hi, v.lo);
}

/// cos(rh + rl) = cos(rh) - rl sin(rh), with 1 - z/2 split as w + ((1 - w) - z/2);
/// as the unevaluated sum of w and the rest.
DD cosKernelWords(Exact &f, Value rh, Value rl) {
  Value z = f.mul(rh, rh);
  Value halfZ = f.mul(f.c(0.5), z);
  Value w = f.sub(f.c(1), halfZ);
  Value tail = f.sub(f.mul(f.mul(z, z), f.poly(z, cosTail(f))), f.mul(rh, rl));
  return {w, f.add(f.sub(f.sub(f.c(1), w), halfZ), tail)};
}
Value cosKernel(Exact &f, Value rh, Value rl) {
  DD v = cosKernelWords(f, rh, rl);
  return f.add(v.hi, v.lo);
}

/// NaN for infinite x (and NaN); `zeroKeeps` returns x itself at +-0.
Value trigSpecials(Exact &f, Value x, Value value, bool zeroKeeps) {
  if (zeroKeeps)
    value = f.select(f.eq(x, 0), x, value);
  return f.select(f.eq(f.abs(x), INFINITY), f.c(NAN), value);
}

Value expandSin(Exact &f, ValueRange x) {
  TrigReduced r = reduceTrig(f, x[0]);
  Value odd = f.ieq(f.iand(r.quadrant, f.ci(1)), 1);
  Value v = f.select(odd, cosKernel(f, r.rh, r.rl), sinKernel(f, r.rh, r.rl));
  v = f.select(f.ieq(f.iand(r.quadrant, f.ci(2)), 2), f.neg(v), v);
  return trigSpecials(f, x[0], v, /*zeroKeeps=*/true);
}

Value expandCos(Exact &f, ValueRange x) {
  TrigReduced r = reduceTrig(f, x[0]);
  Value odd = f.ieq(f.iand(r.quadrant, f.ci(1)), 1);
  Value v = f.select(odd, sinKernel(f, r.rh, r.rl), cosKernel(f, r.rh, r.rl));
  // Quadrants 1 and 2 negate: bit 1 of q + 1.
  v = f.select(f.ieq(f.iand(f.iadd(r.quadrant, f.ci(1)), f.ci(2)), 2), f.neg(v), v);
  return trigSpecials(f, x[0], v, /*zeroKeeps=*/false);
}

/// tan = sin / cos in even quadrants, -cos / sin in odd ones.
/// The quotient is formed from double-word sine and cosine, rounded once: q =
/// n / d, corrected by the remainder n - q d (f32 tan was 2.1 ulps off over a
/// million arguments, now 1.1; f64 1.5, now 0.8).
Value expandTan(Exact &f, ValueRange x) {
  TrigReduced r = reduceTrig(f, x[0]);
  DD sin = sinKernelWords(f, r.rh, r.rl), cos = cosKernelWords(f, r.rh, r.rl);
  Value odd = f.ieq(f.iand(r.quadrant, f.ci(1)), 1);
  DD n{f.select(odd, cos.hi, sin.hi), f.select(odd, cos.lo, sin.lo)};
  DD d{f.select(odd, f.neg(sin.hi), cos.hi), f.select(odd, f.neg(sin.lo), cos.lo)};
  DD q = quotientWords(f, n, f.fastTwoSum(d.hi, d.lo));
  return trigSpecials(f, x[0], f.add(q.hi, q.lo), /*zeroKeeps=*/true);
}

/// (atan(u) - u) / u^3 = -1/3 + z/5 - ... + z^8/19, z = u^2 <= tan(pi/24)^2:
/// the next term is below 2^-57 (for f32 up to z^4/11 with z <= 0.04, the next
/// below 2^-28).
llvm::SmallVector<double> atanTail(Exact &f) {
  return series(3, 2, f.f64 ? 9 : 5, [](int n) { return (n % 4 == 3 ? -1.0 : 1.0) / n; });
}

/// atan(x): a = |x|, or 1/a past 1 (atan = pi/2 - atan(1/a)); then
/// atan(a) = j pi/12 + atan(u), u = (a - t) / (1 + a t) for t = tan(j pi/12)
/// and the j whose interval holds a, |u| <= tan(pi/24).
/// As a double-word hi + lo with x's sign (NaN for NaN).
DD atanWords(Exact &f, Value x) {
  Value a = f.abs(x);
  Value inverted = f.gt(a, 1);
  a = f.select(inverted, quotient(f, f.c(1), a), a);
  // tan(j pi/12) and j pi/12 as double-doubles (or double-floats), j = 0..3.
  const double tanHi64[4] = {0, 0.2679491924311227, 0.5773502691896257, 1};
  const double tanLo64[4] = {0, 1.0671460244446628e-17, 3.3450280739356345e-17, 0};
  const double angleHi64[4] = {0, 0.26179938779914946, 0.5235987755982989,
                               0.7853981633974483};
  const double angleLo64[4] = {0, -2.6802044161277275e-17, -5.360408832255455e-17,
                               3.061616997868383e-17};
  const double tanHi32[4] = {0, 0.2679491937160492, 0.5773502588272095, 1};
  const double tanLo32[4] = {0, -1.284926498534844e-09, 1.0362416702491828e-08, 0};
  const double angleHi32[4] = {0, 0.2617993950843811, 0.5235987901687622,
                               0.7853981852531433};
  const double angleLo32[4] = {0, -7.285231529152725e-09, -1.457046305830545e-08,
                               -2.1855694143368964e-08};
  const double(&tanHi)[4] = f.f64 ? tanHi64 : tanHi32, (&tanLo)[4] = f.f64 ? tanLo64 : tanLo32;
  const double(&angleHi)[4] = f.f64 ? angleHi64 : angleHi32;
  const double(&angleLo)[4] = f.f64 ? angleLo64 : angleLo32;
  // tan of the odd multiples of pi/24: where j changes. f32 keeps j = 0 up to
  // 0.2 (where j = 1 took 1.6 ulps): below tan(pi/12) atan(u) is negative, and
  // the result as little as half of pi/12.
  const double bounds[3] = {f.f64 ? 0.13165249758739586 : 0.2, 0.41421356237309503,
                            0.7673269879789604};
  auto pick = [&](const double (&table)[4]) {
    Value v = f.c(table[0]);
    for (int j = 1; j < 4; ++j)
      v = f.select(f.gt(a, bounds[j - 1]), f.c(table[j]), v);
    return v;
  };
  Value t = pick(tanHi);
  // u from 1 + a t as a double-word sum: where atan(u) is negative, the
  // result is as little as half of j pi/12, and the rounding of 1 + a t alone
  // made f32 atan 1.7 ulps off.
  DD product = f.twoProd(a, t);
  DD denominator = f.fastTwoSum(f.c(1), product.hi);
  Value q = quotient(f, f.sub(f.sub(a, t), pick(tanLo)), denominator.hi);
  Value correction = f.div(f.add(denominator.lo, product.lo), denominator.hi);
  Value u = f.sub(q, f.mul(q, correction));
  Value z = f.mul(u, u);
  Value atanU = f.fma(f.mul(u, z), f.poly(z, atanTail(f)), u);
  // j pi/12 + atan(u) and pi/2 less that, each rounded once from a
  // double-word sum.
  DD angle = f.fastTwoSum(pick(angleHi), atanU);
  angle.lo = f.add(angle.lo, pick(angleLo));
  DD turned = f.twoSum(f.c(f.pick(kHalfPi, kHalfPi32)), f.neg(angle.hi));
  turned.lo = f.add(turned.lo, f.sub(f.c(f.pick(kHalfPiTail, kHalfPiTail32)), angle.lo));
  Value negative = f.signBit(x), nan = f.isNaN(x);
  DD r{f.select(inverted, turned.hi, angle.hi), f.select(inverted, turned.lo, angle.lo)};
  r = {f.select(negative, f.neg(r.hi), r.hi), f.select(negative, f.neg(r.lo), r.lo)};
  return {f.select(nan, x, r.hi), f.select(nan, f.c(0), r.lo)};
}

Value expandAtan(Exact &f, ValueRange ops) {
  DD r = atanWords(f, ops[0]);
  return f.copysign(f.add(r.hi, r.lo), ops[0]); // atan(-0) = -0
}

/// atan(y / x) for double-word y and x, corrected by quadrant, as C's atan2:
/// y / x is replaced by y where both are zero (atan(+-0) is +-0) and by +-1
/// where both are infinite (an odd multiple of pi / 4); the quotient's tail
/// adds dq / (1 + q^2), and +-pi is added to the double-word angle before the
/// one rounding (pi + fl(-pi/2) + tail rounded twice: atan2(1, -0) was an ulp
/// below pi/2).
Value atan2Words(Exact &f, DD y, DD x) {
  Value negY = f.signBit(y.hi), negX = f.signBit(x.hi);
  DD ratio = quotientWords(f, y, x);
  Value bothZero = f.both(f.eq(y.hi, 0), f.eq(x.hi, 0));
  Value bothInf = f.both(f.eq(f.abs(y.hi), INFINITY), f.eq(f.abs(x.hi), INFINITY));
  Value q = f.select(bothZero, y.hi, ratio.hi);
  q = f.select(bothInf, f.select(f.differ(negY, negX), f.c(-1), f.c(1)), q);
  Value dq = f.select(f.either(bothZero, bothInf), f.c(0), ratio.lo);
  DD angle = atanWords(f, q);
  Value slope = f.div(dq, f.fma(q, q, f.c(1)));
  Value corrected = f.both(f.cmp(arith::CmpFPredicate::ONE, dq, f.c(0)),
                           f.lt(f.abs(slope), INFINITY));
  angle.lo = f.select(corrected, f.add(angle.lo, slope), angle.lo);
  double pi = f.pick(M_PI, 3.1415927410125732);
  double piTail = f.pick(1.2246467991473532e-16, -8.742277657347586e-08);
  DD turned = f.twoSum(f.select(negY, f.c(-pi), f.c(pi)), angle.hi);
  turned.lo = f.add(turned.lo, f.add(angle.lo, f.select(negY, f.c(-piTail), f.c(piTail))));
  Value near = f.select(f.eq(q, 0), q, f.add(angle.hi, angle.lo)); // +-0
  Value result = f.select(negX, f.add(turned.hi, turned.lo), near);
  return f.select(f.cmp(arith::CmpFPredicate::UNO, y.hi, x.hi), f.c(NAN), result);
}

Value expandAtan2(Exact &f, ValueRange ops) {
  return atan2Words(f, DD{ops[0], f.c(0)}, DD{ops[1], f.c(0)});
}

/// sqrt(1 - x^2) = cos(asin(x)) as a double-word: 1 - x^2 from the exact
/// square, its root corrected by the remainder (t - s^2) / 2s.
DD cosOfAsin(Exact &f, Value x) {
  DD square = f.twoProd(x, x);
  DD t = f.twoSum(f.c(1), f.neg(square.hi));
  t.lo = f.sub(t.lo, square.lo);
  Value s = f.sqrt(t.hi);
  DD s2 = f.twoProd(s, s);
  Value ds = f.div(f.add(f.sub(f.sub(t.hi, s2.hi), s2.lo), t.lo), f.mul(f.c(2), s));
  return {s, f.select(f.lt(f.abs(ds), INFINITY), ds, f.c(0))};
}

/// asin(x) = atan2(x, sqrt(1 - x^2)) and acos(x) = atan2(sqrt(1 - x^2), x), NaN
/// outside [-1, 1] (GLSL's own were off by 2e-4 on lavapipe).
Value expandAsin(Exact &f, ValueRange ops) {
  Value x = ops[0];
  Value r = atan2Words(f, DD{x, f.c(0)}, cosOfAsin(f, x));
  return f.select(f.le(f.abs(x), 1), r, f.c(NAN));
}
Value expandAcos(Exact &f, ValueRange ops) {
  Value x = ops[0];
  Value r = atan2Words(f, cosOfAsin(f, x), DD{x, f.c(0)});
  return f.select(f.le(f.abs(x), 1), r, f.c(NAN));
}

//===- hyperbolic functions -----------------------------------------------===//

/// sinh(x) = (e + e / (e + 1)) / 2 for e = expm1(|x|) below 22; beyond,
/// e^|x| / 2 (the 2 taken from the exponent, so it overflows only where sinh does).
Value expandSinh(Exact &f, ValueRange ops) {
  Value x = ops[0], a = f.abs(x);
  Value e = f.call<math::ExpM1Op>(a);
  Value small = f.mul(f.c(0.5), f.add(e, f.div(e, f.add(e, f.c(1)))));
  Value large = expOf(f, a, f.c(0), -1);
  return f.copysign(f.select(f.lt(a, 22), small, large), x);
}

/// cosh(x) = e / 2 + 1 / (2 e) for e = e^|x| below 22; beyond, e^|x| / 2.
Value expandCosh(Exact &f, ValueRange ops) {
  Value a = f.abs(ops[0]);
  Value e = f.call<math::ExpOp>(a);
  Value small = f.add(f.mul(f.c(0.5), e), f.div(f.c(0.5), e));
  return f.select(f.lt(a, 22), small, expOf(f, a, f.c(0), -1));
}

/// tanh(x) = e / (e + 2) for e = expm1(2|x|), 1 past 22 (to the nearest double).
Value expandTanh(Exact &f, ValueRange ops) {
  Value x = ops[0], a = f.abs(x);
  Value e = f.call<math::ExpM1Op>(f.mul(f.c(2), a));
  Value t = f.select(f.gt(a, 22), f.c(1), f.div(e, f.add(e, f.c(2))));
  return f.select(f.isNaN(x), x, f.copysign(t, x));
}

//===- cbrt ---------------------------------------------------------------===//

/// cbrt(x): a first guess from the bits (the exponent divided by 3, within
/// 4%), four Newton steps r -= (r - a / r^2) / 3, x's sign; zeros, infinities and
/// NaN are returned as they are. Subnormals are scaled by 2^54 (2^18 out).
Value expandCbrt(Exact &f, ValueRange ops) {
  Value x = ops[0], a = f.abs(x);
  Value subnormal = f.lt(a, 0x1p-1022);
  Value as = f.select(subnormal, f.mul(a, f.c(0x1p54)), a);
  Value r = f.fromBits(f.iadd(f.udiv(f.bits(as), f.ci(3)), f.ci(0x2a9f7893782da1ce)));
  for (int i = 0; i < 4; ++i)
    r = f.sub(r, f.mul(f.sub(r, f.div(as, f.mul(r, r))), f.c(1.0 / 3)));
  r = f.select(subnormal, f.mul(r, f.c(0x1p-18)), r);
  Value same = f.either(f.either(f.eq(a, 0), f.eq(a, INFINITY)), f.isNaN(x));
  return f.select(same, x, f.copysign(r, x));
}

//===- erf ----------------------------------------------------------------===//

/// erf(a) / a = 2/sqrt(pi) (1 - z/3 + z^2/(2! 5) - ...), z = a^2 <= 1: twenty
/// terms, the next below 2^-57.
llvm::SmallVector<double> erfSeries() {
  return series(0, 1, 20, [](int n) {
    return (n % 2 ? -1 : 1) * 1.1283791670955126 * inverseFactorial(n) / (2 * n + 1);
  });
}

/// erfc(a) e^(a^2) on [lo, hi], as a polynomial of u = (a - mid) / half in
/// [-1, 1] (degree-15 Chebyshev fits by mpmath's chebyfit, relative error below
/// 7e-17).
struct ErfcInterval {
  double lo, hi;
  double coefficients[16];
};
constexpr ErfcInterval kErfcFits[4] = {
    {1, 1.75, {
        0.3432958898621254, -0.06911830124050042, 0.012636860434728368,
        -0.002135919966859044, 0.0003378623828607081, -5.046138167071353e-05,
        7.164249224207523e-06, -9.72018798049197e-07, 1.265688296954802e-07,
        -1.5872907126419524e-08, 1.9228738001251785e-09, -2.2557563774299376e-10,
        2.5659468498938532e-11, -2.8407268878074414e-12, 3.20069795225457e-13,
        -3.3592818577609233e-14}},
    {1.75, 2.75, {
        0.23108725873039188, -0.04424325140437458, 0.007998156852676599,
        -0.0013752575945550096, 0.000226187209646682, -3.574151511409868e-05,
        5.445865975042037e-06, -8.025084471889682e-07, 1.1466110062649012e-07,
        -1.5918519423455147e-08, 2.1514352189473576e-09, -2.835178008874972e-10,
        3.6427897028171586e-11, -4.583675879013845e-12, 5.985986898661381e-13,
        -7.207823502069194e-14}},
    {2.75, 4, {
        0.1606310681265444, -0.027574660775836153, 0.004581210912902042,
        -0.0007385733974388659, 0.0001158036263144523, -1.7692783646595148e-05,
        2.6383586782441973e-06, -3.8455879531873836e-07, 5.4857524100751705e-08,
        -7.667367590466745e-09, 1.0511018777976801e-09, -1.414502502958304e-10,
        1.8668791005035632e-11, -2.4272471279467576e-12, 3.311220080408585e-13,
        -4.162330455624006e-14}},
    {4, 6, {
        0.11070463773306863, -0.02133278976482631, 0.0040406889089373834,
        -0.0007528968134273368, 0.00013810242089385338, -2.4953883569275264e-05,
        4.444334401233983e-06, -7.806319572345831e-07, 1.352934488442005e-07,
        -2.3147456116675594e-08, 3.911671423997266e-09, -6.530260734491417e-10,
        1.0723886840405964e-10, -1.7498984106891532e-11, 3.139638329414755e-12,
        -5.001865871242102e-13}},
};

/// erf(x): the series below |x| = 1; 1 - erfc up to 6, erfc(a) = e^(-a^2) F(a)
/// with F from the fit of a's interval (its coefficients chosen by selects,
/// one Horner evaluation) and a^2 a double-double; 1 from 6 on (erfc(6) is
/// 2e-17). x's sign; NaN stays NaN.
Value expandErf(Exact &f, ValueRange ops) {
  Value x = ops[0], a = f.abs(x);
  Value small = f.mul(a, f.poly(f.mul(a, a), erfSeries()));
  auto pick = [&](auto field) {
    Value v = f.c(field(kErfcFits[0]));
    for (const ErfcInterval &fit : llvm::ArrayRef(kErfcFits).drop_front())
      v = f.select(f.cmp(arith::CmpFPredicate::OGE, a, f.c(fit.lo)), f.c(field(fit)), v);
    return v;
  };
  Value mid = pick([](const ErfcInterval &i) { return (i.lo + i.hi) / 2; });
  Value inverseHalf = pick([](const ErfcInterval &i) { return 2 / (i.hi - i.lo); });
  Value u = f.mul(f.sub(a, mid), inverseHalf);
  Value fit = pick([](const ErfcInterval &i) { return i.coefficients[15]; });
  for (int k = 14; k >= 0; --k)
    fit = f.fma(fit, u, pick([k](const ErfcInterval &i) { return i.coefficients[k]; }));
  DD square = f.twoProd(a, a);
  Value erfc = f.mul(expOf(f, f.neg(square.hi), f.neg(square.lo)), fit);
  Value result = f.select(f.lt(a, 1), small, f.select(f.lt(a, 6), f.sub(f.c(1), erfc), f.c(1)));
  return f.select(f.isNaN(x), x, f.copysign(result, x));
}

//===- the patterns -------------------------------------------------------===//

using Expansion = Value (*)(Exact &, ValueRange);

/// Replaces a scalar f64 `Op`, or an f32 one where `alsoF32`, by `expand`'s
/// value (pow only where its base is positive).
template <typename Op> struct ExpandExact : OpRewritePattern<Op> {
  ExpandExact(MLIRContext *context, Expansion expand, bool alsoF32 = false)
      : OpRewritePattern<Op>(context, /*benefit=*/2), expand(expand), alsoF32(alsoF32) {}
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    auto type = dyn_cast<FloatType>(op.getType());
    if (!type || !(type.isF64() || (alsoF32 && type.isF32())))
      return failure();
    if constexpr (std::is_same_v<Op, math::PowFOp>)
      if (!op->hasAttr(kiln::kPositiveBaseAttr))
        return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Exact f(b, type);
    rewriter.replaceOp(op, expand(f, op->getOperands()));
    return success();
  }
  Expansion expand;
  bool alsoF32;
};
} // namespace

void kiln::populateExactMathPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  // f64 only: f32 takes kiln-approximate-math's sinh, tanh and cbrt (which build
  // on the f32 functions below) and MLIR's erf polynomial.
  patterns.add<ExpandExact<math::SinhOp>>(context, expandSinh);
  patterns.add<ExpandExact<math::TanhOp>>(context, expandTanh);
  patterns.add<ExpandExact<math::CbrtOp>>(context, expandCbrt);
  patterns.add<ExpandExact<math::ErfOp>>(context, expandErf);
  // f64 and f32: GLSL's f32 versions may be far off (lavapipe's exp within
  // 3 + 2 |x| ulps, as GLSL allows, and no subnormals; log within 2^-21 near 1).
  const bool alsoF32 = true;
  patterns.add<ExpandExact<math::ExpOp>>(context, expandExp, alsoF32);
  patterns.add<ExpandExact<math::Exp2Op>>(context, expandExp2, alsoF32);
  patterns.add<ExpandExact<math::ExpM1Op>>(context, expandExpm1, alsoF32);
  patterns.add<ExpandExact<math::CoshOp>>(context, expandCosh, alsoF32);
  patterns.add<ExpandExact<math::LogOp>>(context, expandLog, alsoF32);
  patterns.add<ExpandExact<math::Log2Op>>(context, expandLog2, alsoF32);
  patterns.add<ExpandExact<math::Log10Op>>(context, expandLog10, alsoF32);
  patterns.add<ExpandExact<math::PowFOp>>(context, expandPositivePow, alsoF32);
  patterns.add<ExpandExact<math::SinOp>>(context, expandSin, alsoF32);
  patterns.add<ExpandExact<math::CosOp>>(context, expandCos, alsoF32);
  patterns.add<ExpandExact<math::TanOp>>(context, expandTan, alsoF32);
  patterns.add<ExpandExact<math::AtanOp>>(context, expandAtan, alsoF32);
  patterns.add<ExpandExact<math::Atan2Op>>(context, expandAtan2, alsoF32);
  patterns.add<ExpandExact<math::AsinOp>>(context, expandAsin, alsoF32);
  patterns.add<ExpandExact<math::AcosOp>>(context, expandAcos, alsoF32);
}
