//===- Generator.h - the walk from .kiln AST to the kiln dialect *- C++ -*-===//
//
// MLIRGen's private half: the values it works with (TValue, Binding, ViewData)
// and the Generator class, whose members are defined by topic across
// MLIRGen.cpp (conversions, kernels, grids), GenStatements.cpp,
// GenExpressions.cpp, GenCalls.cpp (calls, helpers, casts, math),
// GenMemoryOps.cpp (load, store, atomics) and GenTileOps.cpp (reductions,
// scans, dot, shape ops and the other tile builtins).
//
//===----------------------------------------------------------------------===//

#pragma once

#include "lib/Frontend/MLIRGen.h"
#include "lib/Frontend/Parser.h"
#include "lib/Frontend/Sema.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <memory>

namespace kiln::gen {

using llvm::SMLoc;
using mlir::Value;

/// What a view expression (`x[i, j]` or `x.tile(...)`) denotes; consumed by load/store.
struct ViewData {
  bool block = false;
  Value memory;
  std::string tensorName;
  llvm::SmallVector<Value> coords; // gather: i32 index per dim; block: i32 offsets
};

/// On a helper specialization: its results' element types (dtype names), and
/// whether they form a tuple (a single result may be one value or a 1-tuple).
constexpr llvm::StringLiteral kResultDTypesAttr = "kiln.result_dtypes";
constexpr llvm::StringLiteral kReturnsTupleAttr = "kiln.returns_tuple";

/// A value during generation: its static type, its IR value, and what is known
/// about it at compile time.
struct TValue {
  SType type;
  Value value;
  std::optional<Const> cst;
  std::shared_ptr<ViewData> view;
  std::vector<TValue> elements; // List and Tuple
  std::string tensorName;       // Tensor
};
using MaybeValue = std::optional<TValue>;

struct Binding {
  TValue val;
  bool isMutable = false;
  bool isLoopVar = false;
  SMLoc at; // where it was declared
};

/// "an i32", "an f16", "a bf16", "a tensor<...>": the article as the name is spoken.
inline std::string withArticle(const std::string &noun) {
  // u8 .. u64 start with a "you": "a u32".
  bool unsignedType = noun.size() > 1 && noun[0] == 'u' && llvm::isDigit(noun[1]);
  bool vowelSound = !noun.empty() && llvm::StringRef("aeiouf").contains(noun[0]) && !unsignedType;
  return (vowelSound ? "an " : "a ") + noun;
}

/// The variables that `return` (in a kernel), `break` and `continue` set: each
/// is named after its keyword, so no user name can clash. Statements after one
/// that may have set a flag run only where it did not.
constexpr llvm::StringLiteral kReturnedVar = "return", kBreakVar = "break",
                              kContinueVar = "continue";

/// The flag `kind` (Return, Break or Continue) sets.
inline llvm::StringLiteral exitFlag(Stmt::Kind kind) {
  return kind == Stmt::Return ? kReturnedVar : kind == Stmt::Break ? kBreakVar : kContinueVar;
}

/// `kind` for elements of `dt`: max and min of unsigned integers compare them
/// as unsigned.
inline ReduceKind orderedKind(ReduceKind kind, DType dt) {
  if (!isUnsigned(dt))
    return kind;
  return kind == ReduceKind::Max ? ReduceKind::UMax : kind == ReduceKind::Min ? ReduceKind::UMin
                                                                             : kind;
}

/// Collects the names assigned anywhere in `stmts` (exits assign their flags).
void collectAssigned(llvm::ArrayRef<StmtPtr> stmts, llvm::StringSet<> &names);

/// The first exit of `kind` (Return, Break or Continue) that `stmts` hold at
/// their own level: directly or in `if` branches, and with `intoLoops` also in
/// nested loops (where a `return` still ends the program); null if none.
const Stmt *findExit(llvm::ArrayRef<StmtPtr> stmts, Stmt::Kind kind, bool intoLoops = false);
inline bool exits(llvm::ArrayRef<StmtPtr> stmts, Stmt::Kind kind, bool intoLoops = false) {
  return findExit(stmts, kind, intoLoops) != nullptr;
}

class Generator {
public:
  Generator(mlir::MLIRContext &ctx, const Module &module, DiagEngine &diag)
      : ctx(ctx), module(module), diag(diag), builder(&ctx) {}

