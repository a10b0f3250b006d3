// The ordered accumulation ops through fa-to-ptx: a block waits for its
// turn on a counter, stores (first contributor) or adds its partial tile
// into the f32 workspace, adds a transposed one, and passes the turn on.
// RUN: fa-opt %s --fa-to-ptx -o %t.sm_90a.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.sm_90a.mlir %t.sm_90a.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SM90A < %t.sm_90a.ptx
// RUN: fa-opt %s --fa-to-ptx="chip=sm_100a" -o %t.sm_100a.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.sm_100a.mlir %t.sm_100a.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SM100A < %t.sm_100a.ptx

// SM90A: .version 8.0
// SM100A: .version 8.6
// CHECK-LABEL: .visible .entry dq_turn(
// The wait: thread 0 alone spins on an acquire load, then the barrier.
// CHECK: setp.ne.b32 [[NOT_ZERO:%p[0-9]+]], %r{{[0-9]+}}, 0;
// CHECK: @[[NOT_ZERO]] bra [[AFTER:\$L__BB[0-9_]+]];
// CHECK: [[SPIN:\$L__BB[0-9_]+]]:
// CHECK-NEXT: ld.acquire.gpu.global.b32 [[SEEN:%r[0-9]+]], [%rd{{[0-9]+}}];
// CHECK-NEXT: setp.ne.b32 [[AGAIN:%p[0-9]+]], [[SEEN]], %r{{[0-9]+}};
// CHECK-NEXT: @[[AGAIN]] bra [[SPIN]];
// CHECK: [[AFTER]]:
// CHECK: bar.sync 0;
// The first contributor stores its pairs (8 bytes: sm_100's PTX packs the
// two f32 into one b64).
// SM90A: st.global.v2.b32
// SM100A: st.global.b64
// The others add them: one vector reduction each where PTX 8.1 has it,
// else two scalar atomics (reductions in SASS, their results unused).
// SM90A: atom.global.add.f32
// SM90A-NOT: red.global.add.v2.f32
// SM100A: red.global.add.v2.f32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// The transposed tile: scalar adds (a lane's pair spans two rows).
// CHECK: atom.global.add.f32
// The signal: the barrier, then thread 0's release fence and increment.
// CHECK: bar.sync 0;
// CHECK-NEXT: @[[NOT_ZERO]] bra
// CHECK: fence.{{acq_rel|release}}.gpu;
// CHECK-NEXT: atom.global.add.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], 1;
// CHECK-NOT: bar.sync
// CHECK: ret;
module attributes {gpu.container_module} {
gpu.module @accumulate {
  gpu.func @dq_turn(%src: memref<?x?x?x64xf32>, %acc: memref<?x?x?x64xf32>,
                    %counters: memref<?x?x?xi32>, %b: index, %h: index,
                    %r: index, %t: index, %k: index, %first: i1) kernel
      attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>,
                  known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %h, %r] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.ordered_wait %counters[%b, %h, %t] equals %k : memref<?x?x?xi32>, index
    fa.accumulate_tile %dq, %acc[%b, %h, %r] overwrite(%first) : vector<64x64xf32>, memref<?x?x?x64xf32>
    fa.accumulate_tile %dq, %acc[%b, %h, %r] transposed : vector<64x64xf32>, memref<?x?x?x64xf32>
    fa.ordered_signal %counters[%b, %h, %t] : memref<?x?x?xi32>
    gpu.return
  }
}
}
