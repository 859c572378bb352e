//===- AST.cpp - syntax tree of the .kiln language ------------------------===//

#include "lib/Frontend/AST.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace kiln;

const char *kiln::binOpSpelling(BinOp op) {
  switch (op) {
  case BinOp::Add: return "+";
  case BinOp::Sub: return "-";
  case BinOp::Mul: return "*";
  case BinOp::Div: return "/";
  case BinOp::Rem: return "%";
  case BinOp::And: return "&";
  case BinOp::Or: return "|";
  case BinOp::Xor: return "^";
  case BinOp::Shl: return "<<";
  case BinOp::Shr: return ">>";
  case BinOp::LAnd: return "&&";
  case BinOp::LOr: return "||";
  case BinOp::Eq: return "==";
  case BinOp::Ne: return "!=";
  case BinOp::Lt: return "<";
  case BinOp::Le: return "<=";
  case BinOp::Gt: return ">";
  case BinOp::Ge: return ">=";
  }
  return "?";
}

const KernelDecl *Module::findKernel(llvm::StringRef name) const {
  for (auto &k : kernels)
    if (k->name == name)
      return k.get();
  return nullptr;
}

const FnDecl *Module::findFunction(llvm::StringRef name) const {
  for (auto &f : functions)
    if (f->name == name)
      return f.get();
  return nullptr;
}

unsigned kiln::heightFromChildren(const Expr &e) {
  unsigned tallest = 0;
  auto see = [&](const ExprPtr &child) {
    if (child)
      tallest = std::max(tallest, child->height);
  };
  auto seeAll = [&](const std::vector<ExprPtr> &children) { llvm::for_each(children, see); };
  switch (e.kind) {
  case Expr::Unary: see(static_cast<const UnaryExpr &>(e).operand); break;
  case Expr::Binary:
    see(static_cast<const BinaryExpr &>(e).lhs);
    see(static_cast<const BinaryExpr &>(e).rhs);
    break;
  case Expr::Call: {
    auto &call = static_cast<const CallExpr &>(e);
    seeAll(call.shapeArg);
    seeAll(call.args);
    for (const KeywordArg &kw : call.kwargs)
      see(kw.value);
    break;
  }
  case Expr::Index:
    see(static_cast<const IndexExpr &>(e).base);
    seeAll(static_cast<const IndexExpr &>(e).indices);
    break;
  case Expr::Slice: {
    auto &slice = static_cast<const SliceExpr &>(e);
    for (const ExprPtr *part : {&slice.start, &slice.stop, &slice.step})
      if (*part)
        see(*part);
    break;
  }
  case Expr::Method:
    see(static_cast<const MethodExpr &>(e).base);
    seeAll(static_cast<const MethodExpr &>(e).args);
    break;
  case Expr::List: seeAll(static_cast<const ListExpr &>(e).elements); break;
  case Expr::Tuple: seeAll(static_cast<const TupleExpr &>(e).elements); break;
  default: break;
  }
  return tallest + 1;
}

//===----------------------------------------------------------------------===//
// Dump
//===----------------------------------------------------------------------===//

namespace {
struct Dumper {
  llvm::raw_ostream &os;
  int depth = 0;

  llvm::raw_ostream &line() { return os.indent(depth * 2); }

  void expr(const Expr &e) {
    switch (e.kind) {
    case Expr::IntLit: os << static_cast<const IntLitExpr &>(e).value; return;
    case Expr::FloatLit: os << static_cast<const FloatLitExpr &>(e).value; return;
    case Expr::BoolLit:
      os << (static_cast<const BoolLitExpr &>(e).value ? "true" : "false");
      return;
    case Expr::StringLit: {
      os << '"';
      os.write_escaped(static_cast<const StringLitExpr &>(e).value);
      os << '"';
      return;
    }
    case Expr::Name: os << static_cast<const NameExpr &>(e).name; return;
    case Expr::Unary: {
      auto &u = static_cast<const UnaryExpr &>(e);
      os << "(" << u.op << " ";
      expr(*u.operand);
      os << ")";
      return;
    }
    case Expr::Binary: {
      auto &b = static_cast<const BinaryExpr &>(e);
      os << "(" << binOpSpelling(b.op) << " ";
      expr(*b.lhs);
      os << " ";
      expr(*b.rhs);
      os << ")";
      return;
    }
    case Expr::Call: {
      auto &c = static_cast<const CallExpr &>(e);
      os << "(call " << c.callee;
      if (c.typeArg)
        os << "<" << dtypeName(*c.typeArg) << ">";
      if (c.hasShapeArg) {
        os << " [";
        list(c.shapeArg);
        os << "]";
      }
      for (auto &a : c.args) {
        os << " ";
        expr(*a);
      }
      for (auto &kw : c.kwargs) {
        os << " " << kw.name << "=";
        expr(*kw.value);
      }
      os << ")";
      return;
    }
    case Expr::Index: {
      auto &i = static_cast<const IndexExpr &>(e);
      os << "(index ";
      expr(*i.base);
      os << " [";
      list(i.indices);
      os << "])";
      return;
    }
    case Expr::Slice: {
      auto &slice = static_cast<const SliceExpr &>(e);
      if (slice.ellipsis) {
        os << "...";
        return;
      }
      auto part = [&](const ExprPtr &p) {
        if (p)
          expr(*p);
      };
      part(slice.start);
      os << ":";
      part(slice.stop);
      if (slice.step) {
        os << ":";
        part(slice.step);
      }
      return;
    }
    case Expr::Method: {
      auto &m = static_cast<const MethodExpr &>(e);
      os << "(method ";
      expr(*m.base);
      os << "." << m.name;
      for (auto &a : m.args) {
        os << " ";
        expr(*a);
      }
      os << ")";
      return;
    }
    case Expr::List:
      os << "[";
      list(static_cast<const ListExpr &>(e).elements);
      os << "]";
      return;
    case Expr::Tuple:
      os << "(tuple ";
      list(static_cast<const TupleExpr &>(e).elements);
      os << ")";
      return;
    }
  }

