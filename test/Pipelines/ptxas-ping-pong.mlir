// REQUIRES: ptxas
// Ping-pong through fa-to-ptx: warpgroup 1 gives warpgroup 0 the first turn
// (bar.arrive 2, 256); in each key loop a warpgroup waits for its turn
// (bar.sync 2 + w, 256) before it issues the scores' and P @ V's wgmma,
// and hands the turn over (bar.arrive on the other's barrier) after the
// second commit, before it waits for the scores. ptxas assembles it for
// sm_90a without spilling.
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt

// CHECK: setmaxnreg.inc.sync.aligned.u32 240;
// CHECK: bar.arrive 2, 256;
// CHECK: bar.sync 1, 256;
// CHECK: bar.sync [[MINE:%r[0-9]+]], 256;
// CHECK-NOT: wgmma.wait_group
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NOT: wgmma.wait_group
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK-NEXT: }
// CHECK-NEXT: // end inline asm
// CHECK-NEXT: // begin inline asm
// CHECK-NEXT: bar.arrive [[OTHER:%r[0-9]+]], 256;
// CHECK: wgmma.wait_group.sync.aligned 1;
func.func @attn(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>)
  return
}
