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

// fa.apply_dropout on a one-warp 16 x 16 tile whose origin (row, col) is
// unknown: the threshold floor(p * 2^16), moved to the top half of a word,
// and the scale 1 / (1 - p) once; then each of the lane's 8 elements takes
// its own Philox block (20 products each) at counter
// (8 (key / 32) + key mod 8, 8 (query / 16) + query mod 8, batch_head,
// offset) under key (seed_lo, seed_hi), chooses its word
// 2 ((query / 8) mod 2) + (key / 16) mod 2 and half (key / 8) mod 2 at run
// time, and keeps its value scaled where those 16 bits, at the top of the
// word, are at least the threshold. The first element is query
// row + lane / 4 and key col + 2 (lane % 4).
// CHECK-LABEL: gpu.func @apply_dropout
// CHECK-COUNT-160: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
// FOLDED-LABEL: gpu.func @apply_dropout
// FOLDED-SAME: (%[[OUT:.*]]: memref<?x?x?x16xf32>, %[[BH:.*]]: i32, %[[LO:.*]]: i32, %[[HI:.*]]: i32, %[[OFF:.*]]: i32, %[[P:.*]]: f32, %[[ROW:.*]]: index, %[[COL:.*]]: index)
// FOLDED-DAG: %[[TWO_TO_16:.*]] = arith.constant 6.553600e+04 : f32
// FOLDED-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// FOLDED-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// FOLDED: %[[SCALED_P:.*]] = arith.mulf %[[P]], %[[TWO_TO_16]] : f32
// FOLDED: %[[THRESHOLD16:.*]] = arith.fptoui %[[SCALED_P]] : f32 to i32
// FOLDED: %[[THRESHOLD:.*]] = arith.shli %[[THRESHOLD16]], %c16_i32 : i32
// FOLDED: %[[KEEP_P:.*]] = arith.subf %[[ONE]], %[[P]] : f32
// FOLDED: %[[SCALE:.*]] = arith.divf %[[ONE]], %[[KEEP_P]] : f32
// FOLDED: %[[KEY_INDEX:.*]] = arith.addi %[[COL]], %{{.*}} : index
// FOLDED: %[[QUERY_INDEX:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// FOLDED: %[[QUERY:.*]] = arith.index_cast %[[QUERY_INDEX]] : index to i32
// FOLDED: %[[KEY:.*]] = arith.index_cast %[[KEY_INDEX]] : index to i32
// FOLDED: %[[KEY_GROUP:.*]] = arith.shrui %[[KEY]], %c5_i32 : i32
// FOLDED: %[[KEY_GROUP8:.*]] = arith.shli %[[KEY_GROUP]], %c3_i32 : i32
// FOLDED: %[[KEY_LOW:.*]] = arith.andi %[[KEY]], %c7_i32 : i32
// FOLDED: %[[COUNTER0:.*]] = arith.ori %[[KEY_GROUP8]], %[[KEY_LOW]] : i32
// FOLDED: %[[QUERY_GROUP:.*]] = arith.shrui %[[QUERY]], %c4_i32 : i32
// FOLDED: %[[QUERY_GROUP8:.*]] = arith.shli %[[QUERY_GROUP]], %c3_i32 : i32
// FOLDED: %[[QUERY_LOW:.*]] = arith.andi %[[QUERY]], %c7_i32 : i32
// FOLDED: %[[COUNTER1:.*]] = arith.ori %[[QUERY_GROUP8]], %[[QUERY_LOW]] : i32
// FOLDED: %{{.*}}, %[[HIGH0:.*]] = arith.mului_extended %[[COUNTER0]], %c-766435501_i32 : i32
// FOLDED: %{{.*}}, %[[HIGH1:.*]] = arith.mului_extended %[[BH]], %c-845247145_i32 : i32
// FOLDED: %[[X0:.*]] = arith.xori %[[HIGH1]], %[[COUNTER1]] : i32
// FOLDED: arith.xori %[[X0]], %[[LO]] : i32
// FOLDED: %[[X2:.*]] = arith.xori %[[HIGH0]], %[[OFF]] : i32
// FOLDED: arith.xori %[[X2]], %[[HI]] : i32
// The word's high bit is the query's bit 3, its low bit the key's bit 4,
// the half the key's bit 3: the low half moves up by 16.
// FOLDED: %[[QUERY_BIT3:.*]] = arith.andi %[[QUERY]], %c8_i32 : i32
// FOLDED: %[[WORD_HIGH:.*]] = arith.cmpi ne, %[[QUERY_BIT3]], %c0_i32 : i32
// FOLDED: %[[KEY_BIT4:.*]] = arith.andi %[[KEY]], %c16_i32 : i32
// FOLDED: %[[WORD_LOW:.*]] = arith.cmpi ne, %[[KEY_BIT4]], %c0_i32 : i32
// FOLDED: %[[KEY_BIT3:.*]] = arith.andi %[[KEY]], %c8_i32 : i32
// FOLDED: %[[HALF:.*]] = arith.cmpi ne, %[[KEY_BIT3]], %c0_i32 : i32
// FOLDED: %[[W01:.*]] = arith.select %[[WORD_LOW]], %{{.*}}, %{{.*}} : i32
// FOLDED: %[[W23:.*]] = arith.select %[[WORD_LOW]], %{{.*}}, %{{.*}} : i32
// FOLDED: %[[WORD:.*]] = arith.select %[[WORD_HIGH]], %[[W23]], %[[W01]] : i32
// FOLDED: %[[LOW_UP:.*]] = arith.shli %[[WORD]], %c16_i32 : i32
// FOLDED: %[[BITS:.*]] = arith.select %[[HALF]], %[[WORD]], %[[LOW_UP]] : i32
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

