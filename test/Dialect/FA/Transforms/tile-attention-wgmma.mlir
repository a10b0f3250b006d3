// RUN: fa-opt %s --fa-tile-attention --split-input-file --verify-diagnostics | FileCheck %s

// wgmma = true is recorded in the configuration, and every shared tile is
// 1024-byte aligned (wgmma swizzles by address bits 4-9).
// CHECK: config = #fa.tile<{{.*}}wgmma = true>
// CHECK: gpu.func @ok
// CHECK-SAME: {llvm.align = 1024 : i64}
// CHECK-SAME: {llvm.align = 1024 : i64}
// CHECK-SAME: {llvm.align = 1024 : i64}
func.func @ok(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: wgmma needs whole warpgroups with 64 query rows each (block_m = 16 x num_warps, num_warps a multiple of 4); got block_m 128 on 4 warps}}
func.func @rows(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 4, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: wgmma reads the query tile from shared memory: set q_in_shared}}
func.func @query(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: wgmma needs f16 or bf16 operands}}
func.func @f32(%q: memref<?x?x?x64xf32>, %k: memref<?x?x?x64xf32>, %v: memref<?x?x?x64xf32>, %o: memref<?x?x?x64xf32>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32>) outs(%o : memref<?x?x?x64xf32>)
  return
}
