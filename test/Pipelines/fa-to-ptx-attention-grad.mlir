// block-m=64: the generic (mma.sync) configuration, not sm_90a's default.
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="block-m=64 export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=DKDV < %t/g_dkdv.ptx
// RUN: FileCheck %s --check-prefix=DKDV-ROWS --implicit-check-not=ld.global < %t/g_dkdv.ptx
// RUN: FileCheck %s --check-prefix=DQ < %t/g.ptx
// RUN: FileCheck %s --check-prefix=DELTA < %t/g_delta.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: fa-opt %s --fa-to-ptx="block-m=128 block-n=32 num-warps=8 num-stages=1 export-dir=%t/tiles" -o /dev/null
// RUN: FileCheck %s --check-prefix=TILES < %t/tiles/manifest.json
// RUN: not fa-opt %s --fa-to-ptx="block-m=48" 2>&1 | FileCheck %s --check-prefix=BAD-TILES

// The attention backward end to end: all five products of the dK/dV and dQ
// kernels on tensor cores, operands from shared memory with ldmatrix (plain
// and transposed), exp2 for P.
// DKDV: .visible .entry g_dkdv(
// DKDV-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// DKDV-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// DKDV-DAG: ex2.approx
// DKDV-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// The pipelined dK/dV loop (two stages) copies its queries' lse and delta
// ahead with Q and dO, 4 bytes a thread (zero-filled past the sequence), and
// reads them from shared memory: no global load is left in the kernel.
// DKDV-ROWS: .visible .entry g_dkdv(
// DKDV-ROWS-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4, %r{{[0-9]+}};
// DKDV-ROWS-DAG: ld.shared.v2.b32
// DQ: .visible .entry g(
// DQ: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// DQ: ex2.approx
// DQ: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// DELTA: .visible .entry g_delta(
// DELTA: shfl.sync.bfly.b32

// MANIFEST-DAG: "delta_kernel": "g_delta"
// MANIFEST-DAG: "dkdv_kernel": "g_dkdv"
// MANIFEST-DAG: "op": "attention_bwd",
// MANIFEST-DAG: "op": "attention_bwd_delta"
// MANIFEST-DAG: "key_tiles",
// MANIFEST-DAG: "batch_kv_heads",
// MANIFEST-DAG: "op": "attention_bwd_dkdv"
// fa-to-ptx's tile options reach the backward's kernels (they were ignored),
// and the backward checks them.
// TILES-COUNT-3: "block_m": 128,
// TILES-NOT: "block_m"
// TILES: "block_n": 32,
// TILES: "num_stages": 1,
// TILES: "num_warps": 8,
// BAD-TILES: error: fa-tile-attention-grad: block-m (48) must be 16 or 32 x num-warps (4)
!t = memref<?x?x?x64xf16>
!s = memref<?x?x?xf32>
func.func @g(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}
