// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// stage_output = 1: the output tile goes through its own 128-byte aligned
// shared tile. Between two barriers every lane stores its 16 pairs there
// (4-byte aligned, swizzled); then each thread loads whole 16-byte chunks
// and stores them to the rows that exist (16-byte aligned, coalesced).
// CHECK-LABEL: gpu.func @staged
// CHECK-SAME: %[[OB:arg[0-9]+]] : memref<64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK: } {fa.kv_tiles = "partial"
// CHECK: gpu.barrier
// CHECK-COUNT-16: vector.store %{{.*}}, %[[OB]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT: gpu.barrier
// CHECK: %[[VIEW:.*]] = memref.subview %[[OB]][16, 0] [16, 64] [1, 1]
// CHECK: %[[CHUNK:.*]] = vector.load %[[VIEW]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<16x64xbf16, strided<[64, 1], offset: 1024>, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: scf.if
// CHECK-NEXT: vector.store %[[CHUNK]], %arg3[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x?x64xbf16>, vector<8xbf16>
func.func @staged(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                  %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, stage_output = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
