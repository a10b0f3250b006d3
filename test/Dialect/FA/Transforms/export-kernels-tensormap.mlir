// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --split-input-file --verify-diagnostics --fa-export-kernels="dir=%t/library" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/library/manifest.json

// A TMA tensor map parameter (!nvgpu.tensormap.descriptor) named <t>_tma
// maps the kernel's memref parameter <t>: the manifest names that tensor,
// the element type, the box one load copies (the descriptor's shared-memory
// tensor, outermost first) and the swizzle, from which the runtime encodes
// the map (KernelArgs.h, tensorMapSpecOf).
// MANIFEST: "name": "k",
// MANIFEST-NEXT: "rank": 4,
// MANIFEST-NEXT: "strided": true
// MANIFEST: "name": "lse",
// MANIFEST-NEXT: "rank": 3
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "box": [
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 128,
// MANIFEST-NEXT: 64
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "kind": "tensormap",
// MANIFEST-NEXT: "name": "k_tma",
// MANIFEST-NEXT: "swizzle": "128b",
// MANIFEST-NEXT: "tensor": "k"
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "box": [
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 64,
// MANIFEST-NEXT: 32
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "kind": "tensormap",
// MANIFEST-NEXT: "name": "v_tma",
// MANIFEST-NEXT: "swizzle": "64b",
// MANIFEST-NEXT: "tensor": "v"
// MANIFEST-NEXT: }
// MANIFEST-NEXT: ],
!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!v_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16>>, #fa.param<"k" : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>>, #fa.param<"v" : memref<?x?x?x64xbf16>>, #fa.param<"out" : memref<?x?x?x64xbf16>>, #fa.param<"lse" : memref<?x?x?xf32>>, #fa.param<"k_tma" : !k_map>, #fa.param<"v_tma" : !v_map>]>
module attributes {gpu.container_module, fa.kernels = {attn = #attn}} {
  gpu.binary @attn [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn()\n{\n}\n">]
}

// -----

// The runtime finds the tensor a map reads by its name.
!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_map" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {unsuffixed = #attn}} {
  // expected-error @+1 {{fa-export-kernels: parameter 'k_map' of unsuffixed is a tensor map, whose name must be <tensor>_tma after the memref parameter it maps}}
  gpu.binary @unsuffixed [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {bare_suffix = #attn}} {
  // expected-error @+1 {{parameter '_tma' of bare_suffix is a tensor map, whose name must be <tensor>_tma}}
  gpu.binary @bare_suffix [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"kv_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {no_tensor = #attn}} {
  // expected-error @+1 {{parameter 'kv_tma' of no_tensor maps 'kv', which is not a memref parameter of the kernel}}
  gpu.binary @no_tensor [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : i64>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {scalar_tensor = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of scalar_tensor maps 'k', which is not a memref parameter of the kernel}}
  gpu.binary @scalar_tensor [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {element_type = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of element_type has a box of f16 but 'k' holds bf16}}
  gpu.binary @element_type [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {box_rank = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of box_rank has a rank-2 box but 'k' is a rank-4 memref}}
  gpu.binary @box_rank [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

// The runtime's tensor maps hold the element types of q, k and v.
!ids_map = !nvgpu.tensormap.descriptor<tensor = memref<1x128xi32, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"doc_ids" : memref<?x?xi32>>, #fa.param<"doc_ids_tma" : !ids_map>]>
module attributes {gpu.container_module, fa.kernels = {int_map = #attn}} {
  // expected-error @+1 {{parameter 'doc_ids_tma' of int_map has a box of i32; the runtime's tensor maps hold f16, bf16 or f32}}
  gpu.binary @int_map [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

// encodeTiledTensorMap fills with zeros out of bounds, interleaves nothing
// and promotes nothing to L2: a kernel expecting otherwise is refused.
!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = nan, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {oob_nan = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of oob_nan has oob = nan, interleave = none, l2promo = none; the runtime encodes only oob = zero, interleave = none, l2promo = none}}
  gpu.binary @oob_nan [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = interleave_16b>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {interleaved = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of interleaved has oob = zero, interleave = interleave_16b, l2promo = none; the runtime encodes only}}
  gpu.binary @interleaved [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}

// -----

!k_map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 128, block_n = 128, num_warps = 12, num_stages = 2, wgmma = true>, block = [384, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"k_tma" : !k_map>]>
module attributes {gpu.container_module, fa.kernels = {promoted = #attn}} {
  // expected-error @+1 {{parameter 'k_tma' of promoted has oob = zero, interleave = none, l2promo = l2promo_128b; the runtime encodes only}}
  gpu.binary @promoted [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}
