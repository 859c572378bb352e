//===- Parser.cpp - recursive-descent parser for .kiln --------------------===//

#include "lib/Frontend/Parser.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace kiln;
using llvm::SMLoc;

namespace {

class Parser {
public:
  Parser(llvm::StringRef buffer, DiagEngine &diag) : lexer(buffer), diag(diag) {
    advance();
  }

  std::unique_ptr<Module> parseModule();

private:
  // Token handling. After an error `failed` is set and every parse function returns
  // null, so only the first error is reported.
  void advance() {
    previous = tok.kind;
    previousText = tok.text;
    previousEnd = tok.text.end();
    // Forgotten once the boundary is consumed: an error at a `}` is still the
    // comment's (`let h = N // 2;` as a block's last statement).
    if (tok.kind == Tok::Semi || tok.kind == Tok::LBrace || tok.kind == Tok::RBrace)
      lexer.forgetOperandComment();
    tok = lexer.next();
    if (tok.kind == Tok::Error && !failed) {
      diag.error(tok.loc(), lexer.errorMessage());
      failed = true;
    }
  }
  bool is(Tok kind) const { return tok.kind == kind; }
  bool consumeIf(Tok kind) {
    if (!is(kind))
      return false;
    advance();
    return true;
  }
  bool expect(Tok kind, const char *context) {
    if (consumeIf(kind))
      return true;
    errorHere(llvm::Twine("expected ") + tokSpelling(kind) + " " + context);
    return false;
  }
  /// Reports at the current token, saying what was found there; messages that
  /// already quote the token pass `mentionFound = false`.
  void errorHere(const llvm::Twine &message, bool mentionFound = true) {
    if (!mentionFound)
      return error(tok.loc(), message);
    std::string found = tok.kind == Tok::Eof ? std::string("end of file")
                                             : ("'" + tok.text.str() + "'");
    // Python's spellings, as Triton code has them.
    // `if` on the line of what it follows is Python's `a if c else b`; on a
    // line of its own, the statement before it lacks its ';'.
    bool sameLine = previousEnd && previousEnd <= tok.text.begin() &&
                    !llvm::StringRef(previousEnd, tok.text.begin() - previousEnd).contains('\n');
    // `not x` parses as the name `not` with `x` after it.
    if (previous == Tok::Ident && previousText == "not" && sameLine)
      return error(SMLoc::getFromPointer(previousText.data()),
                   "Kiln has no 'not'; write !x");
    llvm::StringRef hint = tok.kind == Tok::KwIf && sameLine
                               ? " (a conditional value is where(c, a, b))"
                           : tok.text == "and"  ? " (Kiln writes &&)"
                           : tok.text == "or"   ? " (Kiln writes ||)"
                           : tok.text == "not"  ? " (Kiln writes !)"
                                                : "";
    error(tok.loc(), message + ", found " + found + hint);
  }
  void error(SMLoc loc, const llvm::Twine &message) {
    if (failed)
      return;
    failed = true;
    diag.error(loc, message);
    // Python's floor division `N // 2` is a comment here; what follows it on
    // the line was never parsed, and the error comes after it.
    if (const char *comment = lexer.operandComment();
        comment && comment < loc.getPointer())
      diag.note(SMLoc::getFromPointer(comment),
                comment[2] == '='
                    ? "'//' starts a comment in Kiln; for Python's '//=' write '/=' (integers; "
                      "it rounds toward zero)"
                    : "'//' starts a comment in Kiln; for Python's floor division write a / b "
                      "(integers; it rounds toward zero) or floor(x / y)");
  }
  /// Guards the recursive productions: pathological nesting is an error, not a
  /// stack overflow.
  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &p) : p(p) { ++p.depth; }
    ~DepthGuard() { --p.depth; }
  };
  bool tooDeep() {
    if (depth <= kMaxDepth)
      return false;
    errorHere("expressions, blocks and 'else if' branches nested more than " +
                  llvm::Twine(kMaxDepth) + " levels deep",
              false);
    return true;
  }
  static constexpr int kMaxDepth = 256;
  int depth = 0;
  Tok previous = Tok::Eof;          // the token before `tok`
  llvm::StringRef previousText;     // its text
  const char *previousEnd = nullptr; // and where it ends
  /// `e` with its height set, or null (an error) when it is taller than
  /// kMaxHeight: operator chains (`a + b + ...`) and postfix chains grow
  /// without nesting, and everything after the parser walks the tree
  /// recursively.
  ExprPtr built(ExprPtr e) {
    e->height = heightFromChildren(*e);
    if (e->height <= kMaxHeight)
      return e;
    error(e->loc, "expression more than " + llvm::Twine(kMaxHeight) +
                      " operations deep (each operator of a chain adds one); split it with "
                      "'let'");
    return nullptr;
  }
  static constexpr unsigned kMaxHeight = 512;
  Token peekNext() {
    Lexer copy = lexer;
    return copy.next();
  }

  std::unique_ptr<KernelDecl> parseKernel();
  std::unique_ptr<FnDecl> parseFn();
  bool parseArg(ArgDecl &arg);
  bool parseDType(DType &dt);
  bool parseBlock(Block &block);
  StmtPtr parseStmt();
  StmtPtr parseFor();
  StmtPtr parseWhile();
  StmtPtr parseIf();
  ExprPtr parseExpr();
  ExprPtr parseBinary(int minPrec);
  ExprPtr parseUnary();
  ExprPtr parsePostfix(ExprPtr base);
  ExprPtr parsePrimary();
  bool parseCallArgs(CallExpr &call);
  bool parseExprList(Tok close, std::vector<ExprPtr> &out, const char *context);

  Lexer lexer;
  DiagEngine &diag;
  Token tok;
  bool failed = false;
  std::string bodyOwner; // "kernel 'k'" or "fn 'f'": the declaration being parsed
  SMLoc bodyOpen;        // where its body's `{` is
};

} // namespace

