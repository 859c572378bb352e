//===- Passes.h - Kiln's transforms and conversions -------------*- C++ -*-===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith { class ArithDialect; }
namespace func { class FuncDialect; }
namespace linalg { class LinalgDialect; }
namespace memref { class MemRefDialect; }
namespace scf { class SCFDialect; }
namespace tensor { class TensorDialect; }
namespace vector { class VectorDialect; }
namespace gpu { class GPUDialect; }
namespace LLVM { class LLVMDialect; }
namespace math { class MathDialect; }
namespace spirv { class SPIRVDialect; }
namespace ROCDL { class ROCDLDialect; }
namespace cf { class ControlFlowDialect; }
} // namespace mlir

namespace kiln {
namespace gpu { class KilnGPUDialect; }

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln
