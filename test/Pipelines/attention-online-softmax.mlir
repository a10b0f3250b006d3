// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-fuse-online-softmax | FileCheck %s

// One key loop carrying (m, l, acc) with m the maximum of the raw scores;
// scores computed once per tile, exponentiated as exp2(s * c - m * c) with
// c = scale * log2(e) = 0.125 * 1.4427 in one fma; m and l rescaled by
// exp2((m_old - m_new) * c); one division after the loop; the log-sum-exp
// gets the maximum back in natural units (times the scale).
// CHECK-LABEL: gpu.func @attn
// CHECK-DAG: %[[C:.*]] = arith.constant dense<0.180336878> : vector<64x64xf32>
// CHECK-DAG: %[[CROWS:.*]] = arith.constant dense<0.180336878> : vector<64xf32>
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant dense<0xFF800000> : vector<64xf32>
// CHECK: %[[R:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}}) -> (vector<64xf32>, vector<64xf32>, vector<64x64xf32>)
// CHECK-COUNT-1: fa.tile_matmul %{{.*}} transpose_b
// CHECK-NOT: arith.mulf
// CHECK: %[[MASKED:.*]] = fa.apply_mask %{{.*}}
// CHECK: %[[MNEW:.*]] = vector.multi_reduction <maxnumf>, %[[MASKED]], %[[M]] [1]
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[MNEW]], %[[NEGINF]]
// CHECK: %[[MSAFE:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[MNEW]]
// CHECK: %[[DIFF:.*]] = arith.subf %[[M]], %[[MSAFE]]
// CHECK: %[[DIFF2:.*]] = arith.mulf %[[DIFF]], %[[CROWS]]
// CHECK: %[[ALPHA:.*]] = math.exp2 %[[DIFF2]] : vector<64xf32>
// CHECK: %[[MC:.*]] = arith.mulf %[[MSAFE]], %[[CROWS]]
// CHECK: %[[NEGMC:.*]] = arith.negf %[[MC]]
// CHECK: %[[NEGMCB:.*]] = fa.row_broadcast %[[NEGMC]]
// CHECK: %[[E:.*]] = math.fma %[[MASKED]], %[[C]], %[[NEGMCB]] : vector<64x64xf32>
// CHECK: %[[P:.*]] = math.exp2 %[[E]] : vector<64x64xf32>
// CHECK: %[[LSCALED:.*]] = arith.mulf %[[L]], %[[ALPHA]]
// CHECK: %[[LNEW:.*]] = vector.multi_reduction <add>, %[[P]], %[[LSCALED]] [1]
// CHECK: %[[ALPHAB:.*]] = fa.row_broadcast %[[ALPHA]]
// CHECK: %[[ACCSCALED:.*]] = arith.mulf %[[ACC]], %[[ALPHAB]]
// CHECK: %[[PB:.*]] = arith.truncf %[[P]]
// CHECK: fa.stage_tile
// CHECK: %[[ACCNEW:.*]] = fa.tile_matmul %[[PB]], %{{.*}}, %[[ACCSCALED]] :
// CHECK: scf.yield %[[MNEW]], %[[LNEW]], %[[ACCNEW]]
// CHECK: } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
// CHECK-NOT: scf.for
// CHECK-NOT: math.exp {{.*}}
// CHECK: %[[SCALE:.*]] = arith.constant dense<1.250000e-01> : vector<64xf32>
// CHECK-NEXT: %[[MNAT:.*]] = arith.mulf %[[R]]#0, %[[SCALE]] : vector<64xf32>
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[R]]#1 : vector<64xf32>
// CHECK: %[[LB:.*]] = fa.row_broadcast %[[INV]]
// CHECK: arith.mulf %[[R]]#2, %[[LB]]
// CHECK: math.log2 %[[R]]#1
// CHECK: arith.addf %[[MNAT]]
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal scale(0.125)
  return
}
