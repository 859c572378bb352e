//===- Lexer.cpp - tokens of the .kiln language ---------------------------===//

#include "lib/Frontend/Lexer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cstdio>

using namespace kiln;

const char *kiln::tokSpelling(Tok kind) {
  switch (kind) {
  case Tok::Eof: return "end of file";
  case Tok::Error: return "invalid token";
  case Tok::Ident: return "identifier";
  case Tok::Int: return "integer";
  case Tok::Float: return "number";
  case Tok::String: return "string";
  case Tok::KwKernel: return "'kernel'";
  case Tok::KwFn: return "'fn'";
  case Tok::KwParams: return "'params'";
  case Tok::KwGrid: return "'grid'";
  case Tok::KwTensor: return "'tensor'";
  case Tok::KwLet: return "'let'";
  case Tok::KwVar: return "'var'";
  case Tok::KwFor: return "'for'";
  case Tok::KwIn: return "'in'";
  case Tok::KwIf: return "'if'";
  case Tok::KwElse: return "'else'";
  case Tok::KwWhile: return "'while'";
  case Tok::KwReturn: return "'return'";
  case Tok::KwBreak: return "'break'";
  case Tok::KwContinue: return "'continue'";
  case Tok::KwTrue: return "'true'";
  case Tok::KwFalse: return "'false'";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semi: return "';'";
  case Tok::Dot: return "'.'";
  case Tok::Ellipsis: return "'...'";
  case Tok::Arrow: return "'->'";
  case Tok::Assign: return "'='";
  case Tok::PlusAssign: return "'+='";
  case Tok::MinusAssign: return "'-='";
  case Tok::StarAssign: return "'*='";
  case Tok::SlashAssign: return "'/='";
  case Tok::PercentAssign: return "'%='";
  case Tok::AmpAssign: return "'&='";
  case Tok::PipeAssign: return "'|='";
  case Tok::CaretAssign: return "'^='";
  case Tok::ShlAssign: return "'<<='";
  case Tok::ShrAssign: return "'>>='";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::Percent: return "'%'";
  case Tok::Amp: return "'&'";
  case Tok::Pipe: return "'|'";
  case Tok::Caret: return "'^'";
  case Tok::Bang: return "'!'";
  case Tok::Tilde: return "'~'";
  case Tok::Shl: return "'<<'";
  case Tok::Shr: return "'>>'";
  case Tok::AmpAmp: return "'&&'";
  case Tok::PipePipe: return "'||'";
  case Tok::Eq: return "'=='";
  case Tok::Ne: return "'!='";
  case Tok::Lt: return "'<'";
  case Tok::Le: return "'<='";
  case Tok::Gt: return "'>'";
  case Tok::Ge: return "'>='";
  }
  return "token";
}

void Lexer::noteOperandComment() {
  if (firstOperandComment)
    return;
  auto isOperandEnd = [](char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ')' || c == ']';
  };
  const char *before = cur;
  while (before != buf.begin() && (before[-1] == ' ' || before[-1] == '\t'))
    --before;
  const char *after = cur + 2;
  while (after != buf.end() && (*after == ' ' || *after == '\t'))
    ++after;
  // `h //= 2` is Python's floor-division assignment.
  if (before != buf.begin() && isOperandEnd(before[-1]) && after != buf.end() &&
      (isalnum(static_cast<unsigned char>(*after)) || *after == '_' || *after == '(' ||
       (after == cur + 2 && *after == '=')))
    firstOperandComment = cur;
}

void Lexer::skipTrivia() {
  while (cur != buf.end()) {
    if (isspace(static_cast<unsigned char>(*cur))) {
      ++cur;
    } else if (cur + 1 < buf.end() && cur[0] == '/' && cur[1] == '/') {
      noteOperandComment();
      while (cur != buf.end() && *cur != '\n' && *cur != '\r') // a lone CR ends a line too
        ++cur;
    } else if (cur + 1 < buf.end() && cur[0] == '/' && cur[1] == '*') {
      const char *end = cur + 2;
      while (end + 1 < buf.end() && !(end[0] == '*' && end[1] == '/'))
        ++end;
      if (end + 1 >= buf.end()) {
        unterminatedComment = cur; // reported by next() at the comment's start
        cur = buf.end();
        return;
      }
      cur = end + 2;
    } else {
      return;
    }
  }
}