/// The value of an integer token (decimal or 0x hexadecimal, `_` separators);
/// false if it does not fit in 64 bits.
static bool intLiteralValue(llvm::StringRef text, unsigned long long &value) {
  std::string digits = text.str();
  llvm::erase(digits, '_');
  llvm::StringRef ref(digits);
  unsigned radix = ref.consume_front_insensitive("0x") ? 16 : 10;
  return !llvm::getAsUnsignedInteger(ref, radix, value);
}

std::unique_ptr<Module> Parser::parseModule() {
  auto module = std::make_unique<Module>();
  llvm::StringSet<> names;
  while (!failed && !is(Tok::Eof)) {
    SMLoc loc = tok.loc();
    std::string name;
    if (is(Tok::KwKernel)) {
      auto kernel = parseKernel();
      if (!kernel)
        return nullptr;
      name = kernel->name;
      loc = kernel->loc;
      module->kernels.push_back(std::move(kernel));
    } else if (is(Tok::KwFn)) {
      auto fn = parseFn();
      if (!fn)
        return nullptr;
      name = fn->name;
      loc = fn->loc;
      module->functions.push_back(std::move(fn));
    } else {
      errorHere("expected 'kernel' or 'fn' at top level");
      return nullptr;
    }
    if (!names.insert(name).second) {
      error(loc, "redefinition of '" + name + "'");
      return nullptr;
    }
    if (llvm::StringRef(name).starts_with(kCEntryPrefix)) {
      error(loc, "'" + name + "' is a reserved name: Kiln names its generated entry points " +
                     kCEntryPrefix + "<kernel>");
      return nullptr;
    }
  }
  return failed ? nullptr : std::move(module);
}

bool Parser::parseDType(DType &dt) {
  if (!is(Tok::Ident)) {
    errorHere("expected an element type (i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, "
              "f32, f64, f8e4m3, f8e5m2)");
    return false;
  }
  auto parsed = kiln::parseDType(tok.text);
  // Triton's, NumPy's and PyTorch's spellings name Kiln's.
  static const llvm::StringMap<const char *> spelled = {
      {"bool", "i1"},        {"int1", "i1"},          {"int8", "i8"},
      {"int16", "i16"},      {"int32", "i32"},        {"int64", "i64"},
      {"uint8", "u8"},       {"uint16", "u16"},       {"uint32", "u32"},
      {"uint64", "u64"},     {"float16", "f16"},      {"half", "f16"},
      {"fp16", "f16"},       {"bfloat16", "bf16"},    {"float32", "f32"},
      {"float", "f32"},      {"fp32", "f32"},         {"float64", "f64"},
      {"double", "f64"},     {"fp64", "f64"},         {"float8e4nv", "f8e4m3"},
      {"float8_e4m3fn", "f8e4m3"}, {"float8e5", "f8e5m2"}, {"float8_e5m2", "f8e5m2"}};
  if (!parsed && tok.text == "tl") {
    errorHere("unknown element type 'tl'; Kiln's types take no module prefix (Triton's "
              "tl.float16 is f16), and a tl.constexpr is a param: params(BLOCK: i32 = 1024)",
              false);
    return false;
  }
  if (auto kiln = spelled.find(tok.text); !parsed && kiln != spelled.end()) {
    errorHere("unknown element type '" + tok.text + "'; Kiln spells it " + kiln->second, false);
    return false;
  }
  if (!parsed) {
    errorHere("unknown element type '" + tok.text +
                  "' (expected i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, "
                  "f8e4m3 or f8e5m2)",
              false);
    return false;
  }
  dt = *parsed;
  advance();
  return true;
}

