//===- GenMemoryOps.cpp - load, store and the atomics ---------------------===//
//
// Memory access through views: block (`x.tile(...)`) and gather (`x[i, j]`)
// loads and stores with masks, and the atomic read-modify-writes.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Generator.h"

namespace kiln::gen {

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
  MaybeValue other; // checked here, converted once the kind of view is settled
  SMLoc otherLoc;
  if (const KeywordArg *kw = e.kwarg("other")) {
    other = genValue(*kw->value, "'other' value");
    otherLoc = kw->value->loc;
    if (!other)
      return std::nullopt;
    if (other->type.dtype != dt &&
        (!other->type.weak || (isFloat(other->type.dtype) && !isFloat(dt))))
      return error(otherLoc, "'other' has type " + other->type.str() + " but the tensor holds " +
                                 dtypeName(dt));
    if (!constantFits(*other, dt, otherLoc))
      return std::nullopt;
    auto s = broadcastShapes(other->type.shape, shape);
    if (!s || *s != shape)
      return error(otherLoc, "'other' shape " + shapeStr(other->type.shape) +
                                 " does not broadcast to " + shapeStr(shape));
  }
  Value mask;
  if (!maskArg(e, *view, mask))
    return std::nullopt;
  // A block load takes a scalar `other` and no mask; with either of those, the
  // block's elements are loaded through its gather form.
  if (view->view->block && (mask || (other && other->type.kind != SType::Scalar)))
    view = gatherForm(*view, l);
  bool block = view->view->block;
  Value otherValue;
  if (other)
    otherValue = convert(*other, dt, block ? Shape{} : shape, otherLoc).value;
  TValue out;
  out.type = SType::value(dt, shape);
  mlir::Type resultType = valueType(dt, shape);
  if (block)
    out.value = builder.create<LoadBlockOp>(l, resultType, view->view->memory,
                                            view->view->coords, otherValue);
  else
    out.value = builder.create<LoadOp>(l, resultType, view->view->memory, view->view->coords,
                                       mask, otherValue);
  return out;
}

TValue Generator::gatherForm(const TValue &view, mlir::Location l) {
  const Shape &shape = view.type.shape;
  auto gather = std::make_shared<ViewData>(*view.view);
  gather->block = false;
  gather->coords.clear();
  for (auto [d, offset] : llvm::enumerate(view.view->coords)) {
    // offset + position along dimension d, added on one line and then broadcast.
    Shape line(shape.size(), 1);
    line[d] = shape[d];
    Value pos = builder.create<mlir::arith::AddIOp>(
        l, axisPositions(line, d, l),
        builder.create<SplatOp>(l, valueType(DType::I32, line), offset));
    gather->coords.push_back(broadcastValue(pos, line, shape, DType::I32, l));
  }
  TValue out = view;
  out.view = gather;
  return out;
}

bool Generator::maskArg(const CallExpr &e, const TValue &view, Value &mask) {
  const KeywordArg *kw = e.kwarg("mask");
  if (!kw)
    return true;
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
  if (v->type.dtype != dt && (!v->type.weak || (isFloat(v->type.dtype) && !isFloat(dt)))) {
    // A float constant for an integer tensor is written as an integer (1, not 1.0).
    std::string fix = "convert it with cast<" + std::string(dtypeName(dt)) + ">(...)";
    if (v->cst && v->type.weak)
      fix = "write an integer constant (1, not 1.0) or " + fix;
    bool atomic = e.callee.rfind("atomic_", 0) == 0;
    return error(valueExpr.loc, (atomic ? e.callee + " cannot take " : "cannot store ") +
                                    v->type.str() + " into tensor '" + view.view->tensorName +
                                    "' of " + dtypeName(dt) + "; " + fix);
  }
  auto s = broadcastShapes(v->type.shape, shape);
  // Triton's scalar atomic of a tile (tl.atomic_add(p, t)) adds the tile's sum.
  bool tileIntoElement = shape.empty() && e.callee.rfind("atomic_", 0) == 0;
  if (!s || *s != shape)
    return error(valueExpr.loc, std::string(what) + " of shape " + shapeStr(v->type.shape) +
                                    " does not fit the view of shape " + shapeStr(shape) +
                                    (tileIntoElement ? " (to add a tile's elements through "
                                                       "one element, as Triton's scalar "
                                                       "atomic does, reduce it first: "
                                                       "atomic_add(x[0], sum(t)))"
                                                     : ""));
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
  if (view->view->block && mask)
    view = gatherForm(*view, l);
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
  if (view->type.kind != SType::View)
    return error(e.args[0]->loc, name + " needs a view such as h[bins] or h.tile(...), got " +
                                     withArticle(view->type.str()));
  DType dt = view->type.dtype;
  // All but the bitwise ones also take f16, bf16, f32 and f64.
  bool floats = !kind || !isBitwise(*kind);
  bool floatOk = floats && (dt == DType::F16 || dt == DType::BF16 || dt == DType::F32 ||
                            dt == DType::F64);
  if (!(isInteger(dt) && dtypeBits(dt) >= 32) && !floatOk)
    return error(e.args[0]->loc, name + " works on " +
                                     (floats ? "i32, i64, u32, u64, f16, bf16, f32 and f64"
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
  if (view->view->block)
    view = gatherForm(*view, l);
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

} // namespace kiln::gen
