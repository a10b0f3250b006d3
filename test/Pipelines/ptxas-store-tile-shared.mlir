// REQUIRES: ptxas
// fa.store_tile_shared through fa-to-ptx, as the fused dQ product uses it:
// 8 warps (2 warpgroups) store a 128 x 32 bf16 tile transposed into a
// 32 x 128 shared tile, which a wgmma then reads as B (transpose_b). Each
// lane's 16 elements go out in two stmatrix .trans x4 between a barrier and
// the async-proxy fence + barrier, before the first wgmma; the kernel assembles
// for sm_90a without spilling. (The stores stay only because the product
// reads the tile: LLVM deletes stores to a shared buffer nothing loads.)
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: FileCheck %s < %t.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|error" %t.txt
// PTX: bar.sync 0;
// PTX-COUNT-2: stmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-NOT: st.shared
// PTX-NOT: stmatrix
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 0;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// CHECK: Compiling entry function 'store_transposed'
module attributes {gpu.container_module} {
gpu.module @store_tile_shared {
  gpu.func @store_transposed(%src: memref<?x?x?x32xbf16>, %a_src: memref<?x?x?x128xbf16>, %out: memref<?x?x?x32xf32>, %i: index) workgroup(%buf : memref<32x128xbf16, #gpu.address_space<workgroup>>) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x32xbf16> -> vector<128x32xbf16>
    fa.store_tile_shared %t, %buf transposed : vector<128x32xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>
    %a = fa.load_tile %a_src[%i, %i, %i] : memref<?x?x?x128xbf16> -> vector<128x128xbf16>
    %zero = arith.constant dense<0.0> : vector<128x32xf32>
    %acc = fa.tile_matmul %a, %buf, %zero transpose_b : vector<128x128xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>, vector<128x32xf32>
    fa.store_tile %acc, %out[%i, %i, %i] : vector<128x32xf32>, memref<?x?x?x32xf32>
    gpu.return
  }
}
}
