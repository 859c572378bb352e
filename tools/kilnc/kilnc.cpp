//===- kilnc.cpp - the Kiln compiler driver -------------------------------===//
//
//   kilnc FILE.kiln [--kernel NAME] [-D NAME=VALUE]... --emit=STAGE -o OUT
//
// Each --emit stops after one stage, so every stage can be read and tested.
//
//===----------------------------------------------------------------------===//

#include "AOTHeader.h"
#include "codegen/CPU/CPUExecutable.h"
#include "codegen/CPU/CPUPipeline.h"
#include "codegen/Common/GPUBinary.h"
#include "codegen/Common/Target.h"
#include "kiln/Version.h"
#include "lib/Compiler/Build.h"
#include "runtime/Bundle.h"
#include "runtime/Metadata.h"
#include "lib/Compiler/Compiler.h"
#include "lib/Frontend/Parser.h"
#include "lib/Support/CommandLine.h"
#include "lib/Support/ReadFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace kiln;
namespace cl = llvm::cl;

namespace {
enum class Emit {
  AST, Kiln, KilnGPU, GPU, LLVMDialect, SPIRVDialect, LLVM, Obj, SO, PTX, Cubin, Asm, Hsaco,
  SPIRV, MSL
};

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
               clEnumValN(Emit::KilnGPU, "kiln-gpu", "GPU: tiles with kiln_gpu layouts"),
               clEnumValN(Emit::GPU, "gpu", "GPU: per-thread code in gpu.func"),
               clEnumValN(Emit::LLVMDialect, "llvm-mlir",
                          "the LLVM dialect (with NVVM/ROCDL ops on GPUs)"),
               clEnumValN(Emit::SPIRVDialect, "spirv-mlir", "Vulkan/Metal: the SPIR-V dialect"),
               clEnumValN(Emit::LLVM, "llvm", "LLVM IR (host: optimized; GPU: device module)"),
               clEnumValN(Emit::Obj, "obj", "cpu: a host object file"),
               clEnumValN(Emit::SO, "so", "cpu: a shared object kiln-rt loads (links with cc)"),
               clEnumValN(Emit::PTX, "ptx", "cuda: PTX assembly"),
               clEnumValN(Emit::Cubin, "cubin", "cuda: a cubin (runs ptxas)"),
               clEnumValN(Emit::Asm, "asm", "amdgpu, cpu: assembly"),
               clEnumValN(Emit::Hsaco, "hsaco", "amdgpu: an AMDHSA code object"),
               clEnumValN(Emit::SPIRV, "spirv", "vulkan: a SPIR-V binary"),
               clEnumValN(Emit::MSL, "msl", "metal: Metal Shading Language source")),
    cl::cat(category));
cl::opt<std::string> targetSpec(
    "target",
    cl::desc("Code generation target: cpu, cuda:sm_XX, amdgpu:gfxXXX, vulkan[:1.1|1.2|1.3], metal"),
    cl::init("cpu"), cl::cat(category));
cl::opt<std::string> headerFile(
    "header", cl::desc("With a .kbin output: also write a typed C++ header that embeds it"),
    cl::value_desc("path"), cl::cat(category));
cl::opt<std::string> metadataFile(
    "metadata",
    cl::desc("Write kernel metadata (JSON) here; default OUT.json for binary outputs"),
    cl::value_desc("path"), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"), cl::init(3),
                           cl::Prefix, cl::cat(category));
cl::opt<std::string> matrixUnits(
    "matrix-units",
    cl::desc("Matrix instructions dots may use: auto (the target's best), none (FMA "
             "loops), mma-sync, wgmma (NVIDIA), mfma, wmma (AMD)"),
    cl::init("auto"), cl::cat(category));
cl::opt<bool> printPipeline("print-pipeline",
                            cl::desc("Print the pass pipeline kiln-opt replays, then exit"),
                            cl::cat(category));
cl::opt<bool> timePasses("kiln-time-passes", cl::desc("Time each pass of the lowering"),
                         cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "kilnc: error: " << message << "\n";
  return 1;
}

