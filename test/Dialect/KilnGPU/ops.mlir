// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --mlir-print-ir-after-failure 2>&1 > /dev/null | FileCheck %s --check-prefix=NONE --allow-empty
// NONE-NOT: error

// CHECK: func @layouts(%{{.*}}: tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>)
func.func @layouts(%t: tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>)
    -> tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>> {
  %e = math.exp %t : tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>
  return %e : tensor<1024xf32, #kiln_gpu.blocked<vec = 4, warpSize = 32, numWarps = 4>>
}
