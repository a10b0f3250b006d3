// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --split-input-file --verify-diagnostics --fa-export-kernels="dir=%t/library" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/library/manifest.json

// A parameter whose strides and offset the kernel reads from its descriptor
// (strided<[?, ?, ?, 1], offset: ?>) is marked "strided": the runtime may
// pass a view's strides to it. Identity-layout parameters are not marked
// (the runtime passes row-major strides, as to every parameter of a
// manifest written before strided parameters).
// MANIFEST: "name": "q",
// MANIFEST-NEXT: "rank": 4,
// MANIFEST-NEXT: "strided": true
// MANIFEST-NEXT: },
// MANIFEST: "name": "lse",
// MANIFEST-NEXT: "rank": 3
// MANIFEST-NEXT: }
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>>, #fa.param<"lse" : memref<?x?x?xf32>>]>
module attributes {gpu.container_module, fa.kernels = {attn = #attn}} {
  gpu.binary @attn [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn()\n{\n}\n">]
}

// -----

// Strides or an offset fixed in the kernel are none the runtime can pass.
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>>]>
module attributes {gpu.container_module, fa.kernels = {static_offset = #attn}} {
  // expected-error @+1 {{fa-export-kernels: parameter 'q' of static_offset has the type 'memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>', which the manifest cannot describe: a memref parameter has the identity layout or strided<[?, ..., ?, 1], offset: ?>}}
  gpu.binary @static_offset [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<2x4x100x64xbf16, strided<[76800, 64, 768, 1], offset: ?>>>]>
module attributes {gpu.container_module, fa.kernels = {static_strides = #attn}} {
  // expected-error @+1 {{parameter 'q' of static_strides has the type 'memref<2x4x100x64xbf16, strided<[76800, 64, 768, 1], offset: ?>>', which the manifest cannot describe}}
  gpu.binary @static_strides [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}