/// The -D NAME=VALUE options into `options.defines`; false, after the error, when
/// one is malformed or names a param given before.
bool parseDefines(GenOptions &options) {
  for (const std::string &d : defines) {
    auto [name, value] = llvm::StringRef(d).split('=');
    if (name.empty() || value.empty()) {
      fail("-D expects NAME=VALUE, got '" + d + "'");
      return false;
    }
    if (!options.defines.emplace(name.str(), value.str()).second) {
      fail("-D " + d + ": param '" + name + "' is given twice");
      return false;
    }
  }
  return true;
}

/// Flushes what was written to `file`; fails (a full disk, /dev/full) with
/// the reason. Nothing is kept: the caller keeps its files once all are written.
int flushChecked(llvm::ToolOutputFile &file, llvm::StringRef path) {
  file.os().flush();
  if (!file.os().has_error())
    return 0;
  std::string why = file.os().error().message();
  file.os().clear_error();
  return fail("cannot write '" + (path == "-" ? llvm::StringRef("standard output") : path) +
              "': " + why);
}

/// Writes `bytes` to `file` and keeps it, or fails and leaves no file behind.
int writeChecked(llvm::ToolOutputFile &file, llvm::StringRef bytes, llvm::StringRef path) {
  file.os() << bytes;
  if (int rc = flushChecked(file, path))
    return rc;
  file.keep();
  return 0;
}

/// Keeps -o's text once it is all written, or fails.
int keepText(llvm::ToolOutputFile &output) {
  if (int rc = flushChecked(output, outputFile))
    return rc;
  output.keep();
  return 0;
}

/// Whether two paths name one regular file: the same file when both exist,
/// else the same absolute path once `.` and `..` are resolved. Devices
/// (/dev/null, /dev/stdout) may take several outputs.
bool samePath(llvm::StringRef a, llvm::StringRef b) {
  bool same = false;
  if (!llvm::sys::fs::equivalent(a, b, same))
    return same && llvm::sys::fs::is_regular_file(a);
  auto normal = [](llvm::StringRef path) {
    llvm::SmallString<256> full(path);
    llvm::sys::fs::make_absolute(full);
    llvm::sys::path::remove_dots(full, /*remove_dot_dot=*/true);
    return std::string(full);
  };
  return normal(a) == normal(b);
}

/// Fails when an option is given more than once (LLVM keeps the last value
/// silently), an option that names something is empty, or two files this run
/// reads or writes are one: `-o` on the input would truncate the source while
/// it is read, and a failed compile would then delete it.
int checkOptions() {
  const std::pair<const char *, cl::Option *> single[] = {
      {"-o", &outputFile},     {"--kernel", &kernelName},       {"--emit", &emit},
      {"--target", &targetSpec}, {"--header", &headerFile},     {"--metadata", &metadataFile},
      {"-O", &optLevel},       {"--matrix-units", &matrixUnits}, {"the input file", &inputFile}};
  for (auto [name, option] : single)
    if (option->getNumOccurrences() > 1)
      return fail(llvm::Twine(name) + " is given more than once");
  const std::pair<const char *, cl::opt<std::string> *> named[] = {
      {"-o", &outputFile}, {"--kernel", &kernelName}, {"--header", &headerFile},
      {"--metadata", &metadataFile}, {"--target", &targetSpec},
      {"--matrix-units", &matrixUnits}};
  for (auto [name, option] : named)
    if (option->getNumOccurrences() && option->getValue().empty())
      return fail(llvm::Twine(name) + " needs a value");
  std::vector<std::pair<std::string, std::string>> files;
  if (inputFile != "-")
    files.push_back({"the input", inputFile});
  if (outputFile != "-")
    files.push_back({"-o", outputFile});
  if (!headerFile.empty())
    files.push_back({"--header", headerFile});
  if (!metadataFile.empty())
    files.push_back({"--metadata", metadataFile});
  // Checked before anything is opened: a failed run removes what it opened.
  for (auto &[option, path] : files)
    if (option != "the input" && llvm::sys::fs::is_directory(path))
      return fail(option + " '" + path + "' is a directory");
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = i + 1; j < files.size(); ++j)
      if (samePath(files[i].second, files[j].second))
        return fail(files[j].first + " '" + files[j].second + "' is the same file as " +
                    files[i].first);
  return 0;
}