bool Parser::parseArg(ArgDecl &arg) {
  arg.loc = tok.loc();
  if (!is(Tok::Ident)) {
    errorHere("expected an argument name");
    return false;
  }
  arg.name = tok.text.str();
  advance();
  if (!expect(Tok::Colon, "after the argument name"))
    return false;
  if (consumeIf(Tok::KwTensor)) {
    arg.isTensor = true;
    if (!expect(Tok::Lt, "after 'tensor'") || !parseDType(arg.dtype) ||
        !expect(Tok::Gt, "after the element type") ||
        !expect(Tok::LBracket, "before the tensor's sizes"))
      return false;
    do {
      DimSpec dim;
      dim.loc = tok.loc();
      if (is(Tok::Ident)) {
        dim.name = tok.text.str();
      } else if (is(Tok::Int)) {
        unsigned long long value;
        if (!intLiteralValue(tok.text, value) || value == 0 || value >= (1ull << 31)) {
          // Sizes are i32 at launch (a larger one could never run).
          errorHere("tensor size must be a positive integer below 2^31, got " + tok.text,
                    false);
          return false;
        }
        dim.fixed = static_cast<int64_t>(value);
      } else {
        errorHere("expected a size name or an integer");
        return false;
      }
      advance();
      arg.dims.push_back(dim);
    } while (consumeIf(Tok::Comma));
    return expect(Tok::RBracket, "after the tensor's sizes");
  }
  return parseDType(arg.dtype);
}

std::unique_ptr<KernelDecl> Parser::parseKernel() {
  auto kernel = std::make_unique<KernelDecl>();
  advance(); // 'kernel'
  kernel->loc = tok.loc();
  if (!is(Tok::Ident)) {
    errorHere("expected the kernel's name");
    return nullptr;
  }
  kernel->name = tok.text.str();
  advance();
  if (!expect(Tok::LParen, "after the kernel name"))
    return nullptr;
  if (!is(Tok::RParen)) {
    do {
      ArgDecl arg;
      if (!parseArg(arg))
        return nullptr;
      kernel->args.push_back(std::move(arg));
    } while (consumeIf(Tok::Comma));
  }
  if (!expect(Tok::RParen, "after the kernel's arguments"))
    return nullptr;

  if (consumeIf(Tok::KwParams)) {
    if (!expect(Tok::LParen, "after 'params'"))
      return nullptr;
    if (!is(Tok::RParen)) {
      do {
        ParamDecl param;
        param.loc = tok.loc();
        if (!is(Tok::Ident)) {
          errorHere("expected a param name");
          return nullptr;
        }
        param.name = tok.text.str();
        advance();
        if (!expect(Tok::Colon, "after the param name") || !parseDType(param.dtype))
          return nullptr;
        if (consumeIf(Tok::Assign)) {
          param.defaultValue = parseExpr();
          if (!param.defaultValue)
            return nullptr;
        }
        if (is(Tok::Ident) && tok.text == "tune") {
          advance();
          if (!expect(Tok::LBracket, "after 'tune'"))
            return nullptr;
          do {
            SMLoc valueLoc = tok.loc();
            std::string text;
            if (consumeIf(Tok::Minus))
              text = "-";
            if (!is(Tok::Int) && !is(Tok::Float) && !is(Tok::KwTrue) && !is(Tok::KwFalse)) {
              errorHere("expected a number, true or false in the tune list");
              return nullptr;
            }
            // As a number literal reads anywhere else (0x10, 1_000), kept as the
            // text a -D value would be.
            std::string digits = tok.text.str();
            unsigned long long value;
            if (is(Tok::Int) && intLiteralValue(tok.text, value))
              digits = std::to_string(value);
            else if (is(Tok::Float))
              llvm::erase(digits, '_');
            text += digits;
            param.tuneValues.push_back(std::move(text));
            param.tuneValueLocs.push_back(valueLoc);
            advance();
          } while (consumeIf(Tok::Comma));
          if (!expect(Tok::RBracket, "after the tune values"))
            return nullptr;
        }
        kernel->params.push_back(std::move(param));
      } while (consumeIf(Tok::Comma));
    }
    if (!expect(Tok::RParen, "after the params"))
      return nullptr;
  }

  if (is(Tok::KwGrid)) {
    kernel->gridLoc = tok.loc();
    advance();
    if (!expect(Tok::LParen, "after 'grid'"))
      return nullptr;
    if (!parseExprList(Tok::RParen, kernel->grid, "in the grid rule"))
      return nullptr;
    if (kernel->grid.empty() || kernel->grid.size() > 3) {
      error(kernel->gridLoc, "a grid rule has 1 to 3 dimensions, got " +
                                 llvm::Twine(kernel->grid.size()));
      return nullptr;
    }
  }
  bodyOwner = "kernel '" + kernel->name + "'";
  bodyOpen = tok.loc();
  if (!parseBlock(kernel->body))
    return nullptr;
  return kernel;
}

