//===- KernelParams.h - kernel parameters for CUDA and HIP launches -*- C++ -*-===//
//
// NVIDIA and AMD kernels from kilnc take each tensor as its base pointer followed by
// its sizes and strides (i32), and scalars by value (i1 as i32). Both launch APIs
// want an array of pointers to the values; one 8-byte slot per parameter holds them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Driver.h"

#include "lib/Support/Half.h"

#include <cstring>
#include <vector>

namespace kiln::rt {

/// `deviceAddress(buffer)` gives a tensor buffer's device address.
template <typename AddressFn>
std::vector<uint64_t> packKernelParams(const std::vector<LaunchArg> &args,
                                       AddressFn deviceAddress) {
  std::vector<uint64_t> words;
  for (const LaunchArg &a : args) {
    if (a.info->isTensor) {
      words.push_back(deviceAddress(a.buffer) + a.offset * dtypeBytes(a.info->dtype));
      for (int64_t s : a.sizes)
        words.push_back(static_cast<uint32_t>(s));
      for (int64_t s : a.strides)
        words.push_back(static_cast<uint32_t>(s));
      continue;
    }
    uint64_t word = 0;
    switch (a.info->dtype) {
    case DType::F32: {
      float f = static_cast<float>(a.scalar.f);
      std::memcpy(&word, &f, 4);
      break;
    }
    case DType::F64: std::memcpy(&word, &a.scalar.f, 8); break;
    case DType::F16: word = floatToHalfBits(static_cast<float>(a.scalar.f)); break;
    case DType::BF16: word = floatToBF16Bits(static_cast<float>(a.scalar.f)); break;
    case DType::F8E4M3:
    case DType::F8E5M2: word = floatToF8Bits(static_cast<float>(a.scalar.f), a.info->dtype); break;
    case DType::I1: word = a.scalar.i != 0; break;
    default: word = static_cast<uint64_t>(a.scalar.i); break;
    }
    words.push_back(word);
  }
  return words;
}

/// Pointers to each slot, as cuLaunchKernel and hipModuleLaunchKernel take them.
inline std::vector<void *> paramPointers(std::vector<uint64_t> &words) {
  std::vector<void *> ptrs;
  for (uint64_t &w : words)
    ptrs.push_back(&w);
  return ptrs;
}

} // namespace kiln::rt