/// Reads the input whole into `source`, or fails: unreadable, or a bundle
/// (whose bytes would be reported as a source line).
int readSource(std::string &source) {
  std::string error;
  if (!readInput(inputFile, source, error))
    return fail("cannot read '" + inputFile + "': " + error);
  if (llvm::StringRef(source).starts_with("KILNKBIN"))
    return fail("'" + inputFile + "' is a bundle (kilnc's output), not Kiln source; "
                "kiln-run and Session::load run bundles");
  return 0;
}

/// Where a final output's metadata goes: --metadata, else OUT.json beside a
/// regular -o; empty beside a device or a pipe (-o /dev/null makes no
/// /dev/null.json).
std::string metadataPath() {
  if (!metadataFile.empty())
    return metadataFile;
  if (outputFile == "-" ||
      (llvm::sys::fs::exists(outputFile) && !llvm::sys::fs::is_regular_file(outputFile)))
    return "";
  return outputFile + ".json";
}

/// Whether -o's metadata goes beside it without --metadata: for every output
/// kiln-rt loads (PTX and MSL text too), not for assembly and LLVM IR, which are
/// for reading.
bool metadataByDefault() {
  return emit == Emit::Obj || emit == Emit::SO || emit == Emit::PTX || emit == Emit::Cubin ||
         emit == Emit::Hsaco || emit == Emit::SPIRV || emit == Emit::MSL;
}

/// Writes an artifact to -o, and its metadata (metadataByDefault() or
/// --metadata); both or neither are kept.
int writeArtifact(const Artifact &artifact, llvm::ToolOutputFile &output) {
  if (!artifact.isText && outputFile == "-")
    return fail("binary output needs -o FILE");
  std::unique_ptr<llvm::ToolOutputFile> metadata;
  std::string path = metadataPath();
  if (!path.empty() && (metadataByDefault() || !metadataFile.empty())) {
    std::string error;
    if (!(metadata = mlir::openOutputFile(path, &error)))
      return fail(error);
    metadata->os() << artifact.metadata;
    if (int rc = flushChecked(*metadata, path))
      return rc;
  }
  if (int rc = writeChecked(output, artifact.bytes, outputFile))
    return rc;
  if (metadata)
    metadata->keep();
  return 0;
}

/// The artifact an --emit value asks for, if it is a final one.
std::optional<ArtifactKind> artifactFor(Emit e, const Target &target) {
  switch (e) {
  case Emit::Obj: return ArtifactKind::Object;
  case Emit::SO: return ArtifactKind::SharedObject;
  case Emit::PTX: return ArtifactKind::PTX;
  case Emit::Cubin: return ArtifactKind::Cubin;
  case Emit::Asm: return ArtifactKind::Assembly;
  case Emit::Hsaco: return ArtifactKind::Hsaco;
  case Emit::SPIRV: return ArtifactKind::SPIRV;
  case Emit::MSL: return ArtifactKind::MSL;
  case Emit::LLVM:
    if (target.isGPU())
      return ArtifactKind::LLVM;
    return std::nullopt;
  default: return std::nullopt;
  }
}

/// Stops at an intermediate stage and prints the module.
int emitStage(const Target &target, mlir::ModuleOp module, llvm::ToolOutputFile &output) {
  if (!target.isGPU()) {
    if (mlir::failed(cpu::lowerToLLVMDialect(module, timePasses)))
      return 1;
    if (emit == Emit::LLVM) {
      llvm::LLVMContext llvmContext;
      auto llvmModule = cpu::translateToLLVMIR(module, llvmContext, optLevel);
      if (!llvmModule)
        return 1;
      llvmModule->print(output.os(), nullptr);
    } else {
      module.print(output.os());
    }
    return keepText(output);
  }
  Stage stage = emit == Emit::KilnGPU ? Stage::Layouts
                : emit == Emit::GPU   ? Stage::ThreadCode
                                      : Stage::Device;
  if (mlir::failed(checkTargetSupport(module, target)) ||
      mlir::failed(runPipeline(module, pipelineUpTo(target, stage), timePasses)))
    return 1;
  module.print(output.os());
  return keepText(output);
}

