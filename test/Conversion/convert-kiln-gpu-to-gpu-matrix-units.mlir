// RUN: kiln-opt %s --convert-kiln-gpu-to-gpu="matrix-units=mma-sync" | FileCheck %s --check-prefix=MMA
// RUN: kiln-opt %s --convert-kiln-gpu-to-gpu="matrix-units=mfma" | FileCheck %s --check-prefix=MFMA
// RUN: kiln-opt %s --convert-kiln-gpu-to-gpu | FileCheck %s --check-prefix=NONE
// RUN: kiln-opt %s --kiln-gpu-allocate-shared-memory="matrix-units=mma-sync" | FileCheck %s --check-prefix=SHARED
// RUN: kiln-opt %s --kiln-gpu-allocate-shared-memory | FileCheck %s --check-prefix=SHARED-FMA

#l = #kiln_gpu.blocked<vec = 1, warpSize = 32, numWarps = 4>

// A 32x32x32 f16 dot: the operands and the f32 fragments go through shared
// memory; warps take 16x8 tiles round-robin and loop over K in steps of 16.
// MMA-LABEL: gpu.func @dot
// MMA: scf.for
// MMA: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// MMA: llvm.inline_asm has_side_effects {{.*}}"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0,$1,$2,$3}, [$4];", "=r,=r,=r,=r,r"
// MMA: llvm.inline_asm has_side_effects {{.*}}"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0,$1}, [$2];", "=r,=r,r"
// MMA: llvm.inline_asm has_side_effects {{.*}}"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// MMA-COUNT-4: memref.store %{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>
// MMA: gpu.barrier
// MMA: arith.addf
// MFMA-LABEL: gpu.func @dot
// MFMA: rocdl.mfma.f32.16x16x16f16 {{.*}} : (vector<4xf16>, vector<4xf16>, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
// MFMA-NOT: inline_asm
// NONE-LABEL: gpu.func @dot
// NONE-NOT: inline_asm
// NONE-NOT: rocdl.mfma
// NONE: math.fma
// SHARED: kiln_gpu.shared_elements = {{\[\[}}f16, 2048], [f32, 1024]]
// SHARED-FMA: kiln_gpu.shared_elements = {{\[\[}}f16, 2048]]
!h = memref<?x?xf16, strided<[?, ?], offset: ?>>
!f = memref<?x?xf32, strided<[?, ?], offset: ?>>
func.func @dot(%a: !h, %b: !h, %c: !f)
    attributes {kiln.kernel, kiln_gpu.threads = 128 : i32,
                kiln_gpu.shared_elements = [[f16, 2048], [f32, 1024]]} {
  %c0 = arith.constant 0 : i32
  %x = kiln.load_block %a[%c0, %c0] : !h -> tensor<32x32xf16, #l>
  %y = kiln.load_block %b[%c0, %c0] : !h -> tensor<32x32xf16, #l>
  %z = arith.constant dense<0.0> : tensor<32x32xf32, #l>
  %r = kiln.dot %x, %y, %z : tensor<32x32xf16, #l>, tensor<32x32xf16, #l> -> tensor<32x32xf32, #l>
  kiln.store_block %c[%c0, %c0], %r : !f, tensor<32x32xf32, #l>
  return
}
