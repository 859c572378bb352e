//===- MLIRGen.cpp - .kiln AST to the kiln dialect ------------------------===//
//
// One walk over the AST per kernel (and per helper specialization). At each node
// Sema's rules decide the type, the implicit conversions and whether the node is
// legal; only then is IR emitted, so every error carries a .kiln location.
//
//===----------------------------------------------------------------------===//

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
#include <limits>
#include <map>
#include <memory>

using namespace kiln;
using llvm::SMLoc;
using mlir::Value;

std::string kiln::gridFunctionName(llvm::StringRef kernel) {
  return (kernel + "__grid").str();
}

namespace {

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
};

/// "an i32", "an f16", "a bf16", "a tensor<...>": the article as the name is spoken.
std::string withArticle(const std::string &noun) {
  bool vowelSound = !noun.empty() && llvm::StringRef("aeiouf").contains(noun[0]);
  return (vowelSound ? "an " : "a ") + noun;
}

/// The variables that `return` (in a kernel), `break` and `continue` set: each
/// is named after its keyword, so no user name can clash. Statements after one
/// that may have set a flag run only where it did not.
constexpr llvm::StringLiteral kReturnedVar = "return", kBreakVar = "break",
                              kContinueVar = "continue";

/// The flag `kind` (Return, Break or Continue) sets.
llvm::StringLiteral exitFlag(Stmt::Kind kind) {
  return kind == Stmt::Return ? kReturnedVar : kind == Stmt::Break ? kBreakVar : kContinueVar;
}

/// Collects the names assigned anywhere in `stmts` (exits assign their flags).
void collectAssigned(llvm::ArrayRef<StmtPtr> stmts, llvm::StringSet<> &names) {
  for (auto &stmt : stmts) {
    if (stmt->kind == Stmt::Return || stmt->kind == Stmt::Break ||
        stmt->kind == Stmt::Continue)
      names.insert(exitFlag(stmt->kind));
    if (auto *a = dynamic_cast<const AssignStmt *>(stmt.get())) {
      if (a->unpack.empty())
        names.insert(a->name);
      for (const NameLoc &target : a->unpack)
        names.insert(target.name);
    }
    else if (auto *f = dynamic_cast<const ForStmt *>(stmt.get()))
      collectAssigned(f->body, names);
    else if (auto *w = dynamic_cast<const WhileStmt *>(stmt.get()))
      collectAssigned(w->body, names);
    else if (auto *i = dynamic_cast<const IfStmt *>(stmt.get())) {
      collectAssigned(i->thenBody, names);
      collectAssigned(i->elseBody, names);
    }
  }
}

/// Whether `stmts` hold an exit of `kind` (Return, Break or Continue) at their
/// own level: directly or in `if` branches, and with `intoLoops` also in nested
/// loops (where a `return` still ends the program).
bool exits(llvm::ArrayRef<StmtPtr> stmts, Stmt::Kind kind, bool intoLoops = false) {
  return llvm::any_of(stmts, [&](const StmtPtr &s) {
    if (s->kind == kind)
      return true;
    if (auto *i = dynamic_cast<const IfStmt *>(s.get()))
      return exits(i->thenBody, kind, intoLoops) || exits(i->elseBody, kind, intoLoops);
    if (auto *f = dynamic_cast<const ForStmt *>(s.get()); f && intoLoops)
      return exits(f->body, kind, true);
    if (auto *w = dynamic_cast<const WhileStmt *>(s.get()); w && intoLoops)
      return exits(w->body, kind, true);
    return false;
  });
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
  mlir::TypedAttr constAttr(const Const &c, DType dt) {
    Const v = convertConst(c, dt);
    mlir::Type t = mlirType(dt);
    if (isFloat(dt))
      return mlir::FloatAttr::get(t, v.f);
    return mlir::IntegerAttr::get(t, v.i);
  }
  TValue constant(const Const &c, DType dt, bool weak, mlir::Location l) {
    TValue v;
    v.type = SType::scalar(dt, weak);
    v.cst = convertConst(c, dt);
    v.value = builder.create<mlir::arith::ConstantOp>(l, constAttr(c, dt));
    return v;
  }
  Value castValue(Value v, DType from, DType to, mlir::Location l);
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
  bool declare(SMLoc at, const std::string &name, TValue val, bool isMutable) {
    if (isBuiltin(name)) {
      error(at, "'" + name + "' is a builtin and cannot be redefined");
      return false;
    }
    if (scopes.back().count(name)) {
      error(at, "redefinition of '" + name + "' in the same scope");
      return false;
    }
    scopes.back()[name] = Binding{std::move(val), isMutable};
    return true;
  }
  struct ScopeGuard {
    Generator &g;
    explicit ScopeGuard(Generator &g) : g(g) { g.scopes.emplace_back(); }
    ~ScopeGuard() { g.scopes.pop_back(); }
  };

  //===--- declarations -----------------------------------------------------===//
  bool genKernel(const KernelDecl &kernel, const GenOptions &options, KernelInfo &info);
  bool bindParams(const KernelDecl &kernel, const GenOptions &options, KernelInfo &info);
  bool bindArgs(const KernelDecl &kernel, mlir::Block &entry);
  bool genGridFunction(const KernelDecl &kernel, const GenOptions &options,
                       KernelInfo &info, mlir::func::FuncOp kernelFunc);
  std::string gridText(const Expr &e);

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
  /// The most copies of its body a static_range loop may make.
  static constexpr int64_t kMaxUnrolledTrips = 1024;
  bool genWhile(const WhileStmt &stmt);
  bool genIf(const IfStmt &stmt);
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
  /// t[:, None]: `tile` with dimensions of size 1 added where the indices say None.
  MaybeValue genNewAxes(const IndexExpr &e, const TValue &tile);
  MaybeValue genMethod(const MethodExpr &e);
  /// A list or tuple (`kind`) of the values of `elements`.
  MaybeValue genElements(const std::vector<ExprPtr> &elements, SType::Kind kind,
                         const char *what);
  MaybeValue genCall(const CallExpr &e);
  MaybeValue genHelperCall(const CallExpr &e, const FnDecl &fn);
  /// Calls `fn` with `args` (already generated), specializing it for their types.
  MaybeValue callHelper(const FnDecl &fn, std::vector<TValue> args,
                        llvm::ArrayRef<SMLoc> argLocs, SMLoc at);
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

  /// Errors when a weak integer constant would change value in dtype `dt`
  /// (`x_i8 + 1000` must not silently become `x + (-24)`). With `asBits` (the
  /// operand of `&`, `|`, `^`) a constant is a bit pattern: one that fits the
  /// width unsigned is taken (`x_i32 ^ 0x80000000` flips the sign bit).
  bool constantFits(const TValue &v, DType dt, SMLoc at, bool asBits = false) {
    if (!v.cst || !v.type.weak || isFloat(dt) || v.cst->isFloat || dt == DType::I1)
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
    std::string value = v.cst->isUnsigned ? std::to_string(uint64_t(v.cst->i))
                                          : std::to_string(v.cst->i);
    error(at, "constant " + value + " does not fit in " + dtypeName(dt));
    return false;
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
  std::optional<int64_t> constInt(const Expr &e, const char *what);
  std::optional<Shape> constShape(const Expr &e, const char *what);
  std::optional<int64_t> axisArg(const Expr &e, int64_t rank, bool allowEnd = false);
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
  Value gridProcessors; // the grid function's num_processors() argument
  bool inHelper = false;
  unsigned loopDepth = 0; // loops around the statement being generated
  std::optional<TValue> helperResult; // set by `return` in a helper
  std::map<std::string, mlir::func::FuncOp> specializations;
  llvm::StringSet<> activeHelpers; // helpers being generated, to catch recursion
  std::map<std::string, Const> paramValues;
  const KernelDecl *currentKernel = nullptr;
  bool currentKernelArgsBound = false; // params are bound first, without the args
};

} // namespace

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

Value Generator::castValue(Value v, DType from, DType to, mlir::Location l) {
  if (from == to)
    return v;
  mlir::Type target = mlirType(to);
  if (auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType()))
    target = tensor.clone(target);
  auto zeroLike = [&](DType dt) -> Value {
    mlir::TypedAttr zero = constAttr(Const::ofInt(0), dt);
    if (auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(v.getType()))
      return builder.create<mlir::arith::ConstantOp>(
          l, mlir::SplatElementsAttr::get(tensor, mlir::cast<mlir::Attribute>(zero)));
    return builder.create<mlir::arith::ConstantOp>(l, zero);
  };
  if (to == DType::I1) {
    if (isFloat(from))
      return builder.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::UNE, v,
                                                 zeroLike(from));
    return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::ne, v,
                                               zeroLike(from));
  }
  // fp8 converts to and from integers through f32 (no target converts directly).
  if ((isF8(from) && !isFloat(to)) || (isF8(to) && !isFloat(from)))
    return castValue(castValue(v, from, DType::F32, l), DType::F32, to, l);
  if (isFloat(from) && isFloat(to)) {
    // f16 <-> bf16 and e4m3 <-> e5m2 go through f32.
    if (dtypeBits(from) == dtypeBits(to)) {
      Value wide = castValue(v, from, DType::F32, l);
      return castValue(wide, DType::F32, to, l);
    }
    if (dtypeBits(to) > dtypeBits(from))
      return builder.create<mlir::arith::ExtFOp>(l, target, v);
    return builder.create<mlir::arith::TruncFOp>(l, target, v);
  }
  // Bools and unsigned integers widen with zeros, signed integers with their sign.
  bool zeroExtends = from == DType::I1 || isUnsigned(from);
  if (!isFloat(from) && !isFloat(to)) {
    if (dtypeBits(to) == dtypeBits(from)) // i32 <-> u32: the same bits
      return v;
    if (dtypeBits(to) > dtypeBits(from)) {
      if (zeroExtends)
        return builder.create<mlir::arith::ExtUIOp>(l, target, v);
      return builder.create<mlir::arith::ExtSIOp>(l, target, v);
    }
    return builder.create<mlir::arith::TruncIOp>(l, target, v);
  }
  if (isFloat(to)) {
    if (zeroExtends)
      return builder.create<mlir::arith::UIToFPOp>(l, target, v);
    return builder.create<mlir::arith::SIToFPOp>(l, target, v);
  }
  if (isUnsigned(to))
    return builder.create<mlir::arith::FPToUIOp>(l, target, v);
  return builder.create<mlir::arith::FPToSIOp>(l, target, v);
}

Value Generator::broadcastValue(Value v, const Shape &from, const Shape &to, DType dt,
                                mlir::Location l) {
  if (from == to)
    return v;
  auto target = mlir::RankedTensorType::get(to, mlirType(dt));
  if (from.empty())
    return builder.create<SplatOp>(l, target, v);
  if (from.size() < to.size()) {
    Shape padded(to.size() - from.size(), 1);
    padded.append(from.begin(), from.end());
    v = builder.create<ReshapeOp>(l, mlir::RankedTensorType::get(padded, mlirType(dt)), v);
    if (padded == to)
      return v;
  }
  return builder.create<BroadcastOp>(l, target, v);
}

TValue Generator::convert(const TValue &v, DType dt, const Shape &shape, SMLoc at) {
  mlir::Location l = loc(at);
  if (v.cst && shape.empty())
    return constant(*v.cst, dt, v.type.weak, l);
  if (v.cst) {
    // A constant tile is one splat attribute, not a scalar plus a splat op.
    TValue out;
    out.type = SType::tile(dt, shape);
    out.cst = convertConst(*v.cst, dt);
    auto type = mlir::RankedTensorType::get(shape, mlirType(dt));
    out.value = builder.create<mlir::arith::ConstantOp>(
        l, mlir::SplatElementsAttr::get(type, mlir::Attribute(constAttr(*v.cst, dt))));
    return out;
  }
  TValue out;
  out.type = SType::value(dt, shape);
  Value cast = castValue(v.value, v.type.dtype, dt, l);
  out.value = broadcastValue(cast, v.type.shape, shape, dt, l);
  if (v.cst && !shape.empty())
    out.cst = convertConst(*v.cst, dt);
  return out;
}

//===----------------------------------------------------------------------===//
// Module and kernels
//===----------------------------------------------------------------------===//

mlir::OwningOpRef<mlir::ModuleOp> Generator::run(const GenOptions &options,
                                                 std::vector<KernelInfo> &infos) {
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(builder.getUnknownLoc());
  moduleOp = *owned;

  std::vector<const KernelDecl *> selected;
  for (auto &k : module.kernels)
    if (options.kernel.empty() || k->name == options.kernel)
      selected.push_back(k.get());
  if (selected.empty()) {
    std::string names;
    for (auto &k : module.kernels)
      names += (names.empty() ? "" : ", ") + k->name;
    diag.fileError((options.kernel.empty() ? "no kernel in the file"
                                           : "no kernel named '" + options.kernel + "'") +
                   (names.empty() ? "" : " (kernels: " + names + ")"));
    return nullptr;
  }
  for (auto &fn : module.functions)
    if (isBuiltin(fn->name)) {
      error(fn->loc, "'" + fn->name + "' is a builtin and cannot be redefined");
      return nullptr;
    }
  for (auto &[name, value] : options.defines) {
    bool known = llvm::any_of(selected, [&](const KernelDecl *k) {
      return llvm::any_of(k->params, [&](const ParamDecl &p) { return p.name == name; });
    });
    if (!known) {
      diag.fileError("-D " + name + ": no selected kernel has a param named '" + name + "'");
      return nullptr;
    }
  }
  for (const KernelDecl *kernel : selected) {
    KernelInfo info;
    if (!genKernel(*kernel, options, info))
      return nullptr;
    infos.push_back(std::move(info));
  }
  return owned;
}

/// Parses a param value as -D spells it; returns why it is not a `dtype`, or "".
static std::string parseParamText(llvm::StringRef text, DType dtype, Const &out) {
  if (dtype == DType::I1 && (text == "true" || text == "false")) {
    out = Const::ofInt(text == "true");
    return "";
  }
  if (isFloat(dtype)) {
    double d;
    if (text.getAsDouble(d))
      return "not a number";
    out = Const::ofFloat(d);
    return "";
  }
  long long i;
  if (text.getAsInteger(10, i) || (dtype == DType::I32 && (i < INT32_MIN || i > INT32_MAX)) ||
      (dtype == DType::I1 && i != 0 && i != 1))
    return std::string("not a valid ") + dtypeName(dtype);
  out = Const::ofInt(i);
  return "";
}

bool Generator::bindParams(const KernelDecl &kernel, const GenOptions &options,
                           KernelInfo &info) {
  for (const ParamDecl &param : kernel.params) {
    if (paramValues.count(param.name)) {
      error(param.loc, "redefinition of param '" + param.name + "'");
      return false;
    }
    if (lookup(param.name) || isBuiltin(param.name)) {
      error(param.loc, "param '" + param.name + "' shadows another name");
      return false;
    }
    if (param.dtype != DType::I1 && param.dtype != DType::I32 &&
        param.dtype != DType::I64 && param.dtype != DType::F32) {
      error(param.loc, "params must be i1, i32, i64 or f32, not " +
                           llvm::Twine(dtypeName(param.dtype)));
      return false;
    }
    for (const std::string &text : param.tuneValues) {
      Const ignored;
      if (std::string why = parseParamText(text, param.dtype, ignored); !why.empty()) {
        error(param.tuneLoc, "tune value " + text + " of param '" + param.name + "': " + why);
        return false;
      }
    }
    Const value;
    auto define = options.defines.find(param.name);
    if (define != options.defines.end()) {
      llvm::StringRef text = define->second;
      if (std::string why = parseParamText(text, param.dtype, value); !why.empty()) {
        error(param.loc, "-D " + param.name + "=" + text + ": " + why);
        return false;
      }
    } else if (param.defaultValue) {
      MaybeValue v = genExpr(*param.defaultValue);
      if (!v)
        return false;
      if (!v->cst || v->type.kind != SType::Scalar) {
        error(param.defaultValue->loc, "default of param '" + param.name +
                                           "' must be a compile-time constant");
        return false;
      }
      if (isFloat(v->type.dtype) && !isFloat(param.dtype)) {
        error(param.defaultValue->loc, "default of param '" + param.name + "' is " +
                                           dtypeName(v->type.dtype) + ", expected " +
                                           dtypeName(param.dtype));
        return false;
      }
      value = *v->cst;
    } else {
      error(param.loc, "param '" + param.name + "' has no default; give it with -D " +
                           param.name + "=VALUE");
      return false;
    }
    value = convertConst(value, param.dtype);
    paramValues[param.name] = value;
    info.params.push_back({param.name, param.dtype, value.asDouble(), param.tuneValues});
    declare(param.loc, param.name, constant(value, param.dtype, /*weak=*/true,
                                            loc(param.loc)),
            false);
  }
  return true;
}

bool Generator::bindArgs(const KernelDecl &kernel, mlir::Block &entry) {
  for (auto [i, arg] : llvm::enumerate(kernel.args)) {
    Value v = entry.getArgument(i);
    TValue tv;
    tv.value = v;
    if (arg.isTensor) {
      tv.type.kind = SType::Tensor;
      tv.type.dtype = arg.dtype;
      tv.type.shape.assign(arg.dims.size(), -1);
      tv.tensorName = arg.name;
    } else {
      tv.type = SType::scalar(arg.dtype);
    }
    if (!declare(arg.loc, arg.name, tv, false))
      return false;
  }
  // Size names: the first tensor that mentions a name defines it.
  for (auto [i, arg] : llvm::enumerate(kernel.args)) {
    for (auto [d, dim] : llvm::enumerate(arg.dims)) {
      if (dim.name.empty())
        continue;
      // A param named as a size makes a fixed size (checked at launch).
      if (auto p = paramValues.find(dim.name); p != paramValues.end()) {
        if (p->second.isFloat || p->second.i <= 0 || p->second.i >= (int64_t(1) << 31)) {
          error(dim.loc, "param '" + dim.name + "' used as a size must be a positive i32 (it is " +
                             (p->second.isFloat ? std::to_string(p->second.f)
                                                : std::to_string(p->second.i)) +
                             ")");
          return false;
        }
        continue;
      }
      if (Binding *b = lookup(dim.name)) {
        if (b->val.type.kind == SType::Scalar && !b->val.cst && b->val.tensorName == "#dim")
          continue; // already bound by an earlier tensor
        error(dim.loc, "size name '" + dim.name + "' clashes with another name");
        return false;
      }
      mlir::Location l = loc(dim.loc);
      Value idx = builder.create<mlir::arith::ConstantIndexOp>(l, d);
      Value size = builder.create<mlir::memref::DimOp>(l, entry.getArgument(i), idx);
      TValue tv;
      tv.type = SType::scalar(DType::I32);
      tv.value = builder.create<mlir::arith::IndexCastOp>(l, builder.getI32Type(), size);
      tv.tensorName = "#dim";
      if (!declare(dim.loc, dim.name, tv, false))
        return false;
    }
  }
  return true;
}

bool Generator::genKernel(const KernelDecl &kernel, const GenOptions &options,
                          KernelInfo &info) {
  info.name = kernel.name;
  llvm::SmallVector<mlir::Type> argTypes;
  for (const ArgDecl &arg : kernel.args) {
    argTypes.push_back(arg.isTensor ? mlir::Type(memrefType(arg)) : mlirType(arg.dtype));
    ArgInfo ai;
    ai.name = arg.name;
    ai.dtype = arg.dtype;
    ai.isTensor = arg.isTensor;
    for (const DimSpec &dim : arg.dims)
      ai.dims.push_back(dim.name.empty() ? std::to_string(dim.fixed) : dim.name);
    info.args.push_back(std::move(ai));
  }
  builder.setInsertionPointToEnd(moduleOp.getBody());
  auto func = builder.create<mlir::func::FuncOp>(loc(kernel.loc), kernel.name,
                                                 builder.getFunctionType(argTypes, {}));
  func->setAttr(kKernelAttr, builder.getUnitAttr());
  for (auto [i, arg] : llvm::enumerate(kernel.args))
    func.setArgAttr(i, kArgNameAttr, builder.getStringAttr(arg.name));
  mlir::Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  scopes.clear();
  paramValues.clear();
  currentKernel = &kernel;
  currentKernelArgsBound = false;
  {
    ScopeGuard scope(*this);
    if (!bindParams(kernel, options, info))
      return false;
    currentKernelArgsBound = true;
    // NUM_WARPS, when declared, sizes the program on GPU targets.
    if (auto p = paramValues.find("NUM_WARPS"); p != paramValues.end()) {
      int64_t warps = p->second.i;
      if (warps < 1 || warps > 16 || (warps & (warps - 1)) != 0) {
        auto decl = llvm::find_if(kernel.params,
                                  [](const ParamDecl &d) { return d.name == "NUM_WARPS"; });
        return error(decl->loc, "NUM_WARPS must be 1, 2, 4, 8 or 16, got " +
                                    llvm::Twine(warps)),
               false;
      }
      func->setAttr(kNumWarpsAttr, builder.getI32IntegerAttr(warps));
    }
    if (!bindArgs(kernel, *entry))
      return false;
    // Sizes named by params are fixed sizes for the launcher.
    for (ArgInfo &ai : info.args)
      for (std::string &dim : ai.dims)
        if (auto p = paramValues.find(dim); p != paramValues.end())
          dim = std::to_string(p->second.i);
    // An `if` that returns early leaves what follows it to run only when it did
    // not: the kernel carries a flag for that.
    if (llvm::any_of(kernel.body, [](const StmtPtr &s) {
          return s->kind != Stmt::Return && exits(llvm::ArrayRef(s), Stmt::Return, true);
        }) &&
        !declareExitFlag(kReturnedVar, kernel.loc))
      return false;
    if (!genBlock(kernel.body))
      return false;
    builder.create<mlir::func::ReturnOp>(loc(kernel.loc));
  }
  return genGridFunction(kernel, options, info, func);
}

