//===- FuzzBundle.cpp - libFuzzer target: .kbin, metadata and grid rules ---===//

#include "runtime/Bundle.h"
#include "runtime/Json.h"
#include "lib/Support/GridRule.h"
#include "runtime/Metadata.h"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  std::string error;
  kiln::rt::Bundle bundle;
  std::vector<std::string> documents = {bytes};
  if (kiln::rt::readBundle(bytes, bundle, error))
    for (const auto &entry : bundle.entries)
      documents.push_back(entry.metadata);
  for (const std::string &doc : documents) {
    kiln::rt::JsonValue json;
    (void)kiln::rt::parseJson(doc, json, error);
    kiln::rt::ModuleMetadata meta;
    if (!kiln::rt::parseMetadata(doc, meta, error))
      continue;
    // Grid rules from untrusted metadata, evaluated on plausible arguments.
    for (const kiln::KernelInfo &k : meta.kernels) {
      std::vector<kiln::KernelArg> args;
      for (const kiln::ArgInfo &a : k.args) {
        kiln::KernelArg arg;
        arg.isTensor = a.isTensor;
        arg.tensor.sizes.assign(a.dims.size(), 7);
        arg.scalar.i = 3;
        args.push_back(arg);
      }
      std::array<int64_t, 3> grid;
      (void)kiln::evaluateGrid(k, args, /*processors=*/4, grid, error);
      // A Vulkan debug buffer as a kernel might leave it: the input's first
      // bytes as the header and first records (at most 64 records read).
      if (k.hasDebugBuffer()) {
        static std::vector<int32_t> debug(kiln::kDebugHeaderWords +
                                          size_t(kiln::kPrintRecords) * kiln::kPrintRecordWords);
        size_t n = std::min(size / 4, debug.size());
        std::memcpy(debug.data(), data, n * 4);
        debug[kiln::kPrintCountWord] = int32_t(uint32_t(debug[kiln::kPrintCountWord]) % 64);
        std::string dropped;
        (void)kiln::rt::printedLines(k, debug.data(), dropped);
        (void)kiln::rt::assertFailure(k, debug.data());
        std::memset(debug.data(), 0, n * 4);
      }
    }
  }
  return 0;
}
