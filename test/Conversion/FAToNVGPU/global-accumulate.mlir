// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file -verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --convert-fa-to-nvgpu="chip=sm_100a" --canonicalize --cse --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=VEC

// Ordered accumulation into a global f32 workspace, on a 4-warp kernel of 64
// rows (each lane holds rows l/4 and l/4 + 8 of its warp's 16 and columns
// 8n + 2(l%4) + {0, 1} of every 8-column block n). Atomics go through a
// global pointer (!llvm.ptr<1>) to the workspace's buffer.

// Row-major: a row at or past the workspace's end (its dimension 2) is
// skipped, per row of the lane; each of the lane's pairs is added at
// (row, 8n + 2(l%4)). On sm_90a, whose PTX 8.0 has no vector reductions, as
// two relaxed gpu-scope atomicrmw fadd (atom.global.add.f32, a reduction
// once ptxas sees the result unused); on sm_100a (PTX 8.6) as one
// red.global.add.v2.f32.
// CHECK-LABEL: gpu.func @rows_down
// CHECK: %[[INTPTR:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[I64:.*]] = arith.index_castui %[[INTPTR]] : index to i64
// CHECK: %[[GENERIC:.*]] = llvm.inttoptr %[[I64]] : i64 to !llvm.ptr
// CHECK: %[[BASE:.*]] = llvm.addrspacecast %[[GENERIC]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: %[[SEQ:.*]] = memref.dim %arg1, %c2 : memref<?x?x?x64xf32>
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[ROW:.*]], %[[SEQ]] : index
// CHECK: scf.if %[[INSIDE]] {
// CHECK: %[[ROWOFF:.*]] = arith.muli %[[ROW]], %c64 : index
// CHECK: %[[PAIR:.*]] = llvm.getelementptr %[[BASE]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: %[[NEXT:.*]] = llvm.getelementptr %[[PAIR]][1] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32
// CHECK: llvm.atomicrmw fadd %[[PAIR]], %{{.*}} syncscope("device") monotonic {alignment = 4 : i64} : !llvm.ptr<1>, f32
// CHECK: llvm.atomicrmw fadd %[[NEXT]], %{{.*}} syncscope("device") monotonic {alignment = 4 : i64} : !llvm.ptr<1>, f32
// 8 blocks of the first row: 16 adds, then the second row's check.
// CHECK-COUNT-14: llvm.atomicrmw fadd
// CHECK: }
// CHECK: arith.cmpi ult, %{{.*}}, %[[SEQ]] : index
// CHECK: scf.if
// CHECK-COUNT-16: llvm.atomicrmw fadd
// CHECK-NOT: llvm.atomicrmw
// CHECK-NOT: llvm.inline_asm
// CHECK: gpu.return
// VEC-LABEL: gpu.func @rows_down
// VEC: scf.if
// VEC: %[[PAIR:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// VEC: %[[A:.*]] = vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// VEC: %[[B:.*]] = vector.extract %{{.*}}[1] : f32 from vector<2xf32>
// VEC: llvm.inline_asm has_side_effects asm_dialect = att "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f,~{memory}" %[[PAIR]], %[[A]], %[[B]] : (!llvm.ptr<1>, f32, f32) -> ()
// VEC-COUNT-15: llvm.inline_asm {{.*}}red.global.add.v2.f32
// VEC-NOT: llvm.atomicrmw
// VEC: gpu.return
gpu.module @m {
  gpu.func @rows_down(%src: memref<?x?x?x64xf32>, %acc: memref<?x?x?x64xf32>, %b: index, %h: index, %r: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %h, %r] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.accumulate_tile %dq, %acc[%b, %h, %r] : vector<64x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// -----

// overwrite(%first): where %first holds, the first contributor stores its
// pairs (8-byte llvm.store: st.global.v2), else it adds as above.
// CHECK-LABEL: gpu.func @overwrite_rows
// CHECK: scf.if %arg5 {
// CHECK: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
// CHECK-NOT: llvm.atomicrmw
// CHECK: } else {
// CHECK: scf.if
// CHECK: llvm.atomicrmw fadd
// CHECK-NOT: llvm.store
// CHECK: gpu.return
gpu.module @m {
  gpu.func @overwrite_rows(%src: memref<?x?x?x64xf32>, %acc: memref<?x?x?x64xf32>, %b: index, %h: index, %r: index, %first: i1) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %h, %r] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.accumulate_tile %dq, %acc[%b, %h, %r] overwrite(%first) : vector<64x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// -----

// Transposed (head_dim 64 down, 16 rows across): the lane's element
// (i, j) goes to accum[b, h, row + j, i], so the bound is per column j
// (row + 2(l%4) + e + 8n), and each element is one scalar access, also on
// sm_100a. In the first column: rows i = l/4 + 16 warp and i + 8 (32 bytes
// further), entries [0][0] and [0][2] of the share.
// CHECK-LABEL: gpu.func @across
// CHECK: %[[SEQ:.*]] = memref.dim %arg1, %c2 : memref<?x?x?x64xf32>
// CHECK: scf.if %arg5 {
// CHECK: %[[POS:.*]] = arith.addi %arg4, %[[PAIRCOL:.*]] : index
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[POS]], %[[SEQ]] : index
// CHECK: scf.if %[[INSIDE]] {
// CHECK: %[[POSOFF:.*]] = arith.muli %[[POS]], %c64 : index
// CHECK: %[[LINE:.*]] = arith.addi %{{.*}}, %[[POSOFF]] : index
// CHECK: %[[AT:.*]] = arith.addi %[[LINE]], %[[HEADCOL:.*]] : index
// CHECK: %[[AT64:.*]] = arith.index_cast %[[AT]] : index to i64
// CHECK: %[[P:.*]] = llvm.getelementptr %{{.*}}[%[[AT64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.store %[[E:.*]]#0, %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: %[[HEADCOL8:.*]] = arith.addi %[[HEADCOL]], %c8 : index
// CHECK: arith.addi %[[LINE]], %[[HEADCOL8]] : index
// CHECK: llvm.store %[[E]]#2, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: }
// The second column (e = 1): entries [0][1] and [0][3].
// CHECK: %[[POS1:.*]] = arith.addi %arg4, %{{.*}} : index
// CHECK: arith.cmpi ult, %[[POS1]], %[[SEQ]] : index
// CHECK: llvm.store %[[E]]#1
// CHECK: llvm.store %[[E]]#3
// CHECK: } else {
// CHECK: arith.cmpi ult, %[[POS]], %[[SEQ]] : index
// CHECK: llvm.atomicrmw fadd %{{.*}}, %[[E]]#0 syncscope("device") monotonic {alignment = 4 : i64} : !llvm.ptr<1>, f32
// CHECK: llvm.atomicrmw fadd %{{.*}}, %[[E]]#2 syncscope("device") monotonic
// CHECK: gpu.return
// VEC-LABEL: gpu.func @across
// VEC-NOT: llvm.inline_asm
// VEC: gpu.return
gpu.module @m {
  gpu.func @across(%src: memref<?x?x?x16xf32>, %acc: memref<?x?x?x64xf32>, %b: index, %h: index, %r: index, %first: i1) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dqt = fa.load_tile %src[%b, %h, %r] : memref<?x?x?x16xf32> -> vector<64x16xf32>
    fa.accumulate_tile %dqt, %acc[%b, %h, %r] transposed overwrite(%first) : vector<64x16xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// -----

// The turns. Wait: thread 0 spins on an acquire load (gpu scope) of
// counters[b, h, t] until it equals the expected value (an index, cast to
// i32), then the block barrier. Signal: the block barrier, then thread 0's
// release fence (fence.acq_rel.gpu) and relaxed atomic increment.
// CHECK-LABEL: gpu.func @turns
// CHECK: %[[EXPECTED:.*]] = arith.index_cast %arg4 : index to i32
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %c0 : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[SLOT:.*]] = arith.addi %{{.*}}, %arg3 : index
// CHECK: %[[SLOT64:.*]] = arith.index_cast %[[SLOT]] : index to i64
// CHECK: %[[COUNTER:.*]] = llvm.getelementptr %{{.*}}[%[[SLOT64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: scf.while : () -> () {
// CHECK: %[[SEEN:.*]] = llvm.load %[[COUNTER]] atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[NOT_YET:.*]] = arith.cmpi ne, %[[SEEN]], %[[EXPECTED]] : i32
// CHECK: scf.condition(%[[NOT_YET]])
// CHECK: } do {
// CHECK: }
// CHECK: }
// The wait's barrier and the signal's, back to back: the canonicalizer keeps
// one.
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: %[[COUNTER2:.*]] = llvm.getelementptr %{{.*}} : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK-NEXT: llvm.fence syncscope("device") release
// CHECK-NEXT: llvm.atomicrmw add %[[COUNTER2]], %c1_i32 syncscope("device") monotonic {alignment = 4 : i64} : !llvm.ptr<1>, i32
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
gpu.module @m {
  gpu.func @turns(%c: memref<?x?x?xi32>, %b: index, %h: index, %t: index, %k: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    fa.ordered_wait %c[%b, %h, %t] equals %k : memref<?x?x?xi32>, index
    fa.ordered_signal %c[%b, %h, %t] : memref<?x?x?xi32>
    gpu.return
  }
}

