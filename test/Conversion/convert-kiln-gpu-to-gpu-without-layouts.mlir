// RUN: kiln-opt %s --convert-kiln-gpu-to-gpu | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-allocate-shared-memory | FileCheck %s --check-prefix=SHARED
// RUN: kiln-opt %s --kiln-gpu-coalesce | FileCheck %s --check-prefix=COALESCE

// The layout-level passes on a kernel that never went through
// convert-kiln-to-kiln-gpu (kiln-opt takes any stage): they load the kiln_gpu
// dialect themselves. They segfaulted in BlockedEncodingAttr::get when the
// input had not loaded it.
// CHECK: gpu.func @k({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
// SHARED: func.func @k({{.*}}) attributes {kiln.kernel, kiln_gpu.shared_bytes = 0 : i64
// COALESCE: func.func @k({{.*}}) attributes {kiln.kernel}
func.func @k(%arg0: memref<?xf32>) attributes {kiln.kernel} {
  return
}
