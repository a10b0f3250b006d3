// RUN: fa-opt %s --fa-eliminate-causal-tiles --canonicalize --split-input-file --verify-diagnostics | FileCheck %s

// Input: key loops marked fa.kv_loop whose one fa.apply_mask sees the 16
// query rows from %row0 and key tile j (keys [32 j, 32 j + 32)).

// Causal: a tile is full (nothing masked) when it lies below kv_len and at
// or left of the block's first row, min(kv_len / 32, (row0 + 1) / 32);
// tiles from ceil((row0 + 16) / 32) on are empty and never visited. The loop
// becomes [0, full) without the mask, then [full, visited) with it, the
// second continuing from the first's results.
// CHECK-LABEL: gpu.func @causal
// CHECK-SAME: (%[[S:[^:]*]]: vector<16x32xf32>, %[[ROW0:[^:]*]]: index, %[[TILES:[^:]*]]: index, %[[KV_LEN:[^:]*]]: index, %[[OUT:[^:]*]]: memref<16xf32>)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[BELOW_KV_LEN:.*]] = arith.divui %[[KV_LEN]], %[[C32]]
// CHECK: %[[ROW1:.*]] = arith.addi %[[ROW0]], %[[C1]]
// CHECK: %[[LEFT_OF_ROW0:.*]] = arith.divui %[[ROW1]], %[[C32]]
// CHECK: %[[FULL_CAUSAL:.*]] = arith.minui %[[BELOW_KV_LEN]], %[[LEFT_OF_ROW0]]
// CHECK: %[[ROW_END:.*]] = arith.addi %[[ROW0]], %[[C16]]
// CHECK: %[[DIAGONAL:.*]] = arith.ceildivui %[[ROW_END]], %[[C32]]
// CHECK: %[[VISITED:.*]] = arith.minui %[[TILES]], %[[DIAGONAL]]
// CHECK: %[[FULL:.*]] = arith.minui %[[FULL_CAUSAL]], %[[VISITED]]
// CHECK: %[[FIRST:.*]] = scf.for %{{.*}} = %{{.*}} to %[[FULL]] step %[[C1]]
// CHECK-NOT: fa.apply_mask
// CHECK: } {fa.kv_tiles = "full", fa.softmax_phase = #fa<phase online>}
// CHECK: %[[SECOND:.*]] = scf.for %{{.*}} = %[[FULL]] to %[[VISITED]] step %[[C1]] iter_args(%{{.*}} = %[[FIRST]])
// CHECK: fa.apply_mask %[[S]] rows(%[[ROW0]]) cols(%{{.*}}) kv_len(%[[KV_LEN]]) causal
// CHECK: } {fa.kv_tiles = "partial", fa.softmax_phase = #fa<phase online>}
// CHECK-NOT: scf.for
// CHECK: vector.store %[[SECOND]], %[[OUT]]
gpu.module @m {
  gpu.func @causal(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index, %out: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %init = arith.constant dense<0xFF800000> : vector<16xf32>
    %max = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %init) -> (vector<16xf32>) {
      %col = arith.muli %j, %c32 : index
      %masked = fa.apply_mask %s rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x32xf32>
      %m_new = vector.multi_reduction <maxnumf>, %masked, %m [1] : vector<16x32xf32> to vector<16xf32>
      scf.yield %m_new : vector<16xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    vector.store %max, %out[%c0] : memref<16xf32>, vector<16xf32>
    gpu.return
  }
}

// -----

// Not causal: only the tiles past kv_len / 32 (the sequence tail) keep the
// mask; every tile is visited. Other loop marks (fa.copy_loop) stay.
// CHECK-LABEL: gpu.func @tail
// CHECK-SAME: (%[[S:[^:]*]]: vector<16x32xf32>, %[[ROW0:[^:]*]]: index, %[[TILES:[^:]*]]: index, %[[KV_LEN:[^:]*]]: index
// CHECK: %[[BELOW_KV_LEN:.*]] = arith.divui %[[KV_LEN]], %{{.*}}
// CHECK: %[[FULL:.*]] = arith.minui %[[BELOW_KV_LEN]], %[[TILES]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[FULL]]
// CHECK-NOT: fa.apply_mask
// CHECK: } {fa.copy_loop, fa.kv_tiles = "full"}
// CHECK: scf.for %{{.*}} = %[[FULL]] to %[[TILES]]
// CHECK: fa.apply_mask %[[S]] rows(%[[ROW0]]) cols(%{{.*}}) kv_len(%[[KV_LEN]]) :
// CHECK: } {fa.copy_loop, fa.kv_tiles = "partial"}
gpu.module @m {
  gpu.func @tail(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index, %out: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %init = arith.constant dense<0xFF800000> : vector<16xf32>
    %max = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %init) -> (vector<16xf32>) {
      %col = arith.muli %j, %c32 : index
      %masked = fa.apply_mask %s rows(%row0) cols(%col) kv_len(%kv_len) : vector<16x32xf32>
      %m_new = vector.multi_reduction <maxnumf>, %masked, %m [1] : vector<16x32xf32> to vector<16xf32>
      scf.yield %m_new : vector<16xf32>
    } {fa.copy_loop, fa.kv_loop}
    vector.store %max, %out[%c0] : memref<16xf32>, vector<16xf32>
    gpu.return
  }
}

