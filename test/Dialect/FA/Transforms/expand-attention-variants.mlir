// RUN: fa-opt %s --fa-expand-attention-variants --split-input-file | FileCheck %s
// RUN: fa-opt %s --fa-expand-attention-variants="expand-causal=true" --split-input-file | FileCheck %s --check-prefix=CAUSAL
// The expansion is complete: a second run finds no variant left to expand.
// RUN: fa-opt %s --fa-expand-attention-variants --split-input-file | fa-opt --fa-expand-attention-variants --split-input-file | FileCheck %s

!q = memref<?x8x?x64xbf16>
!k = memref<?x2x?x64xbf16>
// Bottom-right causal: kv_idx <= q_idx + (seq_kv - seq_q), the offset
// computed outside the isolated region and captured.
// CHECK-LABEL: func @bottom_right
// CHECK: %[[SEQKV:.*]] = memref.dim %{{.*}}, %c2{{.*}} : memref<?x2x?x64xbf16>
// CHECK: %[[SEQQ:.*]] = memref.dim %{{.*}}, %c2{{.*}} : memref<?x8x?x64xbf16>
// CHECK: %[[OFF:.*]] = arith.subi %[[SEQKV]], %[[SEQQ]] : index
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) captures(%[[OFF]] : index) mask {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[I:.*]]: index, %[[J:.*]]: index, %[[O:.*]]: index):
// CHECK-NEXT:   %[[DIAG:.*]] = arith.addi %[[I]], %[[O]] : index
// CHECK-NEXT:   %[[KEEP:.*]] = arith.cmpi sle, %[[J]], %[[DIAG]] : index
// CHECK-NEXT:   fa.yield %[[KEEP]] : i1
// CHECK-NEXT: }
// CHECK-NOT: causal_bottom_right
func.func @bottom_right(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) causal_bottom_right
  return
}

// -----

