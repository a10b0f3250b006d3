// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s
// RUN: not fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80

// wgmma is sm_90a's alone: another chip is an error, not mma.sync.
// SM80: error: convert-fa-to-nvgpu: wgmma = true needs chip sm_90a (Hopper's wgmma.mma_async), not sm_80

// wgmma = 1: each product is one asm block that issues it (fence, one
// wgmma per 16-wide k step, commit) and one that waits for it, its results
// passing through as tied operands. Scores: Q and K from shared memory
// through descriptors (K-major, transpose-b 0), starting from zero (first
// step's scale-d 0, no tied inputs). Output: the probabilities as registers,
// V through an MN-major descriptor (transpose-b 1), accumulating (tied
// inputs). The forward uses each product right away, so each wait leaves
// nothing pending. Before the barrier that publishes copied tiles, an
// async-proxy fence; no ldmatrix or mma.sync is left.
// CHECK-LABEL: gpu.func @attn
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred first, rest;
// CHECK-SAME: setp.ne.b32 first, $40, 0;\0Asetp.ne.b32 rest, $41, 0;
// CHECK-SAME: wgmma.fence.sync.aligned;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $32, $33, first, 1, 1, 0, 0;
// CHECK-SAME: $38, $39, rest, 1, 1, 0, 0;
// CHECK-SAME: wgmma.commit_group.sync.aligned;\0A}"
// CHECK-SAME: "=f,{{.*}},=f,l,l,l,l,l,l,l,l,r,r,~{memory}"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-SAME: "=f,{{.*}},=f,0,1,{{.*}},31,~{memory}"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred first, rest;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, first, 1, 1, 1;
// CHECK-SAME: "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l,{{.*}}~{memory}"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: nvvm.mma.sync
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16>)
  return
}
