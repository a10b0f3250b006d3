// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// Input: tile-level math in one-warp kernels (known_block_size 32, one
// 16-row block) on 16 x 16 f32 tiles. A lane's share of a tile is
// vector<2x4xf32>: for each 8-column block, rows l/4 and l/4 + 8 at columns
// 2(l % 4) + {0, 1}; a row vector is one value per row of the lane.

// A row reduction combines the lane's values of each of its rows (entries
// 0-1 and 2-3 of every block), then the four lanes of the row (shuffles xor
// 1 and 2), then the initial value. row_broadcast gives each entry its row's
// value; elementwise math applies to the share as it is.
// CHECK-LABEL: gpu.func @row_reductions
// CHECK-DAG: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[S:.*]] = vector.from_elements {{.*}} : vector<2x4xf32>
// CHECK: %[[BLOCKS_MAX:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: %[[A1:.*]] = vector.extract %[[BLOCKS_MAX]][1]
// CHECK: %[[A0:.*]] = vector.extract %[[BLOCKS_MAX]][0]
// CHECK: %[[LANE_MAX:.*]] = arith.maxnumf %[[A0]], %[[A1]] : f32
// CHECK: %[[X1:.*]], %{{.*}} = gpu.shuffle xor %[[LANE_MAX]], %c1_i32, %c32_i32 : f32
// CHECK: %[[M1:.*]] = arith.maxnumf %[[LANE_MAX]], %[[X1]]
// CHECK: %[[X2:.*]], %{{.*}} = gpu.shuffle xor %[[M1]], %c2_i32, %c32_i32 : f32
// CHECK: %[[M2:.*]] = arith.maxnumf %[[M1]], %[[X2]]
// CHECK: %[[ROW_MAX:.*]] = arith.maxnumf %[[M2]], %[[NEG_INF]]
// CHECK: vector.extract %[[BLOCKS_MAX]][3]
// CHECK: vector.extract %[[BLOCKS_MAX]][2]
// CHECK: %[[ROW8_MAX:.*]] = arith.maxnumf %{{.*}}, %[[NEG_INF]]
// CHECK: %[[MB:.*]] = vector.from_elements %[[ROW_MAX]], %[[ROW_MAX]], %[[ROW8_MAX]], %[[ROW8_MAX]], %[[ROW_MAX]], %[[ROW_MAX]], %[[ROW8_MAX]], %[[ROW8_MAX]] : vector<2x4xf32>
// CHECK: %[[D:.*]] = arith.subf %[[S]], %[[MB]] : vector<2x4xf32>
// CHECK: %[[P:.*]] = math.exp2 %[[D]] : vector<2x4xf32>
// CHECK: vector.extract %[[P]][0] : vector<4xf32> from vector<2x4xf32>
// CHECK: vector.extract %[[P]][1] : vector<4xf32> from vector<2x4xf32>
// CHECK-COUNT-2: gpu.shuffle xor
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-COUNT-2: gpu.shuffle xor
// CHECK: arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK-NOT: gpu.shuffle
!t = memref<?x?x?x16xf32>
!rows = memref<?x?x?xf32>
gpu.module @m {
  gpu.func @row_reductions(%scores: !t, %sums: !rows, %b: index, %h: index, %row0: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %neg_inf = arith.constant dense<0xFF800000> : vector<16xf32>
    %zero = arith.constant dense<0.0> : vector<16xf32>
    %s = fa.load_tile %scores[%b, %h, %row0] : !t -> vector<16x16xf32>
    %m = vector.multi_reduction <maxnumf>, %s, %neg_inf [1] : vector<16x16xf32> to vector<16xf32>
    %mb = fa.row_broadcast %m : vector<16xf32> -> vector<16x16xf32>
    %d = arith.subf %s, %mb : vector<16x16xf32>
    %p = math.exp2 %d : vector<16x16xf32>
    %l = vector.multi_reduction <add>, %p, %zero [1] : vector<16x16xf32> to vector<16xf32>
    fa.store_rows %l, %sums[%b, %h, %row0] : vector<16xf32>, !rows
    gpu.return
  }
}