std::string Generator::gridText(const Expr &e) {
  switch (e.kind) {
  case Expr::IntLit: return std::to_string(static_cast<const IntLitExpr &>(e).value);
  case Expr::Name: {
    auto &n = static_cast<const NameExpr &>(e);
    auto p = paramValues.find(n.name);
    if (p != paramValues.end())
      return std::to_string(p->second.i);
    return n.name;
  }
  case Expr::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    return "(" + gridText(*b.lhs) + " " + binOpSpelling(b.op) + " " + gridText(*b.rhs) + ")";
  }
  case Expr::Call: {
    auto &c = static_cast<const CallExpr &>(e);
    std::string s = c.callee + "(";
    for (auto [i, a] : llvm::enumerate(c.args))
      s += (i ? ", " : "") + gridText(*a);
    return s + ")";
  }
  default: return "?";
  }
}

bool Generator::genGridFunction(const KernelDecl &kernel, const GenOptions &options,
                                KernelInfo &info, mlir::func::FuncOp kernelFunc) {
  builder.setInsertionPointToEnd(moduleOp.getBody());
  auto i32 = builder.getI32Type();
  // The kernel's arguments, then the device's processor count.
  llvm::SmallVector<mlir::Type> argTypes(kernelFunc.getArgumentTypes());
  argTypes.push_back(i32);
  auto func = builder.create<mlir::func::FuncOp>(
      loc(kernel.gridLoc.isValid() ? kernel.gridLoc : kernel.loc),
      gridFunctionName(kernel.name), builder.getFunctionType(argTypes, {i32, i32, i32}));
  func->setAttr(kGridFuncAttr, builder.getStringAttr(kernel.name));
  mlir::Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  gridProcessors = entry->getArguments().back();

  scopes.clear();
  paramValues.clear();
  ScopeGuard scope(*this);
  KernelInfo scratch;
  if (!bindParams(kernel, options, scratch) || !bindArgs(kernel, *entry))
    return false;
  inGridRule = true;
  llvm::SmallVector<Value, 3> dims;
  for (const ExprPtr &g : kernel.grid) {
    MaybeValue v = genValue(*g, "grid dimension");
    if (!v)
      return false;
    if (v->type.kind != SType::Scalar || isFloat(v->type.dtype) ||
        v->type.dtype == DType::I1) {
      error(g->loc, "a grid dimension must be an integer scalar, got " + v->type.str());
      return false;
    }
    if (v->cst && v->cst->i <= 0) {
      error(g->loc, "grid dimension is " + llvm::Twine(v->cst->i) + "; it must be positive");
      return false;
    }
    if (dtypeBits(v->type.dtype) == 64 || v->type.dtype == DType::U32) {
      error(g->loc, "grid dimension must fit in i32; cast it with cast<i32>(...)");
      return false;
    }
    dims.push_back(convert(*v, DType::I32, {}, g->loc).value);
    info.grid.push_back(gridText(*g));
  }
  inGridRule = false;
  while (dims.size() < 3)
    dims.push_back(builder.create<mlir::arith::ConstantIntOp>(func.getLoc(), 1, 32));
  while (info.grid.size() < 3)
    info.grid.push_back("1");
  builder.create<mlir::func::ReturnOp>(func.getLoc(), dims);
  return true;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Generator::genBlock(const Block &block) { return genStatements(block); }

bool Generator::genStatements(llvm::ArrayRef<StmtPtr> stmts) {
  for (auto [i, stmt] : llvm::enumerate(stmts)) {
    if (stmt->kind == Stmt::Return && !inHelper)
      return genKernelReturn(static_cast<const ReturnStmt &>(*stmt)); // nothing after it runs
    if (stmt->kind == Stmt::Break || stmt->kind == Stmt::Continue)
      return genLoopExit(*stmt);
    if (stmt->kind == Stmt::Return && (i + 1 != stmts.size() || scopes.size() != 2)) {
      error(stmt->loc, "'return' must be the last statement of a function's body; "
                       "early returns are not supported");
      return false;
    }
    // A statement that may have exited gave its flag a new value (an `if`
    // folded on a constant that did not exit leaves it alone).
    llvm::SmallVector<std::pair<Binding *, Value>, 3> flags;
    for (llvm::StringLiteral name : {kReturnedVar, kBreakVar, kContinueVar})
      if (Binding *flag = lookup(name))
        flags.push_back({flag, flag->val.value});
    if (!genStmt(*stmt))
      return false;
    llvm::SmallVector<Binding *, 3> changed;
    for (auto [flag, before] : flags)
      if (flag->val.value != before)
        changed.push_back(flag);
    if (!changed.empty() && i + 1 < stmts.size())
      return genUnlessExited(stmts.drop_front(i + 1), changed);
  }
  return true;
}

bool Generator::genKernelReturn(const ReturnStmt &ret) {
  if (ret.value)
    return error(ret.value->loc, "a kernel returns nothing; write 'return;'"), false;
  setExitFlag(kReturnedVar, ret.loc); // when an enclosing `if` or loop goes on
  return true;
}

bool Generator::genLoopExit(const Stmt &stmt) {
  const char *what = stmt.kind == Stmt::Break ? "'break'" : "'continue'";
  if (!loopDepth)
    return error(stmt.loc, llvm::Twine(what) + " outside a loop"), false;
  setExitFlag(exitFlag(stmt.kind), stmt.loc);
  return true;
}

void Generator::setExitFlag(llvm::StringRef name, SMLoc at) {
  if (Binding *flag = lookup(name)) {
    flag->val = constant(Const::ofInt(1), DType::I1, false, loc(at));
    flag->val.cst.reset();
  }
}

bool Generator::genUnlessExited(llvm::ArrayRef<StmtPtr> rest, llvm::ArrayRef<Binding *> flags) {
  mlir::Location l = loc(rest.front()->loc);
  Value exited;
  for (Binding *flag : flags)
    exited = exited ? builder.create<mlir::arith::OrIOp>(l, exited, flag->val.value).getResult()
                    : flag->val.value;
  Value stay = builder.create<mlir::arith::XOrIOp>(
      l, exited, builder.create<mlir::arith::ConstantIntOp>(l, 1, 1));
  Carry carry = carried({rest});
  auto ifOp = builder.create<mlir::scf::IfOp>(l, mlir::ValueRange(carry.values()).getTypes(),
                                              stay, /*withElse=*/true);
  mlir::OpBuilder::InsertionGuard guard(builder);
  for (mlir::Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
    mlir::Block *block = &region->front();
    if (!block->empty())
      block->back().erase(); // the implicit empty yield
    builder.setInsertionPointToEnd(block);
    carry.restore();
    if (region == &ifOp.getThenRegion()) {
      ScopeGuard scope(*this);
      if (!genStatements(rest))
        return false;
    }
    builder.create<mlir::scf::YieldOp>(l, carry.values());
  }
  carry.bind(ifOp.getResults());
  return true;
}

bool Generator::genLoopBody(const Block &body, llvm::ArrayRef<Binding *> tripGuards) {
  ++loopDepth;
  bool ok = true;
  if (exits(body, Stmt::Continue)) // each trip starts without having continued
    ok = declareExitFlag(kContinueVar, body.front()->loc);
  // After a break (or a return) the rest of the trip does nothing (genStatements
  // guards what follows an exit) and the loop stops. Only a `for` with stages,
  // an scf.for, runs out its trips: each of its trips runs unless `tripGuards`
  // (its exit flags) are set.
  if (ok && !tripGuards.empty())
    ok = genUnlessExited(body, tripGuards);
  else if (ok)
    ok = genStatements(body);
  --loopDepth;
  return ok;
}

llvm::SmallVector<Binding *, 2> Generator::loopStops(const Block &body) {
  llvm::SmallVector<Binding *, 2> stops;
  if (exits(body, Stmt::Break))
    stops.push_back(lookup(kBreakVar));
  if (!inHelper && exits(body, Stmt::Return, /*intoLoops=*/true))
    stops.push_back(lookup(kReturnedVar));
  return stops;
}

bool Generator::declareExitFlag(llvm::StringRef name, SMLoc at) {
  TValue notYet = constant(Const::ofInt(0), DType::I1, false, loc(at));
  notYet.cst.reset();
  return declare(at, name.str(), notYet, /*isMutable=*/true);
}

bool Generator::assignTo(const NameLoc &target, const TValue &v, SMLoc valueLoc) {
  Binding *b = lookup(target.name);
  if (!b)
    return error(target.loc, "assignment to undeclared variable '" + target.name + "'"), false;
  if (!b->isMutable)
    return error(target.loc, b->isLoopVar ? "cannot assign to loop variable '" + target.name + "'"
                                          : "cannot assign to '" + target.name +
                                                "': declare it with 'var' to make it mutable"),
           false;
  if (!assignable(v.type, b->val.type))
    return error(valueLoc, "cannot assign a value of type " + v.type.str() + " to '" +
                               target.name + "' of type " + b->val.type.str()),
           false;
  if (!constantFits(v, b->val.type.dtype, valueLoc))
    return false;
  b->val = convert(v, b->val.type.dtype, b->val.type.shape, valueLoc);
  b->val.cst.reset();
  return true;
}

bool Generator::genStmt(const Stmt &stmt) {
  switch (stmt.kind) {
  case Stmt::Let: {
    auto &let = static_cast<const LetStmt &>(stmt);
    MaybeValue v = genExpr(*let.init);
    if (!v)
      return false;
    if (v->type.kind == SType::Void) {
      error(let.init->loc, "expression has no value");
      return false;
    }
    if (!let.unpack.empty()) {
      if (v->type.kind != SType::Tuple) {
        error(let.init->loc, "only a tuple can be unpacked, got " + withArticle(v->type.str()));
        return false;
      }
      if (v->elements.size() != let.unpack.size()) {
        error(let.loc, "cannot unpack a tuple of " + llvm::Twine(v->elements.size()) +
                           " values into " + llvm::Twine(let.unpack.size()) + " names");
        return false;
      }
    }
    auto bind = [&](const NameLoc &target, TValue value) {
      if (let.isMutable) {
        if (!value.type.isValue()) {
          error(let.init->loc,
                "a 'var' must hold a scalar or a tile, not " + withArticle(value.type.str()));
          return false;
        }
        // A var is a runtime value: it forgets compile-time-ness so loops may update it.
        value.type.weak = false;
        value.cst.reset();
      }
      return declare(target.loc, target.name, value, let.isMutable);
    };
    if (let.unpack.empty())
      return bind({let.name, let.loc}, *v);
    for (auto [target, value] : llvm::zip(let.unpack, v->elements))
      if (!bind(target, value))
        return false;
    return true;
  }
  case Stmt::Assign: {
    auto &assign = static_cast<const AssignStmt &>(stmt);
    if (assign.unpack.empty()) {
      MaybeValue v = genValue(*assign.value, "assigned value");
      return v && assignTo({assign.name, assign.loc}, *v, assign.value->loc);
    }
    // Every element is computed before any variable changes: (a, b) = (b, a) swaps.
    MaybeValue v = genExpr(*assign.value);
    if (!v)
      return false;
    if (v->type.kind != SType::Tuple) {
      error(assign.value->loc, "only a tuple can be unpacked, got " + withArticle(v->type.str()));
      return false;
    }
    if (v->elements.size() != assign.unpack.size()) {
      error(assign.loc, "cannot unpack a tuple of " + llvm::Twine(v->elements.size()) +
                            " values into " + llvm::Twine(assign.unpack.size()) + " names");
      return false;
    }
    for (auto [target, value] : llvm::zip(assign.unpack, v->elements))
      if (!assignTo(target, value, assign.value->loc))
        return false;
    return true;
  }
  case Stmt::For:
    return genFor(static_cast<const ForStmt &>(stmt));
  case Stmt::While:
    return genWhile(static_cast<const WhileStmt &>(stmt));
  case Stmt::If:
    return genIf(static_cast<const IfStmt &>(stmt));
  case Stmt::Return: {
    auto &ret = static_cast<const ReturnStmt &>(stmt);
    if (!ret.value) {
      helperResult = TValue{};
      return true;
    }
    MaybeValue v = genExpr(*ret.value);
    if (!v)
      return false;
    if (!v->type.isValue() && v->type.kind != SType::Tuple) {
      error(ret.value->loc, "a function returns a scalar, a tile or a tuple of them, not " +
                                withArticle(v->type.str()));
      return false;
    }
    helperResult = *v;
    return true;
  }
  case Stmt::ExprS: {
    auto &es = static_cast<const ExprStmt &>(stmt);
    MaybeValue v = genExpr(*es.expr);
    return v.has_value();
  }
  case Stmt::Break:
  case Stmt::Continue: return genLoopExit(stmt); // genStatements takes them first
  }
  return false;
}

Generator::Carry Generator::carried(std::initializer_list<llvm::ArrayRef<StmtPtr>> ranges) {
  llvm::StringSet<> assigned;
  for (llvm::ArrayRef<StmtPtr> r : ranges)
    collectAssigned(r, assigned);
  std::vector<llvm::StringRef> names;
  for (auto &entry : assigned)
    names.push_back(entry.getKey());
  llvm::sort(names);
  Carry carry;
  for (llvm::StringRef name : names)
    if (Binding *b = lookup(name); b && b->isMutable) {
      carry.vars.push_back(b);
      carry.before.push_back(b->val);
    }
  return carry;
}

bool Generator::genFor(const ForStmt &stmt) {
  if (inGridRule)
    return false;
  auto bound = [&](const ExprPtr &e, const char *what) -> MaybeValue {
    MaybeValue v = genValue(*e, what);
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar || isFloat(v->type.dtype) ||
        v->type.dtype == DType::I1)
      return error(e->loc, llvm::Twine("loop ") + what + " must be an integer scalar, got " +
                               v->type.str());
    if (dtypeBits(v->type.dtype) == 64 || v->type.dtype == DType::U32)
      return error(e->loc, llvm::Twine("loop ") + what + " must be i32 (or narrower)");
    return convert(*v, DType::I32, {}, e->loc);
  };
  MaybeValue start = bound(stmt.start, "start");
  if (!start)
    return false;
  MaybeValue end = bound(stmt.end, "end");
  if (!end)
    return false;
  MaybeValue step = stmt.step ? bound(stmt.step, "step")
                              : constant(Const::ofInt(1), DType::I32, true, loc(stmt.loc));
  if (!step)
    return false;
  if (step->cst && step->cst->i <= 0)
    return error(stmt.step ? stmt.step->loc : stmt.loc,
                 "loop step must be positive, got " + llvm::Twine(step->cst->i)),
           false;
  if (stmt.unrolled && !step->cst)
    return error(stmt.step->loc, "static_range needs a step known at compile time; use "
                                 "range for a step known at run time"),
           false;
  if (stmt.unrolled)
    return genUnrolledFor(stmt, *start, *end, *step);
  using mlir::arith::CmpIPredicate;
  mlir::Location l = loc(stmt.loc);
  if (!step->cst) {
    // A step known only at run time (a persistent loop's num_programs(0)): a
    // non-positive one runs no trips rather than forever, and one longer than
    // the range is the range, so that the variable never steps past 2^31 - 1.
    auto cmp = [&](CmpIPredicate p, Value x, Value y) {
      return builder.create<mlir::arith::CmpIOp>(l, p, x, y).getResult();
    };
    auto select = [&](Value c, Value x, Value y) {
      return builder.create<mlir::arith::SelectOp>(l, c, x, y).getResult();
    };
    Value one = builder.create<mlir::arith::ConstantIntOp>(l, 1, 32);
    Value positive = cmp(CmpIPredicate::sge, step->value, one);
    Value range = builder.create<mlir::arith::SubIOp>(l, end->value, start->value);
    Value longer = builder.create<mlir::arith::AndIOp>(
        l, cmp(CmpIPredicate::slt, start->value, end->value),
        cmp(CmpIPredicate::uge, step->value, range)); // the range as unsigned: exact
    end->value = select(positive, end->value, start->value);
    step->value = select(positive, select(longer, range, step->value), one);
  }

  std::optional<int64_t> stages = 1;
  if (stmt.stages) {
    stages = constInt(*stmt.stages, "the number of stages");
    if (!stages)
      return false;
    if (*stages < 1 || *stages > 8)
      return error(stmt.stages->loc,
                   "stages must be between 1 and 8, got " + llvm::Twine(*stages)),
             false;
  }

  // The loop's `break` flag, carried like the variables its body assigns.
  bool breaks = exits(stmt.body, Stmt::Break);
  ScopeGuard loopScope(*this);
  if (breaks && !declareExitFlag(kBreakVar, stmt.loc))
    return false;
  llvm::SmallVector<Binding *, 2> stops = loopStops(stmt.body);
  Carry carry = carried({stmt.body});
  auto declareIV = [&](Value iv) {
    TValue v;
    v.type = SType::scalar(DType::I32);
    v.value = iv;
    if (!declare(stmt.varLoc, stmt.var, v, false))
      return false;
    scopes.back()[stmt.var].isLoopVar = true;
    return true;
  };
  if (!stops.empty() && *stages == 1) {
    // A loop that may be left early (break, return) is a while loop over its
    // variable, so that it stops at once rather than running out its trips.
    Value first = builder.create<mlir::arith::CmpIOp>(l, CmpIPredicate::slt, start->value,
                                                      end->value);
    return genRotatedWhile(
        l, carry, stops, start->value, first,
        [&](mlir::ValueRange own) -> std::optional<std::pair<llvm::SmallVector<Value>, Value>> {
          {
            ScopeGuard scope(*this);
            if (!declareIV(own[0]) || !genLoopBody(stmt.body))
              return std::nullopt;
          }
          // own < end, so end - own read as unsigned is exact, and comparing
          // the step with it cannot wrap as own + step < end could.
          Value next = builder.create<mlir::arith::AddIOp>(l, own[0], step->value);
          Value left = builder.create<mlir::arith::SubIOp>(l, end->value, own[0]);
          Value again = builder.create<mlir::arith::CmpIOp>(l, CmpIPredicate::ult,
                                                            step->value, left);
          return std::pair{llvm::SmallVector<Value>{next}, again};
        });
  }
  auto forOp = builder.create<mlir::scf::ForOp>(l, start->value, end->value, step->value,
                                                carry.values());
  if (*stages > 1)
    forOp->setAttr(kStagesAttr, builder.getI32IntegerAttr(*stages));
  mlir::OpBuilder::InsertionGuard guard(builder);
  // The body's yield is created below (ForOp adds an empty one without iter args).
  if (!forOp.getBody()->empty() && forOp.getBody()->back().hasTrait<mlir::OpTrait::IsTerminator>())
    forOp.getBody()->back().erase();
  builder.setInsertionPointToEnd(forOp.getBody());
  carry.bind(forOp.getRegionIterArgs());
  {
    ScopeGuard scope(*this);
    if (!declareIV(forOp.getInductionVar()) || !genLoopBody(stmt.body, stops))
      return false;
  }
  builder.create<mlir::scf::YieldOp>(l, carry.values());
  carry.bind(forOp.getResults());
  return true;
}

bool Generator::genUnrolledFor(const ForStmt &stmt, const TValue &start, const TValue &end,
                               const TValue &step) {
  for (auto [bound, what] : {std::pair{&start, stmt.start.get()}, {&end, stmt.end.get()}})
    if (!bound->cst)
      return error(what->loc, "static_range needs bounds known at compile time (params and "
                              "constants); use range for a loop over run-time values"),
             false;
  for (Stmt::Kind kind : {Stmt::Break, Stmt::Continue, Stmt::Return})
    if (exits(stmt.body, kind))
      return error(stmt.loc, "a static_range loop is unrolled: its body cannot break, "
                             "continue or return (use range)"),
             false;
  int64_t first = start.cst->i, last = end.cst->i, stride = step.cst->i;
  int64_t trips = first < last ? (last - first + stride - 1) / stride : 0;
  if (trips > kMaxUnrolledTrips)
    return error(stmt.loc, "static_range would unroll " + llvm::Twine(trips) +
                               " copies of its body; at most " + llvm::Twine(kMaxUnrolledTrips) +
                               " (use range)"),
           false;
  // Each trip is the body once more, in straight-line code, with the variable a
  // constant: it may size tiles or pick tuple elements, and assignments to outer
  // variables simply rebind them.
  for (int64_t i = 0; i < trips; ++i) {
    ScopeGuard scope(*this);
    TValue iv = constant(Const::ofInt(first + i * stride), DType::I32, false, loc(stmt.varLoc));
    if (!declare(stmt.varLoc, stmt.var, iv, false))
      return false;
    scopes.back()[stmt.var].isLoopVar = true;
    if (!genBlock(stmt.body))
      return false;
  }
  return true;
}

