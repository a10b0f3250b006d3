// REQUIRES: ptxas
// A product with a transposed shared A (fa.tile_matmul transpose_a), the
// backward's dQ^T = K^T dS^T, through fa-to-ptx: the key tile [128 keys]
// [128 head_dim] bf16 as staged (two 128-byte panels of 16384 bytes) is
// wgmma's MN-major A (transpose-a 1); dS stored [64 queries][128 keys] is a
// K-major B (transpose-b 0). 8 warps: warpgroup w multiplies head_dim
// columns [64w, 64w + 64), panel w. ptxas assembles it for sm_90a without
// spilling.
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt

// A's descriptor fields: 128-byte swizzle (1 at bit 62), stride byte offset
// one swizzle atom, 1024 bytes (64 at bit 32), leading byte offset one
// panel, 16384 bytes (1024 at bit 16); k step s starts 16 rows = 2048 s
// bytes further. B's are the K-major ones (leading byte offset 1 unit).
// PTX-LABEL: .visible .entry dq_transposed(
// PTX: .shared .align 1024 .b8 __wg_dq_transposed_0[32768];
// PTX: or.b64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 4611686293372403712;
// PTX: or.b64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 4611686293305360384;
// PTX: add.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 2048;
// PTX: or.b64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 4611686293372403712;
// PTX: add.s64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 14336;
// PTX: or.b64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, 4611686293372403712;
// PTX: wgmma.fence.sync.aligned;
// PTX-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, first, 1, 1, 1, 0;
// PTX-COUNT-7: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, rest, 1, 1, 1, 0;
// PTX-NEXT: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 0;
!t = memref<?x?x?x128xbf16>
!o = memref<?x?x?x64xf32>
!k = memref<128x128xbf16, #gpu.address_space<workgroup>>
!ds = memref<64x128xbf16, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
gpu.module @transpose_a {
  gpu.func @dq_transposed(%keys: !t, %dscores: !t, %out: !o, %b: index, %h: index, %row0: index)
      workgroup(%kb: !k {llvm.align = 1024 : i64}, %db: !ds {llvm.align = 1024 : i64}) kernel
      attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    fa.copy_tile_async %keys[%b, %h, %row0] into %kb : !t, !k
    fa.copy_tile_async %dscores[%b, %h, %row0] into %db : !t, !ds
    fa.wait_tiles
    %zero = arith.constant dense<0.0> : vector<128x64xf32>
    %dq = fa.tile_matmul %kb, %db, %zero transpose_a transpose_b : !k, !ds, vector<128x64xf32>
    fa.store_tile %dq, %out[%b, %h, %row0] : vector<128x64xf32>, !o
    gpu.return
  }
}
}