// The forward's tile origin: rows block * 128, keys j * 64. A 16 x 64 tile
// gives a lane rows r, r + 8 (one query pair) and keys 2 (lane % 4) + e +
// 8 n: for each e and 32-key group one block holds all 8 elements, 4 calls
// for the lane's 32 elements, and every word and half is a constant choice
// (no i32 select).
// CHECK-LABEL: gpu.func @apply_dropout_aligned
// CHECK-COUNT-80: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
// The only selects are the 32 elements' (kept value or 0).
// FOLDED-LABEL: gpu.func @apply_dropout_aligned(
// FOLDED-COUNT-32: arith.select
// FOLDED-NOT: arith.select
// FOLDED: gpu.return
gpu.module @m {
  gpu.func @apply_dropout_aligned(%out: memref<?x?x?x64xf32>, %bh: i32,
                                  %lo: i32, %hi: i32, %offset: i32, %p: f32,
                                  %block: index, %j: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %block, %c128 : index
    %col = arith.muli %j, %c64 : index
    %ones = arith.constant dense<1.0> : vector<16x64xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) : vector<16x64xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<16x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// -----

// Keys at a multiple of 16 only (a 16-wide tile): keys k and k + 8 of the
// lane share a 32-key group, so each block serves 2 queries x 2 keys, 2
// calls for 8 elements; whether the pair is the group's first or second
// half (the word's low bit, the key's bit 4) is chosen at run time, once,
// by one select per block and query.
// CHECK-LABEL: gpu.func @apply_dropout_aligned_16
// CHECK-COUNT-40: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
// FOLDED-LABEL: gpu.func @apply_dropout_aligned_16
// FOLDED: %[[BIT4:.*]] = arith.andi %{{.*}}, %c16_i32 : i32
// FOLDED: %[[WORD_LOW:.*]] = arith.cmpi ne, %[[BIT4]], %c0_i32 : i32
// FOLDED-COUNT-4: arith.select %[[WORD_LOW]], %{{.*}}, %{{.*}} : i32
// FOLDED-NOT: arith.select %[[WORD_LOW]]
// FOLDED-NOT: arith.cmpi ne
// FOLDED: gpu.return
gpu.module @m {
  gpu.func @apply_dropout_aligned_16(%out: memref<?x?x?x16xf32>, %bh: i32,
                                     %lo: i32, %hi: i32, %offset: i32,
                                     %p: f32, %block: index, %j: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %row = arith.muli %block, %c16 : index
    %col = arith.muli %j, %c16 : index
    %ones = arith.constant dense<1.0> : vector<16x16xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) : vector<16x16xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// A key loop's induction variable is a multiple of its step (and lower
// bound): keys at j in [0, n) step 32 let each block serve 8 elements.
// CHECK-LABEL: gpu.func @apply_dropout_key_loop
// CHECK-COUNT-40: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
gpu.module @m {
  gpu.func @apply_dropout_key_loop(%out: memref<?x?x?x32xf32>, %bh: i32,
                                   %lo: i32, %hi: i32, %offset: i32, %p: f32,
                                   %n: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    scf.for %col = %c0 to %n step %c32 {
      %ones = arith.constant dense<1.0> : vector<16x32xf32>
      %d = fa.apply_dropout %ones rows(%c0) cols(%col) batch_head(%bh)
          seed(%lo, %hi) offset(%offset) p(%p) : vector<16x32xf32>
      fa.store_tile %d, %out[%c0, %c0, %col] : vector<16x32xf32>, memref<?x?x?x32xf32>
    }
    gpu.return
  }
}

// -----

// Transposed (rows are keys, columns queries) at an unknown origin: every
// element its own block, the key from the row, the query from the column.
// CHECK-LABEL: gpu.func @apply_dropout_transposed
// CHECK-COUNT-160: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
// FOLDED-LABEL: gpu.func @apply_dropout_transposed
// FOLDED-SAME: %[[ROW:[^:]*]]: index, %[[COL:[^:]*]]: index)
// FOLDED: %[[QUERY_INDEX:.*]] = arith.addi %[[COL]], %{{.*}} : index
// FOLDED: %[[KEY_INDEX:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// FOLDED: %[[KEY:.*]] = arith.index_cast %[[KEY_INDEX]] : index to i32
// FOLDED: %[[QUERY:.*]] = arith.index_cast %[[QUERY_INDEX]] : index to i32
// FOLDED: %[[KEY_GROUP:.*]] = arith.shrui %[[KEY]], %c5_i32 : i32
// FOLDED: %[[QUERY_GROUP:.*]] = arith.shrui %[[QUERY]], %c4_i32 : i32
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

// -----

// The dK/dV kernel's tile: keys (rows) at block * 128, queries (columns) at
// j * 16. A lane's keys r, r + 8 share a group and its queries c, c + 8
// (c = 2 (lane % 4) + e) a pair: 2 calls for 8 elements. With two row
// blocks per warp (32 rows) at a multiple of 32, keys r, r + 8, r + 16,
// r + 24 share one: still 2 calls, now for 16 elements.
// CHECK-LABEL: gpu.func @apply_dropout_transposed_aligned
// CHECK-COUNT-40: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @apply_dropout_transposed_two_row_blocks
// CHECK-COUNT-40: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: gpu.return
gpu.module @m {
  gpu.func @apply_dropout_transposed_aligned(%out: memref<?x?x?x16xf32>,
                                             %bh: i32, %lo: i32, %hi: i32,
                                             %offset: i32, %p: f32,
                                             %block: index, %j: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %block, %c128 : index
    %col = arith.muli %j, %c16 : index
    %ones = arith.constant dense<1.0> : vector<16x16xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) transposed : vector<16x16xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
  gpu.func @apply_dropout_transposed_two_row_blocks(
      %out: memref<?x?x?x16xf32>, %bh: i32, %lo: i32, %hi: i32, %offset: i32,
      %p: f32, %block: index, %j: index) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>,
                  fa.tile = #fa.tile<block_m = 32>} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %block, %c128 : index
    %col = arith.muli %j, %c16 : index
    %ones = arith.constant dense<1.0> : vector<32x16xf32>
    %d = fa.apply_dropout %ones rows(%row) cols(%col) batch_head(%bh)
        seed(%lo, %hi) offset(%offset) p(%p) transposed : vector<32x16xf32>
    fa.store_tile %d, %out[%c0, %c0, %row] : vector<32x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}