bool Generator::genWhile(const WhileStmt &stmt) {
  if (inGridRule)
    return false;
  // The condition, for the carried variables' current values.
  auto condition = [&]() -> MaybeValue {
    MaybeValue cond = genValue(*stmt.cond, "condition");
    if (cond && (cond->type.kind != SType::Scalar || cond->type.dtype != DType::I1))
      return error(stmt.cond->loc, "a 'while' condition must be a scalar bool, got " +
                                       cond->type.str() +
                                       " (reduce a tile first, e.g. 'max(t) > 0')");
    return cond;
  };
  MaybeValue first = condition();
  if (!first)
    return false;
  bool breaks = exits(stmt.body, Stmt::Break);
  bool leaves = breaks || (!inHelper && exits(stmt.body, Stmt::Return, /*intoLoops=*/true));
  if (first->cst) {
    if (first->cst->i && !leaves)
      return error(stmt.cond->loc, "this 'while' loop never ends: its condition is always "
                                   "true and its body has no 'break' (make the condition "
                                   "depend on a variable the body assigns)"),
             false;
    if (!first->cst->i)
      return true; // never runs; like a compile-time `if`, the body is not generated
  }
  // The loop's `break` flag, carried like the variables its body assigns.
  ScopeGuard loopScope(*this);
  if (breaks && !declareExitFlag(kBreakVar, stmt.loc))
    return false;

  llvm::SmallVector<Binding *, 2> stops = loopStops(stmt.body);
  Carry carry = carried({stmt.body});
  return genRotatedWhile(loc(stmt.loc), carry, stops, {}, first->value,
                         [&](mlir::ValueRange) -> std::optional<std::pair<
                                                   llvm::SmallVector<Value>, Value>> {
                           {
                             ScopeGuard scope(*this);
                             if (!genLoopBody(stmt.body))
                               return std::nullopt;
                           }
                           MaybeValue next = condition();
                           if (!next)
                             return std::nullopt;
                           return std::pair{llvm::SmallVector<Value>{}, next->value};
                         });
}

bool Generator::genRotatedWhile(mlir::Location l, Carry &carry, llvm::ArrayRef<Binding *> stops,
                                mlir::ValueRange ownInits, Value first, Trip trip) {
  // The loop is rotated: the condition is evaluated before it and again at the
  // end of every trip, and the "before" region only tests the result. All the
  // work is then in the "after" region, which every target lowers like a `for`
  // body (SPIR-V's serializer, in particular, mishandles structured control
  // flow, such as a reduction's, inside a loop header).
  llvm::SmallVector<Value> inits = carry.values();
  size_t carried = inits.size();
  inits.append(ownInits.begin(), ownInits.end());
  inits.push_back(first);
  llvm::SmallVector<mlir::Type> types(mlir::ValueRange(inits).getTypes());
  auto whileOp = builder.create<mlir::scf::WhileOp>(l, llvm::ArrayRef(types).drop_back(), inits);
  llvm::SmallVector<mlir::Location> locs(types.size(), l);
  {
    mlir::OpBuilder::InsertionGuard guard(builder);
    mlir::Block *before = builder.createBlock(&whileOp.getBefore(), {}, types, locs);
    builder.create<mlir::scf::ConditionOp>(l, before->getArguments().back(),
                                           before->getArguments().drop_back());
  }
  {
    mlir::OpBuilder::InsertionGuard guard(builder);
    mlir::Block *after = builder.createBlock(&whileOp.getAfter(), {},
                                             llvm::ArrayRef(types).drop_back(),
                                             llvm::ArrayRef(locs).drop_back());
    carry.bind(after->getArguments().take_front(carried));
    auto next = trip(after->getArguments().drop_front(carried));
    if (!next)
      return false;
    Value again = next->second;
    for (Binding *stop : stops) // and not broken out of (or returned from)
      again = builder.create<mlir::arith::AndIOp>(
          l, again,
          builder.create<mlir::arith::XOrIOp>(l, stop->val.value,
                                              builder.create<mlir::arith::ConstantIntOp>(l, 1, 1)));
    llvm::SmallVector<Value> yields = carry.values();
    yields.append(next->first);
    yields.push_back(again);
    builder.create<mlir::scf::YieldOp>(l, yields);
  }
  carry.bind(whileOp.getResults().take_front(carried));
  return true;
}

