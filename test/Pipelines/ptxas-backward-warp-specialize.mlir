// REQUIRES: ptxas
// The warp-specialised dK/dV kernel through fa-to-ptx, as the library's
// D=128 backward default has it (128 keys over 64 queries a step, no mask):
// the producer warpgroup keeps 24 registers (its four walkers, one per
// ring, one picked by a switch on the warp), the computing warpgroups 240 of
// the block's 168 * 384. The producer loads Q and dO by TMA (two 128-byte
// panels each, on the slot's full barrier) and copies the lse and delta rows
// with 4-byte cp.async that its full barrier tracks (cp.async.mbarrier
// .arrive.noinc, one of the 32 arrivals it expects); the computing
// warpgroups wait on the full barriers and synchronise only among
// themselves (bar.sync 1, 256). ptxas assembles every kernel of the
// backward, plain and causal, for sm_90a without spilling.
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PRODUCER < %t/grad_dkdv.ptx
// RUN: FileCheck %s --check-prefix=CONSUMER < %t/grad_dkdv.ptx
// RUN: for f in %t/*.ptx; do %ptxas -arch=sm_90a -v $f -o %t/out.cubin; done > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t/ptxas.txt
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t/ptxas.txt

// PRODUCER: .entry grad_dkdv(
// PRODUCER-DAG: setmaxnreg.dec.sync.aligned.u32 24;
// PRODUCER-DAG: cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 4, %r{{[0-9]+}};
// PRODUCER-DAG: cp.async.mbarrier.arrive.noinc.shared.b64
// PRODUCER-DAG: mbarrier.arrive.expect_tx.shared.b64
// PRODUCER-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes

// CONSUMER: .entry grad_dkdv(
// CONSUMER: setmaxnreg.inc.sync.aligned.u32 240;
// CONSUMER: bar.sync 1, 256;
// CONSUMER-COUNT-4: mbarrier.arrive.shared.b64
// CONSUMER-COUNT-4: mbarrier.try_wait.parity.shared.b64
// CONSUMER: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// PTXAS-DAG: Compiling entry function 'grad_dkdv'
// PTXAS-DAG: Compiling entry function 'grad_delta'
// PTXAS-DAG: Compiling entry function 'grad'
// PTXAS-DAG: Compiling entry function 'grad_causal_dkdv'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
func.func @grad(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
  return
}

func.func @grad_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) causal
  return
}
