// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{vec must be a power of two up to 16, got 3}}
func.func @vec(%t: tensor<8xf32, #kiln_gpu.blocked<vec = 3, warpSize = 32, numWarps = 4>>) {
  return
}

// -----

// expected-error @+1 {{warpSize must be a power of two up to 128, got 48}}
func.func @warp(%t: tensor<8xf32, #kiln_gpu.blocked<vec = 4, warpSize = 48, numWarps = 4>>) {
  return
}

// -----

// expected-error @+1 {{a program has 1 to 1024 threads, got 2048}}
func.func @threads(%t: tensor<8xf32, #kiln_gpu.blocked<vec = 4, warpSize = 64, numWarps = 32>>) {
  return
}
