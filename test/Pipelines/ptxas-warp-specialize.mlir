// REQUIRES: ptxas
// The warp-specialised D=128 forward through fa-to-ptx: the two tensor maps
// are 128-byte grid-constant parameters; the producer warpgroup lowers its
// register budget and loads each 128 x 128 bf16 tile as two 128-byte-wide
// panels (cp.async.bulk.tensor.4d, 16 KiB apart, columns 0 and 64) on one
// expect_tx of 32 KiB; the computing warpgroups raise theirs, synchronise
// among themselves only (bar.sync 1, 256: the producer never arrives), wait
// for tiles on their mbarriers and release slots after the wgmma wait.
// The online softmax's exponentials are ex2.approx.ftz.f32 (fa-fast-exp2),
// none libdevice's ex2.approx.f32. ptxas assembles it for sm_90a without
// spilling.
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=EX2 --implicit-check-not=ex2.approx.f32 < %t.ptx
// EX2: ex2.approx.ftz.f32
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt

// CHECK-LABEL: .visible .entry attn(
// CHECK: .param .align 64 .b8 attn_param_44[128],
// CHECK-NEXT: .param .align 64 .b8 attn_param_45[128]
// CHECK-NEXT: )
// CHECK-NEXT: .maxntid 384, 1, 1
// CHECK-COUNT-2: bar.sync 0;
// CHECK-NOT: bar.sync 0;
// CHECK: setmaxnreg.dec.sync.aligned.u32 24;
// CHECK: mbarrier.try_wait.parity.shared.b64
// CHECK: mov.b32 [[BYTES:%r[0-9]+]], 32768;
// CHECK-NEXT: mbarrier.arrive.expect_tx.shared.b64 %{{.*}}, [[[FULL:%rd[0-9]+]]], [[BYTES]];
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%{{.*}}], [%{{.*}}, {[[COL0:%r[0-9]+]], [[ROW:%r[0-9]+]], %{{.*}}, %{{.*}}}], [[[FULL]]];
// CHECK: add.s64 %{{.*}}, %{{.*}}, 16384;
// CHECK: mov.b32 [[COL64:%r[0-9]+]], 64;
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%{{.*}}], [%{{.*}}, {[[COL64]], [[ROW]], %{{.*}}, %{{.*}}}], [[[FULL]]];
// CHECK: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK: cp.async.cg.shared.global
// CHECK: cp.async.wait_group 0;
// CHECK: bar.sync 1, 256;
// CHECK-NOT: bar.sync 0;
// CHECK: mbarrier.try_wait.parity.shared.b64
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: wgmma.wait_group.sync.aligned
// CHECK: mbarrier.arrive.shared.b64
func.func @attn(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>)
  return
}
