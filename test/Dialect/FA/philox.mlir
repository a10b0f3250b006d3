// RUN: fa-opt %s | FileCheck %s
// Round trip of fa.philox and fa.apply_dropout: the custom form prints back as written, and the
// printed and generic forms parse again to the same IR.
// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s

// CHECK-LABEL: func @philox
// CHECK-SAME: (%[[K0:.*]]: i32, %[[K1:.*]]: i32, %[[C0:.*]]: i32, %[[C1:.*]]: i32, %[[C2:.*]]: i32, %[[C3:.*]]: i32)
// CHECK: %[[W0:.*]], %[[W1:.*]], %[[W2:.*]], %[[W3:.*]] = fa.philox key(%[[K0]], %[[K1]]) counter(%[[C0]], %[[C1]], %[[C2]], %[[C3]]){{$}}
// CHECK: return %[[W0]], %[[W1]], %[[W2]], %[[W3]]
func.func @philox(%k0: i32, %k1: i32, %c0: i32, %c1: i32, %c2: i32, %c3: i32)
    -> (i32, i32, i32, i32) {
  %r0, %r1, %r2, %r3 = fa.philox key(%k0, %k1) counter(%c0, %c1, %c2, %c3)
  return %r0, %r1, %r2, %r3 : i32, i32, i32, i32
}

// CHECK-LABEL: func @apply_dropout
// CHECK: fa.apply_dropout %{{.*}} rows(%{{.*}}) cols(%{{.*}}) batch_head(%{{.*}}) seed(%{{.*}}, %{{.*}}) offset(%{{.*}}) p(%{{.*}}) : vector<64x32xf32>
// CHECK: fa.apply_dropout %{{.*}} rows(%{{.*}}) cols(%{{.*}}) batch_head(%{{.*}}) seed(%{{.*}}, %{{.*}}) offset(%{{.*}}) p(%{{.*}}) transposed : vector<64x32xf32>
func.func @apply_dropout(%probs: vector<64x32xf32>, %row: index, %col: index,
                         %bh: i32, %seed_lo: i32, %seed_hi: i32, %offset: i32,
                         %p: f32) -> (vector<64x32xf32>, vector<64x32xf32>) {
  %d = fa.apply_dropout %probs rows(%row) cols(%col) batch_head(%bh)
      seed(%seed_lo, %seed_hi) offset(%offset) p(%p) : vector<64x32xf32>
  %t = fa.apply_dropout %probs rows(%row) cols(%col) batch_head(%bh)
      seed(%seed_lo, %seed_hi) offset(%offset) p(%p) transposed : vector<64x32xf32>
  return %d, %t : vector<64x32xf32>, vector<64x32xf32>
}

// fa.philox is pure: unused words, and the op when no word is used, go.
// RUN: fa-opt %s --canonicalize | FileCheck %s --check-prefix=PURE
// PURE-LABEL: func @philox_unused
// PURE-NOT: fa.philox
// PURE: return
func.func @philox_unused(%k: i32, %c: i32) {
  %r:4 = fa.philox key(%k, %k) counter(%c, %c, %c, %c)
  return
}
