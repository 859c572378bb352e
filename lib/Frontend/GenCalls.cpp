//===- GenCalls.cpp - calls: helpers, builtins, casts, math ---------------===//
//
// A call is a helper (specialized per argument types and generated once) or a
// builtin, dispatched by name; the argument checks, casts and the math
// builtins live here too.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"
#include "passes/FloatBuilder.h"

namespace kiln::gen {

bool Generator::checkArity(const CallExpr &e, size_t min, size_t max,
                           llvm::ArrayRef<llvm::StringRef> keywords) {
  if (e.args.size() < min || e.args.size() > max) {
    std::string expected = min == max ? std::to_string(min)
                                      : std::to_string(min) + " to " + std::to_string(max);
    std::string hint;
    // Triton's positional axis and mask (`tl.sum(x, 1)`, `tl.store(p, v, m)`)
    // are keywords here.
    if (e.args.size() > max && !keywords.empty()) {
      hint = "; give the others by keyword:";
      for (size_t i = 0; i < keywords.size(); ++i)
        hint += (i == 0 ? " " : ", ") + keywords[i].str() + " = ...";
    }
    // `tl.program_id(axis=0)`: keywords Kiln takes by position.
    if (e.args.size() < min && llvm::any_of(e.kwargs, [&](const KeywordArg &kw) {
          return !llvm::is_contained(keywords, kw.name);
        }))
      hint = "; '" + e.kwargs.front().name + "' is given by position here (" + e.callee +
             "(...) without '" + e.kwargs.front().name + " =')";
    error(e.loc, "'" + e.callee + "' takes " + expected + " argument" +
                     (max == 1 ? "" : "s") + ", got " + llvm::Twine(e.args.size()) +
                     (e.method ? " (counting the value before '." + e.callee + "')" : "") +
                     hint);
    return false;
  }
  for (const KeywordArg &kw : e.kwargs)
    if (!llvm::is_contained(keywords, kw.name)) {
      // Triton's and PyTorch's keywords for what Kiln spells otherwise.
      auto spelled = [&](llvm::StringRef ours) {
        return llvm::is_contained(keywords, ours) ? "; Kiln spells it " + ours.str() + " ="
                                                  : std::string();
      };
      std::string hint = kw.name == "acc" && e.callee == "dot"
                             ? "; pass the accumulator as the third argument: dot(a, b, acc)"
                         : kw.name == "allow_tf32" ? spelled("tf32")
                         : kw.name == "keep_dims" || kw.name == "keepdim" ? spelled("keepdims")
                         : kw.name == "dim" ? spelled("axis")
                         : kw.name == "propagate_nan"
                             ? "; Kiln's min, max and clamp always propagate NaN (Triton's "
                               "propagate_nan=ALL); to drop NaN operands as the hardware's "
                               "fmin/fmax do, replace them first: where(isnan(x), -inf, x) "
                               "for max, inf for min"
                         : kw.name == "fp_downcast_rounding" || kw.name == "rounding"
                             ? "; casts round to nearest, ties to even (other rounding modes "
                               "are not offered)"
                             : "";
      error(kw.loc, "'" + e.callee + "' has no keyword argument '" + kw.name + "'" + hint);
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

std::optional<int64_t> Generator::constInt(const Expr &e, const char *what, const char *hint) {
  MaybeValue v = genValue(e, what);
  if (!v)
    return std::nullopt;
  // A float param (params(B: f32 = 64.0)) is a constant of the wrong type.
  if (v->cst && v->type.kind == SType::Scalar && isFloat(v->type.dtype) &&
      e.kind == Expr::Name && currentKernel && !inHelper) {
    llvm::StringRef name = static_cast<const NameExpr &>(e).name;
    for (const ParamDecl &p : currentKernel->params)
      if (p.name == name)
        return error(e.loc, llvm::Twine(what) + " must be a compile-time integer constant; '" +
                                name + "' is a param of type " + dtypeName(p.dtype) +
                                ": declare it i32");
  }
  if (!v->cst || v->type.kind != SType::Scalar || isFloat(v->type.dtype))
    return error(e.loc, llvm::Twine(what) + " must be a compile-time integer constant" +
                            (v->cst ? "" : hint));
  if (v->cst->isUnsigned && v->cst->i < 0)
    return error(e.loc, llvm::Twine(what) + " " + std::to_string(uint64_t(v->cst->i)) +
                            " is too large");
  if (v->type.dtype == DType::I1) // a bool is not a count (zeros<f32>[true, 4])
    return error(e.loc, llvm::Twine(what) + " must be a compile-time integer constant, not a bool");
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
    if (total > kMaxTileElements) // said before the product of the rest can overflow
      return error(at, "a tile of " + llvm::Twine(&d == &dims.back() ? "" : "at least ") +
                           llvm::Twine(total) + " elements exceeds the limit of " +
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

std::optional<int64_t> Generator::axisArg(const Expr &e, int64_t rank, bool allowEnd,
                                          const char *what) {
  auto axis = constInt(e, what);
  if (!axis)
    return std::nullopt;
  int64_t limit = rank + (allowEnd ? 1 : 0);
  int64_t a = *axis < 0 ? *axis + limit : *axis;
  if (a < 0 || a >= limit)
    return error(e.loc, llvm::Twine(what) + " " + llvm::Twine(*axis) +
                            " is out of range for rank " + llvm::Twine(rank));
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
  // v.f(...) where v names nothing (Triton's tl.f): that is the error, not
  // what f makes of its arguments.
  if (e.method && e.args[0]->kind == Expr::Name) {
    auto &front = static_cast<const NameExpr &>(*e.args[0]);
    if (!lookup(front.name) && (front.name == "math" || front.name == "libdevice"))
      return error(front.loc, "unknown name '" + front.name + "'; Kiln's math functions take "
                                  "no module prefix: write " + e.callee + "(...)");
    if (!lookup(front.name) && front.name != "inf" && front.name != "nan")
      return genName(front);
  }
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
  // Python's float("inf") and conversions float(x), int(x), and i32(x).
  std::optional<DType> to = e.callee == "float" ? std::optional(DType::F32)
                            : e.callee == "int" ? std::optional(DType::I32)
                                                : parseDType(e.callee);
  if (to && e.args.size() == 1 && e.args[0]->kind == Expr::StringLit) {
    llvm::StringRef text = static_cast<const StringLitExpr &>(*e.args[0]).value;
    if (text == "inf" || text == "-inf")
      return error(e.loc, "unknown function '" + e.callee +
                              "'; infinity is spelled inf (negative: -inf)");
    if (text == "nan")
      return error(e.loc, "unknown function '" + e.callee + "'; NaN is spelled nan");
  }
  if (to)
    return error(e.loc, "unknown function '" + e.callee + "'; convert with cast<" +
                            dtypeName(*to) + ">(x)");
  // Triton's names for what Kiln spells, or does, otherwise.
  static const std::pair<llvm::StringRef, llvm::StringRef> triton[] = {
      {"maximum", "Kiln spells it 'max'"},
      {"minimum", "Kiln spells it 'min'"},
      {"permute", "Kiln spells it 'trans(x, [dims])'"},
      {"view", "Kiln spells it 'reshape'"},
      {"device_print", "Kiln spells it 'print(\"text\", value)'"},
      {"T", "transpose with trans(t)"},
      {"debug_barrier", "Kiln places the barriers its threads need itself; there is nothing "
                        "to call"},
      {"static_print", "'static_assert(condition, \"message\")' checks a compile-time fact, "
                       "and 'kilnc --emit=kiln' shows every value's type and shape"},
      {"assume", "Kiln finds contiguous and aligned accesses from the index arithmetic "
                 "itself; there is nothing to assume"},
      {"div_rn", "Kiln's '/' on floats rounds to nearest, as div_rn does: write 'x / y'"},
      {"fdiv", "write 'x / y' (float division is IEEE's, correctly rounded)"},
      {"fmod", "'%' on floats is C's fmod (the result takes the dividend's sign): write "
               "'x % y'"},
      {"rint", "Kiln spells it 'round' (to nearest, halves to even, as rint)"},
      {"nearbyint", "Kiln spells it 'round' (to nearest, halves to even)"},
      {"make_block_ptr", "a block of a tensor is a view: 'x.tile([rows, cols], [r0, c0])'"},
      {"advance", "a block of a tensor is a view: 'x.tile([rows, cols], [r0, c0])' with "
                  "the offsets moved"}};
  for (auto [theirs, hint] : triton)
    if (e.callee == theirs)
      return error(e.loc, "unknown function '" + e.callee + "'; " + hint);
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
                                 llvm::ArrayRef<SMLoc> argLocs, SMLoc at, llvm::StringRef how) {
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
    unsigned savedPaths = std::exchange(helperPaths, 0);
    auto savedContinuations = std::exchange(continuations, {});
    unsigned savedPathCount = std::exchange(helperPathCount, 0);
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
    helperPaths = savedPaths;
    continuations = std::move(savedContinuations);
    helperPathCount = savedPathCount;
    helperResult = std::move(savedResult);
    if (!ok) {
      // A helper is generated once per set of argument types: say which call
      // (and so which types) the error inside it came from, for the innermost
      // few calls and the kernel's own, which says how many it leaves out.
      bool fromKernel = !inHelper;
      if (failed && (notedCalls < kMaxNotedCalls || fromKernel)) {
        std::string types;
        for (const TValue &a : args)
          types += (types.empty() ? "" : ", ") + a.type.str();
        unsigned hidden = notedCalls > kMaxNotedCalls ? notedCalls - kMaxNotedCalls : 0;
        std::string call = how.empty() ? "in this call of '" + fn.name + "' (" + types + ")"
                                        : "in '" + fn.name + "' (" + types + "), " + how.str();
        diag.note(at, call + (hidden ? ", through " + std::to_string(hidden) +
                                           " more helper calls not shown"
                                     : ""));
      }
      notedCalls += failed;
      return std::nullopt;
    }
    std::vector<TValue> results = returnedValues(result);
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
    // An axis the grid rule does not give has one program: its id is always 0,
    // which is never what a kernel that asks for it means (the grid left out,
    // or an axis missing from it).
    if (name == "program_id" && currentKernel && *axis >= int64_t(currentKernel->grid.size()))
      return error(e.loc, currentKernel->grid.empty()
                              ? "program_id(" + llvm::Twine(*axis) +
                                    ") is always 0: the kernel has no grid rule, so one "
                                    "program runs; give it one, e.g. grid(cdiv(N, BLOCK))"
                              : "program_id(" + llvm::Twine(*axis) +
                                    ") is always 0: the grid rule gives " +
                                    llvm::Twine(currentKernel->grid.size()) + " axis" +
                                    (currentKernel->grid.size() > 1 ? "es" : "") +
                                    "; add axis " + llvm::Twine(*axis) + " to it");
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
    // A tile's extent is static: a size known only at launch is reached with a
    // param-wide tile and the masks views apply at the tensor's bounds.
    // The advice names the size the bound spells (arange(0, D) loops over D).
    auto hintFor = [](const Expr &bound) {
      std::string size = bound.kind == Expr::Name
                             ? static_cast<const NameExpr &>(bound).name
                             : std::string("the size");
      return "; a tile's size is fixed when the kernel compiles: take a param BLOCK >= " +
             size + " (loads and stores mask the lanes past the tensor's end), or loop over " +
             size + " in BLOCK-wide steps";
    };
    auto first = constInt(*e.args[0], "arange bound", hintFor(*e.args[0]).c_str());
    if (!first)
      return std::nullopt;
    int64_t start = 0, end = *first;
    if (e.args.size() == 2) {
      auto second = constInt(*e.args[1], "arange bound", hintFor(*e.args[1]).c_str());
      if (!second)
        return std::nullopt;
      start = *first;
      end = *second;
    }
    if (end <= start)
      return error(e.loc, "arange(" + llvm::Twine(start) + ", " + llvm::Twine(end) +
                              ") is empty; the end must exceed the start");
    // Its values are i32: both bounds must be (an end of 2^31 would wrap).
    if (start < INT32_MIN || end > INT32_MAX)
      return error(e.loc, "arange(" + llvm::Twine(start) + ", " + llvm::Twine(end) +
                              ") reaches past i32, the type of its values");
    if (end - start > kMaxTileElements)
      return error(e.loc, "arange of " + llvm::Twine(end - start) +
                              " elements is too large (a tile holds at most " +
                              llvm::Twine(kMaxTileElements) + ")");
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
    if (!constantFits(*v, dt, e.args[1]->loc))
      return std::nullopt;
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
    DType dt = e.typeArg ? *e.typeArg : like->type.dtype;
    if (full && !constantFits(*v, dt, e.args[1]->loc))
      return std::nullopt;
    TValue out = convert(*v, dt, like->type.shape, e.loc);
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
    return genCdiv(*a, *b, e.loc);
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
    if (!operandsFit(*a, *b, dt, e.loc))
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
    for (size_t i = 0; i < ops.size(); ++i)
      if (!constantFits(ops[i], dt, e.args[i]->loc))
        return std::nullopt;
    // bf16 computes in f32 (Vulkan and AMD hold bf16 as bits, and
    // math-legalize-to-f32 leaves fma alone). Rounding f32's fma to bf16 would
    // round twice: the sum is rounded to odd in f32 instead, so that rounding it
    // to bf16 is the fma's one rounding (FloatBuilder::fmaRoundedToOdd).
    DType in = dt == DType::BF16 ? DType::F32 : dt;
    Value a = convert(ops[0], in, shape, e.loc).value;
    Value b = convert(ops[1], in, shape, e.loc).value;
    Value c = convert(ops[2], in, shape, e.loc).value;
    TValue out;
    out.type = SType::value(dt, shape);
    if (in != dt) {
      mlir::ImplicitLocOpBuilder ib(l, builder);
      out.value = FloatBuilder(ib, a.getType()).fmaRoundedToOdd(a, b, c);
    } else {
      out.value = builder.create<mlir::math::FmaOp>(l, a, b, c);
    }
    if (in != dt)
      out.value = castValue(out.value, in, dt, l);
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
    TValue operand = *v;
    operand.type.weak = false; // rounded and saturated as the cast does at run time
    TValue out = convert(operand, to, v->type.shape, e.loc);
    out.type.weak = false; // a cast's value is one of its type: cast<f16>(2049.0) is 2048
    if (out.cst)
      out.cst = convertConst(*out.cst, to);
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
  // Float-only math: integers are converted to f32 first. f16 and bf16 are
  // computed in f32 and rounded once at the end: composites (sigmoid, log1p's
  // expansion) rounded after every step, up to 3 ulps off.
  DType result = isFloat(v->type.dtype) ? v->type.dtype : DType::F32;
  DType dt = result == DType::F16 || result == DType::BF16 ? DType::F32 : result;
  Value x = convert(*v, dt, v->type.shape, e.loc).value;
  out.type = SType::value(result, v->type.shape);
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
    // s = 1 / (1 + e) for e = exp(-|x|), and e s below 0: exp(-x) would
    // overflow there long before the result underflows (sigmoid(-100) is 4e-44).
    Value abs = builder.create<AbsFOp>(l, x);
    Value ex = builder.create<ExpOp>(l, builder.create<mlir::arith::NegFOp>(l, abs));
    Value one = splat(Const::ofFloat(1.0), dt, v->type.shape, e.loc);
    Value zero = splat(Const::ofFloat(0.0), dt, v->type.shape, e.loc);
    Value den = builder.create<mlir::arith::AddFOp>(l, one, ex);
    Value s = builder.create<mlir::arith::DivFOp>(l, one, den);
    Value below =
        builder.create<mlir::arith::CmpFOp>(l, mlir::arith::CmpFPredicate::OLT, x, zero);
    Value small = builder.create<mlir::arith::MulFOp>(l, ex, s);
    out.value = builder.create<mlir::arith::SelectOp>(l, below, small, s);
  } else
    return error(e.loc, "unknown builtin '" + name + "'");
  if (result != dt)
    out.value = castValue(out.value, dt, result, l);
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
  if (name != "clamp" && rejectF8(dt, e.loc, "'" + name + "'"))
    return std::nullopt;
  // pow, atan2 and hypot on f16 and bf16 run in f32 and round once, as the
  // one-operand functions do.
  DType result = dt;
  if ((dt == DType::F16 || dt == DType::BF16) && name != "clamp" && name != "copysign")
    dt = DType::F32;
  llvm::SmallVector<Value, 3> x;
  for (const TValue &v : ops) {
    if (!constantFits(v, result, e.loc))
      return std::nullopt;
    // Each operand is a value of `result` first: a constant rounds to f16 (or
    // bf16) before it widens, on scalars as on tiles.
    TValue operand = convert(v, result, shape, e.loc);
    if (operand.cst && dt != result) {
      operand.cst = convertConst(*operand.cst, result);
      operand.type.weak = false;
    }
    x.push_back(convert(operand, dt, shape, e.loc).value);
  }
  mlir::Location l = loc(e.loc);
  TValue out;
  out.type = SType::value(result, shape);
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
    out.value = extremeOf(false, extremeOf(true, x[0], x[1], dt, shape, l), x[2], dt, shape, l);
  if (result != dt)
    out.value = castValue(out.value, dt, result, l);
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
  // |x| == inf, or |x| < inf (false for NaN). fp8 is classified in f32, which
  // holds it exactly: no target has an fp8 absf, and e4m3 has no infinity to
  // compare with (an inf constant there would be 448).
  DType dt = isF8(v->type.dtype) ? DType::F32 : v->type.dtype;
  Value x = convert(*v, dt, shape, e.loc).value;
  Value mag = builder.create<mlir::math::AbsFOp>(l, x);
  Value inf = splat(Const::ofFloat(std::numeric_limits<double>::infinity()), dt, shape, e.loc);
  out.value = builder.create<mlir::arith::CmpFOp>(l, name == "isinf" ? P::OEQ : P::OLT, mag, inf);
  return out;
}

/// cdiv(a, b) for b > 0 is (a + b - 1) / b, as the grid rule computes it in 64
/// bits, without the overflow of that sum near the type's maximum. With q = a / b
/// and r = a % b (both truncated): for a >= 0 it is q plus one when r != 0; for
/// a < 0, a + b - 1 is q b + (r + b - 1) with 0 <= r + b - 1 < b, so it is q plus
/// one when q < 0 and r + b > 1 (neither sum can overflow).
MaybeValue Generator::genCdiv(const TValue &a, const TValue &b, SMLoc at) {
  TValue zero = constant(Const::ofInt(0), DType::I32, true, loc(at));
  TValue one = constant(Const::ofInt(1), DType::I32, true, loc(at));
  auto op = [&](BinOp o, const MaybeValue &x, const MaybeValue &y) -> MaybeValue {
    return x && y ? binary(o, *x, *y, at) : std::nullopt;
  };
  MaybeValue quotient = binary(BinOp::Div, a, b, at);
  MaybeValue remainder = op(BinOp::Rem, a, b);
  MaybeValue up = op(BinOp::Ne, remainder, zero);
  if (!isUnsigned(promote(a.type, b.type))) // q < 0 only where a < 0
    up = op(BinOp::LOr, op(BinOp::LAnd, op(BinOp::Ge, a, zero), up),
            op(BinOp::LAnd, op(BinOp::Lt, quotient, zero),
               op(BinOp::Gt, op(BinOp::Add, remainder, b), one)));
  if (!up)
    return std::nullopt;
  return op(BinOp::Add, quotient, convert(*up, quotient->type.dtype, up->type.shape, at));
}

} // namespace kiln::gen
