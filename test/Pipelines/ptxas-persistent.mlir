// REQUIRES: ptxas
// persistent = true through fa-to-ptx, causal: the producer keeps 40
// registers (setmaxnreg.dec 40: it walks the tiles too), which leaves the
// computing warpgroups 232 of the block's 168 * 384 (asking for more waits
// forever: the GPU hung at 240). The producer starts at %ctaid.x and asks
// the tile counter (the last parameter) for each next tile with one atomic
// add; per tile it publishes that next tile in shared memory, then loads
// the query tile by TMA (two 128-byte panels into the one-slot ring, full
// barrier __mbarrier_3) before K and V. The computing warpgroups start at
// %ctaid.x too and read each next tile, published with the query tile,
// right after waiting for it. No cp.async copies. ptxas assembles it for
// sm_90a without spilling (at 24 producer registers the tile loop spilled
// 4 bytes).
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// The roles' code may come in either order: one FileCheck for each.
// RUN: FileCheck %s --check-prefix=PRODUCER < %t.ptx
// RUN: FileCheck %s --check-prefix=CONSUMER < %t.ptx
// RUN: FileCheck %s --check-prefix=ONE-BLOCK-ID < %t.ptx
// RUN: not grep -E "cp\.async\.cg|ctaid\.y" %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt

// PRODUCER: setmaxnreg.dec.sync.aligned.u32 40;
// PRODUCER: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// PRODUCER: atom.global.add.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], 1;
// PRODUCER: st.shared.b32
// PRODUCER: mbarrier.arrive.expect_tx.shared.b64 %rd{{[0-9]+}}, [__mbarrier_3], %r{{[0-9]+}};
// PRODUCER-COUNT-2: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PRODUCER-COUNT-4: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes

// CONSUMER: setmaxnreg.inc.sync.aligned.u32 232;
// CONSUMER: bar.arrive 2, 256;
// CONSUMER: mbarrier.try_wait.parity.shared.b64
// CONSUMER: ld.shared.b32 %rd{{[0-9]+}}, [%rd{{[0-9]+}}];

// Each role reads its block id once: its first tile.
// ONE-BLOCK-ID-COUNT-2: %ctaid.x
// ONE-BLOCK-ID-NOT: %ctaid
func.func @attn(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, stage_output = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>) causal
  return
}