std::unique_ptr<FnDecl> Parser::parseFn() {
  auto fn = std::make_unique<FnDecl>();
  advance(); // 'fn'
  fn->loc = tok.loc();
  if (!is(Tok::Ident)) {
    errorHere("expected the function's name");
    return nullptr;
  }
  fn->name = tok.text.str();
  advance();
  if (!expect(Tok::LParen, "after the function name"))
    return nullptr;
  if (!is(Tok::RParen)) {
    do {
      FnParam param;
      param.loc = tok.loc();
      if (!is(Tok::Ident)) {
        errorHere("expected a parameter name");
        return nullptr;
      }
      param.name = tok.text.str();
      advance();
      if (consumeIf(Tok::Colon)) {
        DType dt;
        if (!parseDType(dt))
          return nullptr;
        param.dtype = dt;
      }
      fn->params.push_back(std::move(param));
    } while (consumeIf(Tok::Comma));
  }
  if (!expect(Tok::RParen, "after the function's parameters"))
    return nullptr;
  bodyOwner = "fn '" + fn->name + "'";
  bodyOpen = tok.loc();
  if (!parseBlock(fn->body))
    return nullptr;
  return fn;
}

bool Parser::parseBlock(Block &block) {
  DepthGuard guard(*this);
  if (tooDeep())
    return false;
  if (!expect(Tok::LBrace, "to open a block"))
    return false;
  while (!is(Tok::RBrace)) {
    if (is(Tok::Eof)) {
      errorHere("expected '}' to close the block");
      return false;
    }
    // `kernel` and `fn` begin only top-level declarations: the body before
    // them lacks its `}`.
    if ((is(Tok::KwKernel) || is(Tok::KwFn)) && !bodyOwner.empty()) {
      auto [line, col] = diag.getSourceMgr().getLineAndColumn(bodyOpen);
      error(tok.loc(), "expected '}' to close the body of " + bodyOwner + " opened at " +
                           llvm::Twine(line) + ":" + llvm::Twine(col));
      diag.note(bodyOpen, "the body of " + bodyOwner + " opens here");
      return false;
    }
    StmtPtr stmt = parseStmt();
    if (!stmt)
      return false;
    block.push_back(std::move(stmt));
  }
  advance();
  return true;
}