// -----

// apply_mask: no per-element index. Each entry's offset from the lane's
// first column (dc) and row (dr) is a constant; the lane compares them with
// one threshold each, in i32: past the keys when dc >= kv_len - col, in the
// future (causal) when dc - dr > row - col. One select to -inf.
// CHECK-LABEL: gpu.func @causal_mask
// CHECK-SAME: (%{{[^:]*}}: memref<?x?x?x16xf32>, %{{[^:]*}}: memref<?x?x?xf32>, %{{[^:]*}}: index, %{{[^:]*}}: index, %[[ROW0:[^:]*]]: index, %[[COL0:[^:]*]]: index, %[[KV_LEN:[^:]*]]: index)
// CHECK-DAG: %[[NEG_INF:.*]] = arith.constant dense<0xFF800000> : vector<2x4xf32>
// CHECK-DAG: %[[DC:.*]] = arith.constant dense<{{\[\[}}0, 1, 0, 1], [8, 9, 8, 9]]> : vector<2x4xi32>
// CHECK-DAG: %[[DC_DR:.*]] = arith.constant dense<{{\[\[}}0, 1, -8, -7], [8, 9, 0, 1]]> : vector<2x4xi32>
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %{{.*}} : index
// CHECK: %[[S:.*]] = vector.from_elements {{.*}} : vector<2x4xf32>
// CHECK: %[[COL:.*]] = arith.addi %[[COL0]], %{{.*}}
// CHECK: %[[COL_I32:.*]] = arith.index_cast %[[COL]] : index to i32
// CHECK: %[[KV_LEN_I32:.*]] = arith.index_cast %[[KV_LEN]] : index to i32
// CHECK: %[[KEYS_LEFT:.*]] = arith.subi %[[KV_LEN_I32]], %[[COL_I32]] : i32
// CHECK: %[[KEYS_LEFT_V:.*]] = vector.broadcast %[[KEYS_LEFT]] : i32 to vector<2x4xi32>
// CHECK: %[[PAST_END:.*]] = arith.cmpi sle, %[[KEYS_LEFT_V]], %[[DC]] : vector<2x4xi32>
// CHECK: %[[ROW_I32:.*]] = arith.index_cast %[[ROW]] : index to i32
// CHECK: %[[DIAGONAL:.*]] = arith.subi %[[ROW_I32]], %[[COL_I32]] : i32
// CHECK: %[[DIAGONAL_V:.*]] = vector.broadcast %[[DIAGONAL]] : i32 to vector<2x4xi32>
// CHECK: %[[FUTURE:.*]] = arith.cmpi slt, %[[DIAGONAL_V]], %[[DC_DR]] : vector<2x4xi32>
// CHECK: %[[MASKED:.*]] = arith.ori %[[PAST_END]], %[[FUTURE]] : vector<2x4xi1>
// CHECK: arith.select %[[MASKED]], %[[NEG_INF]], %[[S]] : vector<2x4xi1>, vector<2x4xf32>
// Not causal: the key-length compare alone.
// CHECK-LABEL: gpu.func @tail_mask
// CHECK: %[[PAST_END:.*]] = arith.cmpi sle, %{{.*}} : vector<2x4xi32>
// CHECK-NOT: arith.cmpi
// CHECK: arith.select %[[PAST_END]], %{{.*}} : vector<2x4xi1>, vector<2x4xf32>
!t = memref<?x?x?x16xf32>
!rows = memref<?x?x?xf32>
gpu.module @m {
  gpu.func @causal_mask(%scores: !t, %sums: !rows, %b: index, %h: index, %row0: index, %col0: index, %kv_len: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16xf32>
    %s = fa.load_tile %scores[%b, %h, %row0] : !t -> vector<16x16xf32>
    %m = fa.apply_mask %s rows(%row0) cols(%col0) kv_len(%kv_len) causal : vector<16x16xf32>
    %l = vector.multi_reduction <add>, %m, %zero [1] : vector<16x16xf32> to vector<16xf32>
    fa.store_rows %l, %sums[%b, %h, %row0] : vector<16xf32>, !rows
    gpu.return
  }
  gpu.func @tail_mask(%scores: !t, %sums: !rows, %b: index, %h: index, %row0: index, %col0: index, %kv_len: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16xf32>
    %s = fa.load_tile %scores[%b, %h, %row0] : !t -> vector<16x16xf32>
    %m = fa.apply_mask %s rows(%row0) cols(%col0) kv_len(%kv_len) : vector<16x16xf32>
    %l = vector.multi_reduction <add>, %m, %zero [1] : vector<16x16xf32> to vector<16xf32>
    fa.store_rows %l, %sums[%b, %h, %row0] : vector<16xf32>, !rows
    gpu.return
  }
}