// -----

// An i32 expected value is compared as it is.
// CHECK-LABEL: gpu.func @wait_i32
// CHECK-NOT: arith.index_cast %arg4
// CHECK: arith.cmpi ne, %{{.*}}, %arg4 : i32
gpu.module @m {
  gpu.func @wait_i32(%c: memref<?x?x?xi32>, %b: index, %h: index, %t: index, %k: i32) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    fa.ordered_wait %c[%b, %h, %t] equals %k : memref<?x?x?xi32>, i32
    gpu.return
  }
}

// -----

// A tile of 32 rows in a kernel of 64 has no lane distribution to add from.
gpu.module @m {
  gpu.func @not_block_rows(%src: memref<?x?x?x64xf32>, %acc: memref<?x?x?x64xf32>, %b: index, %h: index, %r: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %h, %r] : memref<?x?x?x64xf32> -> vector<32x64xf32>
    // expected-error @+2 {{expects value rows (32) to be the kernel's block rows (the accumulator layout)}}
    // expected-error @+1 {{failed to legalize operation 'fa.accumulate_tile'}}
    fa.accumulate_tile %dq, %acc[%b, %h, %r] : vector<32x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// -----

// A writer warp's turns (warp): lane 0 spins and increments; bar.warp.sync
// stands for the block barrier on both sides.
// CHECK-LABEL: gpu.func @warp_turns
// CHECK: %[[LANE:.*]] = gpu.lane_id
// CHECK: %[[LANE0:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK: scf.if %[[LANE0]] {
// CHECK: scf.while
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: nvvm.bar.warp.sync %c-1_i32
// CHECK-NOT: gpu.barrier
// CHECK: scf.if %[[LANE0]] {
// CHECK: llvm.fence syncscope("device") release
// CHECK-NEXT: llvm.atomicrmw add
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
gpu.module @m {
  gpu.func @warp_turns(%c: memref<?x?x?xi32>, %b: index, %h: index, %t: index, %k: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    fa.ordered_wait %c[%b, %h, %t] equals %k warp : memref<?x?x?xi32>, index
    fa.ordered_signal %c[%b, %h, %t] warp : memref<?x?x?xi32>
    gpu.return
  }
}

// -----

// Staging a transposed accumulator (64 rows down, 64 across, 4 warps): the
// lane's element (row r, column c) goes to buffer[c, r], one f32 store
// each: 2 rows x 8 blocks x 2 columns = 32 stores.
// CHECK-LABEL: gpu.func @stage_transposed
// CHECK-COUNT-32: memref.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] : memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.store
// CHECK: gpu.return
gpu.module @m {
  gpu.func @stage_transposed(%src: memref<?x?x?x64xf32>, %buf: memref<64x68xf32, #gpu.address_space<workgroup>>, %b: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %b, %b] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.stage_accumulator %dq, %buf transposed : vector<64x64xf32>, memref<64x68xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Untransposed, a lane's two adjacent columns are one vector<2xf32> store.
// CHECK-LABEL: gpu.func @stage_rows
// CHECK-COUNT-16: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] : memref<64x64xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: vector.store
gpu.module @m {
  gpu.func @stage_rows(%src: memref<?x?x?x64xf32>, %buf: memref<64x64xf32, #gpu.address_space<workgroup>>, %b: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %b, %b] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.stage_accumulator %dq, %buf : vector<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Staging swizzled (fa.accumulate_boxes_async's layout): element (q, d) of
// the transposed tile at offset (d / 32) 64 x 32 + q x 32 + ((d mod 32) / 4
// ^ q mod 8) x 4 + d mod 4 of the buffer. The lane computes the shared
// address of its first element once (its q is 2 (l mod 4): q x 32 folds to
// (l mod 4) x 64) and reaches the others by constants: its second column
// (q + 1) flips the chunk's bit 0 (an XOR of 16 bytes, opaque to LLVM) and
// is 32 elements on; its second row (d + 8) flips bit 1 (32 bytes); 8 q
// further is 256 elements on.
// CHECK-LABEL: gpu.func @stage_swizzled
// CHECK: vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// CHECK-NEXT: %[[PANEL:.*]] = arith.divui %[[D:.*]], %c32 : index
// CHECK: %[[START:.*]] = arith.muli %[[PANEL]], %c2048 : index
// CHECK: %[[PHASE:.*]] = arith.remui %[[Q:.*]], %c8 : index
// CHECK: %[[INPANEL:.*]] = arith.remui %[[D]], %c32 : index
// CHECK: %[[CHUNK:.*]] = arith.divui %[[INPANEL]], %c4 : index
// CHECK: %[[SWIZZLED:.*]] = arith.xori %[[CHUNK]], %[[PHASE]] : index
// CHECK: %[[INCHUNK:.*]] = arith.remui %[[D]], %c4 : index
// CHECK: %[[CHUNKSTART:.*]] = arith.muli %[[SWIZZLED]], %c4 : index
// CHECK: %[[COLUMN:.*]] = arith.addi %[[CHUNKSTART]], %[[INCHUNK]] : index
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c64 : index
// CHECK: %[[INP:.*]] = arith.addi %[[ROW]], %[[COLUMN]] : index
// CHECK: %[[OFFSET:.*]] = arith.addi %[[START]], %[[INP]] : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFFSET]], %c4 : index
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[ADDR:.*]] = arith.addi %[[BASE]], %[[BYTES]] : index
// CHECK: %[[ADDR64:.*]] = arith.index_castui %[[ADDR]] : index to i64
// CHECK: %[[P:.*]] = llvm.inttoptr %[[ADDR64]] : i64 to !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK: %[[FLIP1:.*]] = llvm.inline_asm asm_dialect = att "xor.b64 $0, $1, 16;", "=l,l" %[[ADDR64]] : (i64) -> i64
// CHECK: %[[P1:.*]] = llvm.inttoptr %[[FLIP1]] : i64 to !llvm.ptr<3>
// CHECK: %[[E1:.*]] = llvm.getelementptr %[[P1]][32] : (!llvm.ptr<3>) -> !llvm.ptr<3>, f32
// CHECK: llvm.store %{{.*}}, %[[E1]]
// CHECK: %[[N1:.*]] = llvm.getelementptr %[[P]][256]
// CHECK: llvm.store %{{.*}}, %[[N1]]
// CHECK: %[[N1E1:.*]] = llvm.getelementptr %[[P1]][288]
// CHECK: llvm.store %{{.*}}, %[[N1E1]]
// CHECK-COUNT-12: llvm.store
// CHECK: llvm.inline_asm asm_dialect = att "xor.b64 $0, $1, 32;", "=l,l" %[[ADDR64]]
// CHECK: llvm.inline_asm asm_dialect = att "xor.b64 $0, $1, 48;", "=l,l" %[[ADDR64]]
// CHECK-COUNT-15: llvm.store
// CHECK-NOT: llvm.store
// CHECK: gpu.return
gpu.module @m {
  gpu.func @stage_swizzled(%src: memref<?x?x?x64xf32>, %buf: memref<64x64xf32, #gpu.address_space<workgroup>>, %b: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %dq = fa.load_tile %src[%b, %b, %b] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    fa.stage_accumulator %dq, %buf transposed swizzled : vector<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// The writer's boxes (64 rows of 128 f32: four 128-byte panels of 8 KB):
// after the proxy fences, lane 0 moves each panel by one TMA tensor
// operation through the map (a __grid_constant__ pointer), at coordinates
// {32 p, row, head, batch}, innermost first: stores for the first
// contributor, else reduce-adds; then commit and wait for the reads, and
// the warp waits for lane 0. fa.wait_bulk_async waits for the writes.
// CHECK-LABEL: gpu.func @boxes_by_tma
// CHECK-SAME: %[[BUF:[^:]*]]: memref<64x128xf32, #gpu.address_space<workgroup>>, %[[MAP:[^:]*]]: !llvm.ptr
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: %[[ROW:.*]] = arith.index_castui %arg4 : index to i32
// CHECK: %[[HEAD:.*]] = arith.index_castui %arg3 : index to i32
// CHECK: %[[BATCH:.*]] = arith.index_castui %arg2 : index to i32
// CHECK: %[[LANE:.*]] = gpu.lane_id
// CHECK: %[[FIRSTLANE:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK: scf.if %[[FIRSTLANE]] {
// CHECK: scf.if %arg5 {
// CHECK: %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[S0:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP]], %[[S0]], box[%c0_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]]
// CHECK: arith.addi %[[P0]], %c8192 : index
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP]], %{{.*}}, box[%c32_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]]
// CHECK: arith.addi %[[P0]], %c16384 : index
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP]], %{{.*}}, box[%c64_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]]
// CHECK: arith.addi %[[P0]], %c24576 : index
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP]], %{{.*}}, box[%c96_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]]
// CHECK: } else {
// CHECK: nvvm.cp.async.bulk.tensor.reduce %[[MAP]], %{{.*}}, box[%c0_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK-COUNT-3: nvvm.cp.async.bulk.tensor.reduce %[[MAP]]
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync %c-1_i32 : i32
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: gpu.return
!boxes = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
gpu.module @m {
  gpu.func @boxes_by_tma(%buf: memref<64x128xf32, #gpu.address_space<workgroup>>, %map: !boxes, %b: index, %h: index, %r: index, %first: i1) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    fa.accumulate_boxes_async %buf, %map[%b, %h, %r] overwrite(%first) : memref<64x128xf32, #gpu.address_space<workgroup>>, !boxes
    fa.wait_bulk_async
    gpu.return
  }
}
