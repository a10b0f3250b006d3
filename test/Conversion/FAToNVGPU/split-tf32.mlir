// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// Input: an f32 fa.tile_matmul (16 x 16 tiles, one warp). Each operand value
// x splits into big = x rounded to TF32 (add half of the dropped unit, clear
// the 13 dropped bits) and small = the rest rounded likewise; each product
// is three m16n8k8 TF32 mma.sync accumulating small_a big_b, big_a small_b,
// then big_a big_b.
// CHECK-LABEL: gpu.func @f32_scores
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] :
// CHECK: %[[B0:.*]] = memref.load %[[KB]][
// CHECK: %[[B0_BITS:.*]] = arith.bitcast %[[B0]] : f32 to i32
// CHECK: %[[B0_PLUS_HALF:.*]] = arith.addi %[[B0_BITS]], %c4096_i32
// CHECK: %[[B0_BIG:.*]] = arith.andi %[[B0_PLUS_HALF]], %c-8192_i32
// CHECK: %[[B0_BIG_F32:.*]] = arith.bitcast %[[B0_BIG]] : i32 to f32
// CHECK: %[[B0_REST:.*]] = arith.subf %[[B0]], %[[B0_BIG_F32]]
// CHECK: %[[B0_REST_BITS:.*]] = arith.bitcast %[[B0_REST]] : f32 to i32
// CHECK: %[[B0_REST_PLUS_HALF:.*]] = arith.addi %[[B0_REST_BITS]], %c4096_i32
// CHECK: %[[B0_SMALL:.*]] = arith.andi %[[B0_REST_PLUS_HALF]], %c-8192_i32
// CHECK: %[[A0:.*]] = vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// CHECK: %[[A0_BITS:.*]] = arith.bitcast %[[A0]] : f32 to i32
// CHECK: %[[A0_PLUS_HALF:.*]] = arith.addi %[[A0_BITS]], %c4096_i32
// CHECK: %[[A0_BIG:.*]] = arith.andi %[[A0_PLUS_HALF]], %c-8192_i32
// CHECK: %[[A0_BIG_F32:.*]] = arith.bitcast %[[A0_BIG]] : i32 to f32
// CHECK: %[[A0_REST:.*]] = arith.subf %[[A0]], %[[A0_BIG_F32]]
// CHECK: %[[A0_REST_BITS:.*]] = arith.bitcast %[[A0_REST]] : f32 to i32
// CHECK: %[[A0_REST_PLUS_HALF:.*]] = arith.addi %[[A0_REST_BITS]], %c4096_i32
// CHECK: %[[A0_SMALL:.*]] = arith.andi %[[A0_REST_PLUS_HALF]], %c-8192_i32
// CHECK: %[[SMALL_BIG:.*]] = nvvm.mma.sync A[%[[A0_SMALL]], {{.*}}] B[%[[B0_BIG]], {{.*}}] C[{{.*}}]
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32)
// CHECK: %[[C1:.*]] = llvm.extractvalue %[[SMALL_BIG]][0]
// CHECK: %[[BIG_SMALL:.*]] = nvvm.mma.sync A[%[[A0_BIG]], {{.*}}] B[%[[B0_SMALL]], {{.*}}] C[%[[C1]], {{.*}}]
// CHECK: %[[C2:.*]] = llvm.extractvalue %[[BIG_SMALL]][0]
// CHECK: nvvm.mma.sync A[%[[A0_BIG]], {{.*}}] B[%[[B0_BIG]], {{.*}}] C[%[[C2]], {{.*}}]
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: k = 16
!t = memref<?x?x?x16xf32>
!smem = memref<16x16xf32, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @f32_scores(%q: !t, %o: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = fa.load_tile %q[%b, %h, %row0] : !t -> vector<16x16xf32>
    %s = fa.tile_matmul %qt, %kb, %zero transpose_b : vector<16x16xf32>, !smem, vector<16x16xf32>
    fa.store_tile %s, %o[%b, %h, %row0] : vector<16x16xf32>, !t
    gpu.return
  }
}
