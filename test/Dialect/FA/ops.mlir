// RUN: fa-opt %s | FileCheck %s
// Round trip: the custom form prints back as written, and the printed form
// parses again to the same IR (generic form included).
// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s

// CHECK-LABEL: func @attention_static
// CHECK: fa.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>) outs(%{{.*}} : memref<2x8x128x64xbf16>){{$}}
func.func @attention_static(%q: memref<2x8x128x64xbf16>, %k: memref<2x8x128x64xbf16>,
                            %v: memref<2x8x128x64xbf16>, %o: memref<2x8x128x64xbf16>) {
  fa.attention ins(%q, %k, %v : memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>)
               outs(%o : memref<2x8x128x64xbf16>)
  return
}

// CHECK-LABEL: func @attention_gqa_causal_lse
// CHECK: fa.attention ins({{.*}}) outs(%{{.*}} : memref<?x8x?x128xf16>) lse(%{{.*}} : memref<?x8x?xf32>) causal scale(1.250000e-01)
func.func @attention_gqa_causal_lse(%q: memref<?x8x?x128xf16>, %k: memref<?x2x?x128xf16>,
                                    %v: memref<?x2x?x128xf16>, %o: memref<?x8x?x128xf16>,
                                    %lse: memref<?x8x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x8x?x128xf16>, memref<?x2x?x128xf16>, memref<?x2x?x128xf16>)
               outs(%o : memref<?x8x?x128xf16>) lse(%lse : memref<?x8x?xf32>) causal scale(0.125)
  return
}

// Query and key/value sequence lengths may differ (cross attention); f32 too.
// CHECK-LABEL: func @attention_cross_f32
// CHECK: fa.attention ins({{.*}} : memref<1x4x17x64xf32>, memref<1x1x1000x64xf32>, memref<1x1x1000x64xf32>)
func.func @attention_cross_f32(%q: memref<1x4x17x64xf32>, %k: memref<1x1x1000x64xf32>,
                               %v: memref<1x1x1000x64xf32>, %o: memref<1x4x17x64xf32>) {
  fa.attention ins(%q, %k, %v : memref<1x4x17x64xf32>, memref<1x1x1000x64xf32>, memref<1x1x1000x64xf32>)
               outs(%o : memref<1x4x17x64xf32>)
  return
}

// CHECK-LABEL: func @attention_grad
// CHECK: fa.attention_grad ins({{.*}}) outs({{.*}} : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>) causal{{$}}
func.func @attention_grad(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>,
                          %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>,
                          %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>,
                        memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>) causal
  return
}

// eps is an f32 value: a function argument here, a kernel parameter once
// tiled.
// CHECK-LABEL: func @layernorm_with_stats
// CHECK-SAME: %[[EPS:[^:]*]]: f32)
// CHECK: fa.layernorm ins({{.*}}) outs(%{{.*}} : memref<4x?x1024xbf16>) stats(%{{.*}}, %{{.*}} : memref<4x?xf32>, memref<4x?xf32>) eps(%[[EPS]] : f32)
func.func @layernorm_with_stats(%x: memref<4x?x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>,
                                %y: memref<4x?x1024xbf16>, %mean: memref<4x?xf32>, %rstd: memref<4x?xf32>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<4x?x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>)
               outs(%y : memref<4x?x1024xbf16>) stats(%mean, %rstd : memref<4x?xf32>, memref<4x?xf32>) eps(%eps : f32)
  return
}

// Inference needs no statistics; a positive constant eps is fine.
// CHECK-LABEL: func @layernorm_no_stats
// CHECK: %[[EPS:.*]] = arith.constant 1.000000e-03 : f32
// CHECK: fa.layernorm ins({{.*}}) outs(%{{.*}} : memref<?x?xf16>) eps(%[[EPS]] : f32)
func.func @layernorm_no_stats(%x: memref<?x?xf16>, %w: memref<?xf16>, %b: memref<?xf16>, %y: memref<?x?xf16>) {
  %eps = arith.constant 1.0e-3 : f32
  fa.layernorm ins(%x, %w, %b : memref<?x?xf16>, memref<?xf16>, memref<?xf16>) outs(%y : memref<?x?xf16>) eps(%eps : f32)
  return
}

