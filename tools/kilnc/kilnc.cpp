//===- kilnc.cpp - the Kiln compiler driver -------------------------------===//
//
//   kilnc FILE.kiln [--kernel NAME] [-D NAME=VALUE]... --emit=STAGE -o OUT
//
// Each --emit stops after one stage, so every stage can be read and tested.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "kiln/Version.h"
#include "lib/Compiler/Compiler.h"
#include "lib/Frontend/Parser.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace kiln;
namespace cl = llvm::cl;

namespace {
enum class Emit { AST, Kiln, LLVMDialect, LLVM, Obj };

cl::OptionCategory category("kilnc options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .kiln file>"), cl::init("-"),
                               cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("path"), cl::init("-"), cl::cat(category));
cl::opt<std::string> kernelName("kernel", cl::desc("Compile only this kernel"),
                                cl::value_desc("name"), cl::cat(category));
cl::list<std::string> defines("D", cl::desc("Override a param: -D NAME=VALUE"),
                              cl::value_desc("NAME=VALUE"), cl::Prefix, cl::cat(category));
cl::opt<Emit> emit(
    "emit", cl::desc("Stop after this stage"), cl::init(Emit::Kiln),
    cl::values(clEnumValN(Emit::AST, "ast", "the syntax tree"),
               clEnumValN(Emit::Kiln, "kiln", "kiln dialect IR, as the front end emits it"),
               clEnumValN(Emit::LLVMDialect, "llvm-mlir", "the LLVM dialect after lowering"),
               clEnumValN(Emit::LLVM, "llvm", "LLVM IR, optimized for the host"),
               clEnumValN(Emit::Obj, "obj", "a host object file")),
    cl::cat(category));
cl::opt<std::string> target("target", cl::desc("Code generation target (cpu)"),
                            cl::init("cpu"), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"), cl::init(3),
                           cl::Prefix, cl::cat(category));
cl::opt<bool> printPipeline("print-pipeline",
                            cl::desc("Print the pass pipeline kiln-opt replays, then exit"),
                            cl::cat(category));
cl::opt<bool> timePasses("kiln-time-passes", cl::desc("Time each pass of the lowering"),
                         cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "kilnc: error: " << message << "\n";
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kilnc (Kiln) " << KILN_VERSION_STRING << "\n"
       << "built with LLVM/MLIR " << KILN_LLVM_VERSION_STRING << "\n";
  });
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln tile-kernel compiler\n");

  if (printPipeline) {
    llvm::outs() << cpu::pipelineString() << "\n";
    return 0;
  }
  if (target != "cpu" && target != "host")
    return fail("unknown target '" + target + "' (this build supports: cpu)");
  if (optLevel > 3)
    return fail("-O must be 0 to 3");

  GenOptions options;
  options.kernel = kernelName;
  for (const std::string &d : defines) {
    auto [name, value] = llvm::StringRef(d).split('=');
    if (name.empty() || value.empty() || d.find('=') == std::string::npos)
      return fail("-D expects NAME=VALUE, got '" + d + "'");
    options.defines[name.str()] = value.str();
  }

  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile + "': " + buffer.getError().message());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);

  if (emit == Emit::AST) {
    DiagEngine diag(sourceMgr);
    auto ast = parseModule(
        sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer(), diag);
    if (!ast)
      return 1;
    dumpAST(*ast, output->os());
    output->keep();
    return 0;
  }

  registerPasses();
  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  std::vector<KernelInfo> infos;
  auto module = buildKilnModule(context, sourceMgr, options, infos, llvm::errs());
  if (!module)
    return 1;
  if (emit == Emit::Kiln) {
    module->print(output->os());
    output->keep();
    return 0;
  }

  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  if (mlir::failed(cpu::lowerToLLVMDialect(*module, timePasses)))
    return 1;
  switch (emit) {
  case Emit::LLVMDialect:
    module->print(output->os());
    break;
  case Emit::LLVM: {
    llvm::LLVMContext llvmContext;
    auto llvmModule = cpu::translateToLLVMIR(*module, llvmContext, optLevel);
    if (!llvmModule)
      return 1;
    llvmModule->print(output->os(), nullptr);
    break;
  }
  case Emit::Obj: {
    if (outputFile == "-")
      return fail("--emit=obj needs -o FILE");
    auto exe = cpu::Executable::create(*module, infos, optLevel);
    if (!exe)
      return fail(llvm::toString(exe.takeError()));
    output.reset(); // the object is written by the JIT, not through this stream
    if (auto err = (*exe)->writeObject(outputFile))
      return fail(llvm::toString(std::move(err)));
    return 0;
  }
  default:
    break;
  }
  output->keep();
  return 0;
}
