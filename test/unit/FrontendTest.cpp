//===- FrontendTest.cpp - lexer, parser and Sema rules --------------------===//

#include "lib/Frontend/Lexer.h"
#include "lib/Frontend/Parser.h"
#include "lib/Frontend/Sema.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

std::vector<Tok> lexAll(llvm::StringRef text) {
  Lexer lexer(text);
  std::vector<Tok> kinds;
  for (Token t = lexer.next(); t.kind != Tok::Eof; t = lexer.next()) {
    kinds.push_back(t.kind);
    if (t.kind == Tok::Error)
      break;
  }
  return kinds;
}

TEST(Lexer, OperatorsAndKeywords) {
  EXPECT_EQ(lexAll("let x += a->b && !c || d <= e != f"),
            (std::vector<Tok>{Tok::KwLet, Tok::Ident, Tok::PlusAssign, Tok::Ident, Tok::Arrow,
                              Tok::Ident, Tok::AmpAmp, Tok::Bang, Tok::Ident, Tok::PipePipe,
                              Tok::Ident, Tok::Le, Tok::Ident, Tok::Ne, Tok::Ident}));
}

TEST(Lexer, NumbersAndComments) {
  EXPECT_EQ(lexAll("1 2.5 .5 1e-3 1_000 /* x */ // y\n 3"),
            (std::vector<Tok>{Tok::Int, Tok::Float, Tok::Float, Tok::Float, Tok::Int,
                              Tok::Int}));
}

TEST(Lexer, Errors) {
  EXPECT_EQ(lexAll("1e+").back(), Tok::Error);
  EXPECT_EQ(lexAll("12abc").back(), Tok::Error);
  EXPECT_EQ(lexAll("a $ b").back(), Tok::Error);
}

std::unique_ptr<Module> parse(llvm::StringRef text, std::string &errors) {
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "t.kiln"), llvm::SMLoc());
  llvm::raw_string_ostream os(errors);
  DiagEngine diag(sm, os);
  return parseModule(sm.getMemoryBuffer(sm.getMainFileID())->getBuffer(), diag);
}

TEST(Parser, KernelSignature) {
  std::string errors;
  auto m = parse("kernel k(x: tensor<f16>[M, 4], s: f32) params(B: i32 = 64) grid(M, 2) {}",
                 errors);
  ASSERT_TRUE(m) << errors;
  ASSERT_EQ(m->kernels.size(), 1u);
  const KernelDecl &k = *m->kernels[0];
  EXPECT_EQ(k.name, "k");
  ASSERT_EQ(k.args.size(), 2u);
  EXPECT_TRUE(k.args[0].isTensor);
  EXPECT_EQ(k.args[0].dtype, DType::F16);
  EXPECT_EQ(k.args[0].dims[0].name, "M");
  EXPECT_EQ(k.args[0].dims[1].fixed, 4);
  EXPECT_FALSE(k.args[1].isTensor);
  ASSERT_EQ(k.params.size(), 1u);
  EXPECT_EQ(k.grid.size(), 2u);
}