!q = memref<2x8x16x64xbf16>
!k = memref<2x2x128x64xbf16>
// Sliding window, bottom-right aligned like FlashAttention's window_size:
// q_idx + off - left <= kv_idx <= q_idx + off + right; the offset of static
// lengths is a constant (128 - 16). `causal` stays an attribute by default.
// CHECK-LABEL: func @window
// CHECK: %[[OFF:.*]] = arith.constant 112 : index
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) causal captures(%[[OFF]], %[[L:.*]], %[[R:.*]] : index, index, index) mask {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[I:.*]]: index, %[[J:.*]]: index, %[[O:.*]]: index, %[[LA:.*]]: index, %[[RA:.*]]: index):
// CHECK-NEXT:   %[[DIAG:.*]] = arith.addi %[[I]], %[[O]] : index
// CHECK-NEXT:   %[[FIRST:.*]] = arith.subi %[[DIAG]], %[[LA]] : index
// CHECK-NEXT:   %[[LAST:.*]] = arith.addi %[[DIAG]], %[[RA]] : index
// CHECK-NEXT:   %[[GE:.*]] = arith.cmpi sle, %[[FIRST]], %[[J]] : index
// CHECK-NEXT:   %[[LE:.*]] = arith.cmpi sle, %[[J]], %[[LAST]] : index
// CHECK-NEXT:   %[[KEEP:.*]] = arith.andi %[[GE]], %[[LE]] : i1
// CHECK-NEXT:   fa.yield %[[KEEP]] : i1
// With expand-causal, top-left causal joins the region (kv_idx <= q_idx).
// CAUSAL-LABEL: func @window
// CAUSAL: fa.attention ins({{.*}}) outs({{.*}}) captures(
// CAUSAL-NEXT: ^bb0(%{{[^:]*}}: index, %{{[^:]*}}: index, %[[I:[^:]*]]: index, %[[J:[^:]*]]: index,
// CAUSAL-NEXT:   %[[TOPLEFT:.*]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CAUSAL:        %[[K1:.*]] = arith.andi %[[TOPLEFT]], %{{.*}} : i1
// CAUSAL-NEXT:   %[[K2:.*]] = arith.andi %[[K1]], %{{.*}} : i1
// CAUSAL-NEXT:   fa.yield %[[K2]] : i1
func.func @window(%q: !q, %k: !k, %v: !k, %o: !q, %left: index, %right: index) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) causal window(%left, %right)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// Document masking: ids[b, q_idx] == ids[b, kv_idx]; the ids need no offset.
// CHECK-LABEL: func @document
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) causal captures(%{{.*}} : memref<2x128xi32>) mask {
// CHECK-NEXT: ^bb0(%[[B:.*]]: index, %{{.*}}: index, %[[I:.*]]: index, %[[J:.*]]: index, %[[IDS:.*]]: memref<2x128xi32>):
// CHECK-NEXT:   %[[QD:.*]] = memref.load %[[IDS]][%[[B]], %[[I]]] : memref<2x128xi32>
// CHECK-NEXT:   %[[KD:.*]] = memref.load %[[IDS]][%[[B]], %[[J]]] : memref<2x128xi32>
// CHECK-NEXT:   %[[KEEP:.*]] = arith.cmpi eq, %[[QD]], %[[KD]] : i32
// CHECK-NEXT:   fa.yield %[[KEEP]] : i1
// CAUSAL-LABEL: func @document
// CAUSAL: arith.cmpi sle
func.func @document(%q: !q, %k: !k, %v: !k, %o: !q, %ids: memref<2x128xi32>) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) causal document(%ids : memref<2x128xi32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// Softcap: c * tanh(s / c); the cap stays a run-time value.
// CHECK-LABEL: func @softcap
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) captures(%[[CAP:.*]] : f32) score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[C:.*]]: f32):
// CHECK-NEXT:   %[[X:.*]] = arith.divf %[[S]], %[[C]] : f32
// CHECK-NEXT:   %[[T:.*]] = math.tanh %[[X]] : f32
// CHECK-NEXT:   %[[Y:.*]] = arith.mulf %[[C]], %[[T]] : f32
// CHECK-NEXT:   fa.yield %[[Y]] : f32
// CHECK-NOT: mask
func.func @softcap(%q: !q, %k: !k, %v: !k, %o: !q, %cap: f32) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) softcap(%cap)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// ALiBi, FlashAttention's convention: s - slope[h] * |q_idx + off - kv_idx|
// (for causal keys, s + slope[h] * (kv_idx - q_idx)). Softcap applies first.
// CHECK-LABEL: func @alibi_after_softcap
// CHECK: %[[OFF:.*]] = arith.constant 0 : index
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) captures(%[[OFF]], %{{.*}}, %{{.*}} : index, f32, memref<8xf32>) score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index, %[[O:.*]]: index, %[[C:.*]]: f32, %[[SL:.*]]: memref<8xf32>):
// CHECK:        %[[CAPPED:.*]] = arith.mulf %[[C]], %{{.*}} : f32
// CHECK-NEXT:   %[[SLOPE:.*]] = memref.load %[[SL]][%[[H]]] : memref<8xf32>
// CHECK-NEXT:   %[[DIAG:.*]] = arith.addi %[[I]], %[[O]] : index
// CHECK-NEXT:   %[[DIST:.*]] = arith.subi %[[DIAG]], %[[J]] : index
// CHECK-NEXT:   %[[I64:.*]] = arith.index_cast %[[DIST]] : index to i64
// CHECK-NEXT:   %[[F:.*]] = arith.sitofp %[[I64]] : i64 to f32
// CHECK-NEXT:   %[[ABS:.*]] = math.absf %[[F]] : f32
// CHECK-NEXT:   %[[BIAS:.*]] = arith.mulf %[[SLOPE]], %[[ABS]] : f32
// CHECK-NEXT:   %[[OUT:.*]] = arith.subf %[[CAPPED]], %[[BIAS]] : f32
// CHECK-NEXT:   fa.yield %[[OUT]] : f32
func.func @alibi_after_softcap(%q: !q, %k: !k, %v: !k, %o: !q, %cap: f32, %slopes: memref<8xf32>) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) softcap(%cap) alibi(%slopes : memref<8xf32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// A user's score region next to a mask variant: it receives the new
// captures as extra block arguments, after its own. Sinks stay an operand.
// CHECK-LABEL: func @window_and_user_score
// CHECK: fa.attention ins({{.*}}) outs({{.*}}) sinks(%{{.*}} : memref<8xf32>) captures(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, index, index, index) mask {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: } score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[BIAS:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:   %[[SUM:.*]] = arith.addf %[[S]], %[[BIAS]] : f32
func.func @window_and_user_score(%q: !q, %k: !k, %v: !k, %o: !q, %left: index, %right: index, %bias: f32, %sinks: memref<8xf32>) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) sinks(%sinks : memref<8xf32>) window(%left, %right) captures(%bias : f32) score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %c: f32):
    %sum = arith.addf %s, %c : f32
    fa.yield %sum : f32
  }
  return
}

// -----

!q = memref<2x8x?x64xbf16>
!k = memref<2x2x?x64xbf16>
!s = memref<2x8x?xf32>
// The backward expands the same way, so it recomputes the forward's mask.
// CHECK-LABEL: func @grad
// CHECK: fa.attention_grad ins({{.*}}) outs({{.*}}) sinks(%{{.*}} : memref<8xf32>) dsinks(%{{.*}} : memref<8xf32>) captures(%{{.*}}, %{{.*}} : index, f32) mask {
// CHECK:   arith.cmpi sle
// CHECK: } score {
// CHECK:   math.tanh
func.func @grad(%q: !q, %k: !k, %v: !k, %o: !q, %do: !q, %lse: !s, %dq: !q, %dk: !k, %dv: !k, %sinks: memref<8xf32>, %dsinks: memref<8xf32>, %cap: f32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !k, !k, !q, !q, !s) outs(%dq, %dk, %dv : !q, !k, !k)
                    sinks(%sinks : memref<8xf32>) dsinks(%dsinks : memref<8xf32>) causal_bottom_right softcap(%cap)
  return
}

// -----

// Plain and causal ops are left exactly as they are (the library's kernels).
// CHECK-LABEL: func @plain_causal
// CHECK-NEXT: fa.attention ins({{.*}}) outs({{.*}}) causal{{$}}
// CHECK-NEXT: return
func.func @plain_causal(%q: memref<2x8x128x64xbf16>, %o: memref<2x8x128x64xbf16>) {
  fa.attention ins(%q, %q, %q : memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>, memref<2x8x128x64xbf16>) outs(%o : memref<2x8x128x64xbf16>) causal
  return
}
