//===- KernelInfo.h - what a launcher must know about a kernel --*- C++ -*-===//
#pragma once

#include "kiln/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// One kernel argument as the host sees it.
struct ArgInfo {
  std::string name;
  DType dtype = DType::F32;
  bool isTensor = false;
  /// For tensors, one entry per dimension: a size name (`M`) or a fixed size
  /// written in decimal. Arguments that share a name must agree at launch.
  std::vector<std::string> dims;
};

/// The compile-time params a kernel was specialized with.
struct ParamValue {
  std::string name;
  DType dtype = DType::I32;
  double value = 0;
  /// Values the kernel declares for autotuning (`tune [...]`), as -D spells them.
  std::vector<std::string> tune;
};

/// A device_assert a Vulkan kernel checks (CUDA and HIP kernels report their
/// own through the driver; the CPU's print and abort).
struct AssertInfo {
  /// As the CPU prints it after the ids: `f.kiln:18:3: device_assert failed: msg`.
  std::string message;
  /// The tested tile's shape; empty for a scalar condition.
  std::vector<int64_t> shape;
};

/// A print in a Vulkan kernel (elsewhere the device prints by itself).
struct PrintInfo {
  std::string prefix;
  /// The printed tile's shape; empty for a scalar or no value.
  std::vector<int64_t> shape;
  bool hasValue = false;
  /// The value's type as printed: i32, i64, u32, u64 or f32, f64 (narrower
  /// types widen).
  DType dtype = DType::I32;
  /// print(..., hex = true): the integer's bits as this many hex digits (its
  /// width / 4); 0 prints in decimal.
  int hexDigits = 0;
};

/// Vulkan kernels cannot print or abort. One with asserts or prints takes one
/// more storage buffer after its tensors, the debug buffer, whose first
/// kDebugHeaderWords i32 words are zeroed before each launch:
///  - words 0-5, the assert report: word 0 counts failures; the first failing
///    element writes which assert failed (its index in KernelInfo::asserts),
///    its program's ids (x, y, z) and its flat index in the tile;
///  - word 6 counts the print records claimed; record r takes kPrintRecordWords
///    words from kDebugHeaderWords + r * kPrintRecordWords: which print, the
///    program's ids, the flat index, the value's low and high words. Records
///    past kPrintRecords are dropped (and counted).
/// A Vulkan kernel's push constants start with kGridWords 32-bit words: the
/// program ids of the dispatch's first workgroup (x, y, z), then the whole
/// grid (x, y, z). A grid wider than the device's maxComputeWorkGroupCount
/// runs as several dispatches, each with its own first ids; program_id is the
/// workgroup id plus the first id, num_programs the whole grid's count.
/// Every size, stride and scalar argument follows as 32-bit words in argument
/// order (64-bit values take two, low word first), in the push constants too
/// while all of them fit in kMaxPushConstantBytes (what every Vulkan device
/// provides); a kernel that needs more reads its argument words from one more
/// storage buffer, its argument buffer, bound last (after the tensors and the
/// debug buffer).
inline constexpr int kMaxPushConstantBytes = 128;
inline constexpr int kGridWords = 6;

inline constexpr int kAssertReportWords = 6;
inline constexpr int kPrintCountWord = 6;
inline constexpr int kDebugHeaderWords = 8;
inline constexpr int kPrintRecordWords = 7;
inline constexpr int kPrintRecords = 1 << 16;

struct KernelInfo {
  std::string name;
  std::vector<ArgInfo> args;
  std::vector<ParamValue> params;
  /// The grid rule as written, with params substituted, one entry per grid axis.
  std::vector<std::string> grid;
  /// GPU targets: threads in one program (block / workgroup) and the shared memory
  /// it uses; filled in by the GPU pipeline.
  int64_t threadsPerBlock = 1;
  int64_t sharedMemoryBytes = 0;
  /// The shared memory is requested at launch (CUDA dynamic shared memory, for
  /// kernels above the 48 KiB of static shared memory) rather than declared.
  bool dynamicSharedMemory = false;
  /// Metal: the kernel's function in the MSL source, which differs from `name`
  /// where MSL reserves the name (`device` -> `_device`, `abs` -> `_abs`).
  std::string mslEntry;
  /// Vulkan: the asserts and prints the kernel reports in its debug buffer.
  std::vector<AssertInfo> asserts;
  std::vector<PrintInfo> prints;
  bool hasDebugBuffer() const { return !asserts.empty() || !prints.empty(); }
  /// The debug buffer's size in i32 words: the header, and the records when it prints.
  int64_t debugBufferWords() const {
    return kDebugHeaderWords + (prints.empty() ? 0 : int64_t(kPrintRecords) * kPrintRecordWords);
  }
};

/// The kernel binary interface's version: bumped whenever what a kernel binary
/// expects from its launcher changes (how arguments travel, the push-constant
/// layout, the debug buffer).
inline constexpr int kABIVersion = 1;

/// How the binary of kernel `k` must be launched: its arguments (dtypes, tensor
/// ranks), grid rule (params substituted), threads, shared memory and debug
/// records; the params themselves are baked into the code (so builds that
/// differ only in a param the code ignores stay identical). kilnc
/// embeds it in every CPU shared object (the string `_kiln_abi_<kernel>`) and
/// SPIR-V module (an OpString), and kiln-rt checks it against the metadata when
/// it loads them: a binary paired with another kernel's metadata, a stale one
/// (another grid or thread count), or one built by a Kiln of another ABI
/// version, is an error rather than a wrong launch.
inline std::string abiSignature(const KernelInfo &k) {
  std::string s = "kiln-abi " + std::to_string(kABIVersion) + " " + k.name + "(";
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo &a = k.args[i];
    s += (i ? ", " : "") + std::string(dtypeName(a.dtype));
    if (a.isTensor)
      s += "[" + std::to_string(a.dims.size()) + "]";
  }
  s += ")";
  s += " grid(";
  for (size_t i = 0; i < k.grid.size(); ++i)
    s += (i ? ", " : "") + k.grid[i];
  s += ") threads " + std::to_string(k.threadsPerBlock) + " shared " +
       std::to_string(k.sharedMemoryBytes) + (k.dynamicSharedMemory ? " dynamic" : "");
  if (k.hasDebugBuffer())
    s += " debug(" + std::to_string(k.asserts.size()) + " asserts, " +
         std::to_string(k.prints.size()) + " prints)";
  return s;
}

} // namespace kiln
