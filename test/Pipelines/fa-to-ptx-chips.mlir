// Chips: fa-to-ptx takes those of fa/Target/Chips.h, each with the PTX
// version it needs, and refuses anything else with the list (the NVPTX
// backend crashed on an empty chip, aborted on an unknown one and hit a fatal
// error on sm_100a, which needs PTX 8.6).
// RUN: not fa-opt %s --fa-to-ptx="chip=" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not fa-opt %s --fa-to-ptx="chip=bogus" 2>&1 | FileCheck %s --check-prefix=BOGUS
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: not fa-opt %s --convert-fa-to-nvgpu="chip=sm_9O" 2>&1 | FileCheck %s --check-prefix=NVGPU
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="chip=sm_100a export-dir=%t/sm_100a" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM100A < %t/sm_100a/attn.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST100A < %t/sm_100a/manifest.json
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 export-dir=%t/sm_80" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM80 < %t/sm_80/attn.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST80 < %t/sm_80/manifest.json

// EMPTY: error: fa-to-ptx: unsupported chip '' (supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_103, sm_103a, sm_120, sm_120a, sm_121, sm_121a)
// BOGUS: error: fa-to-ptx: unsupported chip 'bogus' (supported: sm_80,
// OLD: error: fa-to-ptx: unsupported chip 'sm_75' (supported: sm_80,
// NVGPU: error: convert-fa-to-nvgpu: unsupported chip 'sm_9O' (supported: sm_80,

// SM100A: .version 8.6
// SM100A: .target sm_100a
// SM100A: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// The manifest names the chip the runtime must find (it said sm_90a for all).
// MANIFEST100A: "target": "sm_100a"

// SM80: .version 8.0
// SM80: .target sm_80
// SM80: cp.async
// MANIFEST80: "target": "sm_80"
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal
  return
}
