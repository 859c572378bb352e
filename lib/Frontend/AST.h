//===- AST.h - syntax tree of the .kiln language ----------------*- C++ -*-===//
#pragma once

#include "kiln/DType.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {


//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

struct Expr {
  enum Kind { IntLit, FloatLit, BoolLit, StringLit, Name, Unary, Binary, Call, Index, Slice,
              Method, List, Tuple };
  Expr(Kind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
  virtual ~Expr() = default;
  Kind kind;
  llvm::SMLoc loc;
  unsigned height = 1; // nodes on the longest path down to a leaf (set by the parser)
};
using ExprPtr = std::unique_ptr<Expr>;

/// 1 + the largest height of `e`'s direct subexpressions (1 for a leaf).
unsigned heightFromChildren(const Expr &e);

struct IntLitExpr : Expr {
  IntLitExpr(llvm::SMLoc loc, uint64_t value) : Expr(IntLit, loc), value(value) {}
  uint64_t value; // literals are never negative ('-' is an operator)
};

struct FloatLitExpr : Expr {
  FloatLitExpr(llvm::SMLoc loc, double value) : Expr(FloatLit, loc), value(value) {}
  double value;
};

struct BoolLitExpr : Expr {
  BoolLitExpr(llvm::SMLoc loc, bool value) : Expr(BoolLit, loc), value(value) {}
  bool value;
};

/// `"text"`, with its escapes resolved; only `print` takes one.
struct StringLitExpr : Expr {
  StringLitExpr(llvm::SMLoc loc, std::string value)
      : Expr(StringLit, loc), value(std::move(value)) {}
  std::string value;
};

struct NameExpr : Expr {
  NameExpr(llvm::SMLoc loc, std::string name) : Expr(Name, loc), name(std::move(name)) {}
  std::string name;
};

struct UnaryExpr : Expr {
  UnaryExpr(llvm::SMLoc loc, char op, ExprPtr operand)
      : Expr(Unary, loc), op(op), operand(std::move(operand)) {}
  char op; // '-', '!' or '~'
  ExprPtr operand;
};

enum class BinOp { Add, Sub, Mul, Div, Rem, And, Or, Xor, Shl, Shr, LAnd, LOr, Eq, Ne, Lt, Le, Gt, Ge };
const char *binOpSpelling(BinOp op);

struct BinaryExpr : Expr {
  BinaryExpr(llvm::SMLoc loc, BinOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Binary, loc), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  BinOp op;
  ExprPtr lhs, rhs;
};

struct KeywordArg {
  std::string name;
  llvm::SMLoc loc;
  ExprPtr value;
};

/// `name<dtype>[shape](args, key = value)`; the type and shape parts are optional.
struct CallExpr : Expr {
  CallExpr(llvm::SMLoc loc, std::string callee) : Expr(Call, loc), callee(std::move(callee)) {}
  std::string callee;
  std::optional<DType> typeArg;
  std::vector<ExprPtr> shapeArg; // empty unless `[...]` followed the type argument
  bool hasShapeArg = false;
  std::vector<ExprPtr> args;
  std::vector<KeywordArg> kwargs;
  bool method = false; // written `v.callee(...)`: args[0] is v
  const KeywordArg *kwarg(llvm::StringRef name) const {
    for (const KeywordArg &kw : kwargs)
      if (kw.name == name)
        return &kw;
    return nullptr;
  }
};

/// `base[i, j]`: a gather-style view of a tensor argument, or (with constants,
/// slices and `None`) numpy's basic indexing of a tile.
struct IndexExpr : Expr {
  IndexExpr(llvm::SMLoc loc, ExprPtr base) : Expr(Index, loc), base(std::move(base)) {}
  ExprPtr base;
  std::vector<ExprPtr> indices;
};

/// `start:stop:step` in an index list, each part optional (a bare `:` is the whole
/// dimension), as numpy's basic slices; or numpy's `...`, as many `:` as needed.
struct SliceExpr : Expr {
  SliceExpr(llvm::SMLoc loc) : Expr(Slice, loc) {}
  ExprPtr start, stop, step; // null where left out
  bool ellipsis = false;
};

/// `base.name(args)`, e.g. the block view `a.tile([BM, BK], [m0, k])`.
struct MethodExpr : Expr {
  MethodExpr(llvm::SMLoc loc, ExprPtr base, std::string name)
      : Expr(Method, loc), base(std::move(base)), name(std::move(name)) {}
  ExprPtr base;
  std::string name;
  llvm::SMLoc nameLoc;
  std::vector<ExprPtr> args;
};

/// `[a, b, c]`: a list of compile-time integers (shapes, offsets, permutations).
struct ListExpr : Expr {
  ListExpr(llvm::SMLoc loc) : Expr(List, loc) {}
  std::vector<ExprPtr> elements;
};

/// `(a, b, ...)`: two or more runtime values travelling together, as a helper's
/// results or the operands of `reduce` and `associative_scan`.
struct TupleExpr : Expr {
  TupleExpr(llvm::SMLoc loc) : Expr(Tuple, loc) {}
  std::vector<ExprPtr> elements;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

struct Stmt {
  enum Kind { Let, Assign, For, While, If, Return, Break, Continue, ExprS };
  Stmt(Kind kind, llvm::SMLoc loc) : kind(kind), loc(loc) {}
  virtual ~Stmt() = default;
  Kind kind;
  llvm::SMLoc loc;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct NameLoc {
  std::string name;
  llvm::SMLoc loc;
};

/// `let x = e;`, or `let (a, b) = e;`, which unpacks a tuple: then `name` is
/// empty and `unpack` names each element.
struct LetStmt : Stmt {
  LetStmt(llvm::SMLoc loc, std::string name, bool isMutable, ExprPtr init)
      : Stmt(Let, loc), name(std::move(name)), isMutable(isMutable), init(std::move(init)) {}
  std::string name;
  std::vector<NameLoc> unpack;
  bool isMutable;
  ExprPtr init;
};

/// `name = value;`, or `(a, b) = value;`, which assigns a tuple's elements: then
/// `name` is empty and `unpack` names each target.
struct AssignStmt : Stmt {
  AssignStmt(llvm::SMLoc loc, std::string name, ExprPtr value)
      : Stmt(Assign, loc), name(std::move(name)), value(std::move(value)) {}
  std::string name;
  std::vector<NameLoc> unpack;
  ExprPtr value; // compound assignments are desugared to `name = name op rhs`
};

struct ForStmt : Stmt {
  ForStmt(llvm::SMLoc loc) : Stmt(For, loc) {}
  std::string var;
  llvm::SMLoc varLoc;
  ExprPtr start, end, step; // step may be null (1)
  ExprPtr stages;           // `stages=` of range(...): software pipelining depth, or null
  bool unrolled = false;    // static_range(...): one copy of the body per trip
  Block body;
};

struct WhileStmt : Stmt {
  WhileStmt(llvm::SMLoc loc) : Stmt(While, loc) {}
  ExprPtr cond; // evaluated before every iteration
  Block body;
};

struct IfStmt : Stmt {
  IfStmt(llvm::SMLoc loc) : Stmt(If, loc) {}
  ExprPtr cond;
  Block thenBody, elseBody;
};

struct ReturnStmt : Stmt {
  ReturnStmt(llvm::SMLoc loc, ExprPtr value) : Stmt(Return, loc), value(std::move(value)) {}
  ExprPtr value; // may be null
};

/// `break;` or `continue;` (kind Break or Continue) in a loop body.
struct LoopExitStmt : Stmt {
  LoopExitStmt(Kind kind, llvm::SMLoc loc) : Stmt(kind, loc) {}
};

struct ExprStmt : Stmt {
  ExprStmt(llvm::SMLoc loc, ExprPtr expr) : Stmt(ExprS, loc), expr(std::move(expr)) {}
  ExprPtr expr;
};

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

/// A size in a tensor argument's shape: a name bound at launch, or a fixed integer.
struct DimSpec {
  std::string name; // empty for fixed sizes
  int64_t fixed = -1;
  llvm::SMLoc loc;
};

struct ArgDecl {
  std::string name;
  llvm::SMLoc loc;
  DType dtype;
  bool isTensor = false;
  std::vector<DimSpec> dims;
};

struct ParamDecl {
  std::string name;
  llvm::SMLoc loc;
  DType dtype;
  ExprPtr defaultValue; // may be null: then -D must give it
  /// `tune [v1, v2, ...]`: the values an autotuner tries, as -D would spell them.
  std::vector<std::string> tuneValues;
  std::vector<llvm::SMLoc> tuneValueLocs; // one per value
};

struct KernelDecl {
  std::string name;
  llvm::SMLoc loc;
  std::vector<ArgDecl> args;
  std::vector<ParamDecl> params;
  std::vector<ExprPtr> grid; // empty: a grid of one program
  llvm::SMLoc gridLoc;
  Block body;
};

struct FnParam {
  std::string name;
  llvm::SMLoc loc;
  std::optional<DType> dtype; // a scalar type annotation, checked at each call
};

struct FnDecl {
  std::string name;
  llvm::SMLoc loc;
  std::vector<FnParam> params;
  Block body;
};

/// The prefix of the name Kiln gives each kernel's C entry point (MLIR's C
/// interface, `_mlir_<kernel>`). The parser rejects kernels and functions named so.
inline constexpr llvm::StringLiteral kCEntryPrefix = "_mlir_";

struct Module {
  std::vector<std::unique_ptr<KernelDecl>> kernels;
  std::vector<std::unique_ptr<FnDecl>> functions;
  const KernelDecl *findKernel(llvm::StringRef name) const;
  const FnDecl *findFunction(llvm::StringRef name) const;
};

/// Prints the tree in an indented, s-expression-like form (`kilnc --emit=ast`).
void dumpAST(const Module &module, llvm::raw_ostream &os);

} // namespace kiln
