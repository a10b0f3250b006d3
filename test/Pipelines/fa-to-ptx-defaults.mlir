// Kernels without fa.tile take the chip's default configuration from
// include/fa/Dialect/FA/Transforms/DefaultTiles.def, the one the kernel
// library ships as each group's default: on sm_90a, wgmma (and, at D=128,
// the warp-specialised kernel: TMA producer, ping-pong, the softmax
// overlapped with P @ V, the output staged; persistent, causal ones taking
// their tiles from a counter, except D=128 causal). A tile option or
// fa.tile wins; another chip, or a kernel the table has no entry for, keeps
// the generic 64 x 64 mma.sync configuration.
// RUN: fa-opt %fa_src_root/examples/attention.mlir --fa-to-ptx | FileCheck %s --check-prefix=EXAMPLE
// RUN: fa-opt %fa_src_root/examples/attention.mlir --fa-to-ptx="block-n=64" | FileCheck %s --check-prefix=OPTION
// RUN: fa-opt %fa_src_root/examples/attention.mlir --fa-to-ptx="chip=sm_80" | FileCheck %s --check-prefix=OPTION
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: FileCheck %s --check-prefix=BWD < %t/bwd_dkdv.ptx
// RUN: FileCheck %s --check-prefix=OCCUPANCY < %t/fwd_d64.ptx
// RUN: FileCheck %s --check-prefix=EX2 --implicit-check-not=ex2.approx.f32 < %t/bwd_dkdv.ptx
// RUN: FileCheck %s --check-prefix=EX2 --implicit-check-not=ex2.approx.f32 < %t/bwd.ptx
// RUN: FileCheck %s --check-prefix=EX2 --implicit-check-not=ex2.approx.f32 < %t/fwd_d64.ptx
// RUN: FileCheck %s --check-prefix=VARIANT --implicit-check-not=.minnctapersm < %t/fwd_d64_softcap.ptx
// RUN: FileCheck %s --check-prefix=BWD128 < %t/bwd_d128_dkdv.ptx
// RUN: FileCheck %s --check-prefix=BWD128 < %t/bwd_d128_causal_dkdv.ptx
// RUN: FileCheck %s --check-prefix=BWD128-PLAIN --implicit-check-not=setmaxnreg < %t/bwd_d128_softcap_dkdv.ptx

// EXAMPLE: gpu.binary @attention_bf16_d64_causal
// EXAMPLE-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// OPTION: gpu.binary @attention_bf16_d64_causal
// OPTION-NOT: wgmma
// OPTION-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// The manifest records what each kernel got (its config, then its name).
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 128,
// MANIFEST-NEXT: "block_n": 128,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 8,
// MANIFEST-NEXT: "overlap_softmax": 1,
// MANIFEST-NEXT: "persistent": 1,
// MANIFEST-NEXT: "ping_pong": 1,
// MANIFEST-NEXT: "pipeline_copies": 1,
// MANIFEST-NEXT: "q_in_shared": 1,
// MANIFEST-NEXT: "skip_unit_rescale": 1,
// MANIFEST-NEXT: "stage_output": 1,
// MANIFEST-NEXT: "warp_specialize": 1,
// MANIFEST-NEXT: "wgmma": 1
// MANIFEST: "name": "fwd_d128",
// D=64 without a mask is persistent and warp-specialised as well; a variant
// takes its own default (forward_variant): 128 x 128 on two warpgroups with
// neither the split nor a register cap (its regions would spill under one).
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 128,
// MANIFEST-NEXT: "block_n": 128,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 8,
// MANIFEST-NEXT: "overlap_softmax": 1,
// MANIFEST-NEXT: "persistent": 1,
// MANIFEST: "warp_specialize": 1,
// MANIFEST: "name": "fwd_d64",
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 128,
// MANIFEST-NEXT: "block_n": 128,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 8,
// MANIFEST-NEXT: "overlap_softmax": 0,
// MANIFEST-NEXT: "persistent": 0,
// MANIFEST: "warp_specialize": 0,
// MANIFEST: "name": "fwd_d64_softcap",
// D=64 causal is warp-specialised and persistent, its tiles taken from a
// counter; its variants keep their own default (forward_variant), 64 x 128 on
// one warpgroup.
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 128,
// MANIFEST-NEXT: "block_n": 128,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 8,
// MANIFEST-NEXT: "overlap_softmax": 1,
// MANIFEST-NEXT: "persistent": 1,
// MANIFEST-NEXT: "ping_pong": 1,
// MANIFEST: "warp_specialize": 1,
// MANIFEST: "name": "fwd_d64_causal",
// MANIFEST: "name": "tile_counter",
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 128,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST-NEXT: "overlap_softmax": 0,
// MANIFEST-NEXT: "persistent": 0,
// MANIFEST-NEXT: "ping_pong": 0,
// MANIFEST: "warp_specialize": 0,
// MANIFEST: "name": "fwd_d64_causal_softcap",
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 16,
// MANIFEST-NEXT: "num_stages": 1,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST-NEXT: "overlap_softmax": 0,
// MANIFEST-NEXT: "persistent": 0,
// MANIFEST-NEXT: "ping_pong": 0,
// MANIFEST-NEXT: "pipeline_copies": 0,
// MANIFEST: "name": "fwd_f32",
// fa.tile wins over the default; the entries it leaves out come from the
// options.
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 32,
// MANIFEST-NEXT: "num_stages": 1,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST: "wgmma": 0
// MANIFEST: "name": "fwd_tiled",
// The backward's dK/dV kernel: two warpgroups of keys; its dQ kernel one
// warpgroup of queries.
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 128,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 8,
// MANIFEST-NEXT: "skip_unit_rescale": 0,
// MANIFEST-NEXT: "wgmma": 1
// MANIFEST: "name": "bwd_dkdv",
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST-NEXT: "skip_unit_rescale": 0,
// MANIFEST-NEXT: "wgmma": 1
// MANIFEST: "name": "bwd",