StmtPtr Parser::parseStmt() {
  SMLoc loc = tok.loc();
  switch (tok.kind) {
  case Tok::KwLet:
  case Tok::KwVar: {
    bool isMutable = is(Tok::KwVar);
    advance();
    std::vector<NameLoc> unpack;
    SMLoc nameLoc = tok.loc();
    if (is(Tok::LParen)) { // let (a, b) = ...
      advance();
      do {
        if (!is(Tok::Ident)) {
          errorHere("expected a variable name");
          return nullptr;
        }
        unpack.push_back({tok.text.str(), tok.loc()});
        advance();
      } while (consumeIf(Tok::Comma));
      if (!expect(Tok::RParen, "after the names to unpack"))
        return nullptr;
      if (unpack.size() < 2) {
        error(nameLoc, "unpacking needs two or more names; write 'let x = ...' for one");
        return nullptr;
      }
    } else if (!is(Tok::Ident)) {
      errorHere("expected a variable name");
      return nullptr;
    }
    std::string name;
    if (unpack.empty()) {
      name = tok.text.str();
      advance();
      // Python's `a, b = 1, 2` and a type annotation `v: f32 = ...`.
      if (is(Tok::Comma)) {
        error(tok.loc(), llvm::Twine("expected '=' after the variable name, found ','; unpack "
                                     "with parentheses: ") +
                             (isMutable ? "var" : "let") + " (a, b) = (1, 2);");
        return nullptr;
      }
      if (is(Tok::Colon)) {
        Token type = peekNext();
        std::string to = type.kind == Tok::Ident && kiln::parseDType(type.text)
                             ? type.text.str()
                             : std::string("T");
        error(tok.loc(), "variables take no type annotation; convert with cast<" + to +
                             ">(...)");
        return nullptr;
      }
    }
    if (!expect(Tok::Assign, unpack.empty() ? "after the variable name" : "after the names"))
      return nullptr;
    ExprPtr init = parseExpr();
    if (!init || !expect(Tok::Semi, "after the statement"))
      return nullptr;
    auto let = std::make_unique<LetStmt>(nameLoc, name, isMutable, std::move(init));
    let->unpack = std::move(unpack);
    return let;
  }
  case Tok::KwFor:
    return parseFor();
  case Tok::KwWhile:
    return parseWhile();
  case Tok::KwIf:
    return parseIf();
  case Tok::KwReturn: {
    advance();
    ExprPtr value;
    if (!is(Tok::Semi) && !(value = parseExpr()))
      return nullptr;
    if (!expect(Tok::Semi, "after the return"))
      return nullptr;
    return std::make_unique<ReturnStmt>(loc, std::move(value));
  }
  case Tok::KwBreak:
  case Tok::KwContinue: {
    Stmt::Kind kind = is(Tok::KwBreak) ? Stmt::Break : Stmt::Continue;
    advance();
    if (!expect(Tok::Semi, kind == Stmt::Break ? "after 'break'" : "after 'continue'"))
      return nullptr;
    return std::make_unique<LoopExitStmt>(kind, loc);
  }
  default:
    break;
  }

  // Assignment: IDENT ('=' | 'op=') expr ';'
  if (is(Tok::Ident)) {
    Tok after = peekNext().kind;
    static const std::pair<Tok, BinOp> compound[] = {
        {Tok::PlusAssign, BinOp::Add},    {Tok::MinusAssign, BinOp::Sub},
        {Tok::StarAssign, BinOp::Mul},    {Tok::SlashAssign, BinOp::Div},
        {Tok::PercentAssign, BinOp::Rem}, {Tok::AmpAssign, BinOp::And},
        {Tok::PipeAssign, BinOp::Or},     {Tok::CaretAssign, BinOp::Xor},
        {Tok::ShlAssign, BinOp::Shl},     {Tok::ShrAssign, BinOp::Shr}};
    if (after == Tok::Assign ||
        llvm::any_of(compound, [&](auto &c) { return c.first == after; })) {
      std::string name = tok.text.str();
      advance();
      Tok opTok = tok.kind;
      SMLoc opLoc = tok.loc();
      advance();
      ExprPtr value = parseExpr();
      if (!value || !expect(Tok::Semi, "after the assignment"))
        return nullptr;
      for (auto &[t, op] : compound)
        if (t == opTok &&
            !(value = built(std::make_unique<BinaryExpr>(
                  opLoc, op, std::make_unique<NameExpr>(loc, name), std::move(value)))))
          return nullptr;
      return std::make_unique<AssignStmt>(loc, name, std::move(value));
    }
  }

  ExprPtr expr = parseExpr();
  if (!expr)
    return nullptr;
  // Tuple assignment: (a, b) = expr;
  if (expr->kind == Expr::Tuple && is(Tok::Assign)) {
    std::vector<NameLoc> targets;
    for (auto &e : static_cast<TupleExpr &>(*expr).elements) {
      if (e->kind != Expr::Name) {
        error(e->loc, "only variables can be assigned; use store(...) for memory");
        return nullptr;
      }
      targets.push_back({static_cast<NameExpr &>(*e).name, e->loc});
    }
    advance();
    ExprPtr value = parseExpr();
    if (!value || !expect(Tok::Semi, "after the assignment"))
      return nullptr;
    auto assign = std::make_unique<AssignStmt>(loc, "", std::move(value));
    assign->unpack = std::move(targets);
    return assign;
  }
  // x[i] = v (numpy, Triton's pointer-free style) or t[0] += 1 on a tile.
  if (expr->kind == Expr::Index && (is(Tok::Assign) || is(Tok::PlusAssign) ||
                                    is(Tok::MinusAssign) || is(Tok::StarAssign))) {
    errorHere("only variables can be assigned: write memory with store(x[i], v), and make a "
              "tile with some elements changed with where(mask, new, t)",
              false);
    return nullptr;
  }
  if (!expect(Tok::Semi, "after the expression"))
    return nullptr;
  return std::make_unique<ExprStmt>(loc, std::move(expr));
}

StmtPtr Parser::parseFor() {
  auto stmt = std::make_unique<ForStmt>(tok.loc());
  advance(); // 'for'
  if (!is(Tok::Ident)) {
    errorHere("expected the loop variable");
    return nullptr;
  }
  stmt->var = tok.text.str();
  stmt->varLoc = tok.loc();
  advance();
  if (!expect(Tok::KwIn, "after the loop variable"))
    return nullptr;
  if (!is(Tok::Ident) || (tok.text != "range" && tok.text != "static_range")) {
    errorHere("expected 'range(...)' or 'static_range(...)' after 'in'");
    return nullptr;
  }
  SMLoc rangeLoc = tok.loc();
  std::string name = tok.text.str();
  stmt->unrolled = name == "static_range";
  advance();
  CallExpr range(rangeLoc, name);
  if (!is(Tok::LParen)) {
    errorHere("expected '(' after '" + name + "'");
    return nullptr;
  }
  if (!parseCallArgs(range))
    return nullptr;
  for (KeywordArg &kw : range.kwargs) {
    if (kw.name != "stages" || stmt->unrolled) {
      std::string hint = kw.name == "step" ? "; the step is the third positional argument: " +
                                                 name + "(start, end, step)"
                         : stmt->unrolled ? " (it takes none)"
                         : kw.name == "num_stages" ? "; Kiln spells it stages ="
                                                   : " (it takes stages=)";
      error(kw.loc, "unknown keyword argument '" + kw.name + "' of " + name + hint);
      return nullptr;
    }
    stmt->stages = std::move(kw.value);
  }
  std::vector<ExprPtr> bounds = std::move(range.args);
  if (bounds.empty() || bounds.size() > 3) {
    error(rangeLoc, name + " takes 1 to 3 arguments (end | start, end | start, end, step)" +
                        (!stmt->unrolled && bounds.size() == 4
                             ? "; a pipelined loop's stages are a keyword: range(a, b, s, "
                               "stages = n)"
                             : ""));
    return nullptr;
  }
  if (bounds.size() == 1) {
    stmt->start = std::make_unique<IntLitExpr>(rangeLoc, 0);
    stmt->end = std::move(bounds[0]);
  } else {
    stmt->start = std::move(bounds[0]);
    stmt->end = std::move(bounds[1]);
    if (bounds.size() == 3)
      stmt->step = std::move(bounds[2]);
  }
  if (!parseBlock(stmt->body))
    return nullptr;
  return stmt;
}

