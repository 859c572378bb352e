//===- Lexer.h - tokens of the .kiln language -------------------*- C++ -*-===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <string>

namespace kiln {

enum class Tok {
  Eof, Error, Ident, Int, Float, String,
  // Keywords.
  KwKernel, KwFn, KwParams, KwGrid, KwTensor, KwLet, KwVar, KwFor, KwIn, KwIf,
  KwElse, KwWhile, KwReturn, KwBreak, KwContinue, KwTrue, KwFalse,
  // Punctuation and operators.
  LParen, RParen, LBracket, RBracket, LBrace, RBrace, Comma, Colon, Semi, Dot, Ellipsis,
  Arrow, Assign, PlusAssign, MinusAssign, StarAssign, SlashAssign, PercentAssign,
  AmpAssign, PipeAssign, CaretAssign, ShlAssign, ShrAssign,
  Plus, Minus, Star, Slash, Percent, Amp, Pipe, Caret, Bang, Tilde, AmpAmp, PipePipe,
  Shl, Shr, Eq, Ne, Lt, Le, Gt, Ge,
};

const char *tokSpelling(Tok kind);

struct Token {
  Tok kind = Tok::Eof;
  llvm::StringRef text;
  llvm::SMLoc loc() const { return llvm::SMLoc::getFromPointer(text.data()); }
};

/// Splits a buffer into tokens. Errors come back as Tok::Error tokens whose text
/// points at the offending characters; the parser reports them.
class Lexer {
public:
  /// A leading UTF-8 byte order mark (some editors write one) is skipped.
  explicit Lexer(llvm::StringRef buffer)
      : buf(buffer),
        cur(buffer.begin() + (buffer.starts_with("\xEF\xBB\xBF") ? 3 : 0)) {}
  Token next();
  /// Message for the last Tok::Error token.
  const std::string &errorMessage() const { return error; }
  /// The first `//` comment since the last statement boundary that follows an
  /// operand on its line and starts with one (`N // 2`: Python's floor
  /// division), or null.
  const char *operandComment() const { return firstOperandComment; }
  /// A `;`, `{` or `}` was consumed: comments before it are not suspects.
  void forgetOperandComment() { firstOperandComment = nullptr; }

private:
  Token make(Tok kind, const char *start) {
    return {kind, llvm::StringRef(start, cur - start)};
  }
  /// A number token, checked (numberProblem); lexNumberToken scans it.
  Token lexNumber(const char *start);
  Token lexNumberToken(const char *start);
  Token lexString(const char *start);
  void skipTrivia();
  /// Records the `//` at `cur` as operandComment() if it fits.
  void noteOperandComment();

  llvm::StringRef buf;
  const char *cur;
  const char *unterminatedComment = nullptr;
  const char *firstOperandComment = nullptr;
  std::string error;
};

/// The name of the first kernel `source` declares, found with the lexer
/// (comments anywhere), or "" when there is none or the text does not lex: the
/// compiler then reports what is wrong, at its line.
std::string firstKernelName(llvm::StringRef source);

} // namespace kiln
