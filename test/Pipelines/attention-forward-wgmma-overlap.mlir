// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-overlap-softmax --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// The forward with overlap_softmax = 1 at the warp level. In the loop over
// key tiles the scores' product and the previous tile's P @ V (A from the
// carried registers, B MN-major) go out back to back; the wait for the
// scores leaves P @ V running (wait 1) through the row maxima and the
// exponentials, and P @ V is waited for (wait 0) only before the rescale.
// The prologue waits for its scores alone; the epilogue's P @ V is the only
// product in flight there. The exponentials allow approximation (afn), which
// fa-fast-exp2 lowers to ex2.approx.ftz.f32.
// CHECK-LABEL: gpu.func @attn
// CHECK: scf.if
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: math.exp2 {{.*}} fastmath<afn>
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma.wait_group
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 1;"
// CHECK-NOT: wgmma
// CHECK: math.exp2
// CHECK-NOT: wgmma
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: wgmma
// CHECK: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: scf.if
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
