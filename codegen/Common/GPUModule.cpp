//===- GPUModule.cpp - LLVM IR of a lowered device module -----------------===//

#include "codegen/Common/GPUBinary.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace kiln;

llvm::Expected<std::string> kiln::gpuModuleToLLVMIR(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  unsigned count = 0;
  for (auto gpuModule : module.getOps<mlir::gpu::GPUModuleOp>()) {
    llvm::LLVMContext context;
    auto llvmModule = mlir::translateModuleToLLVMIR(gpuModule, context, gpuModule.getName());
    if (!llvmModule)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "translation of the device module to LLVM IR failed");
    llvmModule->print(os, nullptr);
    ++count;
  }
  if (!count)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "no device module");
  return text;
}