// Parameter gradients may be accumulated in f32 for low-precision weights.
// CHECK-LABEL: func @layernorm_grad
// CHECK: fa.layernorm_grad ins({{.*}}) outs({{.*}} : memref<8x4096xbf16>, memref<4096xf32>, memref<4096xf32>)
func.func @layernorm_grad(%x: memref<8x4096xbf16>, %w: memref<4096xbf16>, %mean: memref<8xf32>, %rstd: memref<8xf32>,
                          %dy: memref<8x4096xbf16>, %dx: memref<8x4096xbf16>, %dw: memref<4096xf32>, %db: memref<4096xf32>) {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<8x4096xbf16>, memref<4096xbf16>, memref<8xf32>,
                        memref<8xf32>, memref<8x4096xbf16>)
                    outs(%dx, %dw, %db : memref<8x4096xbf16>, memref<4096xf32>, memref<4096xf32>)
  return
}

// The row-block ops of the row-wise (LayerNorm) kernels.
// CHECK-LABEL: func @row_blocks
// CHECK: %[[B:.*]] = fa.load_block %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16> -> vector<1x1024xbf16>
// CHECK: %[[W:.*]] = fa.load_block %{{.*}}[%{{.*}}] : memref<?xbf16> -> vector<1024xbf16>
// CHECK: %[[Z:.*]] = fa.zero_columns %{{.*}} cols(%{{.*}}) limit(%{{.*}}) : vector<1x1024xf32>
// CHECK: fa.store_block %[[Z]], %{{.*}}[%{{.*}}, %{{.*}}] : vector<1x1024xf32>, memref<?x?xf32>
// CHECK: fa.store_block %{{.*}}, %{{.*}}[%{{.*}}] : vector<1xf32>, memref<?xf32>
func.func @row_blocks(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %y: memref<?x?xf32>, %s: memref<?xf32>, %i: index, %n: index) {
  %b = fa.load_block %x[%i, %i] : memref<?x?xbf16> -> vector<1x1024xbf16>
  %c = fa.load_block %w[%i] : memref<?xbf16> -> vector<1024xbf16>
  %f = arith.extf %b : vector<1x1024xbf16> to vector<1x1024xf32>
  %z = fa.zero_columns %f cols(%i) limit(%n) : vector<1x1024xf32>
  fa.store_block %z, %y[%i, %i] : vector<1x1024xf32>, memref<?x?xf32>
  %r = arith.constant dense<1.0> : vector<1xf32>
  fa.store_block %r, %s[%i] : vector<1xf32>, memref<?xf32>
  return
}

// The tile ops the attention backward adds.
// CHECK-LABEL: func @backward_tiles
// CHECK: fa.load_rows %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x?xf32> -> vector<64xf32>
// CHECK: fa.column_broadcast %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x?xf32> -> vector<64x32xf32>
// CHECK: fa.apply_mask %{{.*}} rows(%{{.*}}) cols(%{{.*}}) kv_len(%{{.*}}) causal transposed : vector<64x32xf32>
// CHECK: fa.stage_rows %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] into %{{.*}} : memref<?x?x?xf32>, memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: fa.copy_rows_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] into %{{.*}} : memref<?x?x?xf32>, memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: fa.column_broadcast_shared %{{.*}} : memref<32xf32, #gpu.address_space<workgroup>> -> vector<64x32xf32>
func.func @backward_tiles(%lse: memref<?x?x?xf32>, %i: index, %rows: memref<32xf32, #gpu.address_space<workgroup>>) {
  %r = fa.load_rows %lse[%i, %i, %i] : memref<?x?x?xf32> -> vector<64xf32>
  %c = fa.column_broadcast %lse[%i, %i, %i] : memref<?x?x?xf32> -> vector<64x32xf32>
  %m = fa.apply_mask %c rows(%i) cols(%i) kv_len(%i) causal transposed : vector<64x32xf32>
  fa.stage_rows %lse[%i, %i, %i] into %rows : memref<?x?x?xf32>, memref<32xf32, #gpu.address_space<workgroup>>
  fa.copy_rows_async %lse[%i, %i, %i] into %rows : memref<?x?x?xf32>, memref<32xf32, #gpu.address_space<workgroup>>
  %s = fa.column_broadcast_shared %rows : memref<32xf32, #gpu.address_space<workgroup>> -> vector<64x32xf32>
  return
}