/// Why the text of a number token is malformed, or null: a `_` only separates
/// two digits before any point or exponent (`1_000.5`, not `1_`, `1__0`, `1_e5`
/// or `.000_5`), and a decimal integer does not start with 0 (C reads `010` as
/// eight).
static const char *numberProblem(llvm::StringRef text, bool isFloat) {
  bool hex = text.starts_with_insensitive("0x");
  auto isDigit = [&](char c) {
    return hex ? isxdigit(static_cast<unsigned char>(c)) != 0
               : isdigit(static_cast<unsigned char>(c)) != 0;
  };
  size_t first = hex ? 2 : 0;
  size_t point = isFloat ? text.find_first_of(".eE") : llvm::StringRef::npos;
  if (point != llvm::StringRef::npos && text.find('_', point) != llvm::StringRef::npos)
    return "'_' in a number may only separate digits before its point or exponent";
  for (size_t i = first; i < text.size(); ++i)
    if (text[i] == '_' && (i == first || i + 1 == text.size() || !isDigit(text[i - 1]) ||
                           !isDigit(text[i + 1])))
      return "'_' in a number must stand between two digits";
  if (!hex && !isFloat && text.size() > 1 && text[0] == '0')
    return "a decimal integer cannot start with 0 (C reads 010 as octal 8); drop the leading 0s";
  return nullptr;
}

Token Lexer::lexNumber(const char *start) {
  Token token = lexNumberToken(start);
  if (token.kind == Tok::Int || token.kind == Tok::Float)
    if (const char *problem = numberProblem(token.text, token.kind == Tok::Float)) {
      error = problem;
      return make(Tok::Error, start);
    }
  return token;
}

Token Lexer::lexNumberToken(const char *start) {
  // Hexadecimal integers: 0x1F, 0xFFFF_0000.
  if (*start == '0' && cur + 1 < buf.end() && (*cur == 'x' || *cur == 'X') &&
      isxdigit(static_cast<unsigned char>(cur[1]))) {
    ++cur;
    while (cur != buf.end() && (isxdigit(static_cast<unsigned char>(*cur)) || *cur == '_'))
      ++cur;
    if (cur != buf.end() && (isalnum(static_cast<unsigned char>(*cur)) || *cur == '.')) {
      while (cur != buf.end() && isalnum(static_cast<unsigned char>(*cur)))
        ++cur;
      error = "invalid hexadecimal number";
      return make(Tok::Error, start);
    }
    return make(Tok::Int, start);
  }
  bool isFloat = *start == '.';
  while (cur != buf.end() && (isdigit(static_cast<unsigned char>(*cur)) || *cur == '_'))
    ++cur;
  if (cur != buf.end() && *cur == '.' && cur + 1 < buf.end() &&
      isdigit(static_cast<unsigned char>(cur[1]))) {
    isFloat = true;
    ++cur;
    while (cur != buf.end() && isdigit(static_cast<unsigned char>(*cur)))
      ++cur;
  }
  if (cur != buf.end() && (*cur == 'e' || *cur == 'E')) {
    const char *exp = cur + 1;
    if (exp != buf.end() && (*exp == '+' || *exp == '-'))
      ++exp;
    if (exp == buf.end() || !isdigit(static_cast<unsigned char>(*exp))) {
      cur = exp;
      error = "malformed exponent in number";
      return make(Tok::Error, start);
    }
    isFloat = true;
    cur = exp;
    while (cur != buf.end() && isdigit(static_cast<unsigned char>(*cur)))
      ++cur;
  }
  if (cur != buf.end() && (isalpha(static_cast<unsigned char>(*cur)) || *cur == '_')) {
    while (cur != buf.end() && isalnum(static_cast<unsigned char>(*cur)))
      ++cur;
    error = "invalid suffix on number";
    return make(Tok::Error, start);
  }
  return make(isFloat ? Tok::Float : Tok::Int, start);
}

Token Lexer::lexString(const char *start) {
  // "...": printable ASCII on one line; \" \\ \n \t are the escapes.
  while (cur != buf.end() && *cur != '"') {
    unsigned char byte = static_cast<unsigned char>(*cur);
    if (byte == '\n' || !isprint(byte)) {
      error = byte == '\n' ? "unterminated string" : "strings hold printable ASCII only";
      return make(Tok::Error, start);
    }
    if (*cur++ == '\\') {
      if (cur == buf.end() || !llvm::StringRef("\"\\nt").contains(*cur)) {
        error = "unknown escape in a string; use \\\", \\\\, \\n or \\t";
        return make(Tok::Error, cur - 1);
      }
      ++cur;
    }
  }
  if (cur == buf.end()) {
    error = "unterminated string";
    return make(Tok::Error, start);
  }
  ++cur;
  return make(Tok::String, start);
}

