// block-m=64 keeps the passes' generic (mma.sync) configuration for the
// function without fa.tile, not sm_90a's default (fa-to-ptx-defaults.mlir).
// RUN: fa-opt %s --fa-to-ptx="block-m=64" | FileCheck %s
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="block-m=64 export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/attn_bf16.ptx
// RUN: FileCheck %s --check-prefix=EX2 --implicit-check-not=ex2.approx.ftz < %t/attn_bf16.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// The pipeline's result holds the PTX in a gpu.binary; bf16 products run on
// tensor cores.
// CHECK: gpu.binary @attn_bf16
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: gpu.binary @attn_f16
// CHECK-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

// PTX: .target sm_90a
// PTX: .visible .entry attn_bf16(
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: shfl.sync.bfly.b32

// An mma.sync kernel's exponentials keep libdevice's ex2.approx.f32
// (subnormal results kept); ptxas-warp-specialize.mlir checks the wgmma
// kernels' ex2.approx.ftz.f32.
// EX2: ex2.approx.f32

// MANIFEST: "format": "fa-kernel-library"
// MANIFEST: "causal": true
// MANIFEST: "dtype": "bf16"
// MANIFEST: "entry": "attn_bf16"
// MANIFEST: "ptx": "attn_bf16.ptx"
// MANIFEST: "entry": "attn_f16"
func.func @attn_bf16(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                     %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @attn_f16(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>,
                    %o: memref<?x?x?x128xf16>) attributes {fa.tile = #fa.tile<block_n = 32>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>)
               outs(%o : memref<?x?x?x128xf16>)
  return
}

// f32 runs on TF32 tensor cores, three products per f32 product.
// CHECK: gpu.binary @attn_f32
// CHECK-SAME: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
func.func @attn_f32(%q: memref<?x?x?x64xf32>, %k: memref<?x?x?x64xf32>, %v: memref<?x?x?x64xf32>,
                    %o: memref<?x?x?x64xf32>) attributes {fa.tile = #fa.tile<block_n = 16>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32>)
               outs(%o : memref<?x?x?x64xf32>)
  return
}