  mlir::OwningOpRef<mlir::ModuleOp> run(const GenOptions &options,
                                        std::vector<KernelInfo> &infos);

private:
  //===--- diagnostics and locations -------------------------------------===//
  std::nullopt_t error(SMLoc loc, const llvm::Twine &message) {
    if (!failed)
      diag.error(loc, message);
    failed = true;
    return std::nullopt;
  }

  /// Generation recurses through expressions, statement lists and helper
  /// calls. Past kMaxNesting levels it stops with an error at `at` instead of
  /// running out of stack (the parser bounds each expression and block, not
  /// chains of helpers).
  struct Nesting {
    Generator &g;
    bool ok;
    Nesting(Generator &g, SMLoc at) : g(g), ok(++g.nesting <= kMaxNesting) {
      if (!ok)
        g.error(at, "nested more than " + llvm::Twine(kMaxNesting) +
                        " levels deep (helper calls, blocks and expressions together)");
    }
    ~Nesting() { --g.nesting; }
  };
  static constexpr unsigned kMaxNesting = 1024;
  mlir::Location loc(SMLoc l) {
    auto &sm = diag.getSourceMgr();
    unsigned buf = sm.FindBufferContainingLoc(l);
    if (!buf)
      return builder.getUnknownLoc();
    auto [line, col] = sm.getLineAndColumn(l, buf);
    return mlir::FileLineColLoc::get(
        &ctx, sm.getMemoryBuffer(buf)->getBufferIdentifier(), line, col);
  }

  //===--- types and conversions ------------------------------------------===//
  mlir::Type mlirType(DType dt) {
    switch (dt) {
    case DType::I1: return builder.getI1Type();
    case DType::I8: return builder.getI8Type();
    case DType::I16: return builder.getI16Type();
    case DType::I32: return builder.getI32Type();
    case DType::I64: return builder.getI64Type();
    case DType::F16: return builder.getF16Type();
    case DType::BF16: return builder.getBF16Type();
    case DType::F32: return builder.getF32Type();
    case DType::F64: return builder.getF64Type();
    case DType::F8E4M3: return builder.getFloat8E4M3FNType();
    case DType::F8E5M2: return builder.getFloat8E5M2Type();
    // MLIR's integers are signless: signedness lives in the ops the frontend picks.
    case DType::U8: return builder.getI8Type();
    case DType::U16: return builder.getI16Type();
    case DType::U32: return builder.getI32Type();
    case DType::U64: return builder.getI64Type();
    }
    return {};
  }
  mlir::Type valueType(DType dt, const Shape &shape) {
    if (shape.empty())
      return mlirType(dt);
    return mlir::RankedTensorType::get(shape, mlirType(dt));
  }
  mlir::MemRefType memrefType(const ArgDecl &arg) {
    int64_t dyn = mlir::ShapedType::kDynamic;
    llvm::SmallVector<int64_t> sizes(arg.dims.size(), dyn), strides(arg.dims.size(), dyn);
    auto layout = mlir::StridedLayoutAttr::get(&ctx, dyn, strides);
    return mlir::MemRefType::get(sizes, mlirType(arg.dtype), layout);
  }
  /// `c` as a value of `dt`: rounded as a cast rounds, except that a weak
  /// infinity meeting e5m2 stays infinite (a cast saturates it to 57344; e4m3,
  /// which has none, refuses it in constantFits).
  static Const constantOf(const Const &c, DType dt, bool weak) {
    if (weak && dt == DType::F8E5M2 && c.isFloat && std::isinf(c.f))
      return c;
    return convertConst(c, dt);
  }
  mlir::TypedAttr constAttr(const Const &c, DType dt, bool weak = false) {
    Const v = constantOf(c, dt, weak);
    mlir::Type t = mlirType(dt);
    if (isFloat(dt))
      return mlir::FloatAttr::get(t, v.f);
    return mlir::IntegerAttr::get(t, v.i);
  }
  /// A scalar constant of type `dt`. A weak float constant (a literal, until an
  /// operand or a cast gives it a type) keeps its exact value, so `x_f64 * 0.1` uses
  /// the double nearest 0.1; the op holds it rounded to `dt`.
  TValue constant(const Const &c, DType dt, bool weak, mlir::Location l) {
    TValue v;
    v.type = SType::scalar(dt, weak);
    v.cst = weak && isFloat(dt) ? Const::ofFloat(c.asDouble()) : convertConst(c, dt);
    v.value = builder.create<mlir::arith::ConstantOp>(l, constAttr(c, dt, weak));
    return v;
  }
  /// The value of constant operand `v` in a fold at type `dt`: rounded to `dt`, or
  /// exact when every operand is weak (so is the result: `0.1 + 0.2` stays exact).
  Const foldOperand(const TValue &v, DType dt, bool weakResult) {
    return weakResult && isFloat(dt) ? Const::ofFloat(v.cst->asDouble())
                                     : constantOf(*v.cst, dt, v.type.weak);
  }
  Value castValue(Value v, DType from, DType to, mlir::Location l);
  Value narrowToOddF32(Value v, mlir::Location l);
  Value intToOddF32(Value v, DType from, mlir::Location l);
  MaybeValue foldWeakIntegers(BinOp op, const TValue &l, const TValue &r, DType dt, SMLoc at);
  Value saturatingFloatToInt(Value v, DType from, DType to, mlir::Location l);
  Value constantLike(Value like, mlir::TypedAttr value, mlir::Location l);
  Value broadcastValue(Value v, const Shape &from, const Shape &to, DType dt,
                       mlir::Location l);
  /// Converts `v` to `dt` and broadcasts it to `shape` (callers checked legality).
  TValue convert(const TValue &v, DType dt, const Shape &shape, SMLoc at);
  /// The constant `c` as a `dt` scalar (empty `shape`) or splat tile.
  Value splat(const Const &c, DType dt, const Shape &shape, SMLoc at) {
    return convert(constant(c, dt, true, loc(at)), dt, shape, at).value;
  }

