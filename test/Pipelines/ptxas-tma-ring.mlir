// REQUIRES: ptxas
// The TMA ring fixture (a [rows, 64] bf16 copy through a 3-stage ring of
// 64 x 64 slots, with a thread that both produces and consumes, and with a
// producer warp of its own) through fa-to-ptx: the tensor map is a 128-byte by-value
// grid-constant parameter addressed in place, the ring's mbarriers are
// initialised, armed with the tile's bytes and waited on by parity, the
// tiles come by cp.async.bulk.tensor; ptxas assembles it for sm_90a without
// spilling. Its rank-4 panel ring (tma_ring_panels) fills each 64 x 128
// bf16 slot with two 4-d loads of one 128-byte-swizzled panel each, after
// one expect_tx of the whole slot.
// RUN: fa-opt %fa_src_root/test/runtime/fixtures/TmaRingFixture.mlir --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.txt
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry tma_ring_copy(
// PTX-NEXT: .param .align 64 .b8 tma_ring_copy_param_0[128],
// Two groups of 3 mbarriers, 8 bytes each, and the 1024-byte-aligned slots.
// PTX-DAG: .shared .align 8 .b8 __mbarrier[24];
// PTX-DAG: .shared .align 8 .b8 __mbarrier_0[24];
// PTX-DAG: .shared .align 1024 .b8 __wg_tma_ring_copy_0[24576];
// The map is read where it is: the parameter's generic address.
// PTX: mov.b64 [[PARAM:%rd[0-9]+]], tma_ring_copy_param_0;
// PTX: cvta.param.u64 [[MAP:%rd[0-9]+]], [[PARAM]];
// PTX-COUNT-6: mbarrier.init.shared.b64
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync 0;
// Producer: the slot's previous round released, 8192 bytes announced, the
// 64 x 64 box loaded at (column 0, row) onto the slot's full barrier.
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: mov.b32 [[BYTES:%r[0-9]+]], 8192;
// PTX: mbarrier.arrive.expect_tx.shared.b64 {{%rd[0-9]+}}, [[[FULL:%rd[0-9]+]]], [[BYTES]];
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[MAP]], {{{%r[0-9]+}}, {{%r[0-9]+}}}], [[[FULL]]];
// Consumer: wait for the slot's round, read it, release it.
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: ld.shared.b16
// PTX: mbarrier.arrive.shared.b64

// The producer-warp kernel takes its map the same way, and loads through it.
// PTX-LABEL: .visible .entry tma_ring_copy_producer_warp(
// PTX-NEXT: .param .align 64 .b8 tma_ring_copy_producer_warp_param_0[128],
// PTX: cvta.param.u64 [[MAP2:%rd[0-9]+]], {{%rd[0-9]+}};
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[MAP2]], {{{%r[0-9]+}}, {{%r[0-9]+}}}]

// The panel kernel: 2 slots of 16384 bytes, 1024-byte aligned; 16384
// bytes announced once, then panel 0 at the slot ((slot & 1) << 14) and
// column %col, panel 1 8192 bytes on at column 64, both 4-d boxes at
// (column, row, head, batch) on the same full barrier.
// PTX-LABEL: .visible .entry tma_ring_panels(
// PTX-NEXT: .param .align 64 .b8 tma_ring_panels_param_0[128],
// PTX-DAG: .shared .align 1024 .b8 __wg_tma_ring_panels_0[32768];
// PTX: cvta.param.u64 [[MAP3:%rd[0-9]+]], {{%rd[0-9]+}};
// PTX: mov.b32 [[PBYTES:%r[0-9]+]], 16384;
// PTX-NEXT: mbarrier.arrive.expect_tx.shared.b64 {{%rd[0-9]+}}, [[[PFULL:%rd[0-9]+]]], [[PBYTES]];
// PTX-NOT: mbarrier.arrive.expect_tx
// PTX: shl.b64 [[SLOT_BYTES:%rd[0-9]+]], {{%rd[0-9]+}}, 14;
// PTX-NEXT: add.s64 [[PANEL0:%rd[0-9]+]], {{%rd[0-9]+}}, [[SLOT_BYTES]];
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[MAP3]], {[[COL0:%r[0-9]+]], [[ROW:%r[0-9]+]], [[HEAD:%r[0-9]+]], [[BATCH:%r[0-9]+]]}], [[[PFULL]]];
// PTX-NEXT: add.s64 {{%rd[0-9]+}}, [[PANEL0]], 8192;
// PTX: mov.b32 [[COL1:%r[0-9]+]], 64;
// PTX-NEXT: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[MAP3]], {[[COL1]], [[ROW]], [[HEAD]], [[BATCH]]}], [[[PFULL]]];
// PTX-NOT: cp.async.bulk.tensor

// PTXAS-DAG: Compiling entry function 'tma_ring_copy' for 'sm_90a'
// PTXAS-DAG: Compiling entry function 'tma_ring_panels' for 'sm_90a'
// PTXAS-DAG: Compiling entry function 'tma_ring_copy_producer_warp' for 'sm_90a'