// BWD: .visible .entry bwd_dkdv(
// BWD: wgmma.mma_async.sync.aligned
// The D=128 backward is warp-specialised: 128 keys over 64 queries, a
// producer warpgroup (setmaxnreg 24) loading Q and dO by TMA for two
// computing ones (240), plain and causal. The variants keep 128 x 32
// without the producer (backward_variant).
// MANIFEST: "block_m": 128,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST: "name": "bwd_d128_dkdv",
// MANIFEST: "block_m": 128,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST: "name": "bwd_d128_causal_dkdv",
// MANIFEST: "block_m": 128,
// MANIFEST-NEXT: "block_n": 32,
// MANIFEST: "name": "bwd_d128_softcap_dkdv",
// BWD128: .visible .entry bwd_d128{{(_causal)?}}_dkdv(
// BWD128: setmaxnreg.dec.sync.aligned.u32 24;
// BWD128: cp.async.bulk.tensor.4d
// BWD128: setmaxnreg.inc.sync.aligned.u32 240;
// BWD128: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// BWD128-PLAIN: .visible .entry bwd_d128_softcap_dkdv(
// BWD128-PLAIN: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// The wgmma kernels' softmax exponentials, forward and backward, are
// ex2.approx.ftz.f32 (fa-fast-exp2).
// EX2: ex2.approx.ftz.f32
// OCCUPANCY: .visible .entry fwd_d64(
// OCCUPANCY: setmaxnreg.dec.sync.aligned.u32 40;
// VARIANT: .visible .entry fwd_d64_softcap(

!h = memref<?x?x?x128xbf16>
!f = memref<?x?x?x64xf32>
!t = memref<?x?x?x64xf16>
!s = memref<?x?x?xf32>
func.func @fwd_d128(%q: !h, %k: !h, %v: !h, %o: !h) {
  fa.attention ins(%q, %k, %v : !h, !h, !h) outs(%o : !h)
  return
}

!d = memref<?x?x?x64xbf16>
func.func @fwd_d64(%q: !d, %k: !d, %v: !d, %o: !d) {
  fa.attention ins(%q, %k, %v : !d, !d, !d) outs(%o : !d)
  return
}

func.func @fwd_d64_softcap(%q: !d, %k: !d, %v: !d, %o: !d, %cap: f32) {
  fa.attention ins(%q, %k, %v : !d, !d, !d) outs(%o : !d) softcap(%cap)
  return
}

func.func @fwd_d64_causal(%q: !d, %k: !d, %v: !d, %o: !d) {
  fa.attention ins(%q, %k, %v : !d, !d, !d) outs(%o : !d) causal
  return
}

func.func @fwd_d64_causal_softcap(%q: !d, %k: !d, %v: !d, %o: !d, %cap: f32) {
  fa.attention ins(%q, %k, %v : !d, !d, !d) outs(%o : !d) causal softcap(%cap)
  return
}

func.func @fwd_f32(%q: !f, %k: !f, %v: !f, %o: !f) {
  fa.attention ins(%q, %k, %v : !f, !f, !f) outs(%o : !f) causal
  return
}

func.func @fwd_tiled(%q: !h, %k: !h, %v: !h, %o: !h) attributes {fa.tile = #fa.tile<block_n = 32>} {
  fa.attention ins(%q, %k, %v : !h, !h, !h) outs(%o : !h)
  return
}

func.func @bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}

func.func @bwd_d128(%q: !h, %k: !h, %v: !h, %o: !h, %do: !h, %lse: !s, %dq: !h, %dk: !h, %dv: !h) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !h, !h, !h, !h, !h, !s) outs(%dq, %dk, %dv : !h, !h, !h)
  return
}

func.func @bwd_d128_causal(%q: !h, %k: !h, %v: !h, %o: !h, %do: !h, %lse: !s, %dq: !h, %dk: !h, %dv: !h) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !h, !h, !h, !h, !h, !s) outs(%dq, %dk, %dv : !h, !h, !h) causal
  return
}

func.func @bwd_d128_softcap(%q: !h, %k: !h, %v: !h, %o: !h, %do: !h, %lse: !s, %dq: !h, %dk: !h, %dv: !h, %cap: f32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !h, !h, !h, !h, !h, !s) outs(%dq, %dk, %dv : !h, !h, !h) softcap(%cap)
  return
}
