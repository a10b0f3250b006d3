// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// wgmma = 1 with head_dim 128: a 256-byte row is wider than the 128-byte
// swizzle atom, so shared tiles are stored as two 128-byte panels (columns
// 0-63 of every row, then columns 64-127). In a 64x128 memref that puts
// panel row r (r = panel * 64 + row) at memref row r / 2, half r % 2.
// CHECK-LABEL: gpu.func @attn
// The MN-major V descriptor's constant bits: leading byte offset one panel
// (8192 bytes: 512 in 16-byte units at bit 16), stride byte offset 1024 (64
// at bit 32), 128-byte swizzle (bit 62).
// CHECK: arith.constant 4611686293338849280 : i64
// CHECK: %[[T:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[T]], %c2 : index
// CHECK-NEXT: %[[HALF:.*]] = arith.remui %[[T]], %c2 : index
// CHECK-NEXT: %[[HALF8:.*]] = arith.muli %[[HALF]], %c8 : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.addi %[[HALF8]], %{{.*}} : index
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[CHUNK]], %c8 : index
// CHECK: nvgpu.device_async_copy {{.*}}[%[[ROW]], %[[COL]]]

// K-major descriptors: k steps of 32 bytes inside a panel; the fifth step
// (column 64) starts the second panel, 64 rows * 128 bytes further.
// CHECK: %[[Q:.*]] = memref.extract_aligned_pointer_as_index %arg6
// CHECK: %[[K:.*]] = memref.extract_aligned_pointer_as_index %arg4
// CHECK: arith.addi %[[K]], %c32 : index
// CHECK: arith.addi %[[K]], %c64 : index
// CHECK: arith.addi %[[K]], %c96 : index
// CHECK: arith.addi %[[K]], %c8192 : index
// CHECK: arith.addi %[[K]], %c8224 : index
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

func.func @attn(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) outs(%o : memref<?x?x?x128xbf16>)
  return
}
