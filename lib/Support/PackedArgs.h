//===- PackedArgs.h - arguments for the CPU backend's entry points -*- C++ -*-===//
//
// Plain C++ shared by the in-process executable and kiln-rt's CPU driver: the
// `_mlir_<kernel>` wrappers take a void** with one pointer per LLVM-level argument.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/TensorRef.h"
#include "lib/Support/Half.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace kiln {
/// Storage for one launch's arguments in the layout the packed wrappers expect:
/// each memref expands to (allocated, aligned, offset, sizes..., strides...).
struct PackedArgs {
  std::vector<int64_t> words; // every argument's storage, 8 bytes apiece
  std::vector<size_t> slots;  // index into words of each LLVM-level argument

  void push(int64_t w) {
    slots.push_back(words.size());
    words.push_back(w);
  }
  void pushScalar(const KernelArg &a) {
    int64_t w = 0;
    switch (a.dtype) {
    case DType::I1: w = a.scalar.i != 0; break;
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64: w = a.scalar.i; break; // little-endian: low bytes come first
    case DType::F16: w = floatToHalfBits(static_cast<float>(a.scalar.f)); break;
    case DType::BF16: w = floatToBF16Bits(static_cast<float>(a.scalar.f)); break;
    case DType::F8E4M3:
    case DType::F8E5M2: w = floatToF8Bits(static_cast<float>(a.scalar.f), a.dtype); break;
    case DType::F32: {
      float f = static_cast<float>(a.scalar.f);
      std::memcpy(&w, &f, 4);
      break;
    }
    case DType::F64: std::memcpy(&w, &a.scalar.f, 8); break;
    }
    push(w);
  }
  explicit PackedArgs(const std::vector<KernelArg> &args) {
    for (const KernelArg &a : args) {
      if (!a.isTensor) {
        pushScalar(a);
        continue;
      }
      push(reinterpret_cast<intptr_t>(a.tensor.data));
      push(reinterpret_cast<intptr_t>(a.tensor.data));
      push(0);
      for (int64_t s : a.tensor.sizes)
        push(s);
      for (int64_t s : a.tensor.strides)
        push(s);
    }
  }
  /// Pointers to each argument, with `extra` words appended (program ids).
  std::vector<void *> pointers(int64_t *extra, size_t numExtra) {
    std::vector<void *> ptrs;
    for (size_t s : slots)
      ptrs.push_back(&words[s]);
    for (size_t i = 0; i < numExtra; ++i)
      ptrs.push_back(&extra[i]);
    return ptrs;
  }
};

} // namespace kiln