// -----

// A tile times a row broadcast in a loop (the online softmax's rescale of
// its accumulator) runs only in warps where some row's factor is not 1:
// the lane's two factors compared with 1, then one vote over the warp.
// The loop carries the lane's share.
// CHECK-LABEL: gpu.func @rescale
// CHECK-DAG: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : vector<2xf32>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<2x4xf32>)
// CHECK: %[[ALPHA:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: %[[ALPHA_B:.*]] = vector.from_elements {{.*}} : vector<2x4xf32>
// CHECK: %[[NOT_ONE:.*]] = arith.cmpf une, %[[ALPHA]], %[[ONES]] : vector<2xf32>
// CHECK: %[[ANY:.*]] = vector.reduction <or>, %[[NOT_ONE]] : vector<2xi1> into i1
// CHECK: %[[VOTE:.*]] = nvvm.vote.sync any %{{.*}}, %[[ANY]] -> i1
// CHECK: %[[R:.*]] = scf.if %[[VOTE]] -> (vector<2x4xf32>) {
// CHECK-NEXT: %[[SCALED:.*]] = arith.mulf %[[ACC]], %[[ALPHA_B]] : vector<2x4xf32>
// CHECK-NEXT: scf.yield %[[SCALED]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[ACC]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[R]]
// skip_unit_rescale = 0: a plain product.
// CHECK-LABEL: gpu.func @always_rescale
// CHECK-NOT: nvvm.vote.sync
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<2x4xf32>)
// CHECK: %[[SCALED:.*]] = arith.mulf %[[ACC]], %{{.*}} : vector<2x4xf32>
// CHECK-NEXT: scf.yield %[[SCALED]]
!t = memref<?x?x?x16xf32>
!rows = memref<?x?x?xf32>
gpu.module @m {
  gpu.func @rescale(%alphas: !rows, %o: !t, %b: index, %h: index, %row0: index, %tiles: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %init = arith.constant dense<1.0> : vector<16x16xf32>
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %alpha = fa.load_rows %alphas[%b, %h, %j] : !rows -> vector<16xf32>
      %alpha_b = fa.row_broadcast %alpha : vector<16xf32> -> vector<16x16xf32>
      %scaled = arith.mulf %acc, %alpha_b : vector<16x16xf32>
      scf.yield %scaled : vector<16x16xf32>
    }
    fa.store_tile %r, %o[%b, %h, %row0] : vector<16x16xf32>, !t
    gpu.return
  }
  gpu.func @always_rescale(%alphas: !rows, %o: !t, %b: index, %h: index, %row0: index, %tiles: index) kernel attributes {fa.tile = #fa.tile<skip_unit_rescale = false>, known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %init = arith.constant dense<1.0> : vector<16x16xf32>
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %init) -> (vector<16x16xf32>) {
      %alpha = fa.load_rows %alphas[%b, %h, %j] : !rows -> vector<16xf32>
      %alpha_b = fa.row_broadcast %alpha : vector<16xf32> -> vector<16x16xf32>
      %scaled = arith.mulf %acc, %alpha_b : vector<16x16xf32>
      scf.yield %scaled : vector<16x16xf32>
    }
    fa.store_tile %r, %o[%b, %h, %row0] : vector<16x16xf32>, !t
    gpu.return
  }
}