// -----

// Only loops marked fa.kv_loop are split: the backward's dK/dV loop (over
// query tiles, its mask transposed) keeps its mask on every tile.
// CHECK-LABEL: gpu.func @not_a_key_loop
// CHECK: scf.for
// CHECK: fa.apply_mask
// CHECK: } {fa.copy_loop}
// CHECK-NOT: scf.for
gpu.module @m {
  gpu.func @not_a_key_loop(%s: vector<16x32xf32>, %key0: index, %tiles: index, %q_len: index, %out: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %init = arith.constant dense<0.0> : vector<16xf32>
    %sum = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %init) -> (vector<16xf32>) {
      %col = arith.muli %j, %c32 : index
      %masked = fa.apply_mask %s rows(%key0) cols(%col) kv_len(%q_len) causal transposed : vector<16x32xf32>
      %a_new = vector.multi_reduction <add>, %masked, %a [1] : vector<16x32xf32> to vector<16xf32>
      scf.yield %a_new : vector<16xf32>
    } {fa.copy_loop}
    vector.store %sum, %out[%c0] : memref<16xf32>, vector<16xf32>
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @two_masks(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects one mask per key/value loop}}
    scf.for %j = %c0 to %tiles step %c1 {
      %col = arith.muli %j, %c32 : index
      %a = fa.apply_mask %s rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x32xf32>
      %b = fa.apply_mask %a rows(%row0) cols(%col) kv_len(%kv_len) : vector<16x32xf32>
    } {fa.kv_loop}
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @step_two(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects a loop over tiles from 0 with step 1}}
    scf.for %j = %c0 to %tiles step %c2 {
      %col = arith.muli %j, %c32 : index
      %a = fa.apply_mask %s rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x32xf32>
    } {fa.kv_loop}
    gpu.return
  }
}

// -----

// The tile width comes from the mask's key offset.
gpu.module @m {
  gpu.func @offset_not_a_tile(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects the mask's key offset to be iv * tile width}}
    scf.for %j = %c0 to %tiles step %c1 {
      %a = fa.apply_mask %s rows(%row0) cols(%j) kv_len(%kv_len) causal : vector<16x32xf32>
    } {fa.kv_loop}
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @row_varies(%s: vector<16x32xf32>, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects the mask's query row and key length to be loop-invariant}}
    scf.for %j = %c0 to %tiles step %c1 {
      %col = arith.muli %j, %c32 : index
      %a = fa.apply_mask %s rows(%col) cols(%col) kv_len(%kv_len) causal : vector<16x32xf32>
    } {fa.kv_loop}
    gpu.return
  }
}

// -----

// A mask region's loop is checked like the causal one's, with its captures
// among what must be loop-invariant.
gpu.module @m {
  gpu.func @region_capture_in_loop(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects the mask's rows, bounds and captures to be loop-invariant}}
    scf.for %j = %c0 to %tiles step %c1 {
      %col = arith.muli %j, %c32 : index
      %a = fa.mask_tile %s rows(%row0) cols(%col) kv_len(%kv_len) at(%c0, %c0) captures(%j : index) : vector<16x32xf32> {
      ^bb0(%b: index, %h: index, %q: index, %k: index, %p: index):
        %keep = arith.cmpi slt, %k, %p : index
        fa.yield %keep : i1
      }
    } {fa.kv_loop}
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @two_region_masks(%s: vector<16x32xf32>, %row0: index, %tiles: index, %kv_len: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // expected-error @+1 {{fa-eliminate-causal-tiles: expects one mask per loop}}
    scf.for %j = %c0 to %tiles step %c1 {
      %col = arith.muli %j, %c32 : index
      %a = fa.mask_tile %s rows(%row0) cols(%col) kv_len(%kv_len) at(%c0, %c0) : vector<16x32xf32> {
      ^bb0(%b: index, %h: index, %q: index, %k: index):
        %keep = arith.cmpi sle, %k, %q : index
        fa.yield %keep : i1
      }
      %b2 = fa.mask_tile %a rows(%row0) cols(%col) kv_len(%kv_len) at(%c0, %c0) : vector<16x32xf32> {
      ^bb0(%b: index, %h: index, %q: index, %k: index):
        %keep = arith.cmpi sle, %k, %q : index
        fa.yield %keep : i1
      }
    } {fa.kv_loop}
    gpu.return
  }
}