  void list(const std::vector<ExprPtr> &items) {
    for (auto [i, item] : llvm::enumerate(items)) {
      if (i)
        os << ", ";
      expr(*item);
    }
  }

  void block(const Block &b) {
    ++depth;
    for (auto &s : b)
      stmt(*s);
    --depth;
  }

  void stmt(const Stmt &s) {
    switch (s.kind) {
    case Stmt::Let: {
      auto &l = static_cast<const LetStmt &>(s);
      line() << (l.isMutable ? "var " : "let ") << l.name;
      for (auto [i, target] : llvm::enumerate(l.unpack))
        os << (i ? ", " : "(") << target.name << (i + 1 == l.unpack.size() ? ")" : "");
      os << " = ";
      expr(*l.init);
      os << "\n";
      return;
    }
    case Stmt::Assign: {
      auto &a = static_cast<const AssignStmt &>(s);
      line() << "assign " << a.name;
      for (auto [i, target] : llvm::enumerate(a.unpack))
        os << (i ? ", " : "(") << target.name << (i + 1 == a.unpack.size() ? ")" : "");
      os << " = ";
      expr(*a.value);
      os << "\n";
      return;
    }
    case Stmt::For: {
      auto &f = static_cast<const ForStmt &>(s);
      line() << "for " << f.var << (f.unrolled ? " in static_range(" : " in range(");
      expr(*f.start);
      os << ", ";
      expr(*f.end);
      if (f.step) {
        os << ", ";
        expr(*f.step);
      }
      if (f.stages) {
        os << ", stages=";
        expr(*f.stages);
      }
      os << ")\n";
      block(f.body);
      return;
    }
    case Stmt::While: {
      auto &w = static_cast<const WhileStmt &>(s);
      line() << "while ";
      expr(*w.cond);
      os << "\n";
      block(w.body);
      return;
    }
    case Stmt::If: {
      auto &i = static_cast<const IfStmt &>(s);
      line() << "if ";
      expr(*i.cond);
      os << "\n";
      block(i.thenBody);
      if (!i.elseBody.empty()) {
        line() << "else\n";
        block(i.elseBody);
      }
      return;
    }
    case Stmt::Return: {
      auto &r = static_cast<const ReturnStmt &>(s);
      line() << "return";
      if (r.value) {
        os << " ";
        expr(*r.value);
      }
      os << "\n";
      return;
    }
    case Stmt::Break: line() << "break\n"; return;
    case Stmt::Continue: line() << "continue\n"; return;
    case Stmt::ExprS:
      line();
      expr(*static_cast<const ExprStmt &>(s).expr);
      os << "\n";
      return;
    }
  }
};
} // namespace

void kiln::dumpAST(const Module &module, llvm::raw_ostream &os) {
  Dumper d{os};
  for (auto &fn : module.functions) {
    os << "fn " << fn->name << "(";
    for (auto [i, p] : llvm::enumerate(fn->params)) {
      os << (i ? ", " : "") << p.name;
      if (p.dtype)
        os << ": " << dtypeName(*p.dtype);
    }
    os << ")\n";
    d.block(fn->body);
  }
  for (auto &k : module.kernels) {
    os << "kernel " << k->name << "(";
    for (auto [i, a] : llvm::enumerate(k->args)) {
      os << (i ? ", " : "") << a.name << ": ";
      if (a.isTensor) {
        os << "tensor<" << dtypeName(a.dtype) << ">[";
        for (auto [j, dim] : llvm::enumerate(a.dims)) {
          os << (j ? ", " : "");
          if (dim.name.empty())
            os << dim.fixed;
          else
            os << dim.name;
        }
        os << "]";
      } else {
        os << dtypeName(a.dtype);
      }
    }
    os << ")\n";
    for (auto &p : k->params) {
      os << "  param " << p.name << ": " << dtypeName(p.dtype);
      if (p.defaultValue) {
        os << " = ";
        d.expr(*p.defaultValue);
      }
      if (!p.tuneValues.empty())
        os << " tune [" << llvm::join(p.tuneValues, ", ") << "]";
      os << "\n";
    }
    if (!k->grid.empty()) {
      os << "  grid(";
      d.list(k->grid);
      os << ")\n";
    }
    d.block(k->body);
  }
}
