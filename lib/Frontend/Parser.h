//===- Parser.h - recursive-descent parser for .kiln ------------*- C++ -*-===//
#pragma once

#include "lib/Frontend/AST.h"
#include "lib/Frontend/Diagnostics.h"
#include "lib/Frontend/Lexer.h"

namespace kiln {

/// Parses one buffer into a Module. Returns null after reporting the first error.
std::unique_ptr<Module> parseModule(llvm::StringRef buffer, DiagEngine &diag);

/// Builtins written `name<dtype>...` (`zeros<f32>[4]`, `cast<f16>(x)`); elsewhere
/// `<` is less-than.
bool takesTypeArgument(llvm::StringRef name);

/// Methods of tensor arguments (`x.tile(...)`, `x.size(0)`, `x.stride(0)`); any
/// other `v.f(args)` is the call `f(v, args)`.
bool isTensorMethod(llvm::StringRef name);

} // namespace kiln
