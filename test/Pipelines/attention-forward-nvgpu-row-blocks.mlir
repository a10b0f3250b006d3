// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// block_m = 128 on 4 warps: each warp owns two 16-row blocks. A lane's share
// of a 128x64 tile is 2 x 8 blocks of 4 values, row vectors 4 values. The
// query tile sits in shared memory and is read with (untransposed) ldmatrix
// as the A operand, through a view of the warp's 32 rows, one per row block
// and k step; each K fragment then feeds
// one mma.sync per row block (the two products below share B registers).
// CHECK-LABEL: gpu.func @two_row_blocks
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<16x4xf32>)
// CHECK: %[[QW:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [32, 64] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix %[[QW]][%{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix %[[QW]][%{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.mma.sync A[%[[A0:[0-9]+]], {{.*}}]  B[%[[B0:[0-9]+]], %[[B1:[0-9]+]]]
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync A[%[[A1:[0-9]+]], {{.*}}]  B[%[[B0]], %[[B1]]]
// The accumulator rescale: a warp whose rows all keep their maximum
// (alpha == 1 in each of the lane's 4 rows, in every lane) skips it.
// CHECK: %[[DIFF:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT: %[[ANY:.*]] = vector.reduction <or>, %[[DIFF]] : vector<4xi1> into i1
// CHECK-NEXT: %[[VOTE:.*]] = nvvm.vote.sync  any %{{.*}}, %[[ANY]] -> i1
// CHECK-NEXT: scf.if %[[VOTE]] -> (vector<16x4xf32>) {
// CHECK-NEXT: arith.mulf %{{.*}} : vector<16x4xf32>
// The output is stored for 4 rows per lane (2 row blocks x 2 halves), 8
// pairs each.
// CHECK: } {fa.kv_tiles = "partial"
// CHECK-COUNT-32: vector.store %{{.*}} : memref<?x?x?x64xbf16>, vector<2xbf16>
func.func @two_row_blocks(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                          %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 4, q_in_shared = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// With skip_unit_rescale = 0 the rescale is a plain product.
// CHECK-LABEL: gpu.func @always_rescale
// CHECK-NOT: nvvm.vote.sync
// CHECK: gpu.return
func.func @always_rescale(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                          %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 4, skip_unit_rescale = false>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