  //===--- scopes ----------------------------------------------------------===//
  Binding *lookup(llvm::StringRef name) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(name.str());
      if (found != it->end())
        return &found->second;
    }
    return nullptr;
  }
  /// Binds `name` in the innermost scope. A builtin's name may be bound, as in
  /// Python (`let max = max(v, axis = 0);`): names look up values, calls builtins.
  /// Not those written with a type argument (`full < n` would read as `full<T>`),
  /// nor `inf` and `nan`, which grid rules read as numbers.
  bool declare(SMLoc at, const std::string &name, TValue val, bool isMutable) {
    if (takesTypeArgument(name) || name == "inf" || name == "nan") {
      error(at, "'" + name + "' cannot name a value (" +
                    (takesTypeArgument(name) ? "'" + name + " <' reads as a type argument"
                                             : std::string("it is a number")) +
                    ")");
      return false;
    }
    if (scopes.back().count(name)) {
      error(at, "redefinition of '" + name + "' in the same scope");
      return false;
    }
    // A name from an enclosing block declared again inside a block would hide
    // it until the block ends, and leave it as it was: `let acc = acc + v;` in
    // a loop (Python's `acc = acc + v`) summed nothing.
    for (size_t outer = 0; outer + 1 < scopes.size(); ++outer)
      if (auto found = scopes[outer].find(name); found != scopes[outer].end()) {
        error(at, "'" + name + "' is already declared outside this block; a new '" + name +
                      "' here would hide it until the block ends and leave it unchanged. To " +
                      "update it, assign it (" + name + " = ..., which needs a 'var'); for a " +
                      "new value, pick another name");
        if (found->second.at.isValid())
          diag.note(found->second.at, "'" + name + "' declared here");
        return false;
      }
    scopes.back()[name] = Binding{std::move(val), isMutable, false, at};
    return true;
  }
  struct ScopeGuard {
    Generator &g;
    explicit ScopeGuard(Generator &g) : g(g) { g.scopes.emplace_back(); }
    ~ScopeGuard() { g.scopes.pop_back(); }
  };
  /// `f()` with only the outer `depth` scopes visible (a continuation's), the
  /// inner ones set aside meanwhile (their bindings keep their addresses).
  template <typename F> auto withScopesUpTo(size_t depth, F &&f) {
    std::vector<std::map<std::string, Binding>> inner(
        std::make_move_iterator(scopes.begin() + depth), std::make_move_iterator(scopes.end()));
    scopes.resize(depth);
    auto result = f();
    std::move(inner.begin(), inner.end(), std::back_inserter(scopes));
    return result;
  }

  //===--- declarations -----------------------------------------------------===//
  bool genKernel(const KernelDecl &kernel, const GenOptions &options, KernelInfo &info);
  bool bindParams(const KernelDecl &kernel, const GenOptions &options, KernelInfo &info);
  bool bindArgs(const KernelDecl &kernel, mlir::Block &entry);
  /// Checks the grid rule and records each dimension's text in `info.grid`.
  bool genGridRule(const KernelDecl &kernel, const GenOptions &options, KernelInfo &info,
                   mlir::func::FuncOp kernelFunc);
  /// A dimension as launchers evaluate it: fully parenthesized, params
  /// substituted, `cast<T>` with its type; an error (none) for a float.
  std::optional<std::string> gridText(const Expr &e);

  //===--- statements -------------------------------------------------------===//
  bool genBlock(const Block &block);
  /// Statements of a block in order. After a statement that may have exited
  /// (`return` in a kernel, `break`, `continue`), the rest goes to
  /// genUnlessExited.
  bool genStatements(llvm::ArrayRef<StmtPtr> stmts);
  /// A loop's body: `continue` gets a fresh flag each trip; with `tripGuards`
  /// (an scf.for's `break` and `return` flags) the trip runs only while they are
  /// unset.
  bool genLoopBody(const Block &body, llvm::ArrayRef<Binding *> tripGuards = {});
  /// The flags that end a loop with `body` (declared before calling).
  llvm::SmallVector<Binding *, 2> loopStops(const Block &body);
  /// `return;` in a kernel: ends the program.
  bool genKernelReturn(const ReturnStmt &ret);
  /// `break;` or `continue;`: ends the loop or this trip of it.
  bool genLoopExit(const Stmt &stmt);
  /// Sets exit flag `name` (when one is declared: an enclosing `if` goes on).
  void setExitFlag(llvm::StringRef name, SMLoc at);
  /// Declares exit flag `name`, false, in the current scope.
  bool declareExitFlag(llvm::StringRef name, SMLoc at);
  /// `rest` under `if !(flags...)`, carrying the variables it assigns.
  bool genUnlessExited(llvm::ArrayRef<StmtPtr> rest, llvm::ArrayRef<Binding *> flags);
  bool genStmt(const Stmt &stmt);
  /// `target = v;` for a `var` (checked: declared, mutable, assignable type).
  bool assignTo(const NameLoc &target, const TValue &v, SMLoc valueLoc);
  bool genFor(const ForStmt &stmt);
  /// static_range: the body once per trip, the variable a constant each time.
  bool genUnrolledFor(const ForStmt &stmt, const TValue &start, const TValue &end,
                      const TValue &step);
  /// The most copies of its body a static_range loop may make, and the most
  /// all of a kernel's static_range loops may make together (nested loops
  /// multiply).
  static constexpr int64_t kMaxUnrolledTrips = 1024;
  static constexpr int64_t kMaxUnrolledCopies = 4096;
  bool genWhile(const WhileStmt &stmt);
  bool genIf(const IfStmt &stmt);
  /// A helper's `if` with a `return` in a branch: each path (a branch, then
  /// `rest` where the branch does not return) ends the helper, and the `if`
  /// yields what the paths return.
  bool genReturningIf(const IfStmt &stmt, llvm::ArrayRef<StmtPtr> rest);
  /// `stmts` on one path through a returning `if`, then, if they do not
  /// return, the innermost continuation. Names they declare are forgotten
  /// after, so that the next path declares them again.
  bool genPathRest(llvm::ArrayRef<StmtPtr> stmts);
  /// What a helper returned, one value per result (none for `return;` or for
  /// falling off the end).
  static std::vector<TValue> returnedValues(const std::optional<TValue> &result) {
    if (!result || (!result->value && result->type.kind != SType::Tuple))
      return {};
    if (result->type.kind == SType::Tuple)
      return result->elements;
    return {*result};
  }
  /// The condition of an `if`: a scalar bool, else an error (with a hint for tiles).
  MaybeValue genIfCondition(const Expr &cond);
  /// The mutable outer bindings a loop or `if` body assigns (in name order)
  /// and their values before it: what its region carries in and out.
  struct Carry {
    std::vector<Binding *> vars;
    std::vector<TValue> before;
    /// The variables' current values: the region's inits, or its yields.
    llvm::SmallVector<Value> values() const {
      llvm::SmallVector<Value> out;
      for (Binding *b : vars)
        out.push_back(b->val.value);
      return out;
    }
    /// Points each variable, typed as before the region, at `values[i]` (block
    /// arguments inside the region, the op's results after it).
    void bind(mlir::ValueRange values) {
      for (auto [b, old, v] : llvm::zip_equal(vars, before, values)) {
        b->val = old;
        b->val.value = v;
      }
    }
    /// Gives every variable its value from before the region back.
    void restore() {
      for (auto [b, old] : llvm::zip_equal(vars, before))
        b->val = old;
    }
  };
  Carry carried(std::initializer_list<llvm::ArrayRef<StmtPtr>> ranges);
  /// One trip of a rotated loop: given the loop's own values (after the carried
  /// variables), generates the body and returns those values for the next trip
  /// and whether to take it.
  using Trip = llvm::function_ref<std::optional<std::pair<llvm::SmallVector<Value>, Value>>(
      mlir::ValueRange own)>;
  /// An scf.while carrying `carry` and the loop's own values `ownInits`: `first`
  /// decides the first trip, each trip decides the next, and a set flag in
  /// `stops` (break, return) ends the loop.
  bool genRotatedWhile(mlir::Location l, Carry &carry, llvm::ArrayRef<Binding *> stops,
                       mlir::ValueRange ownInits, Value first, Trip trip);

  //===--- expressions ------------------------------------------------------===//
  MaybeValue genExpr(const Expr &e);
  /// genExpr, then insists on a scalar or tile.
  MaybeValue genValue(const Expr &e, const char *what);
  MaybeValue genName(const NameExpr &e);
  MaybeValue genUnary(const UnaryExpr &e);
  /// Integer `x / y` or `x % y` of `dt`, defined for every divisor.
  Value integerDivide(BinOp op, Value x, Value y, DType dt, const Shape &shape, SMLoc where);
  /// `x << amount` or `x >> amount` (arithmetic) with every amount defined.
  Value shiftBy(BinOp op, Value x, Value amount, DType dt, const Shape &shape, SMLoc where);
  MaybeValue genBinary(const BinaryExpr &e);
  MaybeValue binary(BinOp op, const TValue &l, const TValue &r, SMLoc at);
  MaybeValue genIndex(const IndexExpr &e);
  /// numpy's basic indexing of a tile with constants: `t[:, None]`, `t[0]`,
  /// `t[:, 2:6]`, `t[::-1]`.
  MaybeValue genTileIndex(const IndexExpr &e, const TValue &tile);
  MaybeValue genMethod(const MethodExpr &e);
  /// A list or tuple (`kind`) of the values of `elements`.
  MaybeValue genElements(const std::vector<ExprPtr> &elements, SType::Kind kind,
                         const char *what);
  MaybeValue genCall(const CallExpr &e);
  MaybeValue genHelperCall(const CallExpr &e, const FnDecl &fn);
  /// Calls `fn` with `args` (already generated), specializing it for their types.
  /// `how` names a call the user did not write, for the note on an error inside
  /// `fn` ("which reduce applies to whole tiles"); empty for a call in the source.
  MaybeValue callHelper(const FnDecl &fn, std::vector<TValue> args,
                        llvm::ArrayRef<SMLoc> argLocs, SMLoc at, llvm::StringRef how = {});
  MaybeValue genBuiltin(const CallExpr &e);

  // Builtin families.
  MaybeValue genLoad(const CallExpr &e);
  MaybeValue genStore(const CallExpr &e);
  MaybeValue genAtomic(const CallExpr &e);
  /// Argument `arg` of `e`, converted to a value `view` can hold.
  MaybeValue genStoredValue(const CallExpr &e, size_t arg, const TValue &view, const char *what);
  /// The `mask=` of a load or store through `view`, converted to the view's shape;
  /// null when absent. False after reporting an error.
  bool maskArg(const CallExpr &e, const TValue &view, Value &mask);
  /// `view` as a gather view: a block view `x.tile([B0, ...], [o0, ...])` becomes
  /// `x[o0 + arange(0, B0)[:, None, ...], ...]`, the same elements, so that it can take
  /// what only gather views lower (a mask, a tile `other`, atomics).
  TValue gatherForm(const TValue &view, mlir::Location l);
  /// cast<T>(x) converts (§8.2); bitcast<T>(x) keeps the bits (types as wide).
  MaybeValue genCast(const CallExpr &e);
  MaybeValue genUnaryMath(const CallExpr &e);
  /// pow(x, y), atan2(y, x), copysign, hypot, clamp(x, lo, hi) and umulhi:
  /// operands broadcast and promote (integers to f32 for the float functions).
  MaybeValue genFloatMath(const CallExpr &e);
  /// The value of a builtin's one positional argument (elementwise functions).
  MaybeValue soleOperand(const CallExpr &e);
  /// hypot(x, y) of two float values of `dt` and `shape`, from sqrt.
  Value hypot(Value x, Value y, DType dt, const Shape &shape, SMLoc at);
  /// isnan, isinf, isfinite: i1 per element (integers are always finite).
  MaybeValue genClassify(const CallExpr &e);
  /// A reduction's operand (bools widened to i32; flattened when no axis is
  /// given), its axis and keepdims.
  struct ReductionArgs {
    TValue src;
    int64_t axis = 0;
    bool keepdims = false;
    bool withIndices = false; // max/min(..., return_indices = true)
  };
  /// The index of the first maximum (or minimum) along `r.axis`.
  TValue argReduce(const ReductionArgs &r, bool isMax, SMLoc at);
  std::optional<ReductionArgs> reductionArgs(const CallExpr &e);
  TValue reduceAlong(const TValue &src, ReduceKind kind, int64_t axis, bool keepdims,
                     mlir::Location l);
  MaybeValue genReduce(const CallExpr &e, ReduceKind kind);
  /// argmax / argmin: the i32 index of the first largest / smallest element.
  MaybeValue genArgReduce(const CallExpr &e, bool isMax);
  /// rand, randint, randn: Philox-4x32-10 counter-based random numbers.
  MaybeValue genRandom(const CallExpr &e);
  MaybeValue genMinMax(const CallExpr &e, bool isMax);
  /// The elementwise maximum (or minimum) of two values of `dt`: NaN if either
  /// is, and on fp8 one of the operands, bit for bit.
  Value extremeOf(bool isMax, Value x, Value y, DType dt, const Shape &shape, mlir::Location l);
  MaybeValue genScan(const CallExpr &e);
  MaybeValue genDot(const CallExpr &e);
  MaybeValue genShapeOp(const CallExpr &e);
  MaybeValue genGather(const CallExpr &e);
  MaybeValue genSort(const CallExpr &e);
  /// reduce / associative_scan with a combine function (a helper `fn`).
  MaybeValue genCombine(const CallExpr &e);
  /// join, interleave and cat: two tiles side by side (Triton's tl.join,
  /// tl.interleave; torch.cat), built from selects and gathers.
  MaybeValue genJoin(const CallExpr &e);
  /// split: a tile whose last dimension is 2 as a tuple of its two halves.
  MaybeValue genSplit(const CallExpr &e);
  /// print("prefix" [, value]): a line per element, with the program's ids.
  MaybeValue genPrint(const CallExpr &e);
  /// static_assert(cond [, "message"]): a compile-time check (of params).
  MaybeValue genStaticAssert(const CallExpr &e);
  /// device_assert(cond [, "message"]): a run-time check of a bool or every
  /// element of a bool tile (kiln.assert).
  MaybeValue genDeviceAssert(const CallExpr &e);
  /// cdiv(a, b) of checked integer operands (see GenCalls.cpp).
  MaybeValue genCdiv(const TValue &a, const TValue &b, SMLoc at);
  /// swizzle2d(i, j, ni, nj, g): Triton's grouped ordering of a row-major
  /// ni x nj grid, as a tuple.
  MaybeValue genSwizzle2d(const CallExpr &e);
  /// The condition of static_assert or device_assert, after checking the call.
  MaybeValue assertCondition(const CallExpr &e);
  /// The program's three ids, as print and device_assert report them.
  llvm::SmallVector<Value, 3> programIds(mlir::Location l);
  /// flip (a gather of reversed positions), ravel (a reshape to rank 1) and
  /// histogram (counts of one-hot comparisons).
  MaybeValue genRearrange(const CallExpr &e);
  /// The `name = true|false` keyword of `e` (`false` when absent); nullopt after
  /// reporting a value that is not a constant bool.
  std::optional<bool> boolKeyword(const CallExpr &e, llvm::StringRef name);
  /// An i32 tile of `shape` holding each element's position along `axis`.
  Value axisPositions(const Shape &shape, int64_t axis, mlir::Location l);
  /// `tile` (of `shape`) reversed along `axis`: a gather of mirrored positions.
  Value flipAlong(Value tile, const Shape &shape, int64_t axis, mlir::Location l);
  /// The only element of a one-element tile of `dt`, as a scalar.
  Value onlyElement(Value tile, DType dt, mlir::Location l);

  /// fp8 is a storage format: loads, stores, casts, comparisons, `where`,
  /// data movement and `dot` take it; arithmetic would round after every step,
  /// so it asks for a wider type instead.
  bool rejectF8(DType dt, SMLoc at, const llvm::Twine &what) {
    if (!isF8(dt))
      return false;
    error(at, what + " is not defined on " + dtypeName(dt) +
                  " (fp8 is a storage type); cast<f16>(...) or cast<f32>(...) first");
    return true;
  }

  /// Errors when a weak constant would change value in dtype `dt`: an integer
  /// (`x_i8 + 1000` must not silently become `x + (-24)`), or a float beyond the
  /// range of a float `dt` or that rounds to zero there (`x_f16 * 1e5` must not
  /// become `x * inf`). With `asBits` (the operand of `&`, `|`, `^`) a constant
  /// is a bit pattern: one that fits the width unsigned is taken
  /// (`x_i32 ^ 0x80000000` flips the sign bit).
  bool constantFits(const TValue &v, DType dt, SMLoc at, bool asBits = false) {
    if (!v.cst || !v.type.weak || dt == DType::I1)
      return true;
    auto value = [&] {
      return v.cst->isFloat     ? shortestDouble(v.cst->f)
             : v.cst->isUnsigned ? std::to_string(uint64_t(v.cst->i))
                                 : std::to_string(v.cst->i);
    };
    if (isFloat(dt)) {
      std::string loss = floatConstantLoss(v.cst->asDouble(), dt);
      if (!loss.empty())
        error(at, "constant " + value() + " " + loss);
      return loss.empty();
    }
    if (v.cst->isFloat)
      return true;
    // As bits: any value of the width, unsigned (0x80000000) or signed (~0xF).
    unsigned width = dtypeBits(dt);
    int64_t i = v.cst->i;
    bool fitsUnsigned = (i >= 0 || v.cst->isUnsigned) && (width == 64 || uint64_t(i) >> width == 0);
    bool fitsSigned = !v.cst->isUnsigned && (width == 64 || (i >= -(int64_t(1) << (width - 1)) &&
                                                             i < (int64_t(1) << (width - 1))));
    if (asBits && (fitsUnsigned || fitsSigned))
      return true;
    // The same bits may mean another number: -1 in u64, 2^63 in i64.
    bool signChanges = v.cst->i < 0 && v.cst->isUnsigned != isUnsigned(dt);
    if (convertConst(*v.cst, dt).i == v.cst->i && !signChanges)
      return true;
    error(at, "constant " + value() + " does not fit in " + dtypeName(dt));
    return false;
  }
  /// constantFits for the two operands of an operation at dtype `dt`. Two weak
  /// operands give a weak result, which keeps its exact value until it meets
  /// a typed one: their float range is checked there.
  bool operandsFit(const TValue &a, const TValue &b, DType dt, SMLoc at, bool asBits = false) {
    if (a.type.weak && b.type.weak && isFloat(dt))
      return true;
    return constantFits(a, dt, at, asBits) && constantFits(b, dt, at, asBits);
  }
  /// Errors when a broadcast result exceeds the tile size limit.
  bool checkTileSize(const Shape &shape, SMLoc at) {
    int64_t total = 1;
    for (int64_t d : shape) {
      total *= d;
      if (total > kMaxTileElements) {
        error(at, "tile of shape " + shapeStr(shape) + " exceeds the limit of " +
                      llvm::Twine(kMaxTileElements) + " elements");
        return false;
      }
    }
    return true;
  }

  // Argument helpers.
  bool checkArity(const CallExpr &e, size_t min, size_t max,
                  llvm::ArrayRef<llvm::StringRef> keywords = {});
  /// `e` as a compile-time integer; else an error "<what> must be a compile-time
  /// integer constant", followed by `hint` when one is given.
  std::optional<int64_t> constInt(const Expr &e, const char *what, const char *hint = "");
  std::optional<Shape> constShape(const Expr &e, const char *what);
  std::optional<int64_t> axisArg(const Expr &e, int64_t rank, bool allowEnd = false,
                                 const char *what = "axis");
  /// The axis of `e` given as positional argument `position` or `axis =`;
  /// left empty when absent. False after reporting an error (given twice, or
  /// out of range).
  bool optionalAxis(const CallExpr &e, size_t position, int64_t rank,
                    std::optional<int64_t> &axis);
  std::optional<Shape> tileShape(const std::vector<ExprPtr> &dims, SMLoc at);

  mlir::MLIRContext &ctx;
  const Module &module;
  DiagEngine &diag;
  mlir::OpBuilder builder;
  mlir::ModuleOp moduleOp;
  std::vector<std::map<std::string, Binding>> scopes;
  bool failed = false;
  bool inGridRule = false;
  Value gridProcessors; // num_processors() while a grid rule is checked
  bool inHelper = false;
  unsigned loopDepth = 0; // loops around the statement being generated
  std::optional<TValue> helperResult; // set by `return` in a helper
  unsigned helperPaths = 0; // returning ifs around the statement (a return may end a path)
  /// Where a helper's path goes when it falls out of a branch of a returning
  /// `if` (innermost last): the statements after that `if`, in the scopes it
  /// stood in (the first `depth` of them).
  struct Continuation {
    llvm::ArrayRef<StmtPtr> stmts;
    size_t depth;
  };
  std::vector<Continuation> continuations;
  unsigned helperPathCount = 0; // paths generated in the helper so far
  static constexpr unsigned kMaxHelperPaths = 4096;
  std::map<std::string, mlir::func::FuncOp> specializations;
  llvm::StringSet<> activeHelpers; // helpers being generated, to catch recursion
  unsigned nesting = 0;             // levels of Nesting now open
  unsigned notedCalls = 0;          // helper calls an error's notes have named
  static constexpr unsigned kMaxNotedCalls = 4;
  int64_t unrolledCopies = 0;       // static_range bodies generated in this kernel
  std::map<std::string, Const> paramValues;
  const KernelDecl *currentKernel = nullptr;
  bool currentKernelArgsBound = false; // params are bound first, without the args
  bool paramsBound = false; // the kernel's params took their values (-D ones too)
};

} // namespace kiln::gen
