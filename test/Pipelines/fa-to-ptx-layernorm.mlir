// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=FWD < %t/ln_fwd.ptx
// RUN: FileCheck %s --check-prefix=EPS < %t/ln_fwd.ptx
// RUN: FileCheck %s --check-prefix=BWD < %t/ln_bwd.ptx
// RUN: FileCheck %s --check-prefix=PARAMS < %t/ln_bwd_params.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// LayerNorm end to end: whole 16-byte chunks of bf16 rows move as one vector
// access (the masked tail element by element), rows reduce with warp
// shuffles and, across warps, shared memory.
// FWD: .visible .entry ln_fwd(
// FWD: ld.global.v4.b32
// FWD: shfl.sync.bfly.b32
// FWD: bar.sync
// FWD: rsqrt.approx.f32
// FWD: st.global.v4.b32
// eps is the last kernel parameter (after six memref descriptors of 7 or 5
// u64s each), loaded from there and added to the variance: no constant.
// EPS: .param .f32 ln_fwd_param_34
// EPS-NEXT: )
// EPS: ld.param.b32 %[[EPS:r[0-9]+]], [ln_fwd_param_34]
// EPS: add.rn.f32 %[[VAREPS:r[0-9]+]], %[[EPS]], %{{r[0-9]+}}
// EPS-NEXT: rsqrt.approx.f32 %{{r[0-9]+}}, %[[VAREPS]]
// The backward walks its row blocks with a grid-sized stride.
// BWD: .visible .entry ln_bwd(
// BWD: mov.u32 {{.*}}%nctaid.x
// BWD: ld.global.v4.b32
// BWD: shfl.sync.bfly.b32
// The reduction kernel's column sums meet in shared memory.
// PARAMS: .visible .entry ln_bwd_params(
// PARAMS: shfl.sync.bfly.b32
// PARAMS: st.shared.v4.b32
// PARAMS: ld.shared.v4.b32

// MANIFEST: "format": "fa-kernel-library"
// MANIFEST: "entry": "ln_fwd"
// MANIFEST-NOT: "eps": 9
// MANIFEST: "op": "layernorm_fwd"
// MANIFEST: "params": [
// MANIFEST: "name": "rstd"
// MANIFEST: "kind": "f32",
// MANIFEST-NEXT: "name": "eps"
// MANIFEST-NEXT: }
// MANIFEST-NEXT: ]
// MANIFEST: "entry": "ln_bwd"
// MANIFEST: "op": "layernorm_bwd"
// MANIFEST: "params_kernel": "ln_bwd_params"
// MANIFEST: "entry": "ln_bwd_params"
// MANIFEST: "grid": [
// MANIFEST-NEXT: "column_tiles"
// MANIFEST: "op": "layernorm_bwd_params"
func.func @ln_fwd(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @ln_bwd(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
