//===- Build.cpp - kiln IR to a loadable artifact for any target ----------===//

#include "lib/Compiler/Build.h"

#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "codegen/Common/GPUBinary.h"
#include "lib/Compiler/Compiler.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace kiln;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Writes `bytes` to `path`, checking every step (a full disk is an error).
static llvm::Error writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    return makeError("cannot open '" + path + "': " + ec.message());
  file << bytes;
  file.close();
  if (file.has_error()) {
    ec = file.error();
    file.clear_error();
    return makeError("cannot write '" + path + "': " + ec.message());
  }
  return llvm::Error::success();
}

/// Links the JIT's object into a shared object with the system's C driver.
static llvm::Expected<std::string> linkSharedObject(cpu::Executable &exe) {
  llvm::SmallString<128> object, shared;
  if (llvm::sys::fs::createTemporaryFile("kiln-module", "o", object) ||
      llvm::sys::fs::createTemporaryFile("kiln-module", "so", shared))
    return makeError("cannot create temporary files for linking");
  auto cleanup = [&] {
    llvm::sys::fs::remove(object);
    llvm::sys::fs::remove(shared);
  };
  auto code = exe.machineCode();
  if (!code) {
    cleanup();
    return code.takeError();
  }
  if (auto err = writeFile(object, *code)) {
    cleanup();
    return std::move(err);
  }
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    cleanup();
    return makeError("linking a host shared object needs a C compiler driver ('cc')");
  }
  // The object calls libm (expf, erff, ...) and malloc. It is position
  // independent; -z notext only keeps a stray text relocation from failing the link.
  llvm::StringRef argv[] = {*cc, "-shared", "-Wl,-z,notext", "-o", shared, object, "-lm"};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*cc, argv, std::nullopt, {}, 0, 0, &error);
  auto bytes = llvm::MemoryBuffer::getFile(shared);
  cleanup();
  if (rc != 0 || !bytes)
    return makeError("linking the host shared object failed" + (error.empty() ? "" : ": " + error));
  return (*bytes)->getBuffer().str();
}

