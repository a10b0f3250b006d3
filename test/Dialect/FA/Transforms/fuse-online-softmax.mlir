// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-fuse-online-softmax | FileCheck %s

// One key loop carrying (m, l, acc); scores computed once per tile, scaled by
// scale * log2(e) = 0.125 * 1.4427 and exponentiated with exp2; m and l
// rescaled by exp2(m_old - m_new); one division after the loop; the
// base-2 maximum converted back (times ln 2) for the log-sum-exp.
// CHECK-LABEL: gpu.func @attn
// CHECK-DAG: %[[SCALE2:.*]] = arith.constant dense<0.180336878> : vector<64x64xf32>
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant dense<0xFF800000> : vector<64xf32>
// CHECK: %[[R:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}}) -> (vector<64xf32>, vector<64xf32>, vector<64x64xf32>)
// CHECK-COUNT-1: fa.tile_matmul %{{.*}} transpose_b
// CHECK: %[[S:.*]] = arith.mulf %{{.*}}, %[[SCALE2]]
// CHECK: %[[MASKED:.*]] = fa.apply_mask %[[S]]
// CHECK: %[[MNEW:.*]] = vector.multi_reduction <maxnumf>, %[[MASKED]], %[[M]] [1]
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[MNEW]], %[[NEGINF]]
// CHECK: %[[MSAFE:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[MNEW]]
// CHECK: %[[ALPHA:.*]] = math.exp2 %{{.*}} : vector<64xf32>
// CHECK: %[[P:.*]] = math.exp2 %{{.*}} : vector<64x64xf32>
// CHECK: %[[LSCALED:.*]] = arith.mulf %[[L]], %[[ALPHA]]
// CHECK: %[[LNEW:.*]] = vector.multi_reduction <add>, %[[P]], %[[LSCALED]] [1]
// CHECK: %[[ALPHAB:.*]] = fa.row_broadcast %[[ALPHA]]
// CHECK: %[[ACCSCALED:.*]] = arith.mulf %[[ACC]], %[[ALPHAB]]
// CHECK: %[[PB:.*]] = arith.truncf %[[P]]
// CHECK: fa.stage_tile
// CHECK: %[[ACCNEW:.*]] = fa.tile_matmul %[[PB]], %{{.*}}, %[[ACCSCALED]] :
// CHECK: scf.yield %[[MNEW]], %[[LNEW]], %[[ACCNEW]]
// CHECK: } {fa.kv_loop, fa.softmax_phase = "online"}
// CHECK-NOT: scf.for
// CHECK-NOT: math.exp {{.*}}
// CHECK: %[[MNAT:.*]] = arith.mulf %[[R]]#0, %{{.*}} : vector<64xf32>
// CHECK: %[[LB:.*]] = fa.row_broadcast %[[R]]#1
// CHECK: arith.divf %[[R]]#2, %[[LB]]
// CHECK: math.log2 %[[R]]#1
// CHECK: arith.addf %[[MNAT]]
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal scale(0.125)
  return
}