TEST(Parser, PrecedenceAndCompoundAssignment) {
  std::string errors;
  auto m = parse("kernel k() { var a = 1 + 2 * 3 < 4 && true; a += 1; }", errors);
  ASSERT_TRUE(m) << errors;
  std::string dump;
  llvm::raw_string_ostream os(dump);
  dumpAST(*m, os);
  EXPECT_NE(dump.find("var a = (&& (< (+ 1 (* 2 3)) 4) true)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("assign a = (+ a 1)"), std::string::npos) << dump;
}

TEST(Parser, ReportsFirstErrorWithLocation) {
  std::string errors;
  EXPECT_FALSE(parse("kernel k() {\n  let x = ;\n}", errors));
  EXPECT_NE(errors.find("t.kiln:2:11: error: expected an expression"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("  let x = ;\n          ^"), std::string::npos) << errors;
}

TEST(Parser, RejectsDuplicateDefinitions) {
  std::string errors;
  EXPECT_FALSE(parse("fn f() {} kernel f() {}", errors));
  EXPECT_NE(errors.find("redefinition of 'f'"), std::string::npos) << errors;
}

TEST(Sema, Broadcasting) {
  EXPECT_EQ(*broadcastShapes({16, 1}, {32}), (Shape{16, 32}));
  EXPECT_EQ(*broadcastShapes({}, {4, 4}), (Shape{4, 4}));
  EXPECT_EQ(*broadcastShapes({1, 8}, {4, 1}), (Shape{4, 8}));
  EXPECT_FALSE(broadcastShapes({3}, {4}).has_value());
  EXPECT_FALSE(broadcastShapes({2, 3}, {3, 3}).has_value());
}

TEST(Sema, Promotion) {
  auto s = [](DType d, bool weak = false) { return SType::scalar(d, weak); };
  EXPECT_EQ(promote(s(DType::F16), s(DType::F32, true)), DType::F16); // weak yields
  EXPECT_EQ(promote(s(DType::I8), s(DType::F32, true)), DType::F32);  // int meets float literal
  EXPECT_EQ(promote(s(DType::I32), s(DType::F16)), DType::F16);       // float wins
  EXPECT_EQ(promote(s(DType::F16), s(DType::BF16)), DType::F32);      // meet in f32
  EXPECT_EQ(promote(s(DType::I16), s(DType::I64)), DType::I64);       // wider wins
  EXPECT_EQ(promote(s(DType::I1), s(DType::I32, true)), DType::I32);
}

TEST(Sema, Assignability) {
  EXPECT_TRUE(assignable(SType::scalar(DType::F32, true), SType::tile(DType::F16, {4})));
  EXPECT_TRUE(assignable(SType::tile(DType::F32, {1, 4}), SType::tile(DType::F32, {3, 4})));
  EXPECT_FALSE(assignable(SType::tile(DType::F32, {4}), SType::tile(DType::F16, {4})));
  EXPECT_FALSE(assignable(SType::tile(DType::F32, {3, 4}), SType::tile(DType::F32, {4})));
}

TEST(Sema, ConstantFolding) {
  EXPECT_EQ(foldBinary(BinOp::Add, Const::ofInt(INT32_MAX), Const::ofInt(1), DType::I32)->i,
            INT32_MIN); // wraps like the hardware
  EXPECT_EQ(foldBinary(BinOp::Div, Const::ofInt(-7), Const::ofInt(2), DType::I32)->i, -3);
  EXPECT_FALSE(foldBinary(BinOp::Div, Const::ofInt(1), Const::ofInt(0), DType::I32));
  // MIN / -1 and MIN % -1 fold as the kernels compute them (RISC-V's results).
  EXPECT_EQ(foldBinary(BinOp::Div, Const::ofInt(INT64_MIN), Const::ofInt(-1), DType::I64)->i,
            INT64_MIN);
  EXPECT_EQ(foldBinary(BinOp::Rem, Const::ofInt(INT64_MIN), Const::ofInt(-1), DType::I64)->i, 0);
  EXPECT_EQ(foldBinary(BinOp::Div, Const::ofInt(7), Const::ofInt(2), DType::U32)->i, 3);
  EXPECT_EQ(foldBinary(BinOp::Lt, Const::ofUnsigned(~0ull), Const::ofInt(1), DType::U64)->i, 0);
  EXPECT_EQ(convertConst(Const::ofFloat(1e19), DType::U64).i, int64_t(10000000000000000000ull));
  EXPECT_EQ(convertConst(Const::ofFloat(-3.5), DType::U32).i, 0);
  EXPECT_DOUBLE_EQ(foldBinary(BinOp::Mul, Const::ofFloat(1.5), Const::ofInt(2), DType::F32)->f,
                   3.0);
  EXPECT_EQ(foldBinary(BinOp::Lt, Const::ofFloat(1.0), Const::ofFloat(2.0), DType::F32)->i, 1);
  EXPECT_EQ(convertConst(Const::ofInt(300), DType::I8).i, 44);
  EXPECT_EQ(convertConst(Const::ofFloat(2.9), DType::I32).i, 2);
  EXPECT_EQ(convertConst(Const::ofInt(5), DType::I1).i, 1);
}

} // namespace
