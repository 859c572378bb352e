//===- CommandLine.h - the tools' command lines, read literally -*- C++ -*-===//
//
// llvm::cl::ParseCommandLineOptions expands every argument `@F` into the words
// of the file F (a GCC response file), and cannot be told not to. For kilnc and
// kiln-run an argument is what the user typed: `kilnc @attn.kiln` compiles the
// file named `@attn.kiln`, and `-o @out.ptx` writes there, even when a file
// `attn.kiln` or `out.ptx` exists too. literalAtArguments() returns argv with
// each such argument written as the same path beginning `./`, which LLVM leaves
// alone. (Neither tool documents response files; none is read.)
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_COMMANDLINE_H
#define KILN_SUPPORT_COMMANDLINE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <deque>
#include <string>
#include <vector>

namespace kiln {

/// argv with every `@F` argument that LLVM would expand (a file F exists) as
/// `./@F`. The strings live in `storage`.
inline std::vector<const char *> literalAtArguments(int argc, char **argv,
                                                    std::deque<std::string> &storage) {
  std::vector<const char *> out(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg.starts_with("@") && llvm::sys::fs::exists(arg.drop_front()))
      out[i] = storage.emplace_back("./" + arg.str()).c_str();
  }
  return out;
}

} // namespace kiln

#endif // KILN_SUPPORT_COMMANDLINE_H