bool Generator::genIf(const IfStmt &stmt) {
  MaybeValue cond = genValue(*stmt.cond, "condition");
  if (!cond)
    return false;
  if (cond->type.kind != SType::Scalar || cond->type.dtype != DType::I1)
    return error(stmt.cond->loc, "an 'if' condition must be a scalar bool, got " +
                                     cond->type.str()),
           false;
  if (cond->cst) {
    // Decided at compile time (typically by params): only the taken branch exists.
    ScopeGuard scope(*this);
    return genBlock(cond->cst->i ? stmt.thenBody : stmt.elseBody);
  }
  Carry carry = carried({stmt.thenBody, stmt.elseBody});
  mlir::Location l = loc(stmt.loc);
  auto ifOp = builder.create<mlir::scf::IfOp>(l, mlir::ValueRange(carry.values()).getTypes(),
                                              cond->value, /*withElse=*/true);
  auto genBranch = [&](mlir::Region &region, const Block &body) {
    mlir::OpBuilder::InsertionGuard guard(builder);
    mlir::Block *block = &region.front();
    if (!block->empty())
      block->back().erase(); // the implicit empty yield
    builder.setInsertionPointToEnd(block);
    carry.restore();
    {
      ScopeGuard scope(*this);
      if (!genBlock(body))
        return false;
    }
    builder.create<mlir::scf::YieldOp>(l, carry.values());
    return true;
  };
  if (!genBranch(ifOp.getThenRegion(), stmt.thenBody) ||
      !genBranch(ifOp.getElseRegion(), stmt.elseBody))
    return false;
  carry.bind(ifOp.getResults());
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

MaybeValue Generator::genExpr(const Expr &e) {
  if (failed)
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  switch (e.kind) {
  case Expr::IntLit: {
    // i32 when it fits, else i64, else (up to 2^64 - 1) u64.
    uint64_t v = static_cast<const IntLitExpr &>(e).value;
    if (v > INT64_MAX)
      return constant(Const::ofUnsigned(v), DType::U64, true, l);
    return constant(Const::ofInt(static_cast<int64_t>(v)), v > INT32_MAX ? DType::I64 : DType::I32,
                    true, l);
  }
  case Expr::FloatLit:
    return constant(Const::ofFloat(static_cast<const FloatLitExpr &>(e).value), DType::F32,
                    true, l);
  case Expr::BoolLit:
    return constant(Const::ofInt(static_cast<const BoolLitExpr &>(e).value), DType::I1, true,
                    l);
  case Expr::StringLit:
    return error(e.loc,
                 "a string is only allowed as the text of print, static_assert or device_assert");
  case Expr::Name: return genName(static_cast<const NameExpr &>(e));
  case Expr::Unary: return genUnary(static_cast<const UnaryExpr &>(e));
  case Expr::Binary: return genBinary(static_cast<const BinaryExpr &>(e));
  case Expr::Call: return genCall(static_cast<const CallExpr &>(e));
  case Expr::Index: return genIndex(static_cast<const IndexExpr &>(e));
  case Expr::Method: return genMethod(static_cast<const MethodExpr &>(e));
  case Expr::List:
    return genElements(static_cast<const ListExpr &>(e).elements, SType::List, "list element");
  case Expr::Tuple:
    return genElements(static_cast<const TupleExpr &>(e).elements, SType::Tuple,
                       "tuple element");
  }
  return std::nullopt;
}

MaybeValue Generator::genValue(const Expr &e, const char *what) {
  MaybeValue v = genExpr(e);
  if (!v)
    return std::nullopt;
  if (v->type.isValue())
    return v;
  if (v->type.kind == SType::Tensor)
    return error(e.loc, "tensor argument '" + v->tensorName + "' is not a value here (" +
                            what + "); load from it, e.g. load(" + v->tensorName + "[i])");
  if (v->type.kind == SType::View)
    return error(e.loc, llvm::Twine("a view is not a value (") + what +
                            "); wrap it in load(...)");
  if (v->type.kind == SType::Tuple)
    return error(e.loc, llvm::Twine("a tuple is not a value (") + what +
                            "); unpack it first: let (a, b) = ...;");
  return error(e.loc, llvm::Twine("expected a scalar or tile for the ") + what +
                          ", got " + withArticle(v->type.str()));
}

MaybeValue Generator::genName(const NameExpr &e) {
  if (Binding *b = lookup(e.name))
    return b->val;
  if (e.name == "inf" || e.name == "nan")
    return constant(Const::ofFloat(e.name == "inf" ? std::numeric_limits<double>::infinity()
                                                   : std::numeric_limits<double>::quiet_NaN()),
                    DType::F32, true, loc(e.loc));
  if (isBuiltin(e.name))
    return error(e.loc, "'" + e.name + "' is a builtin function; call it with (...)");
  if (module.findFunction(e.name))
    return error(e.loc, "'" + e.name + "' is a function; call it with (...)");
  if (inGridRule)
    return error(e.loc, "unknown name '" + e.name +
                            "' in the grid rule (it may use sizes, scalar arguments and params)");
  if (currentKernel && !currentKernelArgsBound) {
    for (const ArgDecl &arg : currentKernel->args)
      if (arg.name == e.name || llvm::any_of(arg.dims, [&](const DimSpec &d) {
            return d.name == e.name;
          }))
        return error(e.loc, "param defaults are compile-time constants; '" + e.name +
                                "' is known only at launch");
  }
  return error(e.loc, "unknown name '" + e.name + "'");
}

/// The unsigned form of a signed integer comparison (others unchanged).
static mlir::arith::CmpIPredicate unsignedPredicate(mlir::arith::CmpIPredicate p) {
  using mlir::arith::CmpIPredicate;
  switch (p) {
  case CmpIPredicate::slt: return CmpIPredicate::ult;
  case CmpIPredicate::sle: return CmpIPredicate::ule;
  case CmpIPredicate::sgt: return CmpIPredicate::ugt;
  case CmpIPredicate::sge: return CmpIPredicate::uge;
  default: return p;
  }
}

/// `kind` for elements of `dt`: max and min of unsigned integers compare them
/// as unsigned.
static ReduceKind orderedKind(ReduceKind kind, DType dt) {
  if (!isUnsigned(dt))
    return kind;
  return kind == ReduceKind::Max ? ReduceKind::UMax : kind == ReduceKind::Min ? ReduceKind::UMin
                                                                             : kind;
}

MaybeValue Generator::genUnary(const UnaryExpr &e) {
  MaybeValue v = genValue(*e.operand, "operand");
  if (!v)
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (e.op == '!') {
    if (v->type.dtype != DType::I1)
      return error(e.loc, "'!' needs a bool operand, got " + v->type.str());
    if (v->cst)
      return constant(Const::ofInt(!v->cst->i), DType::I1, v->type.weak, l);
    TValue out = *v;
    out.value = builder.create<mlir::arith::XOrIOp>(
        l, v->value, splat(Const::ofInt(1), DType::I1, v->type.shape, e.loc));
    return out;
  }
  if (e.op == '~') {
    if (!isInteger(v->type.dtype))
      return error(e.loc, "'~' needs an integer operand, got " + v->type.str() +
                              (v->type.dtype == DType::I1 ? " (use '!' for bool)" : ""));
    if (v->cst)
      return constant(convertConst(Const::ofInt(~v->cst->i), v->type.dtype), v->type.dtype,
                      v->type.weak, l);
    TValue out = *v;
    out.value = builder.create<mlir::arith::XOrIOp>(
        l, v->value, splat(Const::ofInt(-1), v->type.dtype, v->type.shape, e.loc));
    return out;
  }
  if (v->type.dtype == DType::I1)
    return error(e.loc, "unary '-' is not defined on bool");
  if (rejectF8(v->type.dtype, e.loc, "unary '-'"))
    return std::nullopt;
  if (isFloat(v->type.dtype)) {
    if (v->cst)
      return constant(Const::ofFloat(-v->cst->f), v->type.dtype, v->type.weak, l);
    TValue out = *v;
    out.value = builder.create<mlir::arith::NegFOp>(l, v->value);
    return out;
  }
  TValue zero = constant(Const::ofInt(0), v->type.dtype, true, l);
  return binary(BinOp::Sub, zero, *v, e.loc);
}

MaybeValue Generator::genBinary(const BinaryExpr &e) {
  MaybeValue l = genValue(*e.lhs, "left operand");
  if (!l)
    return std::nullopt;
  MaybeValue r = genValue(*e.rhs, "right operand");
  if (!r)
    return std::nullopt;
  return binary(e.op, *l, *r, e.loc);
}

MaybeValue Generator::binary(BinOp op, const TValue &l, const TValue &r, SMLoc at) {
  bool logical = op == BinOp::LAnd || op == BinOp::LOr;
  bool bitwise = op == BinOp::And || op == BinOp::Or || op == BinOp::Xor;
  bool shift = op == BinOp::Shl || op == BinOp::Shr;
  bool compare = op >= BinOp::Eq;
  if (shift && (!isInteger(l.type.dtype) || !isInteger(r.type.dtype)))
    return error(at, llvm::Twine("'") + binOpSpelling(op) + "' needs integer operands, got " +
                         l.type.str() + " and " + r.type.str());
  if (logical && (l.type.dtype != DType::I1 || r.type.dtype != DType::I1))
    return error(at, llvm::Twine("'") + binOpSpelling(op) + "' needs bool operands, got " +
                         l.type.str() + " and " + r.type.str());
  if (bitwise && (isFloat(l.type.dtype) || isFloat(r.type.dtype)))
    return error(at, llvm::Twine("'") + binOpSpelling(op) +
                         "' needs integer or bool operands, got " + l.type.str() + " and " +
                         r.type.str());
  if (!logical && !bitwise && !compare &&
      (l.type.dtype == DType::I1 || r.type.dtype == DType::I1))
    return error(at, llvm::Twine("arithmetic '") + binOpSpelling(op) +
                         "' is not defined on bool; cast<i32>(...) first");
  auto shape = broadcastShapes(l.type.shape, r.type.shape);
  if (!shape)
    return error(at, llvm::Twine("shapes ") + shapeStr(l.type.shape) + " and " +
                         shapeStr(r.type.shape) + " do not broadcast for '" +
                         binOpSpelling(op) + "'");
  if (!checkTileSize(*shape, at))
    return std::nullopt;
  DType dt = promote(l.type, r.type);
  if (!compare && rejectF8(dt, at, llvm::Twine("arithmetic '") + binOpSpelling(op) + "'"))
    return std::nullopt;
  if (!constantFits(l, dt, at, bitwise) || !constantFits(r, dt, at, bitwise))
    return std::nullopt;
  DType resultType = compare ? DType::I1 : dt;
  mlir::Location loc_ = loc(at);
  if (l.cst && r.cst && shape->empty()) {
    if (auto folded = foldBinary(op, convertConst(*l.cst, dt), convertConst(*r.cst, dt), dt))
      return constant(*folded, resultType, l.type.weak && r.type.weak, loc_);
    if (!isFloat(dt) && (op == BinOp::Div || op == BinOp::Rem))
      return error(at, "integer division by zero in a constant expression");
  }
  TValue a = convert(l, dt, *shape, at), b = convert(r, dt, *shape, at);
  Value x = a.value, y = b.value, out;
  bool f = isFloat(dt);
  using namespace mlir::arith;
  switch (op) {
  case BinOp::Add: out = f ? (Value)builder.create<AddFOp>(loc_, x, y) : builder.create<AddIOp>(loc_, x, y); break;
  case BinOp::Sub: out = f ? (Value)builder.create<SubFOp>(loc_, x, y) : builder.create<SubIOp>(loc_, x, y); break;
  case BinOp::Mul: out = f ? (Value)builder.create<MulFOp>(loc_, x, y) : builder.create<MulIOp>(loc_, x, y); break;
  case BinOp::Div:
  case BinOp::Rem:
    if (f)
      out = op == BinOp::Div ? (Value)builder.create<DivFOp>(loc_, x, y)
                             : builder.create<RemFOp>(loc_, x, y);
    else
      out = integerDivide(op, x, y, dt, *shape, at);
    break;
  case BinOp::And:
  case BinOp::LAnd: out = builder.create<AndIOp>(loc_, x, y); break;
  case BinOp::Or:
  case BinOp::LOr: out = builder.create<OrIOp>(loc_, x, y); break;
  case BinOp::Xor: out = builder.create<XOrIOp>(loc_, x, y); break;
  case BinOp::Shl:
  case BinOp::Shr: out = shiftBy(op, x, y, dt, *shape, at); break;
  default: {
    static const std::pair<CmpFPredicate, CmpIPredicate> preds[] = {
        {CmpFPredicate::OEQ, CmpIPredicate::eq},  {CmpFPredicate::UNE, CmpIPredicate::ne},
        {CmpFPredicate::OLT, CmpIPredicate::slt}, {CmpFPredicate::OLE, CmpIPredicate::sle},
        {CmpFPredicate::OGT, CmpIPredicate::sgt}, {CmpFPredicate::OGE, CmpIPredicate::sge}};
    auto [fp, ip] = preds[static_cast<int>(op) - static_cast<int>(BinOp::Eq)];
    if (isUnsigned(dt))
      ip = unsignedPredicate(ip);
    out = f ? (Value)builder.create<CmpFOp>(loc_, fp, x, y) : builder.create<CmpIOp>(loc_, ip, x, y);
  }
  }
  TValue result;
  result.type = SType::value(resultType, *shape);
  result.value = out;
  return result;
}

Value Generator::integerDivide(BinOp op, Value x, Value y, DType dt, const Shape &shape,
                               SMLoc where) {
  // LLVM and SPIR-V leave x / 0 undefined, and the CPU's divide instruction
  // stops the process (as it does for the most negative value / -1). Kiln
  // defines both, as RISC-V does: x / 0 is all bits set (-1, or an unsigned
  // type's largest value) and x % 0 is x; MIN / -1 wraps to MIN and MIN % -1
  // is 0. Such divisors divide by 1 instead, and selects fix the results; a
  // constant divisor folds the selects away.
  using namespace mlir::arith;
  mlir::Location at = loc(where);
  auto integer = [&](int64_t v) { return splat(Const::ofInt(v), dt, shape, where); };
  Value byZero = builder.create<CmpIOp>(at, CmpIPredicate::eq, y, integer(0));
  Value unsafe = byZero;
  if (!isUnsigned(dt)) {
    Value min = splat(Const::ofInt(int64_t(uint64_t(1) << (dtypeBits(dt) - 1))), dt, shape, where);
    Value xIsMin = builder.create<CmpIOp>(at, CmpIPredicate::eq, x, min);
    Value yIsMinusOne = builder.create<CmpIOp>(at, CmpIPredicate::eq, y, integer(-1));
    Value overflows = builder.create<AndIOp>(at, xIsMin, yIsMinusOne);
    unsafe = builder.create<OrIOp>(at, byZero, overflows);
  }
  Value divisor = builder.create<SelectOp>(at, unsafe, integer(1), y);
  bool u = isUnsigned(dt);
  if (op == BinOp::Div) {
    Value q = u ? (Value)builder.create<DivUIOp>(at, x, divisor)
                : builder.create<DivSIOp>(at, x, divisor);
    return builder.create<SelectOp>(at, byZero, integer(-1), q);
  }
  Value r = u ? (Value)builder.create<RemUIOp>(at, x, divisor)
              : builder.create<RemSIOp>(at, x, divisor);
  return builder.create<SelectOp>(at, byZero, x, r);
}

Value Generator::shiftBy(BinOp op, Value x, Value amount, DType dt, const Shape &shape,
                         SMLoc where) {
  // LLVM and SPIR-V leave amounts outside [0, bits) undefined; Kiln defines them
  // as shifting every bit out: '<<' gives 0, '>>' the sign (arithmetic, on
  // signed integers) or 0 (logical, on unsigned ones).
  using namespace mlir::arith;
  mlir::Location at = loc(where);
  auto integer = [&](int64_t v) { return splat(Const::ofInt(v), dt, shape, where); };
  int64_t bits = dtypeBits(dt);
  Value inRange = builder.create<CmpIOp>(at, CmpIPredicate::ult, amount, integer(bits));
  if (op == BinOp::Shl)
    return builder.create<SelectOp>(at, inRange, builder.create<ShLIOp>(at, x, amount),
                                    integer(0));
  if (isUnsigned(dt))
    return builder.create<SelectOp>(at, inRange, builder.create<ShRUIOp>(at, x, amount),
                                    integer(0));
  Value clamped = builder.create<SelectOp>(at, inRange, amount, integer(bits - 1));
  return builder.create<ShRSIOp>(at, x, clamped);
}

/// `:` or `None` in an index list.
static bool isSliceIndex(const Expr &e) {
  if (e.kind != Expr::Name)
    return false;
  const std::string &name = static_cast<const NameExpr &>(e).name;
  return name == ":" || name == "None";
}

MaybeValue Generator::genIndex(const IndexExpr &e) {
  MaybeValue base = genExpr(*e.base);
  if (!base)
    return std::nullopt;
  bool sliced = llvm::any_of(e.indices, [](const ExprPtr &i) { return isSliceIndex(*i); });
  if (base->type.kind == SType::Tile && sliced)
    return genNewAxes(e, *base);
  if (base->type.kind == SType::Tuple) {
    // t[i] with i known at compile time (a param, a constant, a static_range
    // variable), as in Triton.
    if (e.indices.size() != 1)
      return error(e.loc, "a tuple takes one index, got " + llvm::Twine(e.indices.size()));
    MaybeValue i = genExpr(*e.indices[0]);
    if (!i)
      return std::nullopt;
    if (i->type.kind != SType::Scalar || isFloat(i->type.dtype) || !i->cst)
      return error(e.indices[0]->loc, "a tuple's index must be an integer known at compile "
                                      "time (a param, a constant or a static_range variable)");
    int64_t n = static_cast<int64_t>(base->elements.size());
    bool huge = i->cst->isUnsigned && i->cst->i < 0; // a u64 past 2^63
    int64_t at = i->cst->i < 0 ? i->cst->i + n : i->cst->i;
    if (huge || at < 0 || at >= n)
      return error(e.indices[0]->loc,
                   "index " +
                       (huge ? std::to_string(uint64_t(i->cst->i)) : std::to_string(i->cst->i)) +
                       " is out of range for a tuple of " + std::to_string(n));
    return base->elements[at];
  }
  if (base->type.kind == SType::Tensor && sliced)
    for (const ExprPtr &i : e.indices)
      if (isSliceIndex(*i))
        return error(i->loc, "a tensor argument's index is a tile of positions, not ':' or "
                             "'None' (arange(0, B), or a block view x.tile(...))");
  if (base->type.kind != SType::Tensor)
    return error(e.loc, "only tensor arguments can be indexed, not " +
                            withArticle(base->type.str()) +
                            (base->type.kind == SType::Tile
                                 ? " (a tile takes t[:, None] to add a dimension; gather picks "
                                   "elements)"
                                 : ""));
  size_t rank = base->type.shape.size();
  if (e.indices.size() != rank)
    return error(e.loc, "tensor '" + base->tensorName + "' has rank " + llvm::Twine(rank) +
                            " but " + llvm::Twine(e.indices.size()) + " indices were given");
  std::vector<TValue> indices;
  Shape shape;
  for (auto &ie : e.indices) {
    MaybeValue idx = genValue(*ie, "index");
    if (!idx)
      return std::nullopt;
    if (isFloat(idx->type.dtype) || idx->type.dtype == DType::I1 ||
        dtypeBits(idx->type.dtype) == 64)
      return error(ie->loc, "an index must be an integer of at most 32 bits, got " +
                                idx->type.str());
    auto s = broadcastShapes(shape, idx->type.shape);
    if (!s)
      return error(ie->loc, "index shape " + shapeStr(idx->type.shape) +
                                " does not broadcast with " + shapeStr(shape));
    shape = *s;
    if (!checkTileSize(shape, ie->loc))
      return std::nullopt;
    indices.push_back(*idx);
  }
  auto view = std::make_shared<ViewData>();
  view->memory = base->value;
  view->tensorName = base->tensorName;
  for (auto [i, idx] : llvm::enumerate(indices))
    view->coords.push_back(convert(idx, DType::I32, shape, e.indices[i]->loc).value);
  TValue out;
  out.type = {SType::View, base->type.dtype, shape, false};
  out.view = view;
  return out;
}

MaybeValue Generator::genNewAxes(const IndexExpr &e, const TValue &tile) {
  // t[:, None]: each ':' keeps the tile's next dimension, each None adds one of
  // size 1 (NumPy's and Triton's newaxis); nothing else may appear.
  Shape shape;
  size_t kept = 0;
  for (const ExprPtr &i : e.indices) {
    if (!isSliceIndex(*i))
      return error(i->loc, "a tile's index list takes only ':' and 'None' (t[:, None] adds a "
                           "dimension); use gather to pick elements");
    bool keep = static_cast<const NameExpr &>(*i).name == ":";
    if (keep && kept == tile.type.shape.size())
      return error(i->loc, "too many ':' for " + withArticle(tile.type.str()));
    shape.push_back(keep ? tile.type.shape[kept++] : 1);
  }
  if (kept != tile.type.shape.size())
    return error(e.loc, "t[...] needs one ':' per dimension of " + withArticle(tile.type.str()) +
                            ", got " + llvm::Twine(kept));
  TValue out = tile;
  out.type.shape = shape;
  out.value = builder.create<ReshapeOp>(loc(e.loc), valueType(tile.type.dtype, shape),
                                        tile.value);
  return out;
}

MaybeValue Generator::genMethod(const MethodExpr &e) {
  MaybeValue base = genExpr(*e.base);
  if (!base)
    return std::nullopt;
  if (base->type.kind != SType::Tensor)
    return error(e.nameLoc, "methods exist only on tensor arguments; '" + e.name +
                                "' called on " + withArticle(base->type.str()));
  size_t rank = base->type.shape.size();
  mlir::Location l = loc(e.loc);
  if (e.name == "size" || e.name == "stride") {
    if (e.args.size() != 1)
      return error(e.nameLoc, "'" + e.name + "' takes one argument, the dimension");
    auto d = axisArg(*e.args[0], rank);
    if (!d)
      return std::nullopt;
    Value idx = builder.create<mlir::arith::ConstantIndexOp>(l, *d);
    Value v;
    if (e.name == "size") {
      v = builder.create<mlir::memref::DimOp>(l, base->value, idx);
    } else {
      auto meta = builder.create<mlir::memref::ExtractStridedMetadataOp>(l, base->value);
      v = meta.getStrides()[*d];
    }
    TValue out;
    out.type = SType::scalar(DType::I32);
    out.value = builder.create<mlir::arith::IndexCastOp>(l, builder.getI32Type(), v);
    return out;
  }
  if (e.name != "tile")
    return error(e.nameLoc, "unknown method '" + e.name + "' (tensors have tile, size, stride)");
  if (e.args.size() != 2)
    return error(e.nameLoc, "tile takes a shape and offsets: x.tile([B0, B1], [o0, o1])");
  auto shape = constShape(*e.args[0], "block shape");
  if (!shape)
    return std::nullopt;
  if (shape->size() != rank)
    return error(e.args[0]->loc, "block shape has " + llvm::Twine(shape->size()) +
                                     " dimensions but tensor '" + base->tensorName +
                                     "' has rank " + llvm::Twine(rank));
  MaybeValue offsets = genExpr(*e.args[1]);
  if (!offsets)
    return std::nullopt;
  if (offsets->type.kind != SType::List || offsets->elements.size() != rank)
    return error(e.args[1]->loc, "offsets must be a list of " + llvm::Twine(rank) +
                                     " integer scalars");
  auto view = std::make_shared<ViewData>();
  view->block = true;
  view->memory = base->value;
  view->tensorName = base->tensorName;
  for (auto [i, off] : llvm::enumerate(offsets->elements)) {
    if (off.type.kind != SType::Scalar || isFloat(off.type.dtype) ||
        off.type.dtype == DType::I1 || dtypeBits(off.type.dtype) == 64)
      return error(e.args[1]->loc, "offset " + llvm::Twine(i) +
                                       " must be an integer scalar of at most 32 bits, got " +
                                       off.type.str());
    view->coords.push_back(convert(off, DType::I32, {}, e.args[1]->loc).value);
  }
  TValue out;
  out.type = {SType::View, base->type.dtype, *shape, false};
  out.view = view;
  return out;
}

MaybeValue Generator::genElements(const std::vector<ExprPtr> &elements, SType::Kind kind,
                                  const char *what) {
  TValue out;
  out.type.kind = kind;
  for (auto &el : elements) {
    MaybeValue v = genValue(*el, what);
    if (!v)
      return std::nullopt;
    out.elements.push_back(*v);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

bool Generator::checkArity(const CallExpr &e, size_t min, size_t max,
                           llvm::ArrayRef<llvm::StringRef> keywords) {
  if (e.args.size() < min || e.args.size() > max) {
    std::string expected = min == max ? std::to_string(min)
                                      : std::to_string(min) + " to " + std::to_string(max);
    error(e.loc, "'" + e.callee + "' takes " + expected + " argument" +
                     (max == 1 ? "" : "s") + ", got " + llvm::Twine(e.args.size()));
    return false;
  }
  for (const KeywordArg &kw : e.kwargs)
    if (!llvm::is_contained(keywords, kw.name)) {
      error(kw.loc, "'" + e.callee + "' has no keyword argument '" + kw.name + "'");
      return false;
    }
  if (e.typeArg && !takesTypeArgument(e.callee)) {
    error(e.loc, "'" + e.callee + "' takes no type argument");
    return false;
  }
  if (e.hasShapeArg && e.callee != "zeros" && e.callee != "ones") {
    error(e.loc, "'" + e.callee + "' takes no [shape] after its type" +
                     (e.callee == "full" ? "; pass the shape as the first argument" : ""));
    return false;
  }
  return true;
}

std::optional<int64_t> Generator::constInt(const Expr &e, const char *what) {
  MaybeValue v = genValue(e, what);
  if (!v)
    return std::nullopt;
  if (!v->cst || v->type.kind != SType::Scalar || isFloat(v->type.dtype))
    return error(e.loc, llvm::Twine(what) + " must be a compile-time integer constant");
  if (v->cst->isUnsigned && v->cst->i < 0)
    return error(e.loc, llvm::Twine(what) + " " + std::to_string(uint64_t(v->cst->i)) +
                            " is too large");
  return v->cst->i;
}

std::optional<Shape> Generator::tileShape(const std::vector<ExprPtr> &dims, SMLoc at) {
  Shape shape;
  int64_t total = 1;
  for (auto &d : dims) {
    auto v = constInt(*d, "tile dimension");
    if (!v)
      return std::nullopt;
    if (*v <= 0)
      return error(d->loc, "tile dimension must be positive, got " + llvm::Twine(*v));
    shape.push_back(*v);
    total *= *v;
    if (total > kMaxTileElements)
      return error(at, "tile of " + llvm::Twine(total) + "+ elements exceeds the limit of " +
                           llvm::Twine(kMaxTileElements));
  }
  if (shape.empty())
    return error(at, "a tile needs at least one dimension");
  return shape;
}

std::optional<Shape> Generator::constShape(const Expr &e, const char *what) {
  if (e.kind != Expr::List)
    return error(e.loc, llvm::Twine(what) + " must be a list like [64, 32]");
  return tileShape(static_cast<const ListExpr &>(e).elements, e.loc);
}

std::optional<int64_t> Generator::axisArg(const Expr &e, int64_t rank, bool allowEnd) {
  auto axis = constInt(e, "axis");
  if (!axis)
    return std::nullopt;
  int64_t limit = rank + (allowEnd ? 1 : 0);
  int64_t a = *axis < 0 ? *axis + limit : *axis;
  if (a < 0 || a >= limit)
    return error(e.loc, "axis " + llvm::Twine(*axis) + " is out of range for rank " +
                            llvm::Twine(rank));
  return a;
}

bool Generator::optionalAxis(const CallExpr &e, size_t position, int64_t rank,
                             std::optional<int64_t> &axis) {
  const KeywordArg *kw = e.kwarg("axis");
  if (kw && e.args.size() > position)
    return error(kw->loc, "the axis is given twice"), false;
  if (!kw && e.args.size() <= position)
    return true;
  axis = axisArg(kw ? *kw->value : *e.args[position], rank);
  return axis.has_value();
}

MaybeValue Generator::genCall(const CallExpr &e) {
  if (isBuiltin(e.callee))
    return genBuiltin(e);
  if (const FnDecl *fn = module.findFunction(e.callee)) {
    if (inGridRule)
      return error(e.loc, "'" + e.callee + "' cannot be used in a grid rule (only cdiv, min, "
                                           "max and cast)");
    return genHelperCall(e, *fn);
  }
  if (module.findKernel(e.callee))
    return error(e.loc, "'" + e.callee + "' is a kernel; kernels cannot be called from kernels");
  return error(e.loc, "unknown function '" + e.callee + "'");
}

MaybeValue Generator::genHelperCall(const CallExpr &e, const FnDecl &fn) {
  if (!e.kwargs.empty())
    return error(e.kwargs[0].loc, "helper functions take positional arguments only");
  if (e.typeArg)
    return error(e.loc, "helper functions take no type argument");
  if (e.args.size() != fn.params.size())
    return error(e.loc, "'" + fn.name + "' takes " + llvm::Twine(fn.params.size()) +
                            " arguments, got " + llvm::Twine(e.args.size()));
  std::vector<TValue> args;
  llvm::SmallVector<SMLoc> argLocs;
  for (auto &a : e.args) {
    MaybeValue v = genExpr(*a);
    if (!v)
      return std::nullopt;
    args.push_back(*v);
    argLocs.push_back(a->loc);
  }
  return callHelper(fn, std::move(args), argLocs, e.loc);
}

MaybeValue Generator::callHelper(const FnDecl &fn, std::vector<TValue> args,
                                 llvm::ArrayRef<SMLoc> argLocs, SMLoc at) {
  if (activeHelpers.contains(fn.name))
    return error(at, "recursive call to '" + fn.name + "' is not supported");
  std::string key = fn.name;
  for (size_t i = 0; i < args.size(); ++i) {
    TValue &v = args[i];
    if (v.type.kind == SType::View || v.type.kind == SType::List ||
        v.type.kind == SType::Tuple || v.type.kind == SType::Void)
      return error(argLocs[i], "cannot pass " + withArticle(v.type.str()) + " to a function");
    if (fn.params[i].dtype &&
        (v.type.kind != SType::Scalar ||
         !assignable(v.type, SType::scalar(*fn.params[i].dtype))))
      return error(argLocs[i], "argument '" + fn.params[i].name + "' of '" + fn.name +
                                   "' must be " + withArticle(dtypeName(*fn.params[i].dtype)) +
                                   " scalar, got " + v.type.str());
    if (fn.params[i].dtype && v.type.dtype != *fn.params[i].dtype) {
      if (!constantFits(v, *fn.params[i].dtype, argLocs[i]))
        return std::nullopt;
      v = convert(v, *fn.params[i].dtype, {}, argLocs[i]);
    }
    // Exact: weak and strong constants, and nearby values, get separate copies.
    key += "|" + v.type.str() + (v.type.weak ? "~" : "");
    if (v.cst) {
      char exact[64];
      if (v.cst->isFloat)
        snprintf(exact, sizeof exact, "%a", v.cst->f);
      else
        snprintf(exact, sizeof exact, "%lld", static_cast<long long>(v.cst->i));
      key += std::string("=") + exact;
    }
  }

  // Signature: runtime values become arguments; constants are baked into the
  // specialization so shapes may depend on them.
  llvm::SmallVector<mlir::Type> argTypes;
  for (const TValue &a : args)
    if (!a.cst)
      argTypes.push_back(a.value.getType());

  mlir::func::FuncOp callee;
  auto it = specializations.find(key);
  if (it != specializations.end()) {
    callee = it->second;
  } else {
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(moduleOp.getBody());
    std::string name = fn.name + "__" + std::to_string(specializations.size());
    callee = builder.create<mlir::func::FuncOp>(loc(fn.loc), name,
                                                builder.getFunctionType(argTypes, {}));
    callee.setPrivate();
    mlir::Block *entry = callee.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    auto savedScopes = std::move(scopes);
    bool savedInHelper = inHelper;
    unsigned savedLoopDepth = std::exchange(loopDepth, 0); // a helper's loops are its own
    auto savedResult = std::move(helperResult);
    scopes.clear();
    scopes.emplace_back(); // globals: none besides builtins
    scopes.emplace_back();
    inHelper = true;
    helperResult.reset();
    activeHelpers.insert(fn.name);
    unsigned argNo = 0;
    bool ok = true;
    for (auto [i, a] : llvm::enumerate(args)) {
      TValue bound = a;
      if (a.cst)
        bound = constant(*a.cst, a.type.dtype, a.type.weak, loc(fn.params[i].loc));
      else
        bound.value = entry->getArgument(argNo++);
      ok = ok && declare(fn.params[i].loc, fn.params[i].name, bound, false);
    }
    ok = ok && genBlock(fn.body);
    activeHelpers.erase(fn.name);
    std::optional<TValue> result = std::move(helperResult);
    scopes = std::move(savedScopes);
    inHelper = savedInHelper;
    loopDepth = savedLoopDepth;
    helperResult = std::move(savedResult);
    if (!ok)
      return std::nullopt;
    std::vector<TValue> results;
    if (result && result->type.kind == SType::Tuple)
      results = result->elements;
    else if (result && result->value)
      results.push_back(*result);
    llvm::SmallVector<Value> rets;
    llvm::SmallVector<mlir::Type> retTypes;
    llvm::SmallVector<mlir::Attribute> retDTypes;
    for (const TValue &r : results) {
      rets.push_back(r.value);
      retTypes.push_back(r.value.getType());
      retDTypes.push_back(builder.getStringAttr(dtypeName(r.type.dtype)));
    }
    builder.create<mlir::func::ReturnOp>(loc(fn.loc), rets);
    callee.setType(builder.getFunctionType(argTypes, retTypes));
    // Remember the results' static types on the function for later call sites,
    // and whether they form a tuple.
    callee->setAttr(kResultDTypesAttr, builder.getArrayAttr(retDTypes));
    if (result && result->type.kind == SType::Tuple)
      callee->setAttr(kReturnsTupleAttr, builder.getUnitAttr());
    specializations[key] = callee;
  }

  llvm::SmallVector<Value> operands;
  for (const TValue &a : args)
    if (!a.cst)
      operands.push_back(a.value);
  auto call = builder.create<mlir::func::CallOp>(loc(at), callee, operands);
  TValue out;
  auto dtypes = mlir::cast<mlir::ArrayAttr>(callee->getAttr(kResultDTypesAttr));
  for (auto [r, name] : llvm::zip(call.getResults(), dtypes)) {
    Shape shape;
    if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(r.getType()))
      shape.assign(t.getShape().begin(), t.getShape().end());
    TValue v;
    v.type = SType::value(*parseDType(mlir::cast<mlir::StringAttr>(name).getValue().str()), shape);
    v.value = r;
    out.elements.push_back(v);
  }
  if (callee->hasAttr(kReturnsTupleAttr)) {
    out.type.kind = SType::Tuple;
    return out;
  }
  if (out.elements.empty()) {
    out.type.kind = SType::Void;
    return out;
  }
  return TValue(out.elements.front());
}

MaybeValue Generator::genBuiltin(const CallExpr &e) {
  const std::string &name = e.callee;
  mlir::Location l = loc(e.loc);
  if (inGridRule && name != "cdiv" && name != "min" && name != "max" && name != "cast" &&
      name != "num_processors")
    return error(e.loc, "'" + name + "' cannot be used in a grid rule (only cdiv, min, max, "
                                     "cast and num_processors)");

  if (name == "num_processors") {
    if (!inGridRule)
      return error(e.loc, "num_processors() is known only at launch, in the grid rule; a "
                          "kernel reads its grid with num_programs(axis)");
    if (!checkArity(e, 0, 0))
      return std::nullopt;
    TValue out;
    out.type = SType::scalar(DType::I32);
    out.value = gridProcessors;
    return out;
  }

  if (name == "program_id" || name == "num_programs") {
    if (!checkArity(e, 1, 1))
      return std::nullopt;
    auto axis = constInt(*e.args[0], "axis");
    if (!axis)
      return std::nullopt;
    if (*axis < 0 || *axis > 2)
      return error(e.args[0]->loc, "grid axis must be 0, 1 or 2, got " + llvm::Twine(*axis));
    TValue out;
    out.type = SType::scalar(DType::I32);
    if (name == "program_id")
      out.value = builder.create<ProgramIdOp>(l, builder.getI32Type(), *axis);
    else
      out.value = builder.create<NumProgramsOp>(l, builder.getI32Type(), *axis);
    return out;
  }
  if (name == "arange") {
    if (!checkArity(e, 1, 2))
      return std::nullopt;
    auto first = constInt(*e.args[0], "arange bound");
    if (!first)
      return std::nullopt;
    int64_t start = 0, end = *first;
    if (e.args.size() == 2) {
      auto second = constInt(*e.args[1], "arange bound");
      if (!second)
        return std::nullopt;
      start = *first;
      end = *second;
    }
    if (end <= start)
      return error(e.loc, "arange(" + llvm::Twine(start) + ", " + llvm::Twine(end) +
                              ") is empty; the end must exceed the start");
    if (end - start > kMaxTileElements || start < INT32_MIN || end > INT32_MAX)
      return error(e.loc, "arange of " + llvm::Twine(end - start) + " elements is too large");
    TValue out;
    out.type = SType::tile(DType::I32, {end - start});
    out.value = builder.create<ArangeOp>(
        l, mlir::RankedTensorType::get({end - start}, builder.getI32Type()), start, end);
    return out;
  }
  if (name == "zeros" || name == "ones") {
    if (!e.typeArg)
      return error(e.loc, "'" + name + "' needs an element type: " + name + "<f32>[M, N]");
    if (!e.hasShapeArg)
      return error(e.loc, "'" + name + "' needs a shape: " + name + "<f32>[M, N]");
    if (!checkArity(e, 0, 0))
      return std::nullopt;
    auto shape = tileShape(e.shapeArg, e.loc);
    if (!shape)
      return std::nullopt;
    TValue c = constant(Const::ofInt(name == "ones"), *e.typeArg, false, l);
    return convert(c, *e.typeArg, *shape, e.loc);
  }
  if (name == "full") {
    if (!checkArity(e, 2, 2))
      return std::nullopt;
    auto shape = constShape(*e.args[0], "shape of full");
    if (!shape)
      return std::nullopt;
    MaybeValue v = genValue(*e.args[1], "fill value");
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar)
      return error(e.args[1]->loc, "the fill value must be a scalar, got " + v->type.str());
    DType dt = e.typeArg ? *e.typeArg : v->type.dtype;
    return convert(*v, dt, *shape, e.loc);
  }
  if (name == "zeros_like" || name == "ones_like" || name == "full_like") {
    // A tile (or scalar) of x's shape, filled; of x's type unless one is given.
    bool full = name == "full_like";
    if (!checkArity(e, full ? 2 : 1, full ? 2 : 1))
      return std::nullopt;
    MaybeValue like = genValue(*e.args[0], "operand");
    if (!like)
      return std::nullopt;
    MaybeValue v = full ? genValue(*e.args[1], "fill value")
                        : constant(Const::ofInt(name == "ones_like"), like->type.dtype, true, l);
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar)
      return error(e.args[1]->loc, "the fill value must be a scalar, got " + v->type.str());
    TValue out = convert(*v, e.typeArg ? *e.typeArg : like->type.dtype, like->type.shape, e.loc);
    out.type.weak = false;
    return out;
  }
  if (name == "cast" || name == "bitcast")
    return genCast(e);
  if (name == "load")
    return genLoad(e);
  if (name == "store")
    return genStore(e);
  if (name == "atomic_add" || name == "atomic_max" || name == "atomic_min" ||
      name == "atomic_and" || name == "atomic_or" || name == "atomic_xor" ||
      name == "atomic_xchg" || name == "atomic_cas")
    return genAtomic(e);
  if (name == "sum")
    return genReduce(e, ReduceKind::Sum);
  if (name == "xor_sum")
    return genReduce(e, ReduceKind::Xor);
  if (name == "prod")
    return genReduce(e, ReduceKind::Prod);
  if (name == "min" || name == "max")
    return genMinMax(e, name == "max");
  if (name == "argmin" || name == "argmax")
    return genArgReduce(e, name == "argmax");
  if (name == "rand" || name == "randint" || name == "randn")
    return genRandom(e);
  if (name == "cumsum" || name == "cumprod" || name == "cummax" || name == "cummin")
    return genScan(e);
  if (name == "dot")
    return genDot(e);
  if (name == "reshape" || name == "trans" || name == "expand_dims" || name == "broadcast_to")
    return genShapeOp(e);
  if (name == "gather")
    return genGather(e);
  if (name == "sort" || name == "argsort")
    return genSort(e);
  if (name == "reduce" || name == "associative_scan")
    return genCombine(e);
  if (name == "join" || name == "interleave" || name == "cat")
    return genJoin(e);
  if (name == "split")
    return genSplit(e);
  if (name == "print")
    return genPrint(e);
  if (name == "static_assert")
    return genStaticAssert(e);
  if (name == "swizzle2d")
    return genSwizzle2d(e);
  if (name == "multiple_of" || name == "max_contiguous" || name == "max_constancy") {
    // Triton's compiler hints, accepted so that ported code compiles: Kiln finds
    // contiguous and aligned accesses from the index arithmetic itself.
    if (!checkArity(e, 2, 2))
      return std::nullopt;
    auto n = constInt(*e.args[1], "the hint's value");
    if (!n)
      return std::nullopt;
    if (*n < 1)
      return error(e.args[1]->loc, name + " needs a positive value, got " + llvm::Twine(*n));
    MaybeValue v = genValue(*e.args[0], "operand");
    if (v && (isFloat(v->type.dtype) || v->type.dtype == DType::I1))
      return error(e.args[0]->loc, name + " takes integers, got " + withArticle(v->type.str()));
    return v;
  }
  if (name == "device_assert")
    return genDeviceAssert(e);
  if (name == "flip" || name == "ravel" || name == "histogram")
    return genRearrange(e);
  if (name == "cdiv") {
    if (!checkArity(e, 2, 2))
      return std::nullopt;
    MaybeValue a = genValue(*e.args[0], "cdiv operand");
    if (!a)
      return std::nullopt;
    MaybeValue b = genValue(*e.args[1], "cdiv operand");
    if (!b)
      return std::nullopt;
    if (isFloat(a->type.dtype) || isFloat(b->type.dtype))
      return error(e.loc, "cdiv needs integer operands");
    if (b->cst && (b->cst->isUnsigned ? b->cst->i == 0 : b->cst->i <= 0))
      return error(e.args[1]->loc, "cdiv by " + llvm::Twine(b->cst->i) +
                                       "; the divisor must be positive");
    TValue one = constant(Const::ofInt(1), DType::I32, true, l);
    MaybeValue sum = binary(BinOp::Add, *a, *b, e.loc);
    if (!sum)
      return std::nullopt;
    MaybeValue minus = binary(BinOp::Sub, *sum, one, e.loc);
    if (!minus)
      return std::nullopt;
    return binary(BinOp::Div, *minus, *b, e.loc);
  }
  if (name == "where") {
    if (!checkArity(e, 3, 3))
      return std::nullopt;
    MaybeValue c = genValue(*e.args[0], "condition");
    if (!c)
      return std::nullopt;
    if (c->type.dtype != DType::I1)
      return error(e.args[0]->loc, "where's condition must be bool, got " + c->type.str());
    MaybeValue a = genValue(*e.args[1], "where operand");
    if (!a)
      return std::nullopt;
    MaybeValue b = genValue(*e.args[2], "where operand");
    if (!b)
      return std::nullopt;
    auto s1 = broadcastShapes(a->type.shape, b->type.shape);
    auto shape = s1 ? broadcastShapes(*s1, c->type.shape) : std::nullopt;
    if (!shape)
      return error(e.loc, "where: shapes " + shapeStr(c->type.shape) + ", " +
                              shapeStr(a->type.shape) + " and " + shapeStr(b->type.shape) +
                              " do not broadcast");
    if (!checkTileSize(*shape, e.loc))
      return std::nullopt;
    DType dt = promote(a->type, b->type);
    if (!constantFits(*a, dt, e.loc) || !constantFits(*b, dt, e.loc))
      return std::nullopt;
    TValue cc = convert(*c, DType::I1, *shape, e.loc);
    TValue aa = convert(*a, dt, *shape, e.loc), bb = convert(*b, dt, *shape, e.loc);
    TValue out;
    out.type = SType::value(dt, *shape);
    out.value = builder.create<mlir::arith::SelectOp>(l, cc.value, aa.value, bb.value);
    return out;
  }
  if (name == "fma") {
    if (!checkArity(e, 3, 3))
      return std::nullopt;
    std::vector<TValue> ops;
    Shape shape;
    for (auto &a : e.args) {
      MaybeValue v = genValue(*a, "fma operand");
      if (!v)
        return std::nullopt;
      auto s = broadcastShapes(shape, v->type.shape);
      if (!s)
        return error(a->loc, "fma operand shape " + shapeStr(v->type.shape) +
                                 " does not broadcast with " + shapeStr(shape));
      shape = *s;
      ops.push_back(*v);
    }
    SType ab = SType::scalar(promote(ops[0].type, ops[1].type),
                             ops[0].type.weak && ops[1].type.weak);
    DType dt = promote(ab, ops[2].type);
    if (!isFloat(dt))
      dt = DType::F32;
    if (rejectF8(dt, e.loc, "'fma'"))
      return std::nullopt;
    Value a = convert(ops[0], dt, shape, e.loc).value;
    Value b = convert(ops[1], dt, shape, e.loc).value;
    Value c = convert(ops[2], dt, shape, e.loc).value;
    TValue out;
    out.type = SType::value(dt, shape);
    out.value = builder.create<mlir::math::FmaOp>(l, a, b, c);
    return out;
  }
  if (name == "pow" || name == "atan2" || name == "clamp" || name == "copysign" ||
      name == "hypot" || name == "umulhi")
    return genFloatMath(e);
  if (name == "isnan" || name == "isinf" || name == "isfinite")
    return genClassify(e);
  if (name == "range")
    return error(e.loc, "'range' is only valid in a for loop: for i in range(...)");
  if (name == "inf" || name == "nan")
    return error(e.loc, "'" + name + "' is a constant, not a function");
  return genUnaryMath(e);
}

