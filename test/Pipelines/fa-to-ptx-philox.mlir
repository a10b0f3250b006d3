// RUN: fa-opt %s --fa-to-ptx | FileCheck %s
// fa.philox through the whole pipeline: each round's two 32 x 32 -> 64-bit
// products (arith.mului_extended) become one mul.wide.u32 each in the PTX
// (ptxas: IMAD.WIDE.U32), by M0 = 0xD2511F53 (-766435501) and
// M1 = 0xCD9E8D57 (-845247145): ten of each, M0's checked (the PTX is one
// escaped string, so each is a CHECK-SAME), then the stores.
// CHECK: gpu.binary @philox
// CHECK-SAME: .visible .entry philox_words(
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-NOT: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, -766435501;
// CHECK-SAME: st.global.b32
module attributes {gpu.container_module} {
gpu.module @philox {
  gpu.func @philox_words(%out: memref<4xi32>, %k0: i32, %k1: i32, %c0: i32,
                         %c1: i32, %c2: i32, %c3: i32) kernel
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
}
