//===- ValidateArgs.cpp - launch arguments against kernel metadata --------===//
//
// Plain C++: shared by the in-process CPU executable and kiln-rt.

#include "lib/Support/ValidateArgs.h"

#include "lib/Support/Half.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

using namespace kiln;

/// Why scalar `arg` cannot be passed as its dtype without changing its value, or "":
/// an integer outside the type's range (u64 takes any 64 bits, i1 only 0 and 1), a
/// finite float that the type would make infinite (fp8 saturates, by definition).
static std::string scalarProblem(const KernelArg &arg) {
  DType dt = arg.dtype;
  if (isFloat(dt)) {
    double v = arg.scalar.f;
    if (isF8(dt) || dt == DType::F64 || !std::isfinite(v))
      return "";
    // From half an f32 ulp past FLT_MAX on, f32 (and so f16, bf16) rounds to infinity.
    bool overflows = std::abs(v) >= 0x1.ffffffp127;
    if (!overflows && dt == DType::F16)
      overflows = std::isinf(halfBitsToFloat(floatToHalfBits(static_cast<float>(v))));
    if (!overflows && dt == DType::BF16)
      overflows = std::isinf(bf16BitsToFloat(floatToBF16Bits(static_cast<float>(v))));
    if (overflows) {
      std::ostringstream os;
      os << v << ", beyond " << dtypeName(dt) << "'s finite values";
      return os.str();
    }
    return "";
  }
  int64_t v = arg.scalar.i;
  if (integerFits(v, dt))
    return "";
  return std::to_string(v) + ", which does not fit in " + dtypeName(dt);
}

bool kiln::integerFits(int64_t v, DType dt) {
  unsigned bits = dtypeBits(dt);
  int64_t half = bits < 64 ? int64_t(1) << (bits - 1) : 0; // 2^(bits-1)
  return bits == 64        ? true
         : dt == DType::I1 ? v == 0 || v == 1
         : isUnsigned(dt)  ? v >= 0 && v < 2 * half
                           : v >= -half && v < half;
}

std::string kiln::validateArgs(const KernelInfo &info,
                                    const std::vector<KernelArg> &args) {
  auto prefix = "kernel '" + info.name + "': ";
  if (args.size() != info.args.size())
    return prefix + "takes " + std::to_string(info.args.size()) + " arguments, got " +
           std::to_string(args.size());
  std::map<std::string, std::pair<int64_t, std::string>> bound; // size name -> (value, arg)
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgInfo &expected = info.args[i];
    const KernelArg &arg = args[i];
    std::string which = prefix + "argument '" + expected.name + "'";
    if (expected.isTensor != arg.isTensor)
      return which + (expected.isTensor ? " must be a tensor" : " must be a scalar");
    if (arg.dtype != expected.dtype)
      return which + " has dtype " + dtypeName(arg.dtype) + " but the kernel expects " +
             dtypeName(expected.dtype);
    if (!arg.isTensor) {
      std::string problem = scalarProblem(arg);
      if (!problem.empty())
        return which + " is " + problem;
      continue;
    }
    const TensorRef &t = arg.tensor;
    if (t.dtype != expected.dtype)
      return which + " has dtype " + dtypeName(t.dtype) + " but the kernel expects " +
             dtypeName(expected.dtype);
    if (t.sizes.size() != expected.dims.size())
      return which + " has rank " + std::to_string(t.sizes.size()) +
             " but the kernel expects rank " + std::to_string(expected.dims.size());
    if (t.strides.size() != t.sizes.size())
      return which + " has " + std::to_string(t.sizes.size()) + " sizes but " +
             std::to_string(t.strides.size()) + " strides";
    bool empty = false;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      int64_t size = t.sizes[d];
      if (size < 0 || size > std::numeric_limits<int32_t>::max())
        return which + " dimension " + std::to_string(d) + " has size " +
               std::to_string(size) + " (must be in [0, 2^31))";
      empty |= size == 0;
      const std::string &dim = expected.dims[d];
      if (!dim.empty() && isdigit(static_cast<unsigned char>(dim[0]))) {
        if (std::to_string(size) != dim)
          return which + " dimension " + std::to_string(d) + " must be " + dim + ", got " +
                 std::to_string(size);
        continue;
      }
      auto [it, inserted] = bound.try_emplace(dim, size, expected.name);
      if (!inserted && it->second.first != size)
        return which + " dimension " + std::to_string(d) + " (" + dim + ") is " +
               std::to_string(size) + " but argument '" + it->second.second + "' has " +
               dim + " = " + std::to_string(it->second.first);
    }
    if (!t.data && !empty)
      return which + " has no data (null pointer)";
  }
  return "";
}