MaybeValue Generator::genCast(const CallExpr &e) {
  bool bits = e.callee == "bitcast";
  if (!e.typeArg)
    return error(e.loc, bits ? "'bitcast' needs a target type: bitcast<i32>(x)"
                             : "'cast' needs a target type: cast<f16>(x)");
  if (!checkArity(e, 1, 1))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], bits ? "bitcast operand" : "cast operand");
  if (!v)
    return std::nullopt;
  DType from = v->type.dtype, to = *e.typeArg;
  if (!bits) {
    TValue out = convert(*v, to, v->type.shape, e.loc);
    out.type.weak = false;
    return out;
  }
  if (from == DType::I1 || to == DType::I1)
    return error(e.loc, "'bitcast' is not defined on bool (i1 has no bit layout); use cast");
  if (dtypeBits(from) != dtypeBits(to))
    return error(e.loc, llvm::Twine("'bitcast' keeps the bits, so the types must be as wide: ") +
                            dtypeName(from) + " has " + llvm::Twine(dtypeBits(from)) +
                            " bits and " + dtypeName(to) + " has " + llvm::Twine(dtypeBits(to)));
  TValue out;
  out.type = SType::value(to, v->type.shape);
  out.value = from == to ? v->value
                         : builder.create<mlir::arith::BitcastOp>(
                               loc(e.loc), valueType(to, v->type.shape), v->value);
  return out;
}

MaybeValue Generator::soleOperand(const CallExpr &e) {
  if (!checkArity(e, 1, 1))
    return std::nullopt;
  return genValue(*e.args[0], "operand");
}

MaybeValue Generator::genUnaryMath(const CallExpr &e) {
  MaybeValue v = soleOperand(e);
  if (!v)
    return std::nullopt;
  const std::string &name = e.callee;
  mlir::Location l = loc(e.loc);
  if (v->type.dtype == DType::I1)
    return error(e.args[0]->loc, "'" + name + "' is not defined on bool");
  if (rejectF8(v->type.dtype, e.args[0]->loc, "'" + name + "'"))
    return std::nullopt;
  TValue out;
  if (name == "abs") {
    out.type = v->type;
    out.type.weak = false;
    if (isUnsigned(v->type.dtype)) // already its own magnitude
      out.value = v->value;
    else
      out.value = isFloat(v->type.dtype)
                      ? (Value)builder.create<mlir::math::AbsFOp>(l, v->value)
                      : builder.create<mlir::math::AbsIOp>(l, v->value);
    return out;
  }
  if (name == "popcount" || name == "clz") { // bits of an integer, as stored
    if (isFloat(v->type.dtype))
      return error(e.args[0]->loc, "'" + name + "' counts the bits of an integer, got " +
                                       withArticle(v->type.str()));
    out.type = v->type;
    out.type.weak = false;
    out.value = name == "popcount"
                    ? (Value)builder.create<mlir::math::CtPopOp>(l, v->value)
                    : builder.create<mlir::math::CountLeadingZerosOp>(l, v->value);
    return out;
  }
  // Float-only math: integers are converted to f32 first.
  DType dt = isFloat(v->type.dtype) ? v->type.dtype : DType::F32;
  Value x = convert(*v, dt, v->type.shape, e.loc).value;
  out.type = SType::value(dt, v->type.shape);
  using namespace mlir::math;
  if (name == "exp") out.value = builder.create<ExpOp>(l, x);
  else if (name == "exp2") out.value = builder.create<Exp2Op>(l, x);
  else if (name == "log") out.value = builder.create<LogOp>(l, x);
  else if (name == "log2") out.value = builder.create<Log2Op>(l, x);
  else if (name == "sqrt") out.value = builder.create<SqrtOp>(l, x);
  else if (name == "rsqrt") out.value = builder.create<RsqrtOp>(l, x);
  else if (name == "tanh") out.value = builder.create<TanhOp>(l, x);
  else if (name == "erf") out.value = builder.create<ErfOp>(l, x);
  else if (name == "sin") out.value = builder.create<SinOp>(l, x);
  else if (name == "cos") out.value = builder.create<CosOp>(l, x);
  else if (name == "floor") out.value = builder.create<FloorOp>(l, x);
  else if (name == "ceil") out.value = builder.create<CeilOp>(l, x);
  else if (name == "trunc") out.value = builder.create<TruncOp>(l, x);
  else if (name == "round") out.value = builder.create<RoundEvenOp>(l, x);
  else if (name == "tan") out.value = builder.create<TanOp>(l, x);
  else if (name == "asin") out.value = builder.create<AsinOp>(l, x);
  else if (name == "acos") out.value = builder.create<AcosOp>(l, x);
  else if (name == "atan") out.value = builder.create<AtanOp>(l, x);
  else if (name == "sinh") out.value = builder.create<SinhOp>(l, x);
  else if (name == "cosh") out.value = builder.create<CoshOp>(l, x);
  else if (name == "log1p") out.value = builder.create<Log1pOp>(l, x);
  else if (name == "expm1") out.value = builder.create<ExpM1Op>(l, x);
  else if (name == "log10") out.value = builder.create<Log10Op>(l, x);
  else if (name == "asinh") out.value = builder.create<AsinhOp>(l, x);
  else if (name == "acosh") out.value = builder.create<AcoshOp>(l, x);
  else if (name == "atanh") out.value = builder.create<AtanhOp>(l, x);
  else if (name == "cbrt") out.value = builder.create<CbrtOp>(l, x);
  else if (name == "sigmoid") {
    // 1 / (1 + exp(-x))
    Value neg = builder.create<mlir::arith::NegFOp>(l, x);
    Value ex = builder.create<ExpOp>(l, neg);
    Value one = splat(Const::ofFloat(1.0), dt, v->type.shape, e.loc);
    Value den = builder.create<mlir::arith::AddFOp>(l, one, ex);
    out.value = builder.create<mlir::arith::DivFOp>(l, one, den);
  } else
    return error(e.loc, "unknown builtin '" + name + "'");
  return out;
}

MaybeValue Generator::genFloatMath(const CallExpr &e) {
  const std::string &name = e.callee;
  size_t arity = name == "clamp" ? 3 : 2;
  if (!checkArity(e, arity, arity))
    return std::nullopt;
  std::vector<TValue> ops;
  Shape shape;
  std::optional<SType> common;
  for (auto &a : e.args) {
    MaybeValue v = genValue(*a, "operand");
    if (!v)
      return std::nullopt;
    if (v->type.dtype == DType::I1)
      return error(a->loc, "'" + name + "' is not defined on bool");
    auto s = broadcastShapes(shape, v->type.shape);
    if (!s)
      return error(a->loc, name + " operand shape " + shapeStr(v->type.shape) +
                               " does not broadcast with " + shapeStr(shape));
    shape = *s;
    common = common ? SType::scalar(promote(*common, v->type), common->weak && v->type.weak)
                    : v->type;
    ops.push_back(*v);
  }
  if (!checkTileSize(shape, e.loc))
    return std::nullopt;
  DType dt = common->dtype;
  if (name == "umulhi" && (!isInteger(dt) || dtypeBits(dt) < 32))
    return error(e.loc, "'umulhi' multiplies 32- or 64-bit integers (the high half of their "
                        "unsigned double-width product), got " + std::string(dtypeName(dt)));
  if (name != "clamp" && name != "umulhi" && !isFloat(dt))
    dt = DType::F32;
  if (rejectF8(dt, e.loc, "'" + name + "'"))
    return std::nullopt;
  llvm::SmallVector<Value, 3> x;
  for (const TValue &v : ops) {
    if (!constantFits(v, dt, e.loc))
      return std::nullopt;
    x.push_back(convert(v, dt, shape, e.loc).value);
  }
  mlir::Location l = loc(e.loc);
  TValue out;
  out.type = SType::value(dt, shape);
  if (name == "pow")
    out.value = builder.create<mlir::math::PowFOp>(l, x[0], x[1]);
  else if (name == "atan2")
    out.value = builder.create<mlir::math::Atan2Op>(l, x[0], x[1]);
  else if (name == "copysign")
    out.value = builder.create<mlir::math::CopySignOp>(l, x[0], x[1]);
  else if (name == "hypot")
    out.value = hypot(x[0], x[1], dt, shape, e.loc);
  else if (name == "umulhi") { // Triton's tl.umulhi: (u64(a) * u64(b)) >> 32
    using namespace mlir::arith;
    if (dtypeBits(dt) == 64) {
      out.value = builder.create<MulUIExtendedOp>(l, x[0], x[1]).getHigh();
    } else {
      mlir::Type wide = valueType(DType::I64, shape);
      Value product = builder.create<MulIOp>(l, builder.create<ExtUIOp>(l, wide, x[0]),
                                             builder.create<ExtUIOp>(l, wide, x[1]));
      Value high = builder.create<ShRUIOp>(l, product, splat(Const::ofInt(32), DType::I64, shape,
                                                             e.loc));
      out.value = builder.create<TruncIOp>(l, valueType(dt, shape), high);
    }
  }
  else // clamp: min(max(x, lo), hi), so a NaN anywhere gives NaN, as min and max do
    out.value = isFloat(dt)
                    ? builder.create<mlir::arith::MinimumFOp>(
                          l, builder.create<mlir::arith::MaximumFOp>(l, x[0], x[1]), x[2])
                          .getResult()
                : isUnsigned(dt)
                    ? builder.create<mlir::arith::MinUIOp>(
                          l, builder.create<mlir::arith::MaxUIOp>(l, x[0], x[1]), x[2])
                          .getResult()
                    : builder.create<mlir::arith::MinSIOp>(
                          l, builder.create<mlir::arith::MaxSIOp>(l, x[0], x[1]), x[2])
                          .getResult();
  return out;
}

Value Generator::hypot(Value x, Value y, DType dt, const Shape &shape, SMLoc at) {
  // sqrt(x^2 + y^2) without overflow or underflow: m sqrt(1 + (n / m)^2) for
  // m = max(|x|, |y|) and n = min(|x|, |y|); 0 when both are 0; +inf when either
  // is infinite, even if the other is NaN (as C's hypot); else NaN propagates.
  mlir::Location l = loc(at);
  using namespace mlir::arith;
  Value a = builder.create<mlir::math::AbsFOp>(l, x);
  Value b = builder.create<mlir::math::AbsFOp>(l, y);
  Value m = builder.create<MaximumFOp>(l, a, b);
  Value n = builder.create<MinimumFOp>(l, a, b);
  Value r = builder.create<DivFOp>(l, n, m);
  Value one = splat(Const::ofFloat(1.0), dt, shape, at);
  Value root = builder.create<mlir::math::SqrtOp>(
      l, builder.create<AddFOp>(l, one, builder.create<MulFOp>(l, r, r)));
  Value h = builder.create<MulFOp>(l, m, root);
  Value zero = splat(Const::ofFloat(0.0), dt, shape, at);
  Value inf = splat(Const::ofFloat(INFINITY), dt, shape, at);
  h = builder.create<SelectOp>(l, builder.create<CmpFOp>(l, CmpFPredicate::OEQ, m, zero), zero, h);
  Value infinite = builder.create<OrIOp>(l, builder.create<CmpFOp>(l, CmpFPredicate::OEQ, a, inf),
                                         builder.create<CmpFOp>(l, CmpFPredicate::OEQ, b, inf));
  return builder.create<SelectOp>(l, infinite, inf, h);
}

