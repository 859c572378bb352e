//===- DType.h - element types shared by compiler and runtime ---*- C++ -*-===//
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

/// Element types of the language.
enum class DType { I1, I8, I16, I32, I64, F16, BF16, F32, F64 };

std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType dt);
/// The enumerator's spelling (`F32`), for generated C++.
const char *dtypeEnumName(DType dt);
inline bool isFloat(DType dt) { return dt >= DType::F16; }
unsigned dtypeBits(DType dt);
/// Bytes one element occupies in memory (i1 is stored as a byte).
inline size_t dtypeBytes(DType dt) { return dt == DType::I1 ? 1 : dtypeBits(dt) / 8; }

} // namespace kiln
