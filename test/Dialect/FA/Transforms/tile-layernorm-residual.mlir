// RUN: fa-opt %s --fa-tile-layernorm --split-input-file | FileCheck %s

// The residual forward, whole rows in registers: x and residual are loaded
// (with the weight and bias) before anything is stored; s = x + r is added
// in f32, stored to `sum` rounded to bf16, and the norm works on s as stored
// (rounded and widened again), not on the f32 sum. residual and sum follow
// the statistics among the parameters; eps stays last.
// CHECK-LABEL: module attributes {fa.kernels = {ln_res = #fa.kernel<op = layernorm_fwd, {{.*}} params = [#fa.param<"x" : memref<?x?xbf16>>, #fa.param<"weight" : memref<?xbf16>>, #fa.param<"bias" : memref<?xbf16>>, #fa.param<"y" : memref<?x?xbf16>>, #fa.param<"mean" : memref<?xf32>>, #fa.param<"rstd" : memref<?xf32>>, #fa.param<"residual" : memref<?x?xbf16>>, #fa.param<"sum" : memref<?x?xbf16>>, #fa.param<"eps" : f32>]>}
// CHECK: gpu.func @ln_res(%[[X:[^:]*]]: memref<?x?xbf16>, %{{[^:]*}}: memref<?xbf16>, %{{[^:]*}}: memref<?xbf16>, %[[Y:[^:]*]]: memref<?x?xbf16>, %{{[^:]*}}: memref<?xf32>, %{{[^:]*}}: memref<?xf32>, %[[R:[^:]*]]: memref<?x?xbf16>, %[[S:[^:]*]]: memref<?x?xbf16>, %{{[^:]*}}: f32)
// CHECK: %[[XB:.*]] = fa.load_block %[[X]][%[[ROW0:.*]], %{{.*}}] : memref<?x?xbf16> -> vector<1x1024xbf16>
// CHECK: %[[XF:.*]] = arith.extf %[[XB]]
// CHECK: %[[RB:.*]] = fa.load_block %[[R]][%[[ROW0]], %{{.*}}] : memref<?x?xbf16> -> vector<1x1024xbf16>
// CHECK: %[[RF:.*]] = arith.extf %[[RB]]
// CHECK: fa.load_block {{.*}} -> vector<1024xbf16>
// CHECK: fa.load_block {{.*}} -> vector<1024xbf16>
// CHECK: %[[SUM:.*]] = arith.addf %[[XF]], %[[RF]] : vector<1x1024xf32>
// CHECK: %[[STORED:.*]] = arith.truncf %[[SUM]] : vector<1x1024xf32> to vector<1x1024xbf16>
// CHECK: fa.store_block %[[STORED]], %[[S]][%[[ROW0]], %{{.*}}]
// CHECK: %[[ROUNDED:.*]] = arith.truncf %[[SUM]]
// CHECK: %[[SF:.*]] = arith.extf %[[ROUNDED]]
// CHECK: vector.multi_reduction <add>, %[[SF]]
// CHECK: arith.subf %[[SF]]
// CHECK: fa.store_block %{{.*}}, %[[Y]]
func.func @ln_res(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %r: memref<?x?xbf16>, %y: memref<?x?xbf16>, %s: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) residual(%r : memref<?x?xbf16>) outs(%y : memref<?x?xbf16>) sum(%s : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// -----

// f32: nothing to round; the sum is what is stored and normalised.
// CHECK-LABEL: gpu.func @ln_res_f32(
// CHECK: %[[XB:.*]] = fa.load_block %arg0
// CHECK: %[[RB:.*]] = fa.load_block %arg6
// CHECK: %[[SUM:.*]] = arith.addf %[[XB]], %[[RB]] : vector<4x256xf32>
// CHECK-NEXT: fa.store_block %[[SUM]], %arg7
// CHECK-NOT: arith.truncf
// CHECK: vector.multi_reduction <add>, %[[SUM]]
func.func @ln_res_f32(%x: memref<?x?xf32>, %w: memref<?xf32>, %b: memref<?xf32>, %r: memref<?x?xf32>, %y: memref<?x?xf32>, %s: memref<?x?xf32>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 4, block_cols = 256, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xf32>, memref<?xf32>, memref<?xf32>) residual(%r : memref<?x?xf32>) outs(%y : memref<?x?xf32>) sum(%s : memref<?x?xf32>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// -----

// Persistent: the next row block's x and residual are both prefetched and
// carried by the loop; the current one's sum is stored before its norm.
// CHECK-LABEL: gpu.func @ln_res_persistent(
// CHECK: %[[X0:.*]] = fa.load_block %arg0
// CHECK: %[[R0:.*]] = fa.load_block %arg6
// CHECK: scf.for %{{.*}} iter_args(%[[XC:[^ ]+]] = %[[X0]], %[[RC:[^ ]+]] = %[[R0]]) -> (vector<1x1024xbf16>, vector<1x1024xbf16>)
// CHECK: %[[XN:.*]] = fa.load_block %arg0
// CHECK: %[[RN:.*]] = fa.load_block %arg6
// CHECK: arith.extf %[[XC]]
// CHECK: arith.extf %[[RC]]
// CHECK: fa.store_block %{{.*}}, %arg7
// CHECK: fa.store_block %{{.*}}, %arg3
// CHECK: scf.yield %[[XN]], %[[RN]]
func.func @ln_res_persistent(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %r: memref<?x?xbf16>, %y: memref<?x?xbf16>, %s: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true, persistent = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) residual(%r : memref<?x?xbf16>) outs(%y : memref<?x?xbf16>) sum(%s : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// -----

// Looped (rows of any length): the first column loop reads x and residual
// and writes sum; the squares' and y's loops read sum back (each thread the
// elements it wrote), never x, so sum may be x.
// CHECK-LABEL: gpu.func @ln_res_looped(
// CHECK: scf.for
// CHECK: fa.load_block %arg0
// CHECK: fa.load_block %arg6
// CHECK: fa.store_block %{{.*}}, %arg7
// CHECK: scf.for
// CHECK-NOT: fa.load_block %arg0
// CHECK: fa.load_block %arg7
// CHECK: scf.for
// CHECK-NOT: fa.load_block %arg0
// CHECK: fa.load_block %arg7
// CHECK: fa.store_block %{{.*}}, %arg3
func.func @ln_res_looped(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %r: memref<?x?xbf16>, %y: memref<?x?xbf16>, %s: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) residual(%r : memref<?x?xbf16>) outs(%y : memref<?x?xbf16>) sum(%s : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// -----

// The backward with dresidual: its last parameter (after the partial sums),
// loaded at dx's store and added in f32 before dx's one rounding.
// CHECK-LABEL: ln_res_bwd = #fa.kernel<op = layernorm_bwd, {{.*}} #fa.param<"partial_dbias" : memref<?x?xf32>>, #fa.param<"dresidual" : memref<?x?xbf16>>], params_kernel = "ln_res_bwd_params">
// CHECK: gpu.func @ln_res_bwd(
// CHECK: scf.for
// CHECK: %[[G:.*]] = fa.load_block %arg8[%[[ROW0:[^,]+]], %{{.*}}] : memref<?x?xbf16> -> vector<1x1024xbf16>
// CHECK-NEXT: %[[GF:.*]] = arith.extf %[[G]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %{{.*}}, %[[GF]] : vector<1x1024xf32>
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[SUM]]
// CHECK-NEXT: fa.store_block %[[T]], %arg5[%[[ROW0]], %{{.*}}]
func.func @ln_res_bwd(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %g: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) dresidual(%g : memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}

// -----

// Looped backward: the same in dx's column loop.
// CHECK-LABEL: gpu.func @ln_res_bwd_looped(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[G:.*]] = fa.load_block %arg8
// CHECK-NEXT: %[[GF:.*]] = arith.extf %[[G]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %{{.*}}, %[[GF]]
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[SUM]]
// CHECK-NEXT: fa.store_block %[[T]], %arg5
func.func @ln_res_bwd_looped(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %g: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) dresidual(%g : memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