/// The stage an output file's extension names (k.so: a shared object), if any.
std::optional<Emit> emitForExtension(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  return llvm::StringSwitch<std::optional<Emit>>(ext)
      .Case(".so", Emit::SO)
      .Cases(".o", ".obj", Emit::Obj)
      .Case(".ptx", Emit::PTX)
      .Case(".cubin", Emit::Cubin)
      .Case(".hsaco", Emit::Hsaco)
      .Cases(".spv", ".spirv", Emit::SPIRV)
      .Cases(".metal", ".msl", Emit::MSL)
      .Case(".ll", Emit::LLVM)
      .Case(".s", Emit::Asm)
      .Default(std::nullopt);
}

/// --target=a,b,c -o F.kbin [--header F.h]: one artifact per target in a bundle.
int buildBundle() {
  if (!llvm::StringRef(outputFile).ends_with(".kbin"))
    return fail("several targets need a bundle output: -o FILE.kbin");
  // Bundles hold each target's final binary, built at -O3, with metadata inside.
  const std::pair<const char *, cl::Option *> singleTargetOnly[] = {
      {"--emit", &emit},     {"--metadata", &metadataFile},       {"-O", &optLevel},
      {"--print-pipeline", &printPipeline}, {"--kiln-time-passes", &timePasses}};
  for (auto [name, option] : singleTargetOnly)
    if (option->getNumOccurrences())
      return fail(llvm::Twine(name) +
                  " applies to one target's output, not to a bundle (-o FILE.kbin)");
  std::string source;
  if (int rc = readSource(source))
    return rc;
  GenOptions options;
  options.kernel = kernelName;
  if (!parseDefines(options))
    return 1;
  rt::Bundle bundle;
  std::vector<KernelInfo> kernels;
  for (llvm::StringRef spec : llvm::split(targetSpec, ',')) {
    auto target = Target::parse(spec.trim());
    if (!target)
      return fail(llvm::toString(target.takeError()));
    if (llvm::any_of(bundle.entries, [&](const rt::BundleEntry &e) {
          return e.target == target->str();
        }))
      return fail("target '" + target->str() + "' is given twice");
    if (auto error = target->setMatrixUnits(matrixUnits))
      return fail(llvm::toString(std::move(error)));
    if (target->kind == Target::Kind::Metal)
      return fail("metal emits source (MSL), which kiln-rt cannot load; leave it out of bundles");
    auto artifact = compileSource(source, inputFile, options, *target);
    if (!artifact) {
      // Diagnostics come formatted (file:line:col: error: ..., each line
      // ended); a bare message (from ptxas or the linker) is kilnc's to format.
      std::string text = llvm::toString(artifact.takeError());
      if (!llvm::StringRef(text).ends_with("\n"))
        return fail(text);
      llvm::errs() << text;
      return 1;
    }
    bundle.entries.push_back({target->str(), artifact->bytes, artifact->metadata});
    if (kernels.empty()) {
      rt::ModuleMetadata meta;
      std::string error;
      if (rt::parseMetadata(artifact->metadata, meta, error))
        kernels = meta.kernels;
    }
  }
  // The bundle and its header are kept together or not at all.
  std::string bytes = rt::writeBundle(bundle);
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> header;
  if (!headerFile.empty()) {
    if (!(header = mlir::openOutputFile(headerFile, &error)))
      return fail(error);
    header->os() << generateAOTHeader(bytes, kernels, llvm::sys::path::stem(outputFile).str(),
                                      inputFile);
    if (int rc = flushChecked(*header, headerFile))
      return rc;
  }
  auto out = mlir::openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  if (int rc = writeChecked(*out, bytes, outputFile))
    return rc;
  if (header)
    header->keep();
  return 0;
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
  std::deque<std::string> storage;
  std::vector<const char *> args = kiln::literalAtArguments(argc, argv, storage);
  cl::ParseCommandLineOptions(argc, args.data(), "Kiln tile-kernel compiler\n");
  if (int rc = checkOptions())
    return rc;

  if (llvm::StringRef(outputFile).ends_with(".kbin") || targetSpec.find(',') != std::string::npos)
    return buildBundle();
  if (!headerFile.empty())
    return fail("--header needs a bundle output (-o FILE.kbin)");
  auto parsedTarget = Target::parse(llvm::StringRef(targetSpec).trim());
  if (!parsedTarget)
    return fail(llvm::toString(parsedTarget.takeError()));
  if (auto error = parsedTarget->setMatrixUnits(matrixUnits))
    return fail(llvm::toString(std::move(error)));
  const Target target = *parsedTarget;
  if (printPipeline) {
    std::string error;
    auto output = mlir::openOutputFile(outputFile, &error);
    if (!output)
      return fail(error);
    output->os() << targetPipeline(target) << "\n";
    return keepText(*output);
  }
  // Without --emit, an output's extension names the stage: -o k.so is a shared
  // object (it was kiln IR, as text, in a file called k.so).
  std::optional<Emit> byExtension = emit.getNumOccurrences() ? std::nullopt
                                                              : emitForExtension(outputFile);
  if (byExtension)
    emit = *byExtension;
  std::string emitName =
      emit.getParser().getOption(static_cast<unsigned>(emit.getValue())).str();
  if (!llvm::is_contained(target.emits(), emitName))
    return fail((byExtension ? "-o " + outputFile + " asks for --emit=" + emitName +
                                   ", which target " + target.str() + " does not emit"
                             : "--emit=" + emitName + " is not available for target " +
                                   target.str()) +
                " (it emits: " + llvm::join(target.emits(), ", ") + ")");
  if (metadataFile.getNumOccurrences() && !artifactFor(emit, target))
    return fail("--metadata goes with a final output (--emit=so, obj, ptx, cubin, hsaco, "
                "spirv, msl, ...), not --emit=" + emitName);
  bool binaryEmit = emit == Emit::Obj || emit == Emit::SO || emit == Emit::Cubin ||
                    emit == Emit::Hsaco || emit == Emit::SPIRV;
  if (binaryEmit && outputFile == "-")
    return fail("--emit=" + emitName + " writes a binary file; give -o FILE");
  if (std::string beside = metadataFile.empty() ? metadataPath() : "";
      metadataByDefault() && inputFile != "-" && !beside.empty() && samePath(inputFile, beside))
    return fail("the metadata file '" + beside + "' (-o's name with .json) is the same file " +
                "as the input; give --metadata FILE");
  if (optLevel > 3)
    return fail("-O must be 0 to 3");

  GenOptions options;
  options.kernel = kernelName;
  if (!parseDefines(options))
    return 1;

  std::string source;
  if (int rc = readSource(source))
    return rc;
  llvm::SourceMgr sourceMgr;
  addSourceBuffer(sourceMgr, source, inputFile);

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  // Opening -o emptied it; its metadata from an earlier run goes too unless this
  // run writes a new one (writeArtifact keeps both or neither).
  struct StaleMetadata {
    std::string path;
    ~StaleMetadata() {
      if (!path.empty() && llvm::sys::fs::is_regular_file(path))
        llvm::sys::fs::remove(path);
    }
  } stale;
  if ((metadataByDefault() || !metadataFile.empty()) && outputFile != "-")
    stale.path = metadataPath();

  if (emit == Emit::AST) {
    if (!defines.empty() || kernelName.getNumOccurrences())
      return fail("--emit=ast prints the whole file as parsed; -D and --kernel do not apply");
    DiagEngine diag(sourceMgr);
    auto ast = parseModule(
        sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer(), diag);
    if (!ast)
      return 1;
    dumpAST(*ast, output->os());
    return keepText(*output);
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
    return keepText(*output);
  }

  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  // Counts the errors the pipeline reports at .kiln locations, then lets
  // `handler` print them.
  unsigned reported = 0;
  context.getDiagEngine().registerHandler([&](mlir::Diagnostic &d) {
    reported += d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::failure();
  });
  if (auto kind = artifactFor(emit, target)) {
    auto artifact = buildArtifact(*module, infos, target, *kind, optLevel, timePasses);
    // A lowering failure has printed its diagnostics already, and "lowering
    // failed" would only repeat them; serialization (SPIRV-Cross, ptxas, the
    // linker) reports only through the error.
    if (!artifact) {
      std::string message = llvm::toString(artifact.takeError());
      return reported ? 1 : fail(message);
    }
    int rc = writeArtifact(*artifact, *output);
    if (rc == 0)
      stale.path.clear();
    return rc;
  }
  return emitStage(target, *module, *output);
}
