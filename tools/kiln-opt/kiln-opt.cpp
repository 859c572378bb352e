//===- kiln-opt.cpp - mlir-opt with the kiln dialects and passes ----------===//

#include "lib/Compiler/Compiler.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerDialects(registry);
  kiln::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