// Mask and score regions, captures, named variants and sinks (issue 20).
// CHECK-LABEL: func @attention_named_variants
// CHECK: fa.attention ins({{.*}}) outs(%{{.*}} : memref<2x8x?x64xbf16>) lse(%{{.*}} : memref<2x8x?xf32>) sinks(%{{.*}} : memref<8xf32>) causal window(%[[L:.*]], %[[R:.*]]) document(%{{.*}} : memref<2x?xi32>) softcap(%{{.*}}) alibi(%{{.*}} : memref<8xf32>) scale(1.250000e-01){{$}}
// CHECK: fa.attention ins({{.*}}) outs(%{{.*}} : memref<2x8x?x64xbf16>) causal_bottom_right dropout(%[[P:.*]], %[[SEED:.*]], %[[OFFSET:.*]]){{$}}
func.func @attention_named_variants(%q: memref<2x8x?x64xbf16>, %k: memref<2x2x?x64xbf16>,
                                    %v: memref<2x2x?x64xbf16>, %o: memref<2x8x?x64xbf16>,
                                    %lse: memref<2x8x?xf32>, %sinks: memref<8xf32>,
                                    %left: index, %right: index, %ids: memref<2x?xi32>,
                                    %cap: f32, %slopes: memref<8xf32>,
                                    %p: f32, %seed: i64, %offset: i32) {
  fa.attention ins(%q, %k, %v : memref<2x8x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x2x?x64xbf16>)
               outs(%o : memref<2x8x?x64xbf16>) lse(%lse : memref<2x8x?xf32>)
               sinks(%sinks : memref<8xf32>) causal window(%left, %right)
               document(%ids : memref<2x?xi32>) softcap(%cap) alibi(%slopes : memref<8xf32>)
               scale(0.125)
  fa.attention ins(%q, %k, %v : memref<2x8x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x2x?x64xbf16>)
               outs(%o : memref<2x8x?x64xbf16>) causal_bottom_right
               dropout(%p, %seed, %offset)
  return
}

// A custom mask (prefix-LM) and score region reading captures; `causal` and
// a mask region combine by `and`, which is allowed.
// CHECK-LABEL: func @attention_regions
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) causal captures(%{{.*}}, %{{.*}}, %{{.*}} : index, memref<2x?xi64>, f32) mask {
// CHECK-NEXT: ^bb0(%[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index, %[[P:.*]]: index, %[[T:.*]]: memref<2x?xi64>, %{{.*}}: f32):
// CHECK: memref.load %[[T]][%[[B]], %[[J]]] : memref<2x?xi64>
// CHECK: fa.yield %{{.*}} : i1
// CHECK-NEXT: } score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<2x?xi64>, %[[BIAS:.*]]: f32):
// CHECK: %[[SUM:.*]] = arith.addf %[[S]], %[[BIAS]] : f32
// CHECK: fa.yield %[[SUM]] : f32
func.func @attention_regions(%q: memref<2x8x?x64xbf16>, %k: memref<2x2x?x64xbf16>,
                             %v: memref<2x2x?x64xbf16>, %o: memref<2x8x?x64xbf16>,
                             %prefix: index, %tags: memref<2x?xi64>, %bias: f32) {
  fa.attention ins(%q, %k, %v : memref<2x8x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x2x?x64xbf16>)
               outs(%o : memref<2x8x?x64xbf16>) causal
               captures(%prefix, %tags, %bias : index, memref<2x?xi64>, f32)
  mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %p: index, %t: memref<2x?xi64>, %unused: f32):
    %inPrefix = arith.cmpi slt, %j, %p : index
    %tag = memref.load %t[%b, %j] : memref<2x?xi64>
    %zero = arith.constant 0 : i64
    %visible = arith.cmpi ne, %tag, %zero : i64
    %keep = arith.ori %inPrefix, %visible : i1
    fa.yield %keep : i1
  } score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %p: index, %t: memref<2x?xi64>, %c: f32):
    %sum = arith.addf %s, %c : f32
    fa.yield %sum : f32
  }
  return
}

// CHECK-LABEL: func @attention_grad_variants
// CHECK: fa.attention_grad ins({{.*}}) outs({{.*}}) sinks(%{{.*}} : memref<8xf32>) dsinks(%{{.*}} : memref<8xf32>) causal_bottom_right window(%{{.*}}, %{{.*}}) softcap(%{{.*}}){{$}}
func.func @attention_grad_variants(%q: memref<2x8x?x64xbf16>, %k: memref<2x2x?x64xbf16>, %v: memref<2x2x?x64xbf16>,
                                   %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>,
                                   %dq: memref<2x8x?x64xbf16>, %dk: memref<2x2x?x64xbf16>, %dv: memref<2x2x?x64xbf16>,
                                   %sinks: memref<8xf32>, %dsinks: memref<8xf32>, %left: index, %right: index, %cap: f32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x2x?x64xbf16>, memref<2x2x?x64xbf16>)
                    sinks(%sinks : memref<8xf32>) dsinks(%dsinks : memref<8xf32>)
                    causal_bottom_right window(%left, %right) softcap(%cap)
  return
}
