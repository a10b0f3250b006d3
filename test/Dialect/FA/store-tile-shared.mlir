// RUN: fa-opt %s | fa-opt | FileCheck %s
// fa.store_tile_shared round trips, with and without `transposed` and
// `no_leading_barrier`.

!dst = memref<32x128xbf16, #gpu.address_space<workgroup>>
!ds = memref<128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-LABEL: func.func @store_tile_shared
// CHECK-SAME: (%[[DST:[^:]*]]: vector<128x32xbf16>, %[[DS:[^:]*]]: vector<128x64xf16>, %[[T:[^:]*]]: memref<32x128xbf16, #gpu.address_space<workgroup>>, %[[N:[^:]*]]: memref<128x64xf16, #gpu.address_space<workgroup>>, %[[F:[^:]*]]: vector<64x16xf32>, %[[FT:[^:]*]]: memref<16x64xf32, #gpu.address_space<workgroup>>)
// CHECK: fa.store_tile_shared %[[DST]], %[[T]] transposed : vector<128x32xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>
// CHECK: fa.store_tile_shared %[[DS]], %[[N]] : vector<128x64xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>
// CHECK: fa.store_tile_shared %[[F]], %[[FT]] transposed : vector<64x16xf32>, memref<16x64xf32, #gpu.address_space<workgroup>>
// CHECK: fa.store_tile_shared %[[DST]], %[[T]] transposed no_leading_barrier : vector<128x32xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>
func.func @store_tile_shared(%dst: vector<128x32xbf16>, %ds: vector<128x64xf16>,
                             %t: !dst, %n: memref<128x64xf16, #gpu.address_space<workgroup>>,
                             %f: vector<64x16xf32>, %ft: memref<16x64xf32, #gpu.address_space<workgroup>>) {
  fa.store_tile_shared %dst, %t transposed : vector<128x32xbf16>, !dst
  fa.store_tile_shared %ds, %n : vector<128x64xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>
  fa.store_tile_shared %f, %ft transposed : vector<64x16xf32>, memref<16x64xf32, #gpu.address_space<workgroup>>
  fa.store_tile_shared %dst, %t transposed no_leading_barrier : vector<128x32xbf16>, !dst
  return
}
