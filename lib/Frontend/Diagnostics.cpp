//===- Diagnostics.cpp - errors that point into .kiln source --------------===//

#include "lib/Frontend/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace kiln;

void kiln::addSourceBuffer(llvm::SourceMgr &sourceMgr, llvm::StringRef source,
                           llvm::StringRef filename) {
  std::string text = source.str();
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))
      text[i] = '\n';
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, filename),
                               llvm::SMLoc());
}

void DiagEngine::print(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
                       const llvm::Twine &message) {
  llvm::SMDiagnostic diag = sourceMgr.GetMessage(loc, kind, message);
  llvm::StringRef line = diag.getLineContents();
  auto plain = [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte < 0x80 && byte != 0x7F && (byte >= 0x20 || c == '\t' || c == '\r');
  };
  // A long line (generated source, a minified file) shows a window around the
  // column: a 1 MB line printed whole, with a caret line as long, buried the message.
  constexpr size_t kLongLine = 240, kContext = 100;
  if (line.size() <= kLongLine && llvm::all_of(line, plain)) {
    sourceMgr.PrintMessage(os, diag);
    return;
  }
  // The location line alone, then the source line and a caret under the
  // column's character: tabs go to the next multiple of 8 columns, as LLVM
  // prints them, and a UTF-8 character takes one column, whatever its bytes.
  // Control bytes (escape sequences, NULs) show as '?', not to the terminal.
  // A byte order mark (skipped by the lexer) is no part of the line.
  size_t at = diag.getColumnNo();
  if (diag.getLineNo() == 1 && line.starts_with("\xEF\xBB\xBF")) {
    line = line.drop_front(3);
    at = at >= 3 ? at - 3 : 0;
  }
  os << diag.getFilename() << ':' << diag.getLineNo() << ':' << at + 1 << ": "
     << (kind == llvm::SourceMgr::DK_Error     ? "error: "
         : kind == llvm::SourceMgr::DK_Warning ? "warning: "
                                               : "note: ")
     << diag.getMessage() << "\n";
  std::string shown, caret;
  bool cutEnd = false;
  if (line.size() > kLongLine) {
    size_t from = at > kContext ? at - kContext : 0, to = std::min(line.size(), at + kContext);
    while (from > 0 && (static_cast<unsigned char>(line[from]) & 0xC0) == 0x80)
      --from; // not inside a UTF-8 character
    while (to < line.size() && (static_cast<unsigned char>(line[to]) & 0xC0) == 0x80)
      ++to;
    if (from > 0) {
      shown = "...";
      caret = "   ";
    }
    cutEnd = to < line.size();
    line = line.slice(from, to);
    at -= from;
  }
  size_t column = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    unsigned char c = line[i];
    size_t width = c == '\t' ? 8 - column % 8 : (c & 0xC0) == 0x80 ? 0 : 1;
    if (c == '\t')
      shown.append(width, ' ');
    else
      shown.push_back(c < 0x20 || c == 0x7F ? '?' : static_cast<char>(c));
    if (i < at)
      caret.append(width, ' ');
    column += width;
  }
  os << shown << (cutEnd ? "..." : "") << "\n" << caret << "^\n";
}
