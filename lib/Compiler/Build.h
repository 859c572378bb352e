//===- Build.h - kiln IR to a loadable artifact for any target --*- C++ -*-===//
#pragma once

#include "codegen/Common/Target.h"
#include "kiln/KernelInfo.h"
#include "lib/Frontend/MLIRGen.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln {

/// What a target's final stage produces.
enum class ArtifactKind {
  Default,      // what kiln-rt loads: so, cubin (ptx without ptxas), hsaco, spirv, msl
  LLVM,         // device LLVM IR text (NVIDIA, AMD)
  PTX, Cubin, Hsaco, SPIRV, MSL,
  Assembly,     // AMDGPU or host assembly text
  Object,       // host relocatable object
  SharedObject, // host shared object (kiln-rt's CPU driver)
};

struct Artifact {
  std::string bytes;
  bool isText = false;
  std::string metadata; // kernel metadata JSON for kiln-rt
};

/// Lowers `module` (kiln IR from the front end) for `target` and serializes it.
/// Errors inside the pipeline are reported through the context's handler (at .kiln
/// locations); the returned error says which step failed.
llvm::Expected<Artifact> buildArtifact(mlir::ModuleOp module, std::vector<KernelInfo> kernels,
                                       const Target &target, ArtifactKind kind,
                                       unsigned optLevel = 3, bool timePasses = false);

/// Source to artifact in one call (a fresh MLIR context; diagnostics are collected
/// into the error).
llvm::Expected<Artifact> compileSource(llvm::StringRef source, llvm::StringRef filename,
                                       const GenOptions &options, const Target &target,
                                       ArtifactKind kind = ArtifactKind::Default);

} // namespace kiln
