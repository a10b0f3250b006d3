// RUN: fa-opt %s --convert-fa-to-nvgpu --split-input-file | FileCheck %s
// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=FOLDED

// fa.philox becomes ten Philox-4x32 rounds in 32-bit arith, per thread: each
// round multiplies c0 by M0 = 0xD2511F53 (-766435501) and c2 by
// M1 = 0xCD9E8D57 (-845247145) into 64-bit (low, high) pairs, then
//   (high1 ^ c1 ^ k0, low1, high0 ^ c3 ^ k1, low0)
// and the key is bumped by W0 = 0x9E3779B9 (-1640531527) and
// W1 = 0xBB67AE85 (-1150833019) before every round after the first.
// CHECK-LABEL: gpu.func @philox
// CHECK-SAME: (%[[OUT:.*]]: memref<4xi32>, %[[K0:.*]]: i32, %[[K1:.*]]: i32, %[[C0:.*]]: i32, %[[C1:.*]]: i32, %[[C2:.*]]: i32, %[[C3:.*]]: i32)
// CHECK: %[[M0:.*]] = arith.constant -766435501 : i32
// CHECK: %[[LO0:.*]], %[[HI0:.*]] = arith.mului_extended %[[M0]], %[[C0]] : i32
// CHECK: %[[M1:.*]] = arith.constant -845247145 : i32
// CHECK: %[[LO1:.*]], %[[HI1:.*]] = arith.mului_extended %[[M1]], %[[C2]] : i32
// CHECK: %[[X0:.*]] = arith.xori %[[HI1]], %[[C1]] : i32
// CHECK: %[[R0:.*]] = arith.xori %[[X0]], %[[K0]] : i32
// CHECK: %[[X2:.*]] = arith.xori %[[HI0]], %[[C3]] : i32
// CHECK: %[[R2:.*]] = arith.xori %[[X2]], %[[K1]] : i32
// CHECK: %[[W0:.*]] = arith.constant -1640531527 : i32
// CHECK: %[[K0_1:.*]] = arith.addi %[[K0]], %[[W0]] : i32
// CHECK: %[[W1:.*]] = arith.constant -1150833019 : i32
// CHECK: %[[K1_1:.*]] = arith.addi %[[K1]], %[[W1]] : i32
// Round 2 takes round 1's words (r0, lo1, r2, lo0) and the bumped key.
// CHECK: arith.mului_extended %{{.*}}, %[[R0]] : i32
// CHECK: arith.mului_extended %{{.*}}, %[[R2]] : i32
// CHECK: arith.xori %{{.*}}, %[[LO1]] : i32
// CHECK: arith.xori %{{.*}}, %[[K0_1]] : i32
// CHECK: arith.xori %{{.*}}, %[[LO0]] : i32
// CHECK: arith.xori %{{.*}}, %[[K1_1]] : i32
// Rounds 3 to 9, then round 10, whose products give words 1 and 3 as they
// are: 20 products in all.
// CHECK-COUNT-14: arith.mului_extended
// CHECK: %[[LAST_LO0:.*]], %{{.*}} = arith.mului_extended
// CHECK: %[[LAST_LO1:.*]], %{{.*}} = arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK-NOT: fa.philox
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: memref.store %[[LAST_LO1]], %[[OUT]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: memref.store %[[LAST_LO0]], %[[OUT]]
gpu.module @m {
  gpu.func @philox(%out: memref<4xi32>, %k0: i32, %k1: i32, %c0: i32, %c1: i32,
                   %c2: i32, %c3: i32) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %w0, %w1, %w2, %w3 = fa.philox key(%k0, %k1) counter(%c0, %c1, %c2, %c3)
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    %i2 = arith.constant 2 : index
    %i3 = arith.constant 3 : index
    memref.store %w0, %out[%i0] : memref<4xi32>
    memref.store %w1, %out[%i1] : memref<4xi32>
    memref.store %w2, %out[%i2] : memref<4xi32>
    memref.store %w3, %out[%i3] : memref<4xi32>
    gpu.return
  }
}

// -----

// With a constant key (a seed known at compile time) the key schedule folds
// to constants: no adds remain, round 2 xors k0 = 1234 + W0, round 10
// k0 = 1234 + 9 W0 (mod 2^32). Only words 0 and 3 are used, so round 10's
// product of c0, whose high half only word 2 needs, becomes a plain muli.
// FOLDED-LABEL: gpu.func @constant_key
// FOLDED-NOT: arith.addi
// FOLDED: arith.xori %{{.*}}, %c-1640530293_i32 : i32
// FOLDED-NOT: arith.addi
// FOLDED: arith.muli %{{.*}}, %c-766435501_i32 : i32
// FOLDED: arith.xori %{{.*}}, %c-1879880621_i32 : i32
// FOLDED-NOT: arith.addi
// FOLDED: gpu.return
gpu.module @m {
  gpu.func @constant_key(%out: memref<4xi32>, %c: i32) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %seed = arith.constant 1234 : i32
    %w0, %w1, %w2, %w3 = fa.philox key(%seed, %seed) counter(%c, %c, %c, %c)
    %i0 = arith.constant 0 : index
    memref.store %w0, %out[%i0] : memref<4xi32>
    memref.store %w3, %out[%i0] : memref<4xi32>
    gpu.return
  }
}