Token Lexer::next() {
  skipTrivia();
  if (unterminatedComment) {
    const char *start = unterminatedComment;
    unterminatedComment = nullptr;
    error = "unterminated /* comment";
    return {Tok::Error, llvm::StringRef(start, 2)};
  }
  const char *start = cur;
  if (cur == buf.end())
    return {Tok::Eof, llvm::StringRef(cur, 0)};
  char c = *cur++;
  if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
    while (cur != buf.end() && (isalnum(static_cast<unsigned char>(*cur)) || *cur == '_'))
      ++cur;
    llvm::StringRef word(start, cur - start);
    Tok kind = llvm::StringSwitch<Tok>(word)
                   .Case("kernel", Tok::KwKernel)
                   .Case("fn", Tok::KwFn)
                   .Case("params", Tok::KwParams)
                   .Case("grid", Tok::KwGrid)
                   .Case("tensor", Tok::KwTensor)
                   .Case("let", Tok::KwLet)
                   .Case("var", Tok::KwVar)
                   .Case("for", Tok::KwFor)
                   .Case("in", Tok::KwIn)
                   .Case("if", Tok::KwIf)
                   .Case("else", Tok::KwElse)
                   .Case("while", Tok::KwWhile)
                   .Case("return", Tok::KwReturn)
                   .Case("break", Tok::KwBreak)
                   .Case("continue", Tok::KwContinue)
                   .Case("true", Tok::KwTrue)
                   .Case("false", Tok::KwFalse)
                   .Default(Tok::Ident);
    return make(kind, start);
  }
  if (isdigit(static_cast<unsigned char>(c)))
    return lexNumber(start);
  if (c == '.' && cur != buf.end() && isdigit(static_cast<unsigned char>(*cur)))
    return lexNumber(start);

  auto follows = [&](char expected) {
    if (cur != buf.end() && *cur == expected) {
      ++cur;
      return true;
    }
    return false;
  };
  if (c == '"')
    return lexString(start);
  switch (c) {
  case '(': return make(Tok::LParen, start);
  case ')': return make(Tok::RParen, start);
  case '[': return make(Tok::LBracket, start);
  case ']': return make(Tok::RBracket, start);
  case '{': return make(Tok::LBrace, start);
  case '}': return make(Tok::RBrace, start);
  case ',': return make(Tok::Comma, start);
  case ':': return make(Tok::Colon, start);
  case ';': return make(Tok::Semi, start);
  case '.':
    if (cur + 1 < buf.end() && cur[0] == '.' && cur[1] == '.') { // numpy's `...`
      cur += 2;
      return make(Tok::Ellipsis, start);
    }
    return make(Tok::Dot, start);
  case '~': return make(Tok::Tilde, start);
  case '^': return make(follows('=') ? Tok::CaretAssign : Tok::Caret, start);
  case '%': return make(follows('=') ? Tok::PercentAssign : Tok::Percent, start);
  case '+': return make(follows('=') ? Tok::PlusAssign : Tok::Plus, start);
  case '*': return make(follows('=') ? Tok::StarAssign : Tok::Star, start);
  case '/': return make(follows('=') ? Tok::SlashAssign : Tok::Slash, start);
  case '-':
    if (follows('>'))
      return make(Tok::Arrow, start);
    return make(follows('=') ? Tok::MinusAssign : Tok::Minus, start);
  case '=': return make(follows('=') ? Tok::Eq : Tok::Assign, start);
  case '!': return make(follows('=') ? Tok::Ne : Tok::Bang, start);
  case '<':
    if (follows('<'))
      return make(follows('=') ? Tok::ShlAssign : Tok::Shl, start);
    return make(follows('=') ? Tok::Le : Tok::Lt, start);
  case '>':
    if (follows('>'))
      return make(follows('=') ? Tok::ShrAssign : Tok::Shr, start);
    return make(follows('=') ? Tok::Ge : Tok::Gt, start);
  case '&':
    if (follows('&'))
      return make(Tok::AmpAmp, start);
    return make(follows('=') ? Tok::AmpAssign : Tok::Amp, start);
  case '|':
    if (follows('|'))
      return make(Tok::PipePipe, start);
    return make(follows('=') ? Tok::PipeAssign : Tok::Pipe, start);
  default:
    unsigned char byte = static_cast<unsigned char>(c);
    if (isprint(byte)) {
      error = std::string("unexpected character '") + c + "'";
      if (c == '?') // C's c ? a : b
        error += " (Kiln has no '?:'; pick with where(c, a, b))";
      else if (c == '#') // Python's comment
        error += " (comments start with //)";
      else if (c == '\'') // Python's 'text'
        error += " (strings use double quotes)";
    } else {
      char hex[8];
      snprintf(hex, sizeof hex, "0x%02X", byte);
      error = std::string("unexpected byte ") + hex +
              (byte >= 0x80 ? " (identifiers and code are ASCII; non-ASCII text may appear "
                              "only in comments)"
                            : "");
    }
    return make(Tok::Error, start);
  }
}

std::string kiln::firstKernelName(llvm::StringRef source) {
  Lexer lexer(source);
  for (Token t = lexer.next(); t.kind != Tok::Eof && t.kind != Tok::Error; t = lexer.next())
    if (t.kind == Tok::KwKernel) {
      Token name = lexer.next();
      return name.kind == Tok::Ident ? name.text.str() : "";
    }
  return "";
}
