// RUN: fa-opt %s --fa-tile-attention-grad --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// The backward with wgmma = 1. Each product is issued where it stands and
// waited for before its first use, leaving pending the products issued in
// between (commit groups complete in order): in the dK/dV loop S^T and dP^T
// go out back to back and the wait for S^T leaves dP^T running (wait 1)
// through the mask and the probabilities; dV's product runs while dS is
// computed (the wait for dP^T leaves it pending), and the iteration ends
// waiting for dV (1 pending: dK) and then dK (0).
//
// The dK/dV loop masks every query tile; a uniform branch skips the
// compares of tiles with nothing to mask. The columns' lse and delta come
// from shared memory, copied there one iteration ahead with Q and dO.
// CHECK-LABEL: gpu.func @g_dkdv
// CHECK: scf.for
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma.wait_group
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NEXT: llvm.extractvalue
// CHECK-NOT: llvm.inline_asm
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 1;"
// CHECK: %[[VISIBLE:.*]] = scf.if %{{.*}} -> (vector<8x4xf32>) {
// CHECK-NEXT: scf.yield %[[UNMASKED:.*]] : vector<8x4xf32>
// CHECK-NEXT: } else {
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[UNMASKED]] : vector<8x4xi1>, vector<8x4xf32>
// CHECK-NOT: memref.load %arg4
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: memref.load %arg4
// CHECK: math.exp2
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 1;"
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 1;"
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: llvm.inline_asm
// CHECK: scf.yield
//
// The dQ loop: S and dP back to back, S waited for with dP pending.
// CHECK-LABEL: gpu.func @g(
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: wgmma.wait_group
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// CHECK-NOT: llvm.inline_asm
// CHECK: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 1;"
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @g(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
