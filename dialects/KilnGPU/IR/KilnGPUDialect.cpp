//===- KilnGPUDialect.cpp - the kiln_gpu layout dialect -------------------===//

#include "dialects/KilnGPU/IR/KilnGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::gpu;

#include "dialects/KilnGPU/IR/KilnGPUDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/KilnGPU/IR/KilnGPUAttrs.cpp.inc"

void KilnGPUDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/KilnGPU/IR/KilnGPUAttrs.cpp.inc"
      >();
}

LogicalResult BlockedEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          unsigned vec, unsigned warpSize,
                                          unsigned numWarps) {
  auto pow2 = [](unsigned v) { return v && !(v & (v - 1)); };
  if (!pow2(vec) || vec > 16)
    return emitError() << "vec must be a power of two up to 16, got " << vec;
  if (!pow2(warpSize) || warpSize > 128)
    return emitError() << "warpSize must be a power of two up to 128, got " << warpSize;
  if (numWarps == 0 || numWarps * warpSize > 1024)
    return emitError() << "a program has 1 to 1024 threads, got " << numWarps * warpSize;
  return success();
}
