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
// every kernel: its fa.kernels entry as JSON (strings, integers, floats,
// booleans, arrays and dictionaries), its name, entry point and PTX file,
// and the chip once for the whole library.
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
// MANIFEST-NEXT: "block_m": 64
// MANIFEST-NEXT: },
// MANIFEST-NEXT: "dynamic_shared_bytes": 0,
// MANIFEST-NEXT: "entry": "attn",
// MANIFEST-NEXT: "name": "attn",
// MANIFEST-NEXT: "op": "attention_fwd",
// MANIFEST-NEXT: "ptx": "attn.ptx",
// MANIFEST-NEXT: "scale": 0.125
// MANIFEST-NEXT: },
// MANIFEST-NEXT: {
// MANIFEST: "entry": "attn_bwd",
// MANIFEST: "ptx": "attn_bwd.ptx"
// MANIFEST: ],
// MANIFEST-NEXT: "target": "sm_90a",
// MANIFEST-NEXT: "version": 1
// PTX: .version 8.0
// PTX-NEXT: .target sm_90a
// PTX-NEXT: .visible .entry attn()
module attributes {gpu.container_module, fa.kernels = {
    attn = {block = [128, 1, 1], causal = true, config = {block_m = 64}, op = "attention_fwd", scale = 0.125 : f32},
    attn_bwd = {block = [128, 1, 1], causal = false, op = "attention_bwd"}}} {
  gpu.binary @attn [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn()\n{\n}\n">]
  gpu.binary @attn_bwd [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.visible .entry attn_bwd()\n{\n}\n">]
}

// -----

module attributes {gpu.container_module, fa.kernels = {cubin = {op = "attention_fwd"}}} {
  // expected-error @+1 {{fa-export-kernels: expects PTX (run gpu-module-to-binary with format=isa)}}
  gpu.binary @cubin [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF">]
}

// -----

module attributes {gpu.container_module, fa.kernels = {amd = {op = "attention_fwd"}}} {
  // expected-error @+1 {{fa-export-kernels: expects a kernel compiled for an NVVM target}}
  gpu.binary @amd [#gpu.object<#rocdl.target<chip = "gfx90a">, assembly = "">]
}

// -----

// The runtime checks one chip against the device: a library holds one.
module attributes {gpu.container_module, fa.kernels = {hopper = {op = "attention_fwd"}, ampere = {op = "attention_fwd"}}} {
  gpu.binary @hopper [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
  // expected-error @+1 {{fa-export-kernels: ampere is compiled for sm_80, the kernels before it for sm_90a: one manifest holds kernels of one chip}}
  gpu.binary @ampere [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\n">]
}

// -----

// A call left unresolved (libdevice not linked) would fail only when the
// driver loads the module.
module attributes {gpu.container_module, fa.kernels = {needs_libdevice = {op = "attention_fwd"}}} {
  // expected-error @+1 {{fa-export-kernels: the PTX of needs_libdevice calls functions it does not define (is libdevice missing? set fa-to-ptx cuda-path)}}
  gpu.binary @needs_libdevice [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".extern .func (.param .b32 r) __nv_expf(.param .b32 x);\n">]
}

// -----

module attributes {gpu.container_module, fa.kernels = {other = {op = "attention_fwd"}}} {
  // expected-error @+1 {{fa-export-kernels: no fa.kernels entry for unlisted (was it made by fa-tile-attention?)}}
  gpu.binary @unlisted [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n">]
}