StmtPtr Parser::parseWhile() {
  auto stmt = std::make_unique<WhileStmt>(tok.loc());
  advance(); // 'while'
  stmt->cond = parseExpr();
  if (!stmt->cond || !parseBlock(stmt->body))
    return nullptr;
  return stmt;
}

StmtPtr Parser::parseIf() {
  auto stmt = std::make_unique<IfStmt>(tok.loc());
  advance(); // 'if'
  stmt->cond = parseExpr();
  if (!stmt->cond || !parseBlock(stmt->thenBody))
    return nullptr;
  if (consumeIf(Tok::KwElse)) {
    if (is(Tok::KwIf)) {
      // `else if` nests the next `if` in this one's else block.
      DepthGuard guard(*this);
      if (tooDeep())
        return nullptr;
      StmtPtr nested = parseIf();
      if (!nested)
        return nullptr;
      stmt->elseBody.push_back(std::move(nested));
    } else if (!parseBlock(stmt->elseBody)) {
      return nullptr;
    }
  }
  return stmt;
}

ExprPtr Parser::parseExpr() {
  DepthGuard guard(*this);
  if (tooDeep())
    return nullptr;
  return parseBinary(0);
}

static int precedence(Tok kind, BinOp &op) {
  switch (kind) {
  case Tok::PipePipe: op = BinOp::LOr; return 1;
  case Tok::AmpAmp: op = BinOp::LAnd; return 2;
  case Tok::Pipe: op = BinOp::Or; return 3;
  case Tok::Caret: op = BinOp::Xor; return 4;
  case Tok::Amp: op = BinOp::And; return 5;
  case Tok::Eq: op = BinOp::Eq; return 6;
  case Tok::Ne: op = BinOp::Ne; return 6;
  case Tok::Lt: op = BinOp::Lt; return 7;
  case Tok::Le: op = BinOp::Le; return 7;
  case Tok::Gt: op = BinOp::Gt; return 7;
  case Tok::Ge: op = BinOp::Ge; return 7;
  case Tok::Shl: op = BinOp::Shl; return 8;
  case Tok::Shr: op = BinOp::Shr; return 8;
  case Tok::Plus: op = BinOp::Add; return 9;
  case Tok::Minus: op = BinOp::Sub; return 9;
  case Tok::Star: op = BinOp::Mul; return 10;
  case Tok::Slash: op = BinOp::Div; return 10;
  case Tok::Percent: op = BinOp::Rem; return 10;
  default: return -1;
  }
}