MaybeValue Generator::genClassify(const CallExpr &e) {
  MaybeValue v = soleOperand(e);
  if (!v)
    return std::nullopt;
  const std::string &name = e.callee;
  const Shape &shape = v->type.shape;
  TValue out;
  out.type = SType::value(DType::I1, shape);
  if (!isFloat(v->type.dtype)) {
    out.value = splat(Const::ofInt(name == "isfinite"), DType::I1, shape, e.loc);
    return out;
  }
  mlir::Location l = loc(e.loc);
  using P = mlir::arith::CmpFPredicate;
  if (name == "isnan") {
    out.value = builder.create<mlir::arith::CmpFOp>(l, P::UNO, v->value, v->value);
    return out;
  }
  // |x| == inf, or |x| < inf (false for NaN).
  Value mag = builder.create<mlir::math::AbsFOp>(l, v->value);
  Value inf = splat(Const::ofFloat(std::numeric_limits<double>::infinity()), v->type.dtype, shape,
                    e.loc);
  out.value = builder.create<mlir::arith::CmpFOp>(l, name == "isinf" ? P::OEQ : P::OLT, mag, inf);
  return out;
}

MaybeValue Generator::genLoad(const CallExpr &e) {
  if (!checkArity(e, 1, 1, {"mask", "other"}))
    return std::nullopt;
  MaybeValue view = genExpr(*e.args[0]);
  if (!view)
    return std::nullopt;
  if (view->type.kind != SType::View)
    return error(e.args[0]->loc, "load needs a view such as x[i, j] or x.tile(...), got " +
                                     withArticle(view->type.str()));
  DType dt = view->type.dtype;
  const Shape &shape = view->type.shape;
  mlir::Location l = loc(e.loc);
  Value other;
  if (const KeywordArg *kw = e.kwarg("other")) {
    MaybeValue o = genValue(*kw->value, "'other' value");
    if (!o)
      return std::nullopt;
    if (o->type.dtype != dt &&
        (!o->type.weak || (isFloat(o->type.dtype) && !isFloat(dt))))
      return error(kw->value->loc, "'other' has type " + o->type.str() + " but the tensor holds " +
                                       dtypeName(dt));
    if (view->view->block && o->type.kind != SType::Scalar)
      return error(kw->value->loc, "'other' of a block load must be a scalar");
    if (!constantFits(*o, dt, kw->value->loc))
      return std::nullopt;
    auto s = broadcastShapes(o->type.shape, shape);
    if (!s || *s != shape)
      return error(kw->value->loc, "'other' shape " + shapeStr(o->type.shape) +
                                       " does not broadcast to " + shapeStr(shape));
    other = convert(*o, dt, view->view->block ? Shape{} : shape, kw->value->loc).value;
  }
  TValue out;
  out.type = SType::value(dt, shape);
  mlir::Type resultType = valueType(dt, shape);
  Value mask;
  if (!maskArg(e, *view, mask))
    return std::nullopt;
  if (view->view->block)
    out.value = builder.create<LoadBlockOp>(l, resultType, view->view->memory,
                                            view->view->coords, other);
  else
    out.value = builder.create<LoadOp>(l, resultType, view->view->memory, view->view->coords,
                                       mask, other);
  return out;
}

bool Generator::maskArg(const CallExpr &e, const TValue &view, Value &mask) {
  const KeywordArg *kw = e.kwarg("mask");
  if (!kw)
    return true;
  if (view.view->block) {
    error(kw->loc, "mask= is not supported on block views; out-of-bounds elements "
                   "are masked automatically");
    return false;
  }
  const Shape &shape = view.type.shape;
  MaybeValue m = genValue(*kw->value, "mask");
  if (!m)
    return false;
  if (m->type.dtype != DType::I1) {
    error(kw->value->loc, "mask must be bool, got " + m->type.str());
    return false;
  }
  auto s = broadcastShapes(m->type.shape, shape);
  if (!s || *s != shape) {
    error(kw->value->loc, "mask shape " + shapeStr(m->type.shape) + " does not broadcast to " +
                              shapeStr(shape));
    return false;
  }
  mask = convert(*m, DType::I1, shape, kw->value->loc).value;
  return true;
}

/// The checks `store` and the atomics share: a view, then a value that fits it,
/// converted to the tensor's element type and the view's shape.
MaybeValue Generator::genStoredValue(const CallExpr &e, size_t arg, const TValue &view,
                                      const char *what) {
  const Expr &valueExpr = *e.args[arg];
  MaybeValue v = genValue(valueExpr, what);
  if (!v)
    return std::nullopt;
  DType dt = view.type.dtype;
  const Shape &shape = view.type.shape;
  if (v->type.dtype != dt && (!v->type.weak || (isFloat(v->type.dtype) && !isFloat(dt))))
    return error(valueExpr.loc, "cannot store " + v->type.str() + " into tensor '" +
                                    view.view->tensorName + "' of " + dtypeName(dt) +
                                    "; convert it with cast<" + dtypeName(dt) + ">(...)");
  auto s = broadcastShapes(v->type.shape, shape);
  if (!s || *s != shape)
    return error(valueExpr.loc, std::string(what) + " of shape " + shapeStr(v->type.shape) +
                                    " does not fit the view of shape " + shapeStr(shape));
  if (!constantFits(*v, dt, valueExpr.loc))
    return std::nullopt;
  return convert(*v, dt, shape, valueExpr.loc);
}

MaybeValue Generator::genStore(const CallExpr &e) {
  if (!checkArity(e, 2, 2, {"mask"}))
    return std::nullopt;
  MaybeValue view = genExpr(*e.args[0]);
  if (!view)
    return std::nullopt;
  if (view->type.kind != SType::View)
    return error(e.args[0]->loc, "store needs a view such as y[i, j] or y.tile(...), got " +
                                     withArticle(view->type.str()));
  MaybeValue v = genStoredValue(e, 1, *view, "stored value");
  if (!v)
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  Value mask;
  if (!maskArg(e, *view, mask))
    return std::nullopt;
  if (view->view->block)
    builder.create<StoreBlockOp>(l, view->view->memory, view->view->coords, v->value);
  else
    builder.create<StoreOp>(l, view->view->memory, view->view->coords, v->value, mask);
  TValue out;
  out.type.kind = SType::Void;
  return out;
}

MaybeValue Generator::genAtomic(const CallExpr &e) {
  std::string name = e.callee;
  std::optional<ReduceKind> kind = llvm::StringSwitch<std::optional<ReduceKind>>(name)
                                       .Case("atomic_add", ReduceKind::Sum)
                                       .Case("atomic_max", ReduceKind::Max)
                                       .Case("atomic_min", ReduceKind::Min)
                                       .Case("atomic_and", ReduceKind::And)
                                       .Case("atomic_or", ReduceKind::Or)
                                       .Case("atomic_xor", ReduceKind::Xor)
                                       .Default(std::nullopt);
  bool cas = name == "atomic_cas";
  size_t arity = cas ? 3 : 2;
  if (!checkArity(e, arity, arity, {"mask", "sem"}))
    return std::nullopt;
  // sem = "relaxed" | "acquire" | "release" | "acq_rel" (Triton's names); the
  // default is relaxed for read-modify-writes and acq_rel for exchanges.
  std::optional<MemoryOrder> sem;
  if (const KeywordArg *kw = e.kwarg("sem")) {
    if (kw->value->kind == Expr::StringLit)
      sem = symbolizeMemoryOrder(static_cast<const StringLitExpr &>(*kw->value).value);
    if (!sem)
      return error(kw->value->loc,
                   "sem must be \"relaxed\", \"acquire\", \"release\" or \"acq_rel\"");
  }
  MaybeValue view = genExpr(*e.args[0]);
  if (!view)
    return std::nullopt;
  if (view->type.kind != SType::View || view->view->block)
    return error(e.args[0]->loc, name + " needs a gather view such as h[bins], got " +
                                     (view->type.kind == SType::View
                                          ? std::string("a block view")
                                          : withArticle(view->type.str())));
  DType dt = view->type.dtype;
  bool floats = kind && !isBitwise(*kind); // add, max and min also take f32
  if (!(isInteger(dt) && dtypeBits(dt) >= 32) && (!floats || dt != DType::F32))
    return error(e.args[0]->loc, name + " works on " +
                                     (floats ? "i32, i64, u32, u64 and f32"
                                             : "i32, i64, u32 and u64") +
                                     " tensors; '" + view->view->tensorName + "' holds " +
                                     dtypeName(dt));
  MaybeValue compare;
  if (cas && !(compare = genStoredValue(e, 1, *view, "compared value")))
    return std::nullopt;
  MaybeValue v = genStoredValue(e, arity - 1, *view, "value");
  if (!v)
    return std::nullopt;
  Value mask;
  if (!maskArg(e, *view, mask))
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  TValue out;
  out.type = SType::value(dt, view->type.shape);
  if (kind)
    out.value = builder.create<AtomicRMWOp>(l, orderedKind(*kind, dt), view->view->memory,
                                            v->value, view->view->coords, mask,
                                            sem.value_or(MemoryOrder::Relaxed));
  else
    out.value = builder.create<AtomicSwapOp>(l, view->view->memory, v->value, view->view->coords,
                                             compare ? compare->value : Value(), mask,
                                             sem.value_or(MemoryOrder::AcqRel));
  return out;
}

std::optional<Generator::ReductionArgs> Generator::reductionArgs(const CallExpr &e) {
  bool extremes = e.callee == "max" || e.callee == "min"; // may also return the indices
  llvm::SmallVector<llvm::StringRef, 3> keywords{"axis", "keepdims"};
  if (extremes)
    keywords.push_back("return_indices");
  if (!checkArity(e, 1, 1, keywords))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "reduction operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + e.callee + "' reduces a tile, got " + withArticle(v->type.str()));
  if (rejectF8(v->type.dtype, e.args[0]->loc, "'" + e.callee + "'"))
    return std::nullopt;
  if (e.callee == "xor_sum" && isFloat(v->type.dtype))
    return error(e.args[0]->loc, "'xor_sum' combines integer bits; got a tile of " +
                                     std::string(dtypeName(v->type.dtype)));
  ReductionArgs r;
  std::optional<bool> keepdims = boolKeyword(e, "keepdims");
  std::optional<bool> withIndices = boolKeyword(e, "return_indices");
  if (!keepdims || !withIndices)
    return std::nullopt;
  r.keepdims = *keepdims;
  r.withIndices = *withIndices;
  mlir::Location l = loc(e.loc);
  r.src = *v;
  // Reductions of bools are done in i32 (sums count).
  if (r.src.type.dtype == DType::I1)
    r.src = convert(r.src, DType::I32, r.src.type.shape, e.loc);
  DType dt = r.src.type.dtype;
  Shape &shape = r.src.type.shape;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, shape.size());
    if (!a)
      return std::nullopt;
    r.axis = *a;
    return r;
  }
  // No axis: reduce every element, in row-major order.
  if (r.keepdims)
    return error(e.loc, "keepdims needs an axis");
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (shape.size() > 1)
    r.src.value = builder.create<ReshapeOp>(
        l, mlir::RankedTensorType::get({total}, mlirType(dt)), r.src.value);
  shape = {total};
  r.axis = 0;
  return r;
}

TValue Generator::reduceAlong(const TValue &src, ReduceKind kind, int64_t axis, bool keepdims,
                              mlir::Location l) {
  DType dt = src.type.dtype;
  Shape resultShape = src.type.shape;
  resultShape.erase(resultShape.begin() + axis);
  TValue out;
  out.type = SType::value(dt, resultShape);
  out.value = builder.create<ReduceOp>(l, valueType(dt, resultShape),
                                       ReduceKindAttr::get(&ctx, orderedKind(kind, dt)), src.value,
                                       builder.getI32IntegerAttr(axis));
  if (keepdims) {
    Shape kept = src.type.shape;
    kept[axis] = 1;
    auto type = mlir::RankedTensorType::get(kept, mlirType(dt));
    out.value = resultShape.empty()
                    ? (Value)builder.create<SplatOp>(l, type, out.value)
                    : builder.create<ExpandDimsOp>(l, type, out.value,
                                                   builder.getI32IntegerAttr(axis));
    out.type = SType::tile(dt, kept);
  }
  return out;
}

MaybeValue Generator::genReduce(const CallExpr &e, ReduceKind kind) {
  auto r = reductionArgs(e);
  if (!r)
    return std::nullopt;
  TValue values = reduceAlong(r->src, kind, r->axis, r->keepdims, loc(e.loc));
  if (!r->withIndices)
    return values;
  // max/min(..., return_indices = true): Triton's (values, indices).
  TValue out;
  out.type.kind = SType::Tuple;
  out.elements = {values, argReduce(*r, kind == ReduceKind::Max, e.loc)};
  return out;
}

MaybeValue Generator::genArgReduce(const CallExpr &e, bool isMax) {
  auto r = reductionArgs(e);
  if (!r)
    return std::nullopt;
  return argReduce(*r, isMax, e.loc);
}

TValue Generator::argReduce(const ReductionArgs &r, bool isMax, SMLoc at) {
  // The index of the first extreme along the axis: reduce to the extreme, mark
  // the lanes equal to it (or NaN, which max and min propagate), and take the
  // smallest marked index. Unmarked lanes hold the extent, which never wins.
  mlir::Location l = loc(at);
  const TValue &src = r.src;
  const Shape &shape = src.type.shape;
  DType dt = src.type.dtype;
  int64_t axis = r.axis, extent = shape[axis];
  TValue extreme = reduceAlong(src, isMax ? ReduceKind::Max : ReduceKind::Min, axis,
                               /*keepdims=*/true, l);
  Value spread = broadcastValue(extreme.value, extreme.type.shape, shape, dt, l);
  using namespace mlir::arith;
  Value hit;
  if (isFloat(dt)) {
    hit = builder.create<CmpFOp>(l, CmpFPredicate::OEQ, src.value, spread);
    Value nan = builder.create<CmpFOp>(l, CmpFPredicate::UNO, src.value, src.value);
    hit = builder.create<OrIOp>(l, hit, nan);
  } else {
    hit = builder.create<CmpIOp>(l, CmpIPredicate::eq, src.value, spread);
  }
  Value lanes = axisPositions(shape, axis, l);
  Value none = splat(Const::ofInt(extent), DType::I32, shape, at);
  TValue candidates;
  candidates.type = SType::tile(DType::I32, shape);
  candidates.value = builder.create<SelectOp>(l, hit, lanes, none);
  return reduceAlong(candidates, ReduceKind::Min, axis, r.keepdims, l);
}

MaybeValue Generator::genRandom(const CallExpr &e) {
  if (!checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue seed = genValue(*e.args[0], "seed");
  if (!seed)
    return std::nullopt;
  MaybeValue offsets = genValue(*e.args[1], "offsets");
  if (!offsets)
    return std::nullopt;
  if (!seed->type.shape.empty() || !isInteger(seed->type.dtype))
    return error(e.args[0]->loc, "'" + e.callee + "' needs an integer scalar seed, got " +
                                     withArticle(seed->type.str()));
  if (!isInteger(offsets->type.dtype) || dtypeBits(offsets->type.dtype) < 32)
    return error(e.args[1]->loc, "'" + e.callee + "' needs i32 or i64 offsets, got " +
                                     withArticle(offsets->type.str()));
  // Philox-4x32-10 as Triton's tl.rand / tl.randint / tl.randn compute it, so the
  // same seed and offsets give the same numbers: counter (offset low word, offset
  // high word, 0, 0), key (seed low word, seed high word), ten rounds.
  mlir::Location l = loc(e.loc);
  const Shape &shape = offsets->type.shape;
  using namespace mlir::arith;
  auto word = [&](int64_t v) {
    return splat(Const::ofInt(int32_t(uint32_t(v))), DType::I32, shape, e.loc);
  };
  auto wide = [&](int64_t v) { return splat(Const::ofInt(v), DType::I64, shape, e.loc); };
  auto f32 = [&](double v) { return splat(Const::ofFloat(v), DType::F32, shape, e.loc); };
  auto typeOf = [&](DType dt) { return valueType(dt, shape); };
  auto low = [&](Value v64) { return builder.create<TruncIOp>(l, typeOf(DType::I32), v64); };
  auto high = [&](Value v64) { return low(builder.create<ShRUIOp>(l, v64, wide(32))); };
  // The high 32 bits of the unsigned 64-bit product.
  auto mulhi = [&](int64_t a, Value x) {
    Value x64 = builder.create<ExtUIOp>(l, typeOf(DType::I64), x);
    return high(builder.create<MulIOp>(l, x64, wide(a)));
  };
  TValue seed64 = convert(*seed, DType::I64, shape, e.loc);
  Value k0 = low(seed64.value), k1 = high(seed64.value);
  TValue off = convert(*offsets, offsets->type.dtype, shape, e.loc);
  Value c0, c1, c2 = word(0), c3 = word(0);
  if (dtypeBits(offsets->type.dtype) == 64) {
    c0 = low(off.value);
    c1 = high(off.value);
  } else {
    c0 = off.value;
    c1 = word(0);
  }
  const int64_t roundA = 0xD2511F53, roundB = 0xCD9E8D57, keyA = 0x9E3779B9, keyB = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    Value p0 = c0, p2 = c2;
    c0 = builder.create<XOrIOp>(l, builder.create<XOrIOp>(l, mulhi(roundB, p2), c1), k0);
    c2 = builder.create<XOrIOp>(l, builder.create<XOrIOp>(l, mulhi(roundA, p0), c3), k1);
    c1 = builder.create<MulIOp>(l, p2, word(roundB));
    c3 = builder.create<MulIOp>(l, p0, word(roundA));
    k0 = builder.create<AddIOp>(l, k0, word(keyA));
    k1 = builder.create<AddIOp>(l, k1, word(keyB));
  }
  TValue out;
  if (e.callee == "randint") {
    out.type = SType::value(DType::I32, shape);
    out.value = c0;
    return out;
  }
  // A uniform f32 in [0, 1): the 32 bits as a signed integer, folded onto
  // [0, 2^31) by complement, times the largest scale that keeps 2^31 - 1 below 1.
  auto uniform = [&](Value bits) -> Value {
    Value negative = builder.create<CmpIOp>(l, CmpIPredicate::slt, bits, word(0));
    Value folded = builder.create<SelectOp>(l, negative,
                                            builder.create<XOrIOp>(l, bits, word(-1)), bits);
    Value f = builder.create<SIToFPOp>(l, typeOf(DType::F32), folded);
    return builder.create<MulFOp>(l, f, f32(4.6566127342e-10));
  };
  out.type = SType::value(DType::F32, shape);
  if (e.callee == "rand") {
    out.value = uniform(c0);
    return out;
  }
  // randn: Box-Muller on the first two words, r * cos(2 pi u2), r = sqrt(-2 log u1).
  Value u1 = builder.create<MaximumFOp>(l, f32(1.0e-7), uniform(c0));
  Value theta = builder.create<MulFOp>(l, f32(6.283185307179586), uniform(c1));
  Value r = builder.create<mlir::math::SqrtOp>(
      l, builder.create<MulFOp>(l, f32(-2.0), builder.create<mlir::math::LogOp>(l, u1)));
  out.value = builder.create<MulFOp>(l, r, builder.create<mlir::math::CosOp>(l, theta));
  return out;
}

MaybeValue Generator::genScan(const CallExpr &e) {
  if (!checkArity(e, 1, 1, {"axis", "reverse"}))
    return std::nullopt;
  std::optional<bool> reverse = boolKeyword(e, "reverse");
  if (!reverse)
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "scan operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + e.callee + "' scans a tile, got " +
                                     withArticle(v->type.str()));
  if (rejectF8(v->type.dtype, e.args[0]->loc, "'" + e.callee + "'"))
    return std::nullopt;
  TValue src = *v;
  if (src.type.dtype == DType::I1)
    src = convert(src, DType::I32, src.type.shape, e.loc); // running counts of bools
  int64_t axis = 0;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, src.type.shape.size());
    if (!a)
      return std::nullopt;
    axis = *a;
  } else if (src.type.shape.size() != 1) {
    return error(e.loc, "'" + e.callee + "' of a rank-" +
                            llvm::Twine(src.type.shape.size()) + " tile needs axis=");
  }
  ReduceKind kind = e.callee == "cumsum"    ? ReduceKind::Sum
                    : e.callee == "cumprod" ? ReduceKind::Prod
                    : e.callee == "cummax"  ? ReduceKind::Max
                                            : ReduceKind::Min;
  // reverse = true scans from the end: the scan of the flipped tile, flipped back.
  mlir::Location l = loc(e.loc);
  Value in = *reverse ? flipAlong(src.value, src.type.shape, axis, l) : src.value;
  Value scanned = builder.create<ScanOp>(
      l, in.getType(), ReduceKindAttr::get(&ctx, orderedKind(kind, src.type.dtype)), in,
      builder.getI32IntegerAttr(axis));
  TValue out;
  out.type = SType::tile(src.type.dtype, src.type.shape);
  out.value = *reverse ? flipAlong(scanned, src.type.shape, axis, l) : scanned;
  return out;
}

Value Generator::flipAlong(Value tile, const Shape &shape, int64_t axis, mlir::Location l) {
  Value last = builder.create<mlir::arith::ConstantOp>(
      l, mlir::DenseElementsAttr::get(
             mlir::RankedTensorType::get(shape, builder.getI32Type()),
             builder.getI32IntegerAttr(static_cast<int32_t>(shape[axis] - 1)).getValue()));
  Value reversed = builder.create<mlir::arith::SubIOp>(l, last, axisPositions(shape, axis, l));
  return builder.create<GatherOp>(l, tile.getType(), tile, reversed,
                                  builder.getI32IntegerAttr(axis));
}