llvm::Expected<Artifact> kiln::buildArtifact(mlir::ModuleOp module, std::vector<KernelInfo> kernels,
                                             const Target &target, ArtifactKind kind,
                                             unsigned optLevel, bool timePasses) {
  Artifact out;
  if (!target.isGPU()) {
    if (kind == ArtifactKind::Default)
      kind = ArtifactKind::SharedObject;
    if (kind != ArtifactKind::Object && kind != ArtifactKind::SharedObject &&
        kind != ArtifactKind::Assembly)
      return makeError("the cpu target builds object files, shared objects and assembly");
    if (mlir::failed(cpu::lowerToLLVMDialect(module, timePasses)))
      return makeError("lowering for the CPU failed");
    auto exe = cpu::Executable::create(module, kernels, optLevel);
    if (!exe)
      return exe.takeError();
    if (kind == ArtifactKind::SharedObject) {
      auto so = linkSharedObject(**exe);
      if (!so)
        return so.takeError();
      out.bytes = std::move(*so);
    } else {
      auto code = (*exe)->machineCode(kind == ArtifactKind::Assembly);
      if (!code)
        return code.takeError();
      out.bytes = std::move(*code);
      out.isText = kind == ArtifactKind::Assembly;
    }
    out.metadata = kernelMetadataJSON(kernels, target, &out.bytes);
    return out;
  }

  if (kind == ArtifactKind::Assembly && target.kind != Target::Kind::AMDGPU)
    return makeError(target.str() + " emits no assembly (PTX is its assembly: ArtifactKind::PTX)");
  if (kind == ArtifactKind::Default) {
    switch (target.kind) {
    case Target::Kind::CUDA:
      // Blackwell's sm_90 PTX goes to the driver's JIT: a cubin for it needs a
      // ptxas from CUDA 12.8 or later. So does PTX for a chip the toolkit's
      // ptxas no longer takes (CUDA 13: Volta).
      if (std::string toolkit = nvptx::findToolkit();
          toolkit.empty() || target.isNewerThanLLVM() || !nvptx::ptxasTakes(toolkit, target.chip))
        kind = ArtifactKind::PTX;
      else
        kind = ArtifactKind::Cubin;
      break;
    case Target::Kind::AMDGPU: kind = ArtifactKind::Hsaco; break;
    case Target::Kind::Vulkan: kind = ArtifactKind::SPIRV; break;
    default: kind = ArtifactKind::MSL; break;
    }
  }
  // SPIRV-Cross translates one entry point per MSL source: the others would
  // be left out without a word.
  if (kind == ArtifactKind::MSL && kernels.size() > 1) {
    std::string names;
    for (const KernelInfo &k : kernels)
      names += (names.empty() ? "" : ", ") + k.name;
    return makeError("an MSL source holds one kernel, and this module has " +
                     std::to_string(kernels.size()) + " (" + names +
                     "): choose one with --kernel NAME");
  }
  if (mlir::failed(checkTargetSupport(module, target)) ||
      mlir::failed(runPipeline(module, pipelineUpTo(target, Stage::ThreadCode), timePasses)))
    return makeError("lowering for " + target.str() + " failed");
  collectLaunchInfo(module, kernels);
  if (mlir::failed(runPipeline(module, "builtin.module(" + devicePipeline(target) + ")",
                               timePasses)))
    return makeError("lowering for " + target.str() + " failed");
  llvm::Expected<GPUBinary> binary = GPUBinary{};
  switch (kind) {
  case ArtifactKind::LLVM: {
    auto text = gpuModuleToLLVMIR(module);
    if (!text)
      return text.takeError();
    binary = GPUBinary{*text, true};
    break;
  }
  case ArtifactKind::PTX:
  case ArtifactKind::Cubin:
    binary = nvptx::serialize(module, target, kind == ArtifactKind::PTX ? "ptx" : "cubin");
    break;
  case ArtifactKind::Assembly: // checked above: AMDGPU only among GPU targets
  case ArtifactKind::Hsaco:
    binary = amdgpu::serialize(module, target, kind == ArtifactKind::Assembly ? "asm" : "hsaco");
    break;
  case ArtifactKind::SPIRV:
  case ArtifactKind::MSL: {
    auto words = spirv::serialize(module);
    if (!words)
      return words.takeError();
    if (kind == ArtifactKind::SPIRV) {
      std::vector<std::string> signatures;
      for (const KernelInfo &k : kernels)
        signatures.push_back(abiSignature(k));
      spirv::addStrings(*words, signatures);
      binary = GPUBinary{std::string(reinterpret_cast<const char *>(words->data()),
                                     words->size() * sizeof(uint32_t)),
                         false};
    } else {
      auto msl = spirv::toMSL(*words);
      if (!msl)
        return msl.takeError();
      kernels.front().mslEntry = msl->entry;
      binary = GPUBinary{std::move(msl->text), true};
    }
    break;
  }
  default:
    return makeError("this artifact is not produced by " + target.str());
  }
  if (!binary)
    return binary.takeError();
  out.bytes = std::move(binary->bytes);
  out.isText = binary->isText;
  out.metadata = kernelMetadataJSON(kernels, target, &out.bytes);
  return out;
}

llvm::Expected<Artifact> kiln::compileSource(llvm::StringRef source, llvm::StringRef filename,
                                             const GenOptions &options, const Target &target,
                                             ArtifactKind kind) {
  SourceModule compiled(source, filename, options);
  if (!compiled.ok())
    return compiled.error();
  auto artifact = buildArtifact(compiled.module(), compiled.kernels, target, kind);
  if (!artifact)
    return compiled.error(llvm::toString(artifact.takeError()));
  return artifact;
}