// -----

// fa.apply_dropout on a one-warp 16 x 16 tile: the threshold floor(p * 2^32)
// and scale 1 / (1 - p) once, then for each of the lane's 8 elements a
// Philox block at counter (key / 4, query, batch_head, offset) under key
// (seed_lo, seed_hi), the word key % 4 of it, and kept (>= threshold)
// elements scaled, dropped ones 0. The first element is query
// row + 16 warp + lane / 4 (in i32) and key col + 2 (lane % 4).
// FOLDED-LABEL: gpu.func @apply_dropout
// FOLDED-SAME: (%[[OUT:.*]]: memref<?x?x?x16xf32>, %[[BH:.*]]: i32, %[[LO:.*]]: i32, %[[HI:.*]]: i32, %[[OFF:.*]]: i32, %[[P:.*]]: f32, %[[ROW:.*]]: index, %[[COL:.*]]: index)
// FOLDED-DAG: %[[TWO_TO_32:.*]] = arith.constant 4.2949673E+9 : f32
// FOLDED-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// FOLDED-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// FOLDED: %[[SCALED_P:.*]] = arith.mulf %[[P]], %[[TWO_TO_32]] : f32
// FOLDED: %[[THRESHOLD:.*]] = arith.fptoui %[[SCALED_P]] : f32 to i32
// FOLDED: %[[KEEP_P:.*]] = arith.subf %[[ONE]], %[[P]] : f32
// FOLDED: %[[SCALE:.*]] = arith.divf %[[ONE]], %[[KEEP_P]] : f32
// FOLDED: %[[KEY_INDEX:.*]] = arith.addi %[[COL]], %{{.*}} : index
// FOLDED: %[[QUERY_INDEX:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// FOLDED: %[[QUERY:.*]] = arith.index_cast %[[QUERY_INDEX]] : index to i32
// FOLDED: %[[KEY:.*]] = arith.index_cast %[[KEY_INDEX]] : index to i32
// FOLDED: %[[GROUP:.*]] = arith.shrui %[[KEY]], %c2_i32 : i32
// FOLDED: %{{.*}}, %[[HIGH0:.*]] = arith.mului_extended %[[GROUP]], %c-766435501_i32 : i32
// FOLDED: %{{.*}}, %[[HIGH1:.*]] = arith.mului_extended %[[BH]], %c-845247145_i32 : i32
// FOLDED: %[[X0:.*]] = arith.xori %[[HIGH1]], %[[QUERY]] : i32
// FOLDED: arith.xori %[[X0]], %[[LO]] : i32
// FOLDED: %[[X2:.*]] = arith.xori %[[HIGH0]], %[[OFF]] : i32
// FOLDED: arith.xori %[[X2]], %[[HI]] : i32
// FOLDED: %[[WORD:.*]] = arith.andi %[[KEY]], %c3_i32 : i32
// FOLDED-COUNT-2: arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// FOLDED: %[[BITS:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// FOLDED: %[[KEEP:.*]] = arith.cmpi uge, %[[BITS]], %[[THRESHOLD]] : i32
// FOLDED: arith.select %[[KEEP]], %[[SCALE]], %[[ZERO]] : f32
// FOLDED-COUNT-7: arith.cmpi uge, %{{.*}}, %[[THRESHOLD]] : i32
// FOLDED-NOT: arith.cmpi uge
// FOLDED-NOT: fa.apply_dropout
// FOLDED: gpu.return
gpu.module @m {
  gpu.func @apply_dropout(%out: memref<?x?x?x16xf32>, %bh: i32, %lo: i32,
                          %hi: i32, %offset: i32, %p: f32, %row: index,
                          %col: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %ones = arith.constant dense<1.0> : vector<16x16xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) : vector<16x16xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// Transposed (rows are keys): the group is the row's, the query the column.
// FOLDED-LABEL: gpu.func @apply_dropout_transposed
// FOLDED-SAME: %[[ROW:[^:]*]]: index, %[[COL:[^:]*]]: index)
// FOLDED: %[[QUERY_INDEX:.*]] = arith.addi %[[COL]], %{{.*}} : index
// FOLDED: %[[KEY_INDEX:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// FOLDED: %[[KEY:.*]] = arith.index_cast %[[KEY_INDEX]] : index to i32
// FOLDED: %[[QUERY:.*]] = arith.index_cast %[[QUERY_INDEX]] : index to i32
// FOLDED: %[[GROUP:.*]] = arith.shrui %[[KEY]], %c2_i32 : i32
// FOLDED: %{{.*}}, %[[HIGH1:.*]] = arith.mului_extended %{{.*}}, %c-845247145_i32 : i32
// FOLDED: arith.xori %[[HIGH1]], %[[QUERY]] : i32
// FOLDED: arith.andi %[[KEY]], %c3_i32 : i32
// FOLDED: gpu.return
gpu.module @m {
  gpu.func @apply_dropout_transposed(%out: memref<?x?x?x16xf32>, %bh: i32,
                                     %lo: i32, %hi: i32, %offset: i32,
                                     %p: f32, %row: index, %col: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %ones = arith.constant dense<1.0> : vector<16x16xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) transposed : vector<16x16xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}