MaybeValue Generator::genMinMax(const CallExpr &e, bool isMax) {
  if (e.args.size() == 1)
    return genReduce(e, isMax ? ReduceKind::Max : ReduceKind::Min);
  if (!checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "operand");
  if (!b)
    return std::nullopt;
  auto shape = broadcastShapes(a->type.shape, b->type.shape);
  if (!shape)
    return error(e.loc, "shapes " + shapeStr(a->type.shape) + " and " +
                            shapeStr(b->type.shape) + " do not broadcast");
  if (!checkTileSize(*shape, e.loc))
    return std::nullopt;
  DType dt = promote(a->type, b->type);
  if (!constantFits(*a, dt, e.loc) || !constantFits(*b, dt, e.loc))
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (a->cst && b->cst && shape->empty()) {
    Const x = convertConst(*a->cst, dt), y = convertConst(*b->cst, dt);
    bool weak = a->type.weak && b->type.weak;
    if (isFloat(dt))
      return constant(Const::ofFloat(isMax ? std::max(x.f, y.f) : std::min(x.f, y.f)), dt,
                      weak, l);
    // Unsigned values compare as unsigned (u64 past 2^63 is negative in Const).
    bool xLess = isUnsigned(dt) ? uint64_t(x.i) < uint64_t(y.i) : x.i < y.i;
    return constant(xLess == isMax ? y : x, dt, weak, l);
  }
  Value x = convert(*a, dt, *shape, e.loc).value, y = convert(*b, dt, *shape, e.loc).value;
  using namespace mlir::arith;
  TValue out;
  out.type = SType::value(dt, *shape);
  if (isFloat(dt))
    out.value = isMax ? (Value)builder.create<MaximumFOp>(l, x, y) : builder.create<MinimumFOp>(l, x, y);
  else if (isUnsigned(dt))
    out.value = isMax ? (Value)builder.create<MaxUIOp>(l, x, y) : builder.create<MinUIOp>(l, x, y);
  else
    out.value = isMax ? (Value)builder.create<MaxSIOp>(l, x, y) : builder.create<MinSIOp>(l, x, y);
  return out;
}

MaybeValue Generator::genDot(const CallExpr &e) {
  if (!checkArity(e, 2, 3, {"tf32"}))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "dot operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "dot operand");
  if (!b)
    return std::nullopt;
  if (a->type.shape.size() != 2 || b->type.shape.size() != 2)
    return error(e.loc, "dot multiplies 2-D tiles, got " + a->type.str() + " and " +
                            b->type.str());
  if (a->type.shape[1] != b->type.shape[0])
    return error(e.loc, "dot: inner dimensions differ (" + a->type.str() + " times " +
                            b->type.str() + ")");
  if (a->type.dtype != b->type.dtype)
    return error(e.loc, "dot: operands have different element types (" +
                            llvm::Twine(dtypeName(a->type.dtype)) + " and " +
                            dtypeName(b->type.dtype) + "); cast one of them");
  if (a->type.dtype == DType::I1)
    return error(e.loc, "dot is not defined on bool");
  Shape shape = {a->type.shape[0], b->type.shape[1]};
  DType in = a->type.dtype;
  DType accType = isFloat(in)     ? (in == DType::F64 ? DType::F64 : DType::F32)
                  : isUnsigned(in) ? (in == DType::U64 ? DType::U64 : DType::U32)
                                   : (in == DType::I64 ? DType::I64 : DType::I32);
  TValue acc;
  mlir::Location l = loc(e.loc);
  if (e.args.size() == 3) {
    MaybeValue c = genValue(*e.args[2], "accumulator");
    if (!c)
      return std::nullopt;
    if (c->type.kind != SType::Tile || c->type.shape != shape)
      return error(e.args[2]->loc, "dot accumulator must be " +
                                       withArticle(SType::tile(c->type.dtype, shape).str()) +
                                       " tile, got " + c->type.str());
    if (isFloat(c->type.dtype) != isFloat(a->type.dtype))
      return error(e.args[2]->loc, "dot accumulator " + c->type.str() +
                                       " does not match operands of " +
                                       dtypeName(a->type.dtype));
    if (rejectF8(c->type.dtype, e.args[2]->loc, "accumulating a dot"))
      return std::nullopt;
    acc = *c;
  } else {
    acc = convert(constant(Const::ofInt(0), accType, false, l), accType, shape, e.loc);
  }
  bool tf32 = false;
  if (const KeywordArg *kw = e.kwarg("tf32")) {
    MaybeValue v = genValue(*kw->value, "tf32");
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar || v->type.dtype != DType::I1)
      return error(kw->value->loc, "tf32 must be a bool, got " + withArticle(v->type.str()));
    if (!v->cst)
      return error(kw->value->loc,
                   "tf32 must be known at compile time (true, false, or built from params)");
    tf32 = v->cst->i != 0;
    if (tf32 && a->type.dtype != DType::F32)
      return error(kw->value->loc, "tf32 rounding applies to f32 operands, got " +
                                       llvm::Twine(dtypeName(a->type.dtype)));
    if (tf32 && acc.type.dtype != DType::F32)
      return error(e.args[2]->loc, "a tf32 dot accumulates in f32, got " +
                                       withArticle(acc.type.str()) + " accumulator");
  }
  // kiln.dot sign-extends narrow integer operands; unsigned ones are
  // zero-extended here into the narrowest signed type that holds them (u8 in
  // i16: tiles stay half the size of i32 ones in shared memory), or the
  // accumulator's (sums and products are the same bits either way).
  Value x = a->value, y = b->value;
  if (isUnsigned(in) && dtypeBits(in) < dtypeBits(acc.type.dtype)) {
    DType wide = in == DType::U8 && dtypeBits(acc.type.dtype) > 16 ? DType::I16
                                                                     : acc.type.dtype;
    x = castValue(x, in, wide, l);
    y = castValue(y, in, wide, l);
  }
  TValue out;
  out.type = SType::tile(acc.type.dtype, shape);
  auto dot = builder.create<DotOp>(l, acc.value.getType(), x, y, acc.value);
  if (tf32)
    dot.setTf32(true);
  out.value = dot;
  return out;
}

MaybeValue Generator::genShapeOp(const CallExpr &e) {
  const std::string &name = e.callee;
  if (!checkArity(e, name == "trans" ? 1 : 2, 2))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, "'" + name + "' needs a tile, got " + withArticle(v->type.str()));
  DType dt = v->type.dtype;
  const Shape &shape = v->type.shape;
  mlir::Location l = loc(e.loc);
  TValue out;
  if (name == "reshape" || name == "broadcast_to") {
    auto target = constShape(*e.args[1], "target shape");
    if (!target)
      return std::nullopt;
    if (name == "reshape") {
      int64_t from = 1, to = 1;
      for (int64_t d : shape)
        from *= d;
      for (int64_t d : *target)
        to *= d;
      if (from != to)
        return error(e.loc, "cannot reshape " + shapeStr(shape) + " (" + llvm::Twine(from) +
                                " elements) to " + shapeStr(*target) + " (" + llvm::Twine(to) +
                                " elements)");
      out.type = SType::tile(dt, *target);
      out.value = builder.create<ReshapeOp>(l, valueType(dt, *target), v->value);
      return out;
    }
    auto s = broadcastShapes(shape, *target);
    if (!s || *s != *target)
      return error(e.loc, "cannot broadcast " + shapeStr(shape) + " to " + shapeStr(*target));
    return convert(*v, dt, *target, e.loc);
  }
  if (name == "expand_dims") {
    auto axis = axisArg(*e.args[1], shape.size(), /*allowEnd=*/true);
    if (!axis)
      return std::nullopt;
    Shape result = shape;
    result.insert(result.begin() + *axis, 1);
    out.type = SType::tile(dt, result);
    out.value = builder.create<ExpandDimsOp>(l, valueType(dt, result), v->value,
                                             builder.getI32IntegerAttr(*axis));
    return out;
  }
  // trans
  llvm::SmallVector<int32_t> perm;
  if (e.args.size() == 2) {
    if (e.args[1]->kind != Expr::List)
      return error(e.args[1]->loc, "the permutation must be a list like [1, 0]");
    for (auto &p : static_cast<const ListExpr &>(*e.args[1]).elements) {
      auto a = constInt(*p, "permutation entry");
      if (!a)
        return std::nullopt;
      perm.push_back(static_cast<int32_t>(*a));
    }
    llvm::SmallVector<bool> seen(shape.size(), false);
    if (perm.size() != shape.size())
      return error(e.args[1]->loc, "permutation has " + llvm::Twine(perm.size()) +
                                       " entries for a tile of rank " + llvm::Twine(shape.size()));
    for (int32_t p : perm) {
      if (p < 0 || p >= static_cast<int32_t>(shape.size()) || seen[p])
        return error(e.args[1]->loc, "not a permutation of 0.." + llvm::Twine(shape.size() - 1));
      seen[p] = true;
    }
  } else {
    if (shape.size() != 2)
      return error(e.loc, "trans without a permutation needs a 2-D tile, got " + v->type.str());
    perm = {1, 0};
  }
  Shape result;
  for (int32_t p : perm)
    result.push_back(shape[p]);
  out.type = SType::tile(dt, result);
  out.value = builder.create<TransOp>(l, valueType(dt, result), v->value, perm);
  return out;
}

MaybeValue Generator::genGather(const CallExpr &e) {
  if (!checkArity(e, 2, 3, {"axis"}))
    return std::nullopt;
  MaybeValue src = genValue(*e.args[0], "gather source");
  if (!src)
    return std::nullopt;
  if (src->type.kind != SType::Tile)
    return error(e.args[0]->loc, "gather needs a tile to pick from, got " +
                                     withArticle(src->type.str()));
  MaybeValue index = genValue(*e.args[1], "gather index");
  if (!index)
    return std::nullopt;
  DType it = index->type.dtype;
  if (index->type.kind != SType::Tile || isFloat(it) || it == DType::I1)
    return error(e.args[1]->loc, "a gather index must be an integer tile, got " +
                                     withArticle(index->type.str()));
  if (dtypeBits(it) == 64)
    return error(e.args[1]->loc, "a gather index must have at most 32 bits; cast it with "
                                 "cast<i32>(...)");
  const Shape &shape = src->type.shape, &ishape = index->type.shape;
  int64_t rank = shape.size();
  std::optional<int64_t> axis;
  if (!optionalAxis(e, 2, rank, axis))
    return std::nullopt;
  if (!axis && rank != 1)
    return error(e.loc, "gather from a rank-" + llvm::Twine(rank) + " tile needs an axis");
  axis = axis.value_or(0);
  if (static_cast<int64_t>(ishape.size()) != rank)
    return error(e.args[1]->loc, "the index " + index->type.str() +
                                     " must have the source's rank (" + llvm::Twine(rank) + ")");
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && ishape[d] != shape[d])
      return error(e.args[1]->loc, "the index " + index->type.str() + " must match the source " +
                                       src->type.str() + " in every dimension but the axis (" +
                                       llvm::Twine(*axis) + ")");
  TValue idx = convert(*index, DType::I32, ishape, e.args[1]->loc);
  TValue out;
  out.type = SType::tile(src->type.dtype, ishape);
  out.value = builder.create<GatherOp>(loc(e.loc), valueType(src->type.dtype, ishape),
                                       src->value, idx.value,
                                       builder.getI32IntegerAttr(static_cast<int32_t>(*axis)));
  return out;
}

MaybeValue Generator::genSort(const CallExpr &e) {
  const std::string &name = e.callee; // sort or argsort
  if (!checkArity(e, 1, 1, {"axis", "descending"}))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "sort operand");
  if (!v)
    return std::nullopt;
  DType dt = v->type.dtype;
  if (v->type.kind != SType::Tile || dt == DType::I1 || isF8(dt))
    return error(e.args[0]->loc, name + " needs a tile of integers or f16/bf16/f32/f64, got " +
                                     withArticle(v->type.str()));
  const Shape &shape = v->type.shape;
  int64_t rank = shape.size(), axis = rank - 1;
  if (const KeywordArg *kw = e.kwarg("axis")) {
    auto a = axisArg(*kw->value, rank);
    if (!a)
      return std::nullopt;
    axis = *a;
  }
  std::optional<bool> descendingFlag = boolKeyword(e, "descending");
  if (!descendingFlag)
    return std::nullopt;
  bool descending = *descendingFlag;
  int64_t n = shape[axis];
  if (!llvm::isPowerOf2_64(n))
    return error(e.args[0]->loc, name + " needs a power-of-two extent along the axis, got " +
                                     llvm::Twine(n) + " in " + v->type.str() +
                                     " (pad with a load's other = inf)");

  // A bitonic sorting network: log2(n) (log2(n) + 1) / 2 compare-exchange steps,
  // each pairing every element with the one whose position along the axis
  // differs in bit j and keeping the smaller or the larger by position and block.
  // argsort carries each element's original position along and breaks ties by
  // it, so its order is the stable one.
  mlir::Location l = loc(e.loc);
  Value pos = axisPositions(shape, axis, l);
  auto i32 = [&](int64_t c) { return splat(Const::ofInt(c), DType::I32, shape, e.loc); };
  auto bitClear = [&](int64_t bit) {
    Value masked = builder.create<mlir::arith::AndIOp>(l, pos, i32(bit));
    return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, masked, i32(0))
        .getResult();
  };
  // a before b in the sorted order; NaN sorts after every number (as in torch.sort).
  auto before = [&](Value a, Value b) -> Value {
    if (descending)
      std::swap(a, b);
    if (!isFloat(dt))
      return builder.create<mlir::arith::CmpIOp>(
          l, isUnsigned(dt) ? mlir::arith::CmpIPredicate::ult : mlir::arith::CmpIPredicate::slt,
          a, b);
    using P = mlir::arith::CmpFPredicate;
    Value less = builder.create<mlir::arith::CmpFOp>(l, P::OLT, a, b);
    Value bNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, b, b);
    Value aNumber = builder.create<mlir::arith::CmpFOp>(l, P::ORD, a, a);
    Value nanLast = builder.create<mlir::arith::AndIOp>(l, bNaN, aNumber);
    return builder.create<mlir::arith::OrIOp>(l, less, nanLast);
  };
  // Equal keys, NaN included (-0.0 equals 0.0).
  auto equal = [&](Value a, Value b) -> Value {
    if (!isFloat(dt))
      return builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, a, b);
    using P = mlir::arith::CmpFPredicate;
    Value same = builder.create<mlir::arith::CmpFOp>(l, P::OEQ, a, b);
    Value aNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, a, a);
    Value bNaN = builder.create<mlir::arith::CmpFOp>(l, P::UNO, b, b);
    return builder.create<mlir::arith::OrIOp>(
        l, same, builder.create<mlir::arith::AndIOp>(l, aNaN, bNaN));
  };
  bool withIndices = name == "argsort";
  llvm::SmallVector<Value, 2> tiles{v->value};
  if (withIndices)
    tiles.push_back(pos);
  auto gatherAt = [&](Value tile, Value at) -> Value {
    return builder.create<GatherOp>(l, tile.getType(), tile, at, builder.getI32IntegerAttr(axis));
  };
  auto select = [&](Value c, Value a, Value b) -> Value {
    return builder.create<mlir::arith::SelectOp>(l, c, a, b);
  };
  for (int64_t k = 2; k <= n; k *= 2) {
    for (int64_t j = k / 2; j > 0; j /= 2) {
      Value partnerPos = builder.create<mlir::arith::XOrIOp>(l, pos, i32(j));
      llvm::SmallVector<Value, 2> partners;
      for (Value t : tiles)
        partners.push_back(gatherAt(t, partnerPos));
      // The lower of the pair keeps the first in order in an ascending block.
      Value keepFirst = builder.create<mlir::arith::CmpIOp>(
          l, mlir::arith::CmpIPredicate::eq, bitClear(j), bitClear(k));
      Value partnerFirst = before(partners[0], tiles[0]);
      if (withIndices) {
        Value tie = equal(partners[0], tiles[0]);
        Value earlier = builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::slt,
                                                            partners[1], tiles[1]);
        partnerFirst = builder.create<mlir::arith::OrIOp>(
            l, partnerFirst, builder.create<mlir::arith::AndIOp>(l, tie, earlier));
      }
      for (size_t i = 0; i < tiles.size(); ++i) {
        Value t = tiles[i], p = partners[i];
        tiles[i] = select(keepFirst, select(partnerFirst, p, t), select(partnerFirst, t, p));
      }
    }
  }
  TValue out;
  out.type = SType::tile(withIndices ? DType::I32 : dt, shape);
  out.value = tiles.back();
  return out;
}

std::optional<bool> Generator::boolKeyword(const CallExpr &e, llvm::StringRef name) {
  const KeywordArg *kw = e.kwarg(name);
  if (!kw)
    return false;
  MaybeValue v = genValue(*kw->value, name.data());
  if (!v)
    return std::nullopt;
  if (!v->cst || v->type.dtype != DType::I1 || v->type.kind != SType::Scalar)
    return error(kw->value->loc, name + " must be true or false");
  return v->cst->i != 0;
}

Value Generator::axisPositions(const Shape &shape, int64_t axis, mlir::Location l) {
  int64_t n = shape[axis];
  Shape line(shape.size(), 1);
  line[axis] = n;
  Value pos = builder.create<ArangeOp>(l, valueType(DType::I32, {n}), 0, n);
  if (shape.size() > 1)
    pos = builder.create<ReshapeOp>(l, valueType(DType::I32, line), pos);
  return broadcastValue(pos, line, shape, DType::I32, l);
}

Value Generator::onlyElement(Value tile, DType dt, mlir::Location l) {
  // A max over one element is that element (NaN and -0.0 included); bools are
  // reduced as i32, as everywhere else.
  DType via = dt == DType::I1 ? DType::I32 : dt;
  if (via != dt)
    tile = castValue(tile, dt, via, l);
  Value v = builder.create<ReduceOp>(l, mlirType(via),
                                     ReduceKindAttr::get(&ctx, ReduceKind::Max), tile,
                                     builder.getI32IntegerAttr(0));
  return via == dt ? v : castValue(v, via, dt, l);
}