ExprPtr Parser::parseBinary(int minPrec) {
  ExprPtr lhs = parseUnary();
  while (lhs) {
    BinOp op;
    int prec = precedence(tok.kind, op);
    if (prec < 0 || prec < minPrec)
      return lhs;
    SMLoc loc = tok.loc();
    advance();
    ExprPtr rhs = parseBinary(prec + 1);
    if (!rhs)
      return nullptr;
    lhs = built(std::make_unique<BinaryExpr>(loc, op, std::move(lhs), std::move(rhs)));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (is(Tok::Minus) || is(Tok::Bang) || is(Tok::Tilde)) {
    DepthGuard guard(*this);
    if (tooDeep())
      return nullptr;
    SMLoc loc = tok.loc();
    char op = is(Tok::Minus) ? '-' : is(Tok::Bang) ? '!' : '~';
    advance();
    ExprPtr operand = parseUnary();
    if (!operand)
      return nullptr;
    return built(std::make_unique<UnaryExpr>(loc, op, std::move(operand)));
  }
  ExprPtr primary = parsePrimary();
  return primary ? parsePostfix(std::move(primary)) : nullptr;
}

bool Parser::parseExprList(Tok close, std::vector<ExprPtr> &out, const char *context) {
  if (!is(close)) {
    do {
      ExprPtr e = parseExpr();
      if (!e)
        return false;
      out.push_back(std::move(e));
    } while (consumeIf(Tok::Comma));
  }
  return expect(close, context);
}

bool Parser::parseCallArgs(CallExpr &call) {
  if (!expect(Tok::LParen, "to start the call's arguments"))
    return false;
  if (!is(Tok::RParen)) {
    do {
      if (is(Tok::Ident) && peekNext().kind == Tok::Assign) {
        KeywordArg kw;
        kw.name = tok.text.str();
        kw.loc = tok.loc();
        advance();
        advance(); // '='
        if (call.kwarg(kw.name)) {
          error(kw.loc, "keyword argument '" + kw.name + "' given twice");
          return false;
        }
        kw.value = parseExpr();
        if (!kw.value)
          return false;
        call.kwargs.push_back(std::move(kw));
        continue;
      }
      if (!call.kwargs.empty()) {
        errorHere("positional argument after a keyword argument");
        return false;
      }
      ExprPtr arg = parseExpr();
      if (!arg)
        return false;
      call.args.push_back(std::move(arg));
    } while (consumeIf(Tok::Comma));
  }
  return expect(Tok::RParen, "to close the call");
}

ExprPtr Parser::parsePostfix(ExprPtr base) {
  while (base) {
    if (is(Tok::LBracket)) {
      auto index = std::make_unique<IndexExpr>(tok.loc(), std::move(base));
      advance();
      // An index is an expression, a slice `start:stop:step`, each part optional
      // (a bare `:` is the whole dimension, as in `t[:, None]`), or `...`.
      if (!is(Tok::RBracket)) {
        do {
          SMLoc at = tok.loc();
          if (consumeIf(Tok::Ellipsis)) {
            auto all = std::make_unique<SliceExpr>(at);
            all->ellipsis = true;
            index->indices.push_back(std::move(all));
            continue;
          }
          ExprPtr first;
          if (!is(Tok::Colon) && !(first = parseExpr()))
            return nullptr;
          if (!is(Tok::Colon)) {
            index->indices.push_back(std::move(first));
            continue;
          }
          auto slice = std::make_unique<SliceExpr>(at);
          slice->start = std::move(first);
          auto part = [&](ExprPtr &into) {
            advance(); // the ':'
            return is(Tok::Colon) || is(Tok::Comma) || is(Tok::RBracket) ||
                   (into = parseExpr()) != nullptr;
          };
          if (!part(slice->stop) || (is(Tok::Colon) && !part(slice->step)))
            return nullptr;
          ExprPtr e = built(std::move(slice));
          if (!e)
            return nullptr;
          index->indices.push_back(std::move(e));
        } while (consumeIf(Tok::Comma));
      }
      if (!expect(Tok::RBracket, "to close the index list"))
        return nullptr;
      if (index->indices.empty()) {
        error(index->loc, "an index list needs at least one index");
        return nullptr;
      }
      base = built(std::move(index));
    } else if (is(Tok::Dot)) {
      advance();
      if (!is(Tok::Ident)) {
        errorHere("expected a method name after '.'");
        return nullptr;
      }
      std::string name = tok.text.str();
      SMLoc nameLoc = tok.loc();
      advance();
      if (name == "T" && !is(Tok::LParen)) {
        error(nameLoc, "Kiln has no '.T'; transpose with trans(t)");
        return nullptr;
      }
      // Triton's tl.math.exp and libdevice.tanh: the module path before a builtin.
      if (is(Tok::Dot) && (name == "math" || name == "libdevice") &&
          base->kind == Expr::Name &&
          llvm::is_contained({"tl", "triton"}, static_cast<const NameExpr &>(*base).name)) {
        Token fn = peekNext();
        error(base->loc, "Kiln's math functions take no module prefix: write " +
                             (fn.kind == Tok::Ident ? fn.text.str() : std::string("exp")) +
                             "(...)");
        return nullptr;
      }
      if (name == "shape" || name == "numel") {
        error(nameLoc, "Kiln has no '" + name + "'; a tensor's sizes are x.size(d) (or its " +
                           "size names, M and N in x: tensor<f32>[M, N]); a tile's are constants");
        return nullptr;
      }
      if (!isTensorMethod(name)) {
        // Any other method is a call with the value in front, as Triton's
        // x.sum(axis=0) or x.cast<f16>(): sum(x, axis = 0), cast<f16>(x).
        auto call = std::make_unique<CallExpr>(nameLoc, name);
        call->method = true;
        call->args.push_back(std::move(base));
        if (is(Tok::Lt) && takesTypeArgument(name)) {
          advance();
          DType dt;
          if (!parseDType(dt) || !expect(Tok::Gt, "after the type argument"))
            return nullptr;
          call->typeArg = dt;
        }
        if (!is(Tok::LParen)) {
          errorHere("expected '(' after the method name");
          return nullptr;
        }
        if (!parseCallArgs(*call))
          return nullptr;
        base = built(std::move(call));
        continue;
      }
      auto method = std::make_unique<MethodExpr>(base->loc, std::move(base), name);
      method->nameLoc = nameLoc;
      if (!expect(Tok::LParen, "after the method name") ||
          !parseExprList(Tok::RParen, method->args, "to close the method call"))
        return nullptr;
      base = built(std::move(method));
    } else {
      return base;
    }
  }
  return nullptr;
}

bool kiln::isTensorMethod(llvm::StringRef name) {
  // `to` stays a method so that Triton's x.to(tl.float16) is told about cast<T>.
  return name == "tile" || name == "size" || name == "stride" || name == "to";
}

bool kiln::takesTypeArgument(llvm::StringRef name) {
  return name == "zeros" || name == "ones" || name == "full" || name == "cast" ||
         name == "bitcast" || name == "zeros_like" || name == "ones_like" || name == "full_like";
}

ExprPtr Parser::parsePrimary() {
  SMLoc loc = tok.loc();
  switch (tok.kind) {
  case Tok::Int: {
    unsigned long long value;
    if (!intLiteralValue(tok.text, value)) {
      errorHere("integer literal " + tok.text + " does not fit in 64 bits", false);
      return nullptr;
    }
    advance();
    return std::make_unique<IntLitExpr>(loc, value);
  }
  case Tok::Float: {
    std::string digits = tok.text.str();
    llvm::erase(digits, '_');
    double value;
    if (llvm::StringRef(digits).getAsDouble(value)) {
      errorHere("malformed number " + tok.text, false);
      return nullptr;
    }
    if (std::isinf(value)) {
      errorHere("number " + tok.text + " is too large for f64; write inf for infinity", false);
      return nullptr;
    }
    llvm::StringRef mantissa = llvm::StringRef(digits).take_until([](char c) {
      return c == 'e' || c == 'E';
    });
    if (value == 0 && mantissa.find_first_of("123456789") != llvm::StringRef::npos) {
      errorHere("number " + tok.text + " is too small for f64 (it rounds to 0); write 0.0 for zero",
                false);
      return nullptr;
    }
    advance();
    return std::make_unique<FloatLitExpr>(loc, value);
  }
  case Tok::String: {
    std::string value;
    llvm::StringRef body = tok.text.drop_front().drop_back();
    for (size_t i = 0; i < body.size(); ++i) {
      char ch = body[i];
      if (ch == '\\') {
        char e = body[++i];
        ch = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      value.push_back(ch);
    }
    advance();
    return std::make_unique<StringLitExpr>(loc, std::move(value));
  }
  case Tok::KwTrue:
  case Tok::KwFalse: {
    bool value = is(Tok::KwTrue);
    advance();
    return std::make_unique<BoolLitExpr>(loc, value);
  }
  case Tok::LParen: { // a parenthesized expression, or a tuple `(a, b, ...)`
    advance();
    ExprPtr inner = parseExpr();
    if (!inner)
      return nullptr;
    if (!is(Tok::Comma))
      return expect(Tok::RParen, "to close the parenthesis") ? std::move(inner) : nullptr;
    auto tuple = std::make_unique<TupleExpr>(loc);
    tuple->elements.push_back(std::move(inner));
    advance();
    if (!parseExprList(Tok::RParen, tuple->elements, "to close the tuple"))
      return nullptr;
    if (tuple->elements.size() < 2) {
      error(loc, "a tuple needs two or more elements; drop the comma for one");
      return nullptr;
    }
    return built(std::move(tuple));
  }
  case Tok::LBracket: {
    auto list = std::make_unique<ListExpr>(loc);
    advance();
    if (!parseExprList(Tok::RBracket, list->elements, "to close the list"))
      return nullptr;
    return built(std::move(list));
  }
  case Tok::Ident: {
    std::string name = tok.text.str();
    advance();
    if (is(Tok::Lt) && takesTypeArgument(name)) {
      auto call = std::make_unique<CallExpr>(loc, name);
      advance();
      DType dt;
      if (!parseDType(dt) || !expect(Tok::Gt, "after the type argument"))
        return nullptr;
      call->typeArg = dt;
      if (is(Tok::LBracket)) {
        advance();
        call->hasShapeArg = true;
        if (!parseExprList(Tok::RBracket, call->shapeArg, "to close the shape"))
          return nullptr;
      }
      if (is(Tok::LParen) && !parseCallArgs(*call))
        return nullptr;
      return built(std::move(call));
    }
    if (is(Tok::LParen)) {
      auto call = std::make_unique<CallExpr>(loc, name);
      if (!parseCallArgs(*call))
        return nullptr;
      return built(std::move(call));
    }
    return std::make_unique<NameExpr>(loc, name);
  }
  default:
    errorHere(is(Tok::Star) && previous == Tok::Star
                  ? "expected an expression (Kiln has no '**': use pow(x, y))"
                  : "expected an expression");
    return nullptr;
  }
}

std::unique_ptr<Module> kiln::parseModule(llvm::StringRef buffer, DiagEngine &diag) {
  return Parser(buffer, diag).parseModule();
}
