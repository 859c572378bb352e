//===- GenStatements.cpp - statements of the .kiln AST --------------------===//
//
// Blocks, assignments, `for` (unrolled, pipelined, with exits), `while` and
// `if`. `return`, `break` and `continue` set flags that guard what follows.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"

namespace kiln::gen {

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

const Stmt *findExit(llvm::ArrayRef<StmtPtr> stmts, Stmt::Kind kind, bool intoLoops) {
  for (const StmtPtr &s : stmts) {
    const Stmt *found = s->kind == kind ? s.get() : nullptr;
    if (auto *i = dynamic_cast<const IfStmt *>(s.get())) {
      found = findExit(i->thenBody, kind, intoLoops);
      if (!found)
        found = findExit(i->elseBody, kind, intoLoops);
    } else if (auto *f = dynamic_cast<const ForStmt *>(s.get()); f && intoLoops) {
      found = findExit(f->body, kind, true);
    } else if (auto *w = dynamic_cast<const WhileStmt *>(s.get()); w && intoLoops) {
      found = findExit(w->body, kind, true);
    }
    if (found)
      return found;
  }
  return nullptr;
}

bool Generator::genBlock(const Block &block) { return genStatements(block); }

/// Whether a `return` may be reached in either branch of `stmt`.
static bool exitsOnSomePath(const IfStmt &stmt) {
  return exits(stmt.thenBody, Stmt::Return, false) || exits(stmt.elseBody, Stmt::Return, false);
}

static const char *const kReturnInLoop =
    "a helper cannot 'return' from inside a loop; set a variable and 'break' instead";

bool Generator::genStatements(llvm::ArrayRef<StmtPtr> stmts) {
  if (stmts.empty())
    return true;
  Nesting nested(*this, stmts.front()->loc);
  if (!nested.ok)
    return false;
  for (auto [i, stmt] : llvm::enumerate(stmts)) {
    // Nothing after an unconditional exit from the block runs (in a kernel it
    // was dropped without a word).
    bool exitsBlock = stmt->kind == Stmt::Return || stmt->kind == Stmt::Break ||
                      stmt->kind == Stmt::Continue;
    if (exitsBlock && i + 1 != stmts.size()) {
      const char *what = stmt->kind == Stmt::Return  ? "'return'"
                         : stmt->kind == Stmt::Break ? "'break'"
                                                     : "'continue'";
      error(stmts[i + 1]->loc, llvm::Twine("statements after ") + what + " never run");
      return false;
    }
    if (stmt->kind == Stmt::Return && !inHelper)
      return genKernelReturn(static_cast<const ReturnStmt &>(*stmt)); // nothing after it runs
    if (stmt->kind == Stmt::Break || stmt->kind == Stmt::Continue)
      return genLoopExit(*stmt);
    if (inHelper && stmt->kind == Stmt::If) {
      auto &ifStmt = static_cast<const IfStmt &>(*stmt);
      if (exitsOnSomePath(ifStmt)) {
        if (loopDepth)
          return error(stmt->loc, kReturnInLoop), false;
        return genReturningIf(ifStmt, stmts.drop_front(i + 1)); // it ends the helper
      }
    }
    if (stmt->kind == Stmt::Return && (loopDepth || (scopes.size() != 2 && !helperPaths))) {
      error(stmt->loc, loopDepth ? kReturnInLoop : "'return' here does not end the helper");
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
      return error(e->loc, llvm::Twine("loop ") + what + " must be i32 (or narrower), got " +
                               v->type.str() + "; convert it with cast<i32>(...)");
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
  if (step->cst && step->cst->i == 0)
    return error(stmt.step->loc, "loop step must not be zero"), false;
  if (stmt.unrolled && !step->cst)
    return error(stmt.step->loc, "static_range needs a step known at compile time; use "
                                 "range for a step known at run time"),
           false;
  if (stmt.unrolled)
    return genUnrolledFor(stmt, *start, *end, *step);
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

  using mlir::arith::CmpIPredicate;
  mlir::Location l = loc(stmt.loc);
  auto cmp = [&](CmpIPredicate p, Value x, Value y) {
    return builder.create<mlir::arith::CmpIOp>(l, p, x, y).getResult();
  };
  auto select = [&](Value c, Value x, Value y) {
    return builder.create<mlir::arith::SelectOp>(l, c, x, y).getResult();
  };
  // A negative step counts down, `i = start, start + step, ...` while `i > end`:
  // the loop runs upwards over k = ~i (~ reverses the order of i32 without
  // overflowing, unlike negation at INT_MIN), from ~start to ~end by -step, and
  // the body sees i = ~k. A step known only at run time flips by its sign mask
  // (all ones when negative, else zero) and steps by its size, read as unsigned
  // (2^31 for INT_MIN); a zero one runs no trips. Such loops are while loops
  // that compare the step with what is left (as loops that break are), so that
  // k never steps past 2^31 - 1 near either end of i32.
  bool descending = step->cst && step->cst->i < 0;
  if (descending && step->cst->i == INT32_MIN)
    return error(stmt.step->loc, "loop step -2147483648 is too large to count down by (its "
                                 "size is not an i32)"),
           false;
  Value flipMask; // what k and i differ by; null when the loop counts up
  bool signedAtRunTime = !step->cst && *stages == 1;
  if (descending)
    flipMask = builder.create<mlir::arith::ConstantIntOp>(l, -1, 32);
  else if (signedAtRunTime)
    flipMask = builder.create<mlir::arith::ShRSIOp>(
        l, step->value, builder.create<mlir::arith::ConstantIntOp>(l, 31, 32));
  if (flipMask) {
    auto flip = [&](TValue &v) {
      v.value = builder.create<mlir::arith::XOrIOp>(l, v.value, flipMask);
      if (v.cst && descending)
        v.cst->i = ~v.cst->i;
      else
        v.cst.reset(); // flipped or not, by the step's sign at run time
    };
    flip(*start);
    flip(*end);
  }
  if (descending)
    step = constant(Const::ofInt(-step->cst->i), DType::I32, true, l);
  if (signedAtRunTime) {
    step->value = builder.create<mlir::arith::SubIOp>(
        l, builder.create<mlir::arith::XOrIOp>(l, step->value, flipMask), flipMask);
    Value zero = builder.create<mlir::arith::ConstantIntOp>(l, 0, 32);
    end->value = select(cmp(CmpIPredicate::eq, step->value, zero), start->value, end->value);
  } else if (!step->cst) {
    // A pipelined loop's step known only at run time: a non-positive one runs
    // no trips rather than forever, and one longer than the range is the range,
    // so that the variable never steps past 2^31 - 1.
    Value one = builder.create<mlir::arith::ConstantIntOp>(l, 1, 32);
    Value positive = cmp(CmpIPredicate::sge, step->value, one);
    Value range = builder.create<mlir::arith::SubIOp>(l, end->value, start->value);
    Value longer = builder.create<mlir::arith::AndIOp>(
        l, cmp(CmpIPredicate::slt, start->value, end->value),
        cmp(CmpIPredicate::uge, step->value, range)); // the range as unsigned: exact
    end->value = select(positive, end->value, start->value);
    step->value = select(positive, select(longer, range, step->value), one);
  }
  // An scf.for steps its variable past the last trip, which wraps when that
  // passes 2^31 - 1: with a constant end within a step of it (range(a,
  // 2147483647, 5)), the loop is a while loop too.
  bool wrapsAtTheTop = step->cst && end->cst && end->cst->i > INT32_MAX - step->cst->i + 1;

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
    v.value = flipMask ? builder.create<mlir::arith::XOrIOp>(l, iv, flipMask) : iv;
    if (!declare(stmt.varLoc, stmt.var, v, false))
      return false;
    scopes.back()[stmt.var].isLoopVar = true;
    return true;
  };
  if ((!stops.empty() || flipMask || wrapsAtTheTop) && *stages == 1) {
    // A loop that may be left early (break, return) is a while loop over its
    // variable, so that it stops at once rather than running out its trips; so
    // are those that count down or near the top of i32, which an scf.for would
    // step past.
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
    if (const Stmt *exit = findExit(stmt.body, kind))
      return error(exit->loc, "a static_range loop is unrolled: its body cannot break, "
                              "continue or return (use range)"),
             false;
  int64_t first = start.cst->i, last = end.cst->i, stride = step.cst->i;
  int64_t trips = stride > 0 ? (first < last ? (last - first + stride - 1) / stride : 0)
                             : (first > last ? (first - last - stride - 1) / -stride : 0);
  if (trips > kMaxUnrolledTrips)
    return error(stmt.loc, "static_range would unroll " + llvm::Twine(trips) +
                               " copies of its body; at most " + llvm::Twine(kMaxUnrolledTrips) +
                               " (use range)"),
           false;
  if ((unrolledCopies += trips) > kMaxUnrolledCopies)
    return error(stmt.loc, "static_range loops would unroll more than " +
                               llvm::Twine(kMaxUnrolledCopies) +
                               " copies of their bodies in this kernel (nested loops multiply); "
                               "use range"),
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

/// Collects the names `e` reads into `names` (each once); false when `e` may
/// give another value with the same names (a load, an atomic, a helper call).
static bool readsOnlyNames(const Expr &e, llvm::SmallVectorImpl<llvm::StringRef> &names) {
  switch (e.kind) {
  case Expr::IntLit:
  case Expr::FloatLit:
  case Expr::BoolLit:
    return true;
  case Expr::Name: {
    llvm::StringRef name = static_cast<const NameExpr &>(e).name;
    if (!llvm::is_contained(names, name))
      names.push_back(name);
    return true;
  }
  case Expr::Unary:
    return readsOnlyNames(*static_cast<const UnaryExpr &>(e).operand, names);
  case Expr::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    return readsOnlyNames(*b.lhs, names) && readsOnlyNames(*b.rhs, names);
  }
  case Expr::Call: {
    // Builtins that read no memory and draw nothing random.
    static constexpr llvm::StringLiteral pure[] = {"min", "max", "abs", "cdiv", "cast"};
    auto &c = static_cast<const CallExpr &>(e);
    if (!llvm::is_contained(pure, c.callee) || !c.kwargs.empty() || c.method)
      return false;
    return llvm::all_of(c.args, [&](const ExprPtr &a) { return readsOnlyNames(*a, names); });
  }
  default:
    return false;
  }
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
  // `while i < N { acc += 1.0; }` without `i += 1`: the condition is the same
  // value on every trip, so a loop that starts never stops.
  llvm::SmallVector<llvm::StringRef> reads;
  if (!leaves && readsOnlyNames(*stmt.cond, reads) && !reads.empty()) {
    llvm::StringSet<> assigned;
    collectAssigned(stmt.body, assigned);
    if (llvm::none_of(reads, [&](llvm::StringRef n) { return assigned.contains(n); }))
      return error(stmt.cond->loc, "this 'while' loop never ends once it starts: its body "
                                   "assigns none of the variables its condition reads (" +
                                       llvm::join(reads, ", ") + ") and has no 'break'"),
             false;
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

MaybeValue Generator::genIfCondition(const Expr &condition) {
  MaybeValue cond = genValue(condition, "condition");
  if (!cond)
    return std::nullopt;
  if (cond->type.kind != SType::Scalar || cond->type.dtype != DType::I1)
    return error(condition.loc,
                 "an 'if' condition must be a scalar bool, got " + cond->type.str() +
                     (cond->type.kind == SType::Tile
                          ? "; pick per element with where(cond, a, b), or test the tile "
                            "as a whole with max(cond) > 0 (any lane) or min(cond) > 0 "
                            "(every lane)"
                      : cond->type.kind == SType::Scalar && !isFloat(cond->type.dtype)
                          ? "; compare it, e.g. 'x != 0' (a reduction of bools counts in i32)"
                          : ""));
  return cond;
}

bool Generator::genReturningIf(const IfStmt &stmt, llvm::ArrayRef<StmtPtr> rest) {
  MaybeValue cond = genIfCondition(*stmt.cond);
  if (!cond)
    return false;
  // One path: the branch, then the statements after the `if` if it did not return.
  // A branch that is one returning `if` (`else if`, or `else { if ... }`) is that
  // if's paths, each going on with the statements after this one; so is a
  // returning `if` after other statements of the branch, through `continuations`.
  auto genPath = [&](const Block &body) {
    if (++helperPathCount > kMaxHelperPaths)
      return error(stmt.loc, "a helper's paths through its returning ifs pass " +
                                 llvm::Twine(kMaxHelperPaths) + " here; each compiles the "
                                 "statements after its 'if' again: set a variable and "
                                 "return it once at the end"),
             false;
    helperResult.reset();
    ++helperPaths;
    bool ok;
    if (body.size() == 1 && body[0]->kind == Stmt::If &&
        exitsOnSomePath(static_cast<const IfStmt &>(*body[0]))) {
      ok = genReturningIf(static_cast<const IfStmt &>(*body[0]), rest);
    } else {
      continuations.push_back({rest, scopes.size()});
      {
        ScopeGuard scope(*this);
        ok = genBlock(body);
      }
      continuations.pop_back();
      if (ok && !helperResult)
        ok = genPathRest(rest);
    }
    --helperPaths;
    return ok;
  };
  if (cond->cst) { // decided at compile time: one path, to the helper's end
    if (!genPath(cond->cst->i ? stmt.thenBody : stmt.elseBody))
      return false;
    if (!helperResult)
      helperResult = TValue{}; // it went on past the end: it returns nothing
    return true;
  }

  // The paths restore, before each, what any of them may assign: in the
  // branches, the statements after, and the continuations (each in its scopes).
  Carry carry = carried({stmt.thenBody, stmt.elseBody, rest});
  for (const Continuation &c : continuations) {
    Carry more = withScopesUpTo(c.depth, [&] { return carried({c.stmts}); });
    for (auto [b, old] : llvm::zip_equal(more.vars, more.before))
      if (!llvm::is_contained(carry.vars, b)) {
        carry.vars.push_back(b);
        carry.before.push_back(old);
      }
  }
  mlir::Location l = loc(stmt.loc);
  auto paths = builder.create<mlir::scf::IfOp>(l, mlir::TypeRange{}, cond->value,
                                               /*withElse=*/true);
  std::optional<TValue> results[2];
  mlir::Block *ends[2];
  for (int i = 0; i < 2; ++i) {
    mlir::OpBuilder::InsertionGuard guard(builder);
    mlir::Block *block = &(i ? paths.getElseRegion() : paths.getThenRegion()).front();
    if (!block->empty())
      block->back().erase(); // the implicit empty yield
    builder.setInsertionPointToEnd(block);
    carry.restore();
    if (!genPath(i ? stmt.elseBody : stmt.thenBody))
      return false;
    results[i] = helperResult;
    ends[i] = builder.getInsertionBlock();
  }
  carry.restore();

  // Both paths return the same: values of one type each (a weak constant takes
  // the other path's type), or nothing.
  std::vector<TValue> values[2] = {returnedValues(results[0]), returnedValues(results[1])};
  bool tuples[2] = {results[0] && results[0]->type.kind == SType::Tuple,
                    results[1] && results[1]->type.kind == SType::Tuple};
  auto describe = [&](int i) {
    if (values[i].empty())
      return std::string("nothing");
    std::string text;
    for (const TValue &v : values[i])
      text += (text.empty() ? "" : ", ") + v.type.str();
    return tuples[i] ? "(" + text + ")" : text;
  };
  if (values[0].size() != values[1].size() || tuples[0] != tuples[1])
    return error(stmt.loc, "the paths through this 'if' return " + describe(0) + " and " +
                               describe(1) + "; every path of a helper returns the same"),
           false;
  for (size_t k = 0; k < values[0].size(); ++k) {
    TValue &a = values[0][k], &b = values[1][k];
    if (a.type.dtype == b.type.dtype && a.type.shape == b.type.shape)
      continue;
    bool weak[2] = {a.type.weak && a.type.kind == SType::Scalar,
                    b.type.weak && b.type.kind == SType::Scalar};
    if (!weak[0] && !weak[1])
      return error(stmt.loc, "the paths through this 'if' return " + describe(0) + " and " +
                                 describe(1) + "; return one type from each (cast<T>(...))"),
             false;
    // A weak constant takes the other path's type; two promote as operands do
    // (`return 1.5;` and `return 0;` give f32).
    DType dt = weak[0] && weak[1] ? promote(a.type, b.type)
               : weak[0]          ? b.type.dtype
                                  : a.type.dtype;
    Shape shape = weak[0] ? b.type.shape : a.type.shape;
    for (int i = 0; i < 2; ++i) {
      TValue &v = values[i][k];
      if (v.type.dtype == dt && v.type.shape == shape)
        continue;
      mlir::OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToEnd(ends[i]);
      MaybeValue converted = convert(v, dt, shape, stmt.loc);
      if (!converted)
        return false;
      v = *converted;
    }
  }
  llvm::SmallVector<mlir::Type> types;
  for (const TValue &v : values[0])
    types.push_back(v.value.getType());
  auto joined = builder.create<mlir::scf::IfOp>(l, types, cond->value, /*withElse=*/true);
  for (int i = 0; i < 2; ++i) {
    mlir::Region &region = i ? joined.getElseRegion() : joined.getThenRegion();
    region.takeBody(i ? paths.getElseRegion() : paths.getThenRegion());
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(ends[i]);
    llvm::SmallVector<Value> yielded;
    for (const TValue &v : values[i])
      yielded.push_back(v.value);
    builder.create<mlir::scf::YieldOp>(l, yielded);
  }
  paths.erase();
  TValue out;
  if (tuples[0])
    out.type.kind = SType::Tuple;
  for (auto [k, v] : llvm::enumerate(values[0])) {
    TValue r = v;
    r.type.weak = false;
    r.cst.reset();
    r.value = joined.getResult(k);
    if (!tuples[0])
      out = r;
    else
      out.elements.push_back(r);
  }
  helperResult = values[0].empty() ? TValue{} : out;
  return true;
}

bool Generator::genPathRest(llvm::ArrayRef<StmtPtr> stmts) {
  size_t depth = scopes.size() - 1;
  llvm::StringSet<> known;
  for (auto &entry : scopes[depth])
    known.insert(entry.first);
  bool ok = genStatements(stmts);
  if (ok && !helperResult && !continuations.empty()) {
    // Out of the branch: on after its `if`, where the branch's names are gone.
    Continuation next = continuations.back();
    continuations.pop_back();
    ok = withScopesUpTo(next.depth, [&] { return genPathRest(next.stmts); });
    continuations.push_back(next);
  }
  for (auto it = scopes[depth].begin(); it != scopes[depth].end();)
    it = known.contains(it->first) ? std::next(it) : scopes[depth].erase(it);
  return ok;
}

bool Generator::genIf(const IfStmt &stmt) {
  MaybeValue cond = genIfCondition(*stmt.cond);
  if (!cond)
    return false;
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

} // namespace kiln::gen
