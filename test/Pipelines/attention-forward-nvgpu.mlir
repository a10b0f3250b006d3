// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s --check-prefix=ASYNC

// Asynchronous copies: cp.async of 16-byte chunks (8 bf16) with a source
// size of 8 or 0 (zero fill past the sequence end), one commit per tile; a
// wait is wait_group 0 then a barrier.
// ASYNC-LABEL: gpu.func @attn
// Each thread's chunks sit 16 rows apart at one swizzled column: chunk i
// goes to the thread's row of a view starting 16 i rows down (an immediate).
// ASYNC: memref.subview %{{.*}}[16, 0] [16, 64] [1, 1] : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<16x64xbf16, strided<[64, 1], offset: 1024>, #gpu.address_space<workgroup>>
// ASYNC: %[[SRC:.*]] = arith.select %{{.*}}, %c8, %c0 : index
// ASYNC: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %[[SRC]] {bypassL1} : memref<?x?x?x64xbf16> to memref<16x64xbf16, strided<[64, 1], offset: 1024>, #gpu.address_space<workgroup>>
// ASYNC: nvvm.cp.async.commit.group
// ASYNC: scf.for
// ASYNC: nvvm.cp.async.wait.group 0
// ASYNC-NEXT: gpu.barrier
// ASYNC-NOT: vector.store {{.*}} #gpu.address_space<workgroup>
// ASYNC: nvvm.mma.sync

// Every tile op is gone; tiles became a lane's share (8 blocks x 4 values for
// 64 columns), row vectors two values; the products run on tensor cores
// with ldmatrix from shared memory (transposed for V); rows are reduced with
// xor shuffles over the 4 lanes of a row; copies sit between barriers.
// CHECK-LABEL: gpu.func @attn
// CHECK-NOT: {{fa\.[a-z_]+ %}}
// CHECK-NOT: fa.wait_tiles
// CHECK: scf.for {{.*}} -> (vector<2xf32>, vector<2xf32>, vector<8x4xf32>)
// CHECK: gpu.barrier
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<16x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: math.exp2 %{{.*}} : vector<8x4xf32>
// CHECK: arith.truncf %{{.*}} : vector<8x4xf32> to vector<8x4xbf16>
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// The causal mask: column >= kv_len or column > row, each a constant
// per-element offset against one per-lane 32-bit threshold (canonicalised
// with the constant on the right); one select.
// CHECK: arith.cmpi sle, %{{.*}} : vector<8x4xi32>
// CHECK: arith.cmpi slt, %{{.*}} : vector<8x4xi32>
// CHECK: arith.select %{{.*}} : vector<8x4xi1>, vector<8x4xf32>
// CHECK: } {fa.kv_tiles = "partial"
// Output rows past the sequence end are not stored.
// CHECK: scf.if
// CHECK: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x?x?x64xbf16>, vector<2xbf16>
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}
