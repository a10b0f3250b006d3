// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-opt %s --split-input-file --verify-diagnostics --fa-export-kernels="dir=%t/library" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/library/manifest.json
// RUN: FileCheck %s --check-prefix=PTX < %t/library/attn.ptx
// RUN: touch %t/file
// RUN: not fa-opt %s --split-input-file --fa-export-kernels="dir=%t/file/library" 2>&1 | FileCheck %s --check-prefix=NO-DIR

// Input: gpu.binary ops holding PTX (gpu-module-to-binary with format=isa)
// and the module's fa.kernels entries, as fa-to-ptx leaves them.

// NO-DIR: error: fa-export-kernels: cannot create directory {{.*}}file/library:

// Each kernel's PTX goes to <dir>/<kernel>.ptx as it is; manifest.json lists
// every kernel: its #fa.kernel entry as JSON (the configuration's entries as
// integers, flags 0 or 1; an attention forward kernel's every fa.tile entry,
// a backward's sizes, skip_unit_rescale and wgmma; a row-wise kernel's
// layout), its name, entry point and PTX file, and the chip once for the
// whole library.
// MANIFEST: "format": "fa-kernel-library",
// MANIFEST-NEXT: "kernels": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "block": [
// MANIFEST-NEXT: 128,
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 1
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "causal": true,
// MANIFEST-NEXT: "config": {
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST-NEXT: "num_stages": 1,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST-NEXT: "overlap_softmax": 0,
// MANIFEST-NEXT: "persistent": 0,
// MANIFEST-NEXT: "ping_pong": 0,
// MANIFEST-NEXT: "pipeline_copies": 1,
// MANIFEST-NEXT: "q_in_shared": 0,
// MANIFEST-NEXT: "skip_unit_rescale": 1,
// MANIFEST-NEXT: "stage_output": 0,
// MANIFEST-NEXT: "warp_specialize": 0,
// MANIFEST-NEXT: "wgmma": 1
// MANIFEST-NEXT: },
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "dynamic_shared_bytes": 0,
// MANIFEST-NEXT: "entry": "attn",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT: "query_tiles",
// MANIFEST-NEXT: "batch_heads",
// MANIFEST-NEXT: "one"
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "head_dim": 64,
// MANIFEST-NEXT: "name": "attn",
// MANIFEST-NEXT: "op": "attention_fwd",
// MANIFEST-NEXT: "params": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "kind": "memref",
// MANIFEST-NEXT: "name": "q",
// MANIFEST-NEXT: "rank": 4
// MANIFEST-NEXT: }
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "ptx": "attn.ptx",
// MANIFEST-NEXT: "scale": 0.125
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_m": 32,
// MANIFEST-NEXT: "block_n": 16,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "num_warps": 2,
// MANIFEST-NEXT: "skip_unit_rescale": 0,
// MANIFEST-NEXT: "wgmma": 0
// MANIFEST-NEXT: },
// MANIFEST: "delta_kernel": "attn_bwd_delta",
// MANIFEST-NEXT: "dkdv_kernel": "attn_bwd_dkdv",
// MANIFEST: "entry": "attn_bwd",
// MANIFEST: "op": "attention_bwd",
// MANIFEST: "ptx": "attn_bwd.ptx"
// MANIFEST: "config": {
// MANIFEST-NEXT: "block_cols": 1024,
// MANIFEST-NEXT: "num_warps": 4,
// MANIFEST-NEXT: "persistent": 1,
// MANIFEST-NEXT: "resident": 1,
// MANIFEST-NEXT: "rows": 2
// MANIFEST-NEXT: },
// MANIFEST: "entry": "ln",
// MANIFEST: "grid": [
// MANIFEST-NEXT: "persistent_row_tiles",
// MANIFEST: "params": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "kind": "f32",
// MANIFEST-NEXT: "name": "eps"
// MANIFEST-NEXT: }
// MANIFEST-NEXT: ],
// MANIFEST: ],
// MANIFEST-NEXT: "target": "sm_90a",
// MANIFEST-NEXT: "version": 1
// PTX: .version 8.0
// PTX-NEXT: .target sm_90a
// PTX-NEXT: .visible .entry attn()
#attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16>>]>
#attn_bwd = #fa.kernel<op = attention_bwd, dtype = f32, head_dim = 128, causal = false, scale = 0.0883883461 : f32, config = #fa.tile<block_m = 32, block_n = 16, num_warps = 2, num_stages = 2, skip_unit_rescale = false>, block = [64, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"dq" : memref<?x?x?x128xf32>>], delta_kernel = "attn_bwd_delta", dkdv_kernel = "attn_bwd_dkdv">
#ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.rows<rows = 2, block_cols = 1024, num_warps = 4, resident = true, persistent = true>, block = [128, 1, 1], grid = [persistent_row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {attn = #attn, attn_bwd = #attn_bwd, ln = #ln}} {
  gpu.binary @attn [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn()\n{\n}\n">]
  gpu.binary @attn_bwd [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn_bwd()\n{\n}\n">]
  gpu.binary @ln [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry ln()\n{\n}\n">]
}

// -----

#ln = #fa.kernel<op = layernorm_fwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {cubin = #ln}} {
  // expected-error @+1 {{fa-export-kernels: expects PTX (run gpu-module-to-binary with format=isa)}}
  gpu.binary @cubin [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF">]
}

// -----

#ln = #fa.kernel<op = layernorm_fwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {amd = #ln}} {
  // expected-error @+1 {{fa-export-kernels: expects a kernel compiled for an NVVM target}}
  gpu.binary @amd [#gpu.object<#rocdl.target<chip = "gfx90a">, assembly = "">]
}

// -----

// The runtime checks one chip against the device: a library holds one.
#ln = #fa.kernel<op = layernorm_fwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {hopper = #ln, ampere = #ln}} {
  gpu.binary @hopper [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
  // expected-error @+1 {{fa-export-kernels: ampere is compiled for sm_80, the kernels before it for sm_90a: one manifest holds kernels of one chip}}
  gpu.binary @ampere [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\n">]
}

// -----

// A call left unresolved (libdevice not linked) would fail only when the
// driver loads the module.
#ln = #fa.kernel<op = layernorm_fwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {needs_libdevice = #ln}} {
  // expected-error @+1 {{fa-export-kernels: the PTX of needs_libdevice calls functions it does not define (is libdevice missing? set fa-to-ptx cuda-path)}}
  gpu.binary @needs_libdevice [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".extern .func (.param .b32 r) __nv_expf(.param .b32 x);\n">]
}

// -----

#ln = #fa.kernel<op = layernorm_fwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"eps" : f32>]>
module attributes {gpu.container_module, fa.kernels = {other = #ln}} {
  // expected-error @+1 {{fa-export-kernels: no fa.kernels entry for unlisted (was it made by fa-tile-attention?)}}
  gpu.binary @unlisted [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}
