// RUN: fa-opt %s | FileCheck %s
// Round trip of the residual operands of fa.layernorm and fa.layernorm_grad:
// the custom form prints back as written, and the printed form parses again
// to the same IR (generic form included).
// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s

// The residual add fused into the norm: residual after ins, sum after outs.
// CHECK-LABEL: func @layernorm_residual
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x768xbf16>, %{{[^:]*}}: memref<768xbf16>, %{{[^:]*}}: memref<768xbf16>, %[[R:[^:]*]]: memref<?x768xbf16>, %[[Y:[^:]*]]: memref<?x768xbf16>, %[[S:[^:]*]]: memref<?x768xbf16>,
// CHECK: fa.layernorm ins(%[[X]], %{{.*}}, %{{.*}} : memref<?x768xbf16>, memref<768xbf16>, memref<768xbf16>) residual(%[[R]] : memref<?x768xbf16>) outs(%[[Y]] : memref<?x768xbf16>) sum(%[[S]] : memref<?x768xbf16>) stats(%{{.*}}, %{{.*}} : memref<?xf32>, memref<?xf32>) eps(%{{.*}} : f32)
func.func @layernorm_residual(%x: memref<?x768xbf16>, %w: memref<768xbf16>, %b: memref<768xbf16>, %r: memref<?x768xbf16>,
                              %y: memref<?x768xbf16>, %s: memref<?x768xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<?x768xbf16>, memref<768xbf16>, memref<768xbf16>)
               residual(%r : memref<?x768xbf16>)
               outs(%y : memref<?x768xbf16>) sum(%s : memref<?x768xbf16>)
               stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// The sum may overwrite x (the residual stream updated in place), and the
// statistics stay optional.
// CHECK-LABEL: func @layernorm_residual_in_place
// CHECK-SAME: (%[[X:[^:]*]]: memref<4x?xf32>
// CHECK: fa.layernorm ins(%[[X]], {{.*}}) residual(%{{.*}} : memref<4x?xf32>) outs(%{{.*}} : memref<4x?xf32>) sum(%[[X]] : memref<4x?xf32>) eps(%{{.*}} : f32)
func.func @layernorm_residual_in_place(%x: memref<4x?xf32>, %w: memref<?xf32>, %b: memref<?xf32>, %r: memref<4x?xf32>,
                                       %y: memref<4x?xf32>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<4x?xf32>, memref<?xf32>, memref<?xf32>) residual(%r : memref<4x?xf32>)
               outs(%y : memref<4x?xf32>) sum(%x : memref<4x?xf32>) eps(%eps : f32)
  return
}

// The backward adds the gradient from the residual path to dx; it may be dx
// itself.
// CHECK-LABEL: func @layernorm_grad_dresidual
// CHECK-SAME: %[[G:[^:]*]]: memref<8x384xf16>, %[[DX:[^:]*]]: memref<8x384xf16>, %{{[^:]*}}: memref<384xf32>
// CHECK: fa.layernorm_grad ins({{.*}} : memref<8x384xf16>, memref<384xf16>, memref<8xf32>, memref<8xf32>, memref<8x384xf16>) dresidual(%[[G]] : memref<8x384xf16>) outs(%[[DX]], {{.*}} : memref<8x384xf16>, memref<384xf32>, memref<384xf32>)
// CHECK: fa.layernorm_grad ins({{.*}}) dresidual(%[[DX]] : memref<8x384xf16>) outs(%[[DX]], {{.*}})
func.func @layernorm_grad_dresidual(%x: memref<8x384xf16>, %w: memref<384xf16>, %mean: memref<8xf32>, %rstd: memref<8xf32>,
                                    %dy: memref<8x384xf16>, %g: memref<8x384xf16>, %dx: memref<8x384xf16>,
                                    %dw: memref<384xf32>, %db: memref<384xf32>) {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<8x384xf16>, memref<384xf16>, memref<8xf32>, memref<8xf32>, memref<8x384xf16>)
                    dresidual(%g : memref<8x384xf16>)
                    outs(%dx, %dw, %db : memref<8x384xf16>, memref<384xf32>, memref<384xf32>)
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<8x384xf16>, memref<384xf16>, memref<8xf32>, memref<8xf32>, memref<8x384xf16>)
                    dresidual(%dx : memref<8x384xf16>)
                    outs(%dx, %dw, %db : memref<8x384xf16>, memref<384xf32>, memref<384xf32>)
  return
}
