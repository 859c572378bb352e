//===- Half.h - f16, bf16 and fp8 bit conversions on the host ---*- C++ -*-===//
#pragma once

#include "kiln/DType.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

/// Rounds to nearest even; NaN stays NaN, overflow becomes infinity.
inline uint16_t floatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is the right rounding
  return static_cast<uint16_t>(half);
}

inline float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      float f = std::ldexp(static_cast<float>(mant), -24);
      return (h & 0x8000) ? -f : f;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t floatToBF16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16BitsToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// OCP fp8 (`f8e4m3`: 4 exponent bits, bias 7, no infinities, 0x7f is NaN;
/// `f8e5m2`: 5 exponent bits, bias 15, IEEE-like infinities and NaNs). This is
/// the host's reference: written from the definitions, independently of the
/// compiler's bit-twiddling lowering, which the tests compare it with.
inline float f8Decode(uint8_t b, DType dt) {
  bool e4m3 = dt == DType::F8E4M3;
  int mantBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, expMax = e4m3 ? 15 : 31;
  int exp = (b & 0x7f) >> mantBits, mant = b & ((1 << mantBits) - 1);
  float sign = (b & 0x80) ? -1.0f : 1.0f;
  if (e4m3 && (b & 0x7f) == 0x7f)
    return std::nanf("");
  if (!e4m3 && exp == expMax)
    return mant ? std::nanf("") : sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(static_cast<float>(mant), 1 - bias - mantBits);
  return sign * std::ldexp(static_cast<float>((1 << mantBits) | mant), exp - bias - mantBits);
}

/// f8Decode through a table per format (encoding searches it, and the GPU
/// benchmark converts 2 x 8192^2 values).
inline float f8BitsToFloat(uint8_t b, DType dt) {
  auto table = [](DType format) {
    std::array<float, 256> t;
    for (int code = 0; code < 256; ++code)
      t[code] = f8Decode(static_cast<uint8_t>(code), format);
    return t;
  };
  static const std::array<float, 256> e4m3 = table(DType::F8E4M3), e5m2 = table(DType::F8E5M2);
  return (dt == DType::F8E4M3 ? e4m3 : e5m2)[b];
}

/// Rounds to the nearest fp8 value, ties to the even code, and saturates: values
/// beyond the largest finite one (infinities too) become it, as NVIDIA's
/// `cvt.rn.satfinite` does. NaN stays NaN.
inline uint8_t floatToF8Bits(double f, DType dt) {
  uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f))
    return sign | 0x7f;
  uint8_t maxCode = dt == DType::F8E4M3 ? 0x7e : 0x7b;
  double a = std::fabs(f);
  if (a >= f8BitsToFloat(maxCode, dt))
    return sign | maxCode;
  // Positive codes are ordered like their values: find lo with lo <= a < lo + 1.
  uint8_t lo = 0, hi = maxCode;
  while (hi - lo > 1) {
    uint8_t mid = static_cast<uint8_t>((lo + hi) / 2);
    (f8BitsToFloat(mid, dt) <= a ? lo : hi) = mid;
  }
  // The midpoint of two fp8 neighbours is exact in double.
  double mid = (double(f8BitsToFloat(lo, dt)) + f8BitsToFloat(hi, dt)) / 2;
  bool up = a > mid || (a == mid && (lo & 1));
  return sign | (up ? hi : lo);
}

} // namespace kiln