MaybeValue Generator::genCombine(const CallExpr &e) {
  const std::string &name = e.callee;
  bool scan = name == "associative_scan";
  llvm::StringRef flagName = scan ? "reverse" : "keepdims";
  if (!checkArity(e, 1, 3, {"axis", "combine", flagName}))
    return std::nullopt;
  // The operands: a tile, or a tuple of tiles of one shape.
  MaybeValue in = genExpr(*e.args[0]);
  if (!in)
    return std::nullopt;
  bool isTuple = in->type.kind == SType::Tuple;
  std::vector<TValue> xs = isTuple ? in->elements : std::vector<TValue>{*in};
  for (TValue &x : xs) {
    // Combined as tiles: a constant tile (ones_like(v)) must reach the combine
    // function as a tile argument, not be folded into its specialization as a
    // scalar constant, and the results are not that constant.
    x.cst.reset();
    if (x.type.kind != SType::Tile)
      return error(e.args[0]->loc, name + " needs a tile or a tuple of tiles, got " +
                                       withArticle(x.type.str()));
    if (x.type.shape != xs[0].type.shape)
      return error(e.args[0]->loc, "the tiles of " + name + "'s tuple must have one shape, got " +
                                       xs[0].type.str() + " and " + x.type.str());
  }
  auto positionalOrKeyword = [&](size_t i, llvm::StringRef kw) -> std::optional<const Expr *> {
    const KeywordArg *k = e.kwarg(kw);
    if (k && e.args.size() > i)
      return error(k->loc, "the " + kw + " is given twice");
    return k ? k->value.get() : e.args.size() > i ? e.args[i].get() : nullptr;
  };
  auto axisExpr = positionalOrKeyword(1, "axis");
  auto combineExpr = positionalOrKeyword(2, "combine");
  if (!axisExpr || !combineExpr)
    return std::nullopt;
  if (!*combineExpr)
    return error(e.loc, name + " needs a combine function: " + name + "(t, axis, f) or " + name +
                            "(t, combine = f)");
  const FnDecl *fn = nullptr;
  if ((*combineExpr)->kind == Expr::Name)
    fn = module.findFunction(static_cast<const NameExpr &>(**combineExpr).name);
  if (!fn)
    return error((*combineExpr)->loc, "the combine function must be the name of a 'fn' "
                                      "declared in this file");
  size_t arity = xs.size();
  if (fn->params.size() != 2 * arity)
    return error((*combineExpr)->loc,
                 "'" + fn->name + "' must take " + llvm::Twine(2 * arity) +
                     " parameters (two of each of the " + llvm::Twine(arity) + " operand" +
                     (arity == 1 ? "" : "s") + "), it takes " + llvm::Twine(fn->params.size()));
  std::optional<bool> flag = boolKeyword(e, flagName);
  if (!flag)
    return std::nullopt;

  mlir::Location l = loc(e.loc);
  int64_t rank = xs[0].type.shape.size();
  std::optional<int64_t> axis;
  if (*axisExpr) {
    if (!(axis = axisArg(**axisExpr, rank)))
      return std::nullopt;
  } else if (rank == 1) {
    axis = 0;
  } else if (scan) {
    return error(e.loc, name + " of a rank-" + llvm::Twine(rank) + " tile needs an axis");
  } else { // reduce every element, in row-major order
    if (*flag)
      return error(e.loc, "keepdims needs an axis");
    int64_t total = 1;
    for (int64_t d : xs[0].type.shape)
      total *= d;
    for (TValue &x : xs) {
      x.value = builder.create<ReshapeOp>(l, valueType(x.type.dtype, {total}), x.value);
      x.type.shape = {total};
    }
    axis = 0;
  }
  Shape shape = xs[0].type.shape;
  int64_t n = shape[*axis];

  // The combine function must be a function of scalars, so that applying it to
  // whole tiles combines them lane by lane: check it on scalars first (the
  // specialization is left unused and dropped by symbol-dce).
  auto describe = [](const std::vector<TValue> &vs, bool asScalars = false) {
    std::string text;
    for (auto [i, v] : llvm::enumerate(vs))
      text += (i ? ", " : "") + (asScalars ? SType::scalar(v.type.dtype) : v.type).str();
    return vs.size() == 1 ? text : "(" + text + ")";
  };
  auto call = [&](std::vector<TValue> args, SMLoc at) -> std::optional<std::vector<TValue>> {
    llvm::SmallVector<SMLoc> locs(args.size(), at);
    MaybeValue r = callHelper(*fn, std::move(args), locs, at);
    if (!r)
      return std::nullopt;
    return r->type.kind == SType::Tuple ? r->elements
           : r->type.kind == SType::Void ? std::vector<TValue>{}
                                          : std::vector<TValue>{*r};
  };
  mlir::FlatSymbolRefAttr scalarCombine; // the specialization the check made
  {
    mlir::Block scratch; // the check's call and operands are thrown away
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&scratch);
    std::vector<TValue> args;
    for (int copy = 0; copy < 2; ++copy)
      for (const TValue &x : xs) {
        TValue a;
        a.type = SType::scalar(x.type.dtype);
        a.value = builder.create<mlir::arith::ConstantOp>(l, constAttr(Const::ofInt(0),
                                                                       x.type.dtype));
        args.push_back(a);
      }
    auto results = call(std::move(args), (*combineExpr)->loc);
    if (!results)
      return std::nullopt;
    bool same = results->size() == arity;
    for (size_t i = 0; same && i < arity; ++i)
      same = (*results)[i].type.sameValueType(SType::scalar(xs[i].type.dtype));
    if (!same)
      return error((*combineExpr)->loc,
                   "'" + fn->name + "' must return " + describe(xs, true) + " for scalars " +
                       describe(xs, true) + ", got " +
                       (results->empty() ? std::string("nothing") : describe(*results)));
    for (auto callOp : scratch.getOps<mlir::func::CallOp>())
      scalarCombine = callOp.getCalleeAttr();
    scratch.clear();
  }

  // A scan is one op over the scalar and the tile specializations: each target
  // picks how to evaluate it (the CPU folds along the axis row by row; GPUs
  // expand it into a tree of gathers, kiln-expand-associative-scans). A
  // reduction is the last lane of the forward scan.
  // The result: the tile, or the tuple of tiles.
  auto packed = [&]() -> TValue {
    if (!isTuple)
      return xs[0];
    TValue out;
    out.type.kind = SType::Tuple;
    out.elements = std::move(xs);
    return out;
  };
  mlir::FlatSymbolRefAttr tileCombine;
  {
    // The tree (kiln-expand-associative-scans) calls the function on whole
    // tiles: specialize it for them too.
    mlir::Block scratch;
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&scratch);
    std::vector<TValue> args = xs;
    args.insert(args.end(), xs.begin(), xs.end());
    auto combined = call(std::move(args), (*combineExpr)->loc);
    if (!combined)
      return std::nullopt;
    for (size_t i = 0; i < arity; ++i)
      if (combined->size() != arity || !(*combined)[i].type.sameValueType(xs[i].type))
        return error((*combineExpr)->loc, "'" + fn->name + "' must return " + describe(xs) +
                                              " for tiles " + describe(xs) + ", got " +
                                              describe(*combined));
    for (auto callOp : scratch.getOps<mlir::func::CallOp>())
      tileCombine = callOp.getCalleeAttr();
    scratch.clear();
  }
  // callHelper makes a call whenever it succeeds.
  assert(scalarCombine && tileCombine && "the combine function's specializations");
  llvm::SmallVector<Value> sources;
  llvm::SmallVector<mlir::Type> types;
  for (const TValue &x : xs) {
    sources.push_back(x.value);
    types.push_back(x.value.getType());
  }
  bool reverse = scan && *flag;
  auto op = builder.create<AssociativeScanOp>(l, types, sources, scalarCombine, tileCombine,
                                              builder.getI32IntegerAttr(*axis),
                                              reverse ? builder.getUnitAttr() : nullptr);
  for (auto [x, r] : llvm::zip(xs, op.getResults()))
    x.value = r;
  if (scan)
    return packed();
  // A reduction: the last lane along the axis, which holds the whole range.
  Shape kept = shape;
  kept[*axis] = 1;
  Shape dropped = shape;
  dropped.erase(dropped.begin() + *axis);
  Value last = splat(Const::ofInt(n - 1), DType::I32, kept, e.loc);
  for (TValue &x : xs) {
    DType dt = x.type.dtype;
    x.value = builder.create<GatherOp>(l, valueType(dt, kept), x.value, last,
                                       builder.getI32IntegerAttr(*axis));
    x.type = SType::tile(dt, kept);
    if (*flag) // keepdims
      continue;
    x.type = SType::value(dt, dropped);
    x.value = dropped.empty() ? onlyElement(x.value, dt, l)
                              : builder.create<ReshapeOp>(l, valueType(dt, dropped), x.value)
                                    .getResult();
  }
  return packed();
}

MaybeValue Generator::genJoin(const CallExpr &e) {
  const std::string &name = e.callee; // join, interleave or cat
  bool isCat = name == "cat";
  if (isCat ? !checkArity(e, 2, 3, {"axis"}) : !checkArity(e, 2, 2))
    return std::nullopt;
  MaybeValue a = genValue(*e.args[0], "operand");
  if (!a)
    return std::nullopt;
  MaybeValue b = genValue(*e.args[1], "operand");
  if (!b)
    return std::nullopt;
  DType dt = promote(a->type, b->type);
  if (!constantFits(*a, dt, e.loc) || !constantFits(*b, dt, e.loc))
    return std::nullopt;
  mlir::Location l = loc(e.loc);
  if (name != "join" && (a->type.kind != SType::Tile || b->type.kind != SType::Tile))
    return error(e.loc, name + " needs two tiles, got " + a->type.str() + " and " +
                            b->type.str());
  TValue out;
  if (isCat) {
    const Shape &sa = a->type.shape, &sb = b->type.shape;
    std::optional<int64_t> given;
    if (!optionalAxis(e, 2, sa.size(), given))
      return std::nullopt;
    int64_t axis = given.value_or(0);
    Shape shape = sa;
    bool fits = sa.size() == sb.size();
    for (size_t d = 0; fits && d < sa.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || sa[d] == sb[d];
    if (!fits)
      return error(e.loc, "cat: " + a->type.str() + " and " + b->type.str() +
                              " must have the same sizes except along axis " +
                              llvm::Twine(axis));
    shape[axis] = sa[axis] + sb[axis];
    if (!checkTileSize(shape, e.loc))
      return std::nullopt;
    // Each result lane gathers from the operand it falls in; the other gather
    // is out of range (0) and not selected.
    Value pos = axisPositions(shape, axis, l);
    Value split = splat(Const::ofInt(sa[axis]), DType::I32, shape, e.loc);
    Value bPos = builder.create<mlir::arith::SubIOp>(l, pos, split);
    auto gatherFrom = [&](const TValue &v, Value at) -> Value {
      return builder.create<GatherOp>(l, valueType(dt, shape),
                                      convert(v, dt, v.type.shape, e.loc).value, at,
                                      builder.getI32IntegerAttr(axis));
    };
    Value inA = builder.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::slt, pos, split);
    out.type = SType::tile(dt, shape);
    out.value = builder.create<mlir::arith::SelectOp>(l, inA, gatherFrom(*a, pos),
                                                      gatherFrom(*b, bPos));
    return out;
  }
  auto s = broadcastShapes(a->type.shape, b->type.shape);
  if (!s)
    return error(e.loc, name + ": shapes " + shapeStr(a->type.shape) + " and " +
                            shapeStr(b->type.shape) + " do not broadcast");
  Shape joined = *s;
  joined.push_back(2);
  if (!checkTileSize(joined, e.loc))
    return std::nullopt;
  // Each operand gains a trailing dimension of 1, broadcast to 2; lane 0 of it
  // is `a`, lane 1 is `b`.
  auto widen = [&](const TValue &v) -> Value {
    TValue c = convert(v, dt, *s, e.loc);
    if (s->empty())
      return convert(c, dt, joined, e.loc).value;
    Shape one = *s;
    one.push_back(1);
    Value x = builder.create<ExpandDimsOp>(l, valueType(dt, one), c.value,
                                           builder.getI32IntegerAttr(s->size()));
    return broadcastValue(x, one, joined, dt, l);
  };
  Value first = builder.create<mlir::arith::CmpIOp>(
      l, mlir::arith::CmpIPredicate::eq, axisPositions(joined, s->size(), l),
      splat(Const::ofInt(0), DType::I32, joined, e.loc));
  out.type = SType::tile(dt, joined);
  out.value = builder.create<mlir::arith::SelectOp>(l, first, widen(*a), widen(*b));
  if (name == "interleave") {
    Shape flat = *s;
    flat.back() *= 2;
    out.type = SType::tile(dt, flat);
    out.value = builder.create<ReshapeOp>(l, valueType(dt, flat), out.value);
  }
  return out;
}

MaybeValue Generator::genSplit(const CallExpr &e) {
  if (!checkArity(e, 1, 1))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "split operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile || v->type.shape.back() != 2)
    return error(e.args[0]->loc, "split needs a tile whose last dimension is 2, got " +
                                     withArticle(v->type.str()));
  mlir::Location l = loc(e.loc);
  DType dt = v->type.dtype;
  Shape half(v->type.shape.begin(), v->type.shape.end() - 1), kept = half;
  kept.push_back(1);
  TValue out;
  out.type.kind = SType::Tuple;
  for (int64_t k = 0; k < 2; ++k) {
    Value at = splat(Const::ofInt(k), DType::I32, kept, e.loc);
    Value g = builder.create<GatherOp>(l, valueType(dt, kept), v->value, at,
                                       builder.getI32IntegerAttr(half.size()));
    TValue part;
    part.type = SType::value(dt, half);
    part.value = half.empty() ? onlyElement(g, dt, l)
                              : builder.create<ReshapeOp>(l, valueType(dt, half), g).getResult();
    out.elements.push_back(part);
  }
  return out;
}

MaybeValue Generator::genPrint(const CallExpr &e) {
  if (!checkArity(e, 1, 2, {"hex"}))
    return std::nullopt;
  std::optional<bool> hex = boolKeyword(e, "hex");
  if (!hex)
    return std::nullopt;
  if (e.args[0]->kind != Expr::StringLit)
    return error(e.args[0]->loc, "print's first argument is the text to print, a string: "
                                 "print(\"x\", x)");
  const std::string &prefix = static_cast<const StringLitExpr &>(*e.args[0]).value;
  Value value;
  bool valueUnsigned = false;
  if (e.args.size() == 2) {
    MaybeValue v = genValue(*e.args[1], "printed value");
    if (!v)
      return std::nullopt;
    if (isF8(v->type.dtype))
      return error(e.args[1]->loc, "print shows numbers; cast an fp8 value to f32 first");
    if (*hex && isFloat(v->type.dtype))
      return error(e.args[1]->loc, "hex = true prints an integer's bits; bitcast<u" +
                                       llvm::Twine(dtypeBits(v->type.dtype)) +
                                       ">(x) gives a float's");
    value = v->value;
    valueUnsigned = isUnsigned(v->type.dtype);
  } else if (*hex) {
    return error(e.loc, "hex = true needs a value to print");
  }
  mlir::Location l = loc(e.loc);
  llvm::SmallVector<Value, 3> pids = programIds(l);
  builder.create<PrintOp>(l, builder.getStringAttr(prefix), pids[0], pids[1], pids[2], value,
                          valueUnsigned, *hex);
  TValue out;
  out.type.kind = SType::Void;
  return out;
}

MaybeValue Generator::genRearrange(const CallExpr &e) {
  const std::string &name = e.callee;
  bool isHistogram = name == "histogram";
  if (name == "flip" ? !checkArity(e, 1, 2, {"axis"})
                     : !checkArity(e, isHistogram ? 2 : 1, isHistogram ? 2 : 1))
    return std::nullopt;
  MaybeValue v = genValue(*e.args[0], "operand");
  if (!v)
    return std::nullopt;
  if (v->type.kind != SType::Tile)
    return error(e.args[0]->loc, name + " needs a tile, got " + withArticle(v->type.str()));
  mlir::Location l = loc(e.loc);
  DType dt = v->type.dtype;
  const Shape &shape = v->type.shape;
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  TValue out;
  if (name == "ravel") {
    out.type = SType::tile(dt, {total});
    out.value = builder.create<ReshapeOp>(l, valueType(dt, {total}), v->value);
    return out;
  }
  if (name == "flip") {
    std::optional<int64_t> given;
    if (!optionalAxis(e, 1, shape.size(), given))
      return std::nullopt;
    out.type = v->type;
    out.value = flipAlong(v->value, shape, given.value_or(shape.size() - 1), l);
    return out;
  }
  // histogram(x, bins): counts of each value 0 .. bins - 1 among the integers of
  // a rank-1 tile; other values are not counted.
  if (shape.size() != 1 || isFloat(dt) || dt == DType::I1)
    return error(e.args[0]->loc, "histogram counts the values of a rank-1 integer tile, got " +
                                     withArticle(v->type.str()));
  auto bins = constInt(*e.args[1], "the number of bins");
  if (!bins)
    return std::nullopt;
  if (*bins < 1)
    return error(e.args[1]->loc, "histogram needs at least one bin, got " + llvm::Twine(*bins));
  Shape grid = {total, *bins};
  if (!checkTileSize(grid, e.loc))
    return std::nullopt;
  TValue values = convert(*v, DType::I64, shape, e.loc);
  Value column = builder.create<ExpandDimsOp>(l, valueType(DType::I64, {total, 1}), values.value,
                                              builder.getI32IntegerAttr(1));
  Value bin = castValue(axisPositions(grid, 1, l), DType::I32, DType::I64, l);
  Value hit = builder.create<mlir::arith::CmpIOp>(
      l, mlir::arith::CmpIPredicate::eq, broadcastValue(column, {total, 1}, grid, DType::I64, l),
      bin);
  TValue counts;
  counts.type = SType::tile(DType::I32, grid);
  counts.value = castValue(hit, DType::I1, DType::I32, l);
  return reduceAlong(counts, ReduceKind::Sum, 0, /*keepdims=*/false, l);
}

MaybeValue Generator::genSwizzle2d(const CallExpr &e) {
  if (!checkArity(e, 5, 5))
    return std::nullopt;
  std::vector<TValue> a;
  for (const ExprPtr &arg : e.args) {
    MaybeValue v = genValue(*arg, "swizzle2d operand");
    if (!v)
      return std::nullopt;
    if (v->type.kind != SType::Scalar || isFloat(v->type.dtype) || v->type.dtype == DType::I1)
      return error(arg->loc, "swizzle2d takes integer scalars (program ids and grid sizes), got " +
                                 withArticle(v->type.str()));
    a.push_back(*v);
  }
  // As tl.swizzle2d: the position ij = i nj + j of a row-major ni x nj grid,
  // renumbered so that each group of g rows is walked column by column (the
  // last group may have fewer rows).
  SMLoc at = e.loc;
  auto op = [&](BinOp o, const TValue &x, const TValue &y) { return binary(o, x, y, at); };
  const TValue &i = a[0], &j = a[1], &nj = a[3], &g = a[4];
  MaybeValue ij = op(BinOp::Mul, i, nj);
  ij = ij ? op(BinOp::Add, *ij, j) : ij;
  MaybeValue perGroup = op(BinOp::Mul, g, nj);
  if (!ij || !perGroup)
    return std::nullopt;
  MaybeValue group = op(BinOp::Div, *ij, *perGroup);
  MaybeValue firstRow = group ? op(BinOp::Mul, *group, g) : group;
  MaybeValue rowsLeft = firstRow ? op(BinOp::Sub, a[2], *firstRow) : firstRow;
  MaybeValue fewer = rowsLeft ? op(BinOp::Lt, *rowsLeft, g) : rowsLeft;
  MaybeValue within = op(BinOp::Rem, *ij, *perGroup);
  if (!fewer || !within)
    return std::nullopt;
  // The group's rows: min(rows left, g), folded when both are known.
  DType dt = promote(g.type, rowsLeft->type);
  TValue rows = convert(fewer->cst && fewer->cst->i ? *rowsLeft : g, dt, {}, at);
  if (!fewer->cst) {
    rows.value = builder.create<mlir::arith::SelectOp>(
        loc(at), fewer->value, convert(*rowsLeft, dt, {}, at).value, rows.value);
    rows.cst.reset();
  }
  MaybeValue newI = op(BinOp::Rem, *within, rows);
  newI = newI ? op(BinOp::Add, *firstRow, *newI) : newI;
  MaybeValue newJ = op(BinOp::Div, *within, rows);
  if (!newI || !newJ)
    return std::nullopt;
  TValue out;
  out.type.kind = SType::Tuple;
  out.elements = {*newI, *newJ};
  return out;
}

MaybeValue Generator::assertCondition(const CallExpr &e) {
  if (!checkArity(e, 1, 2))
    return std::nullopt;
  if (e.args.size() == 2 && e.args[1]->kind != Expr::StringLit)
    return error(e.args[1]->loc, e.callee + "'s message must be a string");
  return genValue(*e.args[0], (e.callee + " condition").c_str());
}

llvm::SmallVector<Value, 3> Generator::programIds(mlir::Location l) {
  llvm::SmallVector<Value, 3> pids;
  for (int32_t axis = 0; axis < 3; ++axis)
    pids.push_back(builder.create<ProgramIdOp>(l, builder.getI32Type(), axis));
  return pids;
}

MaybeValue Generator::genDeviceAssert(const CallExpr &e) {
  MaybeValue c = assertCondition(e);
  if (!c)
    return std::nullopt;
  if (c->type.dtype != DType::I1)
    return error(e.args[0]->loc, "device_assert needs a bool or a tile of bools, got " +
                                     withArticle(c->type.str()) +
                                     " (compare it: x != 0)");
  TValue out;
  out.type.kind = SType::Void;
  if (c->cst && c->cst->i) // holds everywhere
    return out;
  // The message names the assert's place in the source, as the front end's errors do.
  mlir::Location l = loc(e.loc);
  std::string message = "device_assert failed";
  if (auto at = mlir::dyn_cast<mlir::FileLineColLoc>(l))
    message = (at.getFilename().getValue() + ":" + llvm::Twine(at.getLine()) + ":" +
               llvm::Twine(at.getColumn()) + ": " + message)
                  .str();
  if (e.args.size() == 2)
    message += ": " + static_cast<const StringLitExpr &>(*e.args[1]).value;
  llvm::SmallVector<Value, 3> pids = programIds(l);
  builder.create<AssertOp>(l, c->value, builder.getStringAttr(message), pids[0], pids[1],
                           pids[2]);
  return out;
}

MaybeValue Generator::genStaticAssert(const CallExpr &e) {
  MaybeValue c = assertCondition(e);
  if (!c)
    return std::nullopt;
  if (c->type.kind != SType::Scalar || c->type.dtype != DType::I1 || !c->cst)
    return error(e.args[0]->loc, "static_assert needs a bool known at compile time (from "
                                 "params and constants), got " +
                                     withArticle(c->type.str()) + (c->cst ? "" : " value"));
  if (!c->cst->i) {
    std::string message = "static assertion failed";
    if (e.args.size() == 2)
      message += ": " + static_cast<const StringLitExpr &>(*e.args[1]).value;
    return error(e.loc, message);
  }
  TValue out;
  out.type.kind = SType::Void;
  return out;
}

mlir::OwningOpRef<mlir::ModuleOp> kiln::mlirGen(mlir::MLIRContext &context,
                                                const Module &module, DiagEngine &diag,
                                                const GenOptions &options,
                                                std::vector<KernelInfo> &infos) {
  return Generator(context, module, diag).run(options, infos);
}
