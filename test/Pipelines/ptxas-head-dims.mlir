// REQUIRES: ptxas
// Head dims 32, 96 and 256 compile with their DefaultTiles.def entries (no
// fa.tile) and assemble for sm_90a without spilling: f16/bf16 forward at
// every new dim and backward at 32, 96 and 256 (its dK/dV kernel split over
// grid z: split_dkdv) on wgmma, f32 at 32 on TF32
// mma.sync (whose backward, as at D=64 and 128, may spill a few bytes: f32
// backward kernels need only assemble, see ptxas-no-spills.mlir). f16/bf16 rows of 64 and 192 bytes (D=32, 96) are swizzled in
// 64-byte runs, wgmma's 64-byte swizzle mode, D=96 as three 64-byte panels.
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: for f in %t/*.ptx; do case $f in *attention_bwd_f32*) continue;; esac; %ptxas -arch=sm_90a -v $f -o %t/out.cubin 2>&1 | grep -E "spill stores|Compiling entry|fatal"; done > %t/report.txt
// RUN: for f in %t/attention_bwd_f32*.ptx; do %ptxas -arch=sm_90a $f -o %t/out.cubin || echo "fatal: $f"; done > %t/f32.txt 2>&1
// RUN: not grep -E "fatal|error" %t/f32.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|fatal" %t/report.txt
// RUN: FileCheck %s --check-prefix=ASSEMBLED < %t/report.txt
// RUN: cat %t/attention_fwd_bf16_d32.ptx %t/attention_fwd_f16_d96_causal.ptx %t/attention_fwd_bf16_d256.ptx %t/attention_bwd_f16_d96_dkdv.ptx %t/attention_bwd_bf16_d256_dkdv.ptx %t/attention_bwd_bf16_d256.ptx | FileCheck %s --check-prefix=SHAPES
// RUN: grep -E '"(entry|split_dkdv)"|"dkdv_parts"' %t/manifest.json | FileCheck %s --check-prefix=MANIFEST

// Every other kernel assembled: 14 forward, 12 backward x 3 kernels.
// ASSEMBLED-COUNT-50: 0 bytes spill stores
// ASSEMBLED-NOT: spill stores

// D=32: S = Q K^T over two k steps of 64-byte rows, O = P V 32 columns wide.
// SHAPES: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// SHAPES: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// D=96: the P V product is 96 columns wide (three 32-column atoms).
// SHAPES: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// SHAPES: wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16
// D=256: 64 keys per tile, the accumulator as wide as wgmma goes.
// SHAPES: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// SHAPES: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// D=96 dK/dV kernel: 32 queries per step, dK and dV 96 wide (in either
// order: the layout of the pipelined loop's blocks is LLVM's).
// SHAPES: .entry attention_bwd_f16_d96_dkdv(
// SHAPES-DAG: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16
// SHAPES-DAG: wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16
// D=256 dK/dV kernel: the branch on the block's z; S^T (and dP^T) over 32
// queries, dV or dK 256 wide; the dQ kernel 64 queries over 32 keys.
// SHAPES: .entry attention_bwd_bf16_d256_dkdv(
// SHAPES: %ctaid.z;
// SHAPES-DAG: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// SHAPES-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// SHAPES: .entry attention_bwd_bf16_d256(
// SHAPES: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// SHAPES: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// The manifest: every D=256 dK/dV kernel split, with grid z dkdv_parts, and
// no other kernel.
// MANIFEST-NOT: split_dkdv
// MANIFEST-NOT: dkdv_parts
// MANIFEST: "split_dkdv": 1
// MANIFEST-NEXT: "entry": "attention_bwd_bf16_d256_dkdv"
// MANIFEST-NEXT: "dkdv_parts"
// MANIFEST-NOT: split_dkdv
// MANIFEST-NOT: dkdv_parts
// MANIFEST: "split_dkdv": 1
// MANIFEST-NEXT: "entry": "attention_bwd_bf16_d256_causal_dkdv"
// MANIFEST-NEXT: "dkdv_parts"
// MANIFEST-NOT: split_dkdv
// MANIFEST-NOT: dkdv_parts
// MANIFEST: "split_dkdv": 1
// MANIFEST-NEXT: "entry": "attention_bwd_f16_d256_dkdv"
// MANIFEST-NEXT: "dkdv_parts"
// MANIFEST-NOT: split_dkdv
// MANIFEST-NOT: dkdv_parts
// MANIFEST: "split_dkdv": 1
// MANIFEST-NEXT: "entry": "attention_bwd_f16_d256_causal_dkdv"
// MANIFEST-NEXT: "dkdv_parts"
// MANIFEST-NOT: split_dkdv
// MANIFEST-NOT: dkdv_parts

func.func @attention_fwd_bf16_d32(%q: memref<?x?x?x32xbf16>, %k: memref<?x?x?x32xbf16>, %v: memref<?x?x?x32xbf16>, %out: memref<?x?x?x32xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>) outs(%out : memref<?x?x?x32xbf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_bf16_d32_causal(%q: memref<?x?x?x32xbf16>, %k: memref<?x?x?x32xbf16>, %v: memref<?x?x?x32xbf16>, %out: memref<?x?x?x32xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>) outs(%out : memref<?x?x?x32xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_fwd_bf16_d96(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>, %v: memref<?x?x?x96xbf16>, %out: memref<?x?x?x96xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>) outs(%out : memref<?x?x?x96xbf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_bf16_d96_causal(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>, %v: memref<?x?x?x96xbf16>, %out: memref<?x?x?x96xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>) outs(%out : memref<?x?x?x96xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_fwd_bf16_d256(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) outs(%out : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_bf16_d256_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) outs(%out : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_bwd_bf16_d32(%q: memref<?x?x?x32xbf16>, %k: memref<?x?x?x32xbf16>, %v: memref<?x?x?x32xbf16>, %out: memref<?x?x?x32xbf16>, %dout: memref<?x?x?x32xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xbf16>, %dk: memref<?x?x?x32xbf16>, %dv: memref<?x?x?x32xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>)
  return
}

func.func @attention_bwd_bf16_d32_causal(%q: memref<?x?x?x32xbf16>, %k: memref<?x?x?x32xbf16>, %v: memref<?x?x?x32xbf16>, %out: memref<?x?x?x32xbf16>, %dout: memref<?x?x?x32xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xbf16>, %dk: memref<?x?x?x32xbf16>, %dv: memref<?x?x?x32xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>, memref<?x?x?x32xbf16>) causal
  return
}

func.func @attention_bwd_bf16_d96(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>, %v: memref<?x?x?x96xbf16>, %out: memref<?x?x?x96xbf16>, %dout: memref<?x?x?x96xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x96xbf16>, %dk: memref<?x?x?x96xbf16>, %dv: memref<?x?x?x96xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>)
  return
}

func.func @attention_bwd_bf16_d96_causal(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>, %v: memref<?x?x?x96xbf16>, %out: memref<?x?x?x96xbf16>, %dout: memref<?x?x?x96xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x96xbf16>, %dk: memref<?x?x?x96xbf16>, %dv: memref<?x?x?x96xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>) causal
  return
}

func.func @attention_fwd_f16_d32(%q: memref<?x?x?x32xf16>, %k: memref<?x?x?x32xf16>, %v: memref<?x?x?x32xf16>, %out: memref<?x?x?x32xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>) outs(%out : memref<?x?x?x32xf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_f16_d32_causal(%q: memref<?x?x?x32xf16>, %k: memref<?x?x?x32xf16>, %v: memref<?x?x?x32xf16>, %out: memref<?x?x?x32xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>) outs(%out : memref<?x?x?x32xf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_fwd_f16_d96(%q: memref<?x?x?x96xf16>, %k: memref<?x?x?x96xf16>, %v: memref<?x?x?x96xf16>, %out: memref<?x?x?x96xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>) outs(%out : memref<?x?x?x96xf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_f16_d96_causal(%q: memref<?x?x?x96xf16>, %k: memref<?x?x?x96xf16>, %v: memref<?x?x?x96xf16>, %out: memref<?x?x?x96xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>) outs(%out : memref<?x?x?x96xf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_fwd_f16_d256(%q: memref<?x?x?x256xf16>, %k: memref<?x?x?x256xf16>, %v: memref<?x?x?x256xf16>, %out: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>) outs(%out : memref<?x?x?x256xf16>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_fwd_f16_d256_causal(%q: memref<?x?x?x256xf16>, %k: memref<?x?x?x256xf16>, %v: memref<?x?x?x256xf16>, %out: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>) outs(%out : memref<?x?x?x256xf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_bwd_f16_d32(%q: memref<?x?x?x32xf16>, %k: memref<?x?x?x32xf16>, %v: memref<?x?x?x32xf16>, %out: memref<?x?x?x32xf16>, %dout: memref<?x?x?x32xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xf16>, %dk: memref<?x?x?x32xf16>, %dv: memref<?x?x?x32xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>)
  return
}

func.func @attention_bwd_f16_d32_causal(%q: memref<?x?x?x32xf16>, %k: memref<?x?x?x32xf16>, %v: memref<?x?x?x32xf16>, %out: memref<?x?x?x32xf16>, %dout: memref<?x?x?x32xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xf16>, %dk: memref<?x?x?x32xf16>, %dv: memref<?x?x?x32xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xf16>, memref<?x?x?x32xf16>, memref<?x?x?x32xf16>) causal
  return
}

func.func @attention_bwd_f16_d96(%q: memref<?x?x?x96xf16>, %k: memref<?x?x?x96xf16>, %v: memref<?x?x?x96xf16>, %out: memref<?x?x?x96xf16>, %dout: memref<?x?x?x96xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x96xf16>, %dk: memref<?x?x?x96xf16>, %dv: memref<?x?x?x96xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>)
  return
}

func.func @attention_bwd_f16_d96_causal(%q: memref<?x?x?x96xf16>, %k: memref<?x?x?x96xf16>, %v: memref<?x?x?x96xf16>, %out: memref<?x?x?x96xf16>, %dout: memref<?x?x?x96xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x96xf16>, %dk: memref<?x?x?x96xf16>, %dv: memref<?x?x?x96xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x96xf16>, memref<?x?x?x96xf16>, memref<?x?x?x96xf16>) causal
  return
}

func.func @attention_fwd_f32_d32(%q: memref<?x?x?x32xf32>, %k: memref<?x?x?x32xf32>, %v: memref<?x?x?x32xf32>, %out: memref<?x?x?x32xf32>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>) outs(%out : memref<?x?x?x32xf32>) lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @attention_bwd_f32_d32(%q: memref<?x?x?x32xf32>, %k: memref<?x?x?x32xf32>, %v: memref<?x?x?x32xf32>, %out: memref<?x?x?x32xf32>, %dout: memref<?x?x?x32xf32>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xf32>, %dk: memref<?x?x?x32xf32>, %dv: memref<?x?x?x32xf32>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>)
  return
}

func.func @attention_fwd_f32_d32_causal(%q: memref<?x?x?x32xf32>, %k: memref<?x?x?x32xf32>, %v: memref<?x?x?x32xf32>, %out: memref<?x?x?x32xf32>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>) outs(%out : memref<?x?x?x32xf32>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attention_bwd_f32_d32_causal(%q: memref<?x?x?x32xf32>, %k: memref<?x?x?x32xf32>, %v: memref<?x?x?x32xf32>, %out: memref<?x?x?x32xf32>, %dout: memref<?x?x?x32xf32>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x32xf32>, %dk: memref<?x?x?x32xf32>, %dv: memref<?x?x?x32xf32>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x32xf32>, memref<?x?x?x32xf32>, memref<?x?x?x32xf32>) causal
  return
}

func.func @attention_bwd_bf16_d256(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %dout: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xbf16>, %dk: memref<?x?x?x256xbf16>, %dv: memref<?x?x?x256xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>)
  return
}

func.func @attention_bwd_bf16_d256_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %dout: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xbf16>, %dk: memref<?x?x?x256xbf16>, %dv: memref<?x?x?x256xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) causal
  return
}

func.func @attention_bwd_f16_d256(%q: memref<?x?x?x256xf16>, %k: memref<?x?x?x256xf16>, %v: memref<?x?x?x256xf16>, %out: memref<?x?x?x256xf16>, %dout: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xf16>, %dk: memref<?x?x?x256xf16>, %dv: memref<?x?x?x256xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>)
  return
}

func.func @attention_bwd_f16_d256_causal(%q: memref<?x?x?x256xf16>, %k: memref<?x?x?x256xf16>, %v: memref<?x?x?x256xf16>, %out: memref<?x?x?x256xf16>, %dout: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xf16>, %dk: memref<?x?x?x256xf16>, %dv: memref<?x?x?x256xf16>) {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>) causal
  return
}
