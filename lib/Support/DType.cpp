//===- DType.cpp - element types shared by compiler and runtime -----------===//
//
// Plain C++ only: the runtime links this file and must not depend on LLVM.

#include "kiln/DType.h"

using namespace kiln;

std::optional<DType> kiln::parseDType(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> table[] = {
      {"i1", DType::I1},   {"bool", DType::I1}, {"i8", DType::I8},
      {"i16", DType::I16}, {"i32", DType::I32}, {"i64", DType::I64},
      {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32},
      {"f64", DType::F64}, {"f8e4m3", DType::F8E4M3}, {"f8e5m2", DType::F8E5M2},
      {"u8", DType::U8},   {"u16", DType::U16}, {"u32", DType::U32}, {"u64", DType::U64}};
  for (auto &[spelling, dt] : table)
    if (spelling == name)
      return dt;
  return std::nullopt;
}

const char *kiln::dtypeName(DType dt) {
  switch (dt) {
  case DType::I1: return "i1";
  case DType::I8: return "i8";
  case DType::I16: return "i16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  case DType::F8E4M3: return "f8e4m3";
  case DType::F8E5M2: return "f8e5m2";
  case DType::U8: return "u8";
  case DType::U16: return "u16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  }
  return "?";
}

unsigned kiln::dtypeBits(DType dt) {
  switch (dt) {
  case DType::I1: return 1;
  case DType::I8:
  case DType::U8:
  case DType::F8E4M3:
  case DType::F8E5M2: return 8;
  case DType::I16:
  case DType::U16:
  case DType::F16:
  case DType::BF16: return 16;
  case DType::I32:
  case DType::U32:
  case DType::F32: return 32;
  case DType::I64:
  case DType::U64:
  case DType::F64: return 64;
  }
  return 0;
}

const char *kiln::dtypeEnumName(DType dt) {
  switch (dt) {
  case DType::I1: return "I1";
  case DType::I8: return "I8";
  case DType::I16: return "I16";
  case DType::I32: return "I32";
  case DType::I64: return "I64";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F32: return "F32";
  case DType::F64: return "F64";
  case DType::F8E4M3: return "F8E4M3";
  case DType::F8E5M2: return "F8E5M2";
  case DType::U8: return "U8";
  case DType::U16: return "U16";
  case DType::U32: return "U32";
  case DType::U64: return "U64";
  }
  return "F32";
}
