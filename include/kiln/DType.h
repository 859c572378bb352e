//===- DType.h - element types shared by compiler and runtime ---*- C++ -*-===//
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

/// Element types of the language. Later additions (fp8, then the unsigned
/// integers) come last so that the C API's numbering of the older ones stays put.
enum class DType { I1, I8, I16, I32, I64, F16, BF16, F32, F64, F8E4M3, F8E5M2, U8, U16, U32, U64 };

std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType dt);
/// The enumerator's spelling (`F32`), for generated C++.
const char *dtypeEnumName(DType dt);
/// Whether `dt` is one of the enumerators (a value cast from an integer may not be).
inline bool isDType(DType dt) {
  return static_cast<unsigned>(dt) <= static_cast<unsigned>(DType::U64);
}
inline bool isFloat(DType dt) { return dt >= DType::F16 && dt <= DType::F8E5M2; }
/// u8 ... u64: integers whose division, shifts, comparisons, min/max and
/// conversions treat the bits as unsigned.
inline bool isUnsigned(DType dt) { return dt >= DType::U8 && dt <= DType::U64; }
/// i8 ... i64 and u8 ... u64 (not i1).
inline bool isInteger(DType dt) {
  return (dt >= DType::I8 && dt <= DType::I64) || isUnsigned(dt);
}
/// OCP fp8: e4m3 (bias 7, no infinities, max 448) and e5m2 (bias 15, max 57344).
inline bool isF8(DType dt) { return dt == DType::F8E4M3 || dt == DType::F8E5M2; }
unsigned dtypeBits(DType dt);
/// Bytes one element occupies in memory (i1 is stored as a byte).
inline size_t dtypeBytes(DType dt) { return dt == DType::I1 ? 1 : dtypeBits(dt) / 8; }

} // namespace kiln
