// REQUIRES: ptxas
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=FWD < %t/ln_res_fwd.ptx
// RUN: FileCheck %s --check-prefix=BWD < %t/ln_res_bwd.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: grep -c "ld.global.v4.b32" %t/ln_res_fwd.ptx | FileCheck %s --check-prefix=FWD-LOADS
// RUN: grep -c "st.global.v4.b32" %t/ln_res_fwd.ptx | FileCheck %s --check-prefix=FWD-STORES
// RUN: grep -c "ld.global.v4.b32" %t/ln_res_fwd_looped.ptx | FileCheck %s --check-prefix=LOOPED-LOADS
// RUN: grep -c "ld.global.v4.b32" %t/ln_res_bwd.ptx | FileCheck %s --check-prefix=BWD-LOADS
// RUN: for f in %t/*.ptx; do %ptxas -arch=sm_90a -v $f -o %t/out.cubin 2>&1 | grep -E "spill stores|Compiling entry|fatal"; done > %t/report.txt
// RUN: FileCheck %s --check-prefix=PTXAS < %t/report.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|fatal" %t/report.txt

// The residual LayerNorm end to end: the residual is read and the sum
// written as x is read and y written, in whole 16-byte chunks (one
// ld.global.v4.b32 / st.global.v4.b32 per 8 bf16), and no spills; the
// backward reads dresidual the same way.
// One 16-byte access per chunk (a row of 1024 over 128 threads: one chunk
// each): the forward loads x, residual, weight and bias and stores sum and
// y; the looped one loads x and residual (sums), sum (squares), sum, weight
// and bias (y); the backward loads weight, dy, x and dresidual.
// FWD-LOADS: {{^}}4{{$}}
// FWD-STORES: {{^}}2{{$}}
// LOOPED-LOADS: {{^}}6{{$}}
// BWD-LOADS: {{^}}4{{$}}
// FWD: .visible .entry ln_res_fwd(
// FWD-COUNT-2: ld.global.v4.b32
// FWD: st.global.v4.b32
// FWD: shfl.sync.bfly.b32
// FWD: rsqrt.approx.f32
// FWD: st.global.v4.b32
// BWD: .visible .entry ln_res_bwd(
// BWD-COUNT-2: ld.global.v4.b32
// BWD: shfl.sync.bfly.b32
// BWD: ld.global.v4.b32
// BWD: st.global.v4.b32
// PTXAS-DAG: Compiling entry function 'ln_res_fwd' for 'sm_90a'
// PTXAS-DAG: Compiling entry function 'ln_res_bwd' for 'sm_90a'
// PTXAS-DAG: Compiling entry function 'ln_res_fwd_looped' for 'sm_90a'
// residual and sum follow rstd among the forward's parameters (eps last),
// dresidual the partial sums among the backward's.
// MANIFEST: "entry": "ln_res_fwd"
// MANIFEST: "name": "rstd"
// MANIFEST: "name": "residual"
// MANIFEST: "name": "sum"
// MANIFEST: "name": "eps"
// MANIFEST: "entry": "ln_res_bwd"
// MANIFEST: "name": "partial_dbias"
// MANIFEST: "name": "dresidual"
func.func @ln_res_fwd(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %r: memref<?x?xbf16>, %y: memref<?x?xbf16>, %s: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) residual(%r : memref<?x?xbf16>) outs(%y : memref<?x?xbf16>) sum(%s : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @ln_res_fwd_looped(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %r: memref<?x?xbf16>, %y: memref<?x?xbf16>, %s: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 4096, num_warps = 16, resident = false>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) residual(%r : memref<?x?xbf16>) outs(%y : memref<?x?xbf16>) sum(%s : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @ln_res_bwd(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %g: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) dresidual(%g : memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
