//===- Diagnostics.h - errors that point into .kiln source ------*- C++ -*-===//
#pragma once

#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// Adds `source` to `sourceMgr` as its main buffer, a lone carriage return (old
/// Mac line ends, a stray one in a Unix file) read as a line end: the lexer,
/// `//` comments and the line numbers of errors then agree with editors.
void addSourceBuffer(llvm::SourceMgr &sourceMgr, llvm::StringRef source,
                     llvm::StringRef filename);

/// Reports `FILE:LINE:COL: error: message`, the source line and a caret, through the
/// SourceMgr that owns the buffer.
class DiagEngine {
public:
  explicit DiagEngine(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os = llvm::errs())
      : sourceMgr(sourceMgr), os(os) {}

  void error(llvm::SMLoc loc, const llvm::Twine &message) {
    ++errors;
    print(loc, llvm::SourceMgr::DK_Error, message);
  }
  /// An error about the file as a whole (no line to point at): `FILE: error: ...`.
  void fileError(const llvm::Twine &message) {
    ++errors;
    auto *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
    llvm::SMDiagnostic(buffer->getBufferIdentifier(), llvm::SourceMgr::DK_Error,
                       message.str())
        .print(nullptr, os);
  }
  void note(llvm::SMLoc loc, const llvm::Twine &message) {
    print(loc, llvm::SourceMgr::DK_Note, message);
  }
  unsigned errorCount() const { return errors; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

private:
  /// SourceMgr's message; on a line with non-ASCII text (a comment, a string)
  /// LLVM leaves the caret out, so the line and caret are printed here, the
  /// caret counting characters rather than bytes.
  void print(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind, const llvm::Twine &message);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  unsigned errors = 0;
};

} // namespace kiln
