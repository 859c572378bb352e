//===- NVPTX.cpp - PTX and cubin from the NVVM-lowered module -------------===//

#include "codegen/Common/GPUBinary.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>
#include <mutex>

using namespace kiln;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string nvptx::findToolkit() {
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(env); dir && llvm::sys::fs::is_directory(dir))
      return dir;
  if (llvm::sys::fs::exists("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda";
  return "";
}

/// The object that gpu-module-to-binary left in the gpu.binary op.
llvm::Expected<GPUBinary> kiln::extractGPUBinary(mlir::ModuleOp module, bool isText) {
  GPUBinary out;
  out.isText = isText;
  unsigned count = 0;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute object : binary.getObjects()) {
      out.bytes += mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().getValue().str();
      ++count;
    }
  });
  if (count != 1)
    return makeError("expected one device object, found " + llvm::Twine(count));
  return out;
}

/// A cubin for `chip` from `ptx`, by the toolkit's ptxas (for chips newer than
/// the PTX's own target, which MLIR would assemble for that target).
static llvm::Expected<GPUBinary> assemble(const std::string &toolkit, const std::string &ptx,
                                          const std::string &chip) {
  llvm::SmallString<128> in, out;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kiln", "ptx", fd, in))
    return makeError("cannot create a temporary file for ptxas");
  llvm::FileRemover removeIn(in);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  if (llvm::sys::fs::createTemporaryFile("kiln", "cubin", out))
    return makeError("cannot create a temporary file for ptxas");
  llvm::FileRemover removeOut(out);
  std::string ptxas = toolkit + "/bin/ptxas", arch = "-arch=" + chip, message;
  llvm::StringRef args[] = {ptxas, arch, in, "-o", out};
  if (llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, {}, 0, 0, &message) != 0)
    return makeError("ptxas -arch=" + chip + " failed" + (message.empty() ? "" : ": " + message));
  auto buffer = llvm::MemoryBuffer::getFile(out);
  if (!buffer)
    return makeError("cannot read ptxas's output");
  GPUBinary binary;
  binary.isText = false;
  binary.bytes = (*buffer)->getBuffer().str();
  return binary;
}

bool nvptx::ptxasTakes(const std::string &toolkit, const std::string &chip) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  std::string key = toolkit + " " + chip;
  if (auto it = known.find(key); it != known.end())
    return it->second;
  llvm::SmallString<128> help;
  if (llvm::sys::fs::createTemporaryFile("kiln-ptxas", "txt", help))
    return true; // cannot ask: let ptxas itself say (and ask again next time)
  auto it = known.try_emplace(key, true).first;
  llvm::FileRemover remove(help);
  std::string ptxas = toolkit + "/bin/ptxas";
  llvm::StringRef args[] = {ptxas, "--help"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(help),
                                                llvm::StringRef(help)};
  auto text = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects) == 0
                  ? llvm::MemoryBuffer::getFile(help)
                  : llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>(std::errc::io_error);
  if (text && (*text)->getBuffer().contains("Allowed values"))
    it->second = (*text)->getBuffer().contains("'" + chip + "'");
  return it->second;
}

llvm::Expected<GPUBinary> nvptx::serialize(mlir::ModuleOp module, const Target &target,
                                           llvm::StringRef format) {
  std::string toolkit = findToolkit();
  if (format == "cubin" && toolkit.empty())
    return makeError("--emit=cubin needs ptxas from the CUDA toolkit; none found in "
                     "CUDA_HOME, CUDA_PATH or /usr/local/cuda (use --emit=ptx instead)");
  if (format == "cubin" && !ptxasTakes(toolkit, target.chip)) {
    bool volta = target.chip == "sm_70" || target.chip == "sm_72";
    return makeError("the CUDA toolkit in " + toolkit + " has no " + target.chip +
                     " (its ptxas does not list it" +
                     (volta ? "; CUDA 13 dropped sm_70 and sm_72" : "") +
                     "): use --emit=ptx (bundles and the JIT then carry PTX, which the "
                     "driver compiles), or set CUDA_HOME to a toolkit that has it");
  }
  // PTX made for an older architecture than the chip is assembled here, for the chip.
  bool newerChip = format == "cubin" && target.isNewerThanLLVM();
  std::string pipeline = "builtin.module(gpu-module-to-binary{format=" +
                         std::string(format == "cubin" && !newerChip ? "bin" : "isa") +
                         (toolkit.empty() ? "" : " toolkit=" + toolkit) + "})";
  if (mlir::failed(runPipeline(module, pipeline)))
    return makeError("PTX generation failed for " + target.str());
  auto binary = extractGPUBinary(module, format == "ptx" || newerChip);
  // The PTX text comes with the C string's terminator.
  if (binary && binary->isText)
    while (!binary->bytes.empty() && binary->bytes.back() == '\0')
      binary->bytes.pop_back();
  if (binary && newerChip)
    return assemble(toolkit, binary->bytes, target.chip);
  return binary;
}
