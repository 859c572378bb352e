//===- Metadata.h - kernel metadata in kiln-rt -----------------*- C++ -*-===//
#pragma once

#include "kiln/KernelInfo.h"
#include "kiln/TensorRef.h"

#include <string>
#include <vector>

namespace kiln::rt {

/// The kernels (and the target) a metadata JSON document from kilnc describes.
struct ModuleMetadata {
  std::string target;
  std::string checksum; // of the binary, "fnv1a64:..." (lib/Support/Checksum.h); may be absent
  std::vector<KernelInfo> kernels;
};

/// Parses kilnc's metadata JSON; false with `error` set when it is malformed.
bool parseMetadata(const std::string &json, ModuleMetadata &out, std::string &error);

/// Whether a binary was compiled for `kernel` as its metadata describes it:
/// `embedded` is the abiSignature the binary carries for that kernel (null when
/// it carries none). Empty when they match, else the error, naming both.
std::string abiMismatch(const KernelInfo &kernel, const std::string *embedded);

/// Reads a kernel's assert report (kAssertReportWords words, as the launch left
/// them): empty when no assert failed, else the failure as the CPU prints it,
/// `pid (x, y, z) idx (i, j) f.kiln:18:3: device_assert failed: msg`, with how
/// many elements failed.
std::string assertFailure(const KernelInfo &kernel, const int32_t *report);

/// The lines a kernel's prints left in its debug buffer (`buffer`: the header
/// and the records), in print's format; `dropped` says how many did not fit.
std::string printedLines(const KernelInfo &kernel, const int32_t *buffer, std::string &dropped);

} // namespace kiln::rt
