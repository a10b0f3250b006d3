// RUN: fa-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect
// One case per rule of the mask and score regions, their captures, the named
// variants and sinks (AttentionRegions.cpp). Each case is valid IR but for
// the rule it names.

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// mask region: four index arguments (batch, head, q_idx, kv_idx) then the captures
func.func @mask_arg_count(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{expects the mask region to have 4 block arguments (4 then one per capture), got 3}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// mask region: the indices are index values
func.func @mask_arg_type(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{expects mask region argument #2 (q_idx) to have type 'index', got 'i32'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: i32, %j: index):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// a capture argument has the type of its capture operand
func.func @capture_arg_type(%q: !q, %k: !k, %v: !k, %o: !q, %p: index) {
  // expected-error @+1 {{expects mask region argument #4 (capture #0) to have type 'index', got 'f32'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%p : index) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %pp: f32):
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// score region: the score (f32) comes first
func.func @score_arg_type(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{expects score region argument #0 (score) to have type 'f32', got 'f16'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) score {
  ^bb0(%s: f16, %b: index, %h: index, %i: index, %j: index):
    %z = arith.constant 0.0 : f32
    fa.yield %z : f32
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// score region: five leading arguments
func.func @score_arg_count(%q: !q, %k: !k, %v: !k, %o: !q, %p: index) {
  // expected-error @+1 {{expects the score region to have 6 block arguments (5 then one per capture), got 5}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%p : index) score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// the mask region yields one i1
func.func @mask_yield_type(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %z = arith.constant 0.0 : f32
    // expected-error @+1 {{expects the mask region to yield one 'i1', got 1 value(s) of type(s) ('f32')}}
    fa.yield %z : f32
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// the mask region yields exactly one value
func.func @mask_yield_count(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = arith.constant true
    // expected-error @+1 {{expects the mask region to yield one 'i1', got 2 value(s) of type(s) ('i1', 'i1')}}
    fa.yield %t, %t : i1, i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// the score region yields one f32
func.func @score_yield_type(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = arith.constant true
    // expected-error @+1 {{expects the score region to yield one 'f32', got 1 value(s) of type(s) ('i1')}}
    fa.yield %t : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// purity: a region may read a captured memref but not write it
func.func @store_in_mask(%q: !q, %k: !k, %v: !k, %o: !q, %ids: memref<2x128xi32>) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%ids : memref<2x128xi32>) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %t: memref<2x128xi32>):
    %c0 = arith.constant 0 : i32
    // expected-error @+1 {{'memref.store' op writes, allocates or frees memory, not allowed in the mask region of fa.attention (regions may only read captured memrefs)}}
    memref.store %c0, %t[%b, %i] : memref<2x128xi32>
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// purity: no allocation either, nested regions included
func.func @alloca_in_score(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    %r = scf.if %c -> f32 {
      // expected-error @+1 {{'memref.alloca' op writes, allocates or frees memory, not allowed in the score region of fa.attention}}
      %m = memref.alloca() : memref<1xf32>
      scf.yield %s : f32
    } else {
      scf.yield %s : f32
    }
    fa.yield %r : f32
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
func.func private @opaque(index, index) -> i1
// purity: an op whose effects are unknown (a call) is refused
func.func @call_in_mask(%q: !q, %k: !k, %v: !k, %o: !q) {
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'func.call' op has unknown memory effects, not allowed in the mask region of fa.attention}}
    %keep = func.call @opaque(%i, %j) : (index, index) -> i1
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// captures: tables of i32, i64 or f32 and index, i32 or f32 scalars
func.func @capture_f16_table(%q: !q, %k: !k, %v: !k, %o: !q, %t: memref<8xf16>) {
  // expected-error @+1 {{operand #4 must be variadic of memref of 32-bit signless integer or 64-bit signless integer or 32-bit float values or index or 32-bit signless integer or 32-bit float, but got 'memref<8xf16>'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%t : memref<8xf16>) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: memref<8xf16>):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// captures: an i64 scalar is not a kind the kernels pass
func.func @capture_i64_scalar(%q: !q, %k: !k, %v: !k, %o: !q, %n: i64) {
  // expected-error @+1 {{operand #4 must be variadic of}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%n : i64) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %nn: i64):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// captures: a captured table is contiguous like every fa operand
func.func @capture_strided(%q: !q, %k: !k, %v: !k, %o: !q, %t: memref<8xf32, strided<[2]>>) {
  // expected-error @+1 {{expects operand #4 to have the identity (contiguous row-major) layout}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%t : memref<8xf32, strided<[2]>>) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %tt: memref<8xf32, strided<[2]>>):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// captures: nothing reads them without a region
func.func @captures_without_region(%q: !q, %k: !k, %v: !k, %o: !q, %p: index) {
  // expected-error @+1 {{expects captures only with a mask or score region to read them}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) captures(%p : index)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// a mask variant and a mask region exclude each other (the expansion builds the region)
func.func @window_and_mask(%q: !q, %k: !k, %v: !k, %o: !q, %l: index, %r: index) {
  // expected-error @+1 {{expects either named mask variants (causal_bottom_right, window, document) or a mask region, not both}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) window(%l, %r) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// a score variant and a score region exclude each other
func.func @softcap_and_score(%q: !q, %k: !k, %v: !k, %o: !q, %c: f32) {
  // expected-error @+1 {{expects either named score variants (softcap, alibi) or a score region, not both}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) softcap(%c) score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    fa.yield %s : f32
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// one causal alignment at most
func.func @two_causal(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{expects at most one of causal (top-left) and causal_bottom_right}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) causal causal_bottom_right
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// window: both bounds (only the generic form can give one)
func.func @window_left_only(%q: !q, %k: !k, %v: !k, %o: !q, %l: index) {
  // expected-error @+1 {{expects window left and right given together}}
  "fa.attention"(%q, %k, %v, %o, %l) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0>}> ({}, {}) : (!q, !k, !k, !q, index) -> ()
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// window: a constant bound is non-negative
func.func @window_negative(%q: !q, %k: !k, %v: !k, %o: !q, %r: index) {
  %l = arith.constant -4 : index
  // expected-error @+1 {{expects window left to be non-negative, got -4}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) window(%l, %r)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// softcap: a constant cap is positive
func.func @softcap_zero(%q: !q, %k: !k, %v: !k, %o: !q) {
  %c = arith.constant 0.0 : f32
  // expected-error @+1 {{expects softcap to be positive and finite, got 0}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) softcap(%c)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// dropout: a constant probability is in [0, 1)
func.func @dropout_one(%q: !q, %k: !k, %v: !k, %o: !q, %seed: i64, %offset: i32) {
  %p = arith.constant 1.0 : f32
  // expected-error @+1 {{expects the dropout probability in [0, 1), got 1}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) dropout(%p, %seed, %offset)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// dropout: the seed is 64 bits (the Philox key)
// expected-note @+1 {{prior use here}}
func.func @dropout_seed_i32(%q: !q, %k: !k, %v: !k, %o: !q, %p: f32, %seed: i32, %offset: i32) {
  // expected-error @+1 {{use of value '%seed' expects different type than prior uses: 'i64' vs 'i32'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) dropout(%p, %seed, %offset)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// dropout: probability, seed and offset together (the generic form can
// leave one out)
func.func @dropout_without_offset(%q: !q, %k: !k, %v: !k, %o: !q, %p: f32, %seed: i64) {
  // expected-error @+1 {{expects dropout probability, seed and offset given together}}
  "fa.attention"(%q, %k, %v, %o, %p, %seed) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0>}> ({}, {}) : (!q, !k, !k, !q, f32, i64) -> ()
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// sinks: one logit per query head
func.func @sinks_length(%q: !q, %k: !k, %v: !k, %o: !q, %s: memref<2xf32>) {
  // expected-error @+1 {{expects sinks to hold one value per query head (8), got 2}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) sinks(%s : memref<2xf32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// sinks: f32
func.func @sinks_f16(%q: !q, %k: !k, %v: !k, %o: !q, %s: memref<8xf16>) {
  // expected-error @+1 {{operand #4 must be 1D memref of 32-bit float values, but got 'memref<8xf16>'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) sinks(%s : memref<8xf16>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// alibi: one slope per query head
func.func @alibi_length(%q: !q, %k: !k, %v: !k, %o: !q, %s: memref<2xf32>) {
  // expected-error @+1 {{expects alibi slopes to hold one value per query head (8), got 2}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) alibi(%s : memref<2xf32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// document ids: [batch, seq]
func.func @doc_ids_batch(%q: !q, %k: !k, %v: !k, %o: !q, %ids: memref<3x128xi32>) {
  // expected-error @+1 {{expects document ids dimension 0 (3) to equal the batch (2)}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) document(%ids : memref<3x128xi32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// document ids: one per token
func.func @doc_ids_seq(%q: !q, %k: !k, %v: !k, %o: !q, %ids: memref<2x64xi32>) {
  // expected-error @+1 {{expects document ids dimension 1 (64) to equal the seq (128)}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) document(%ids : memref<2x64xi32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// document ids: rank 2 of i32 or i64
func.func @doc_ids_rank(%q: !q, %k: !k, %v: !k, %o: !q, %ids: memref<256xi32>) {
  // expected-error @+1 {{must be 2D memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<256xi32>'}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) document(%ids : memref<256xi32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// a region has one block
func.func @two_blocks(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{region #0 ('mask') failed to verify constraint: region with at most 1 blocks}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    cf.br ^bb1
  ^bb1:
    %t = arith.constant true
    fa.yield %t : i1
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// fa.yield ends only the regions of the attention ops (and of their copies
// on tiles)
func.func @yield_outside(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{'fa.yield' op expects parent op to be one of 'fa.attention, fa.attention_grad, fa.mask_tile, fa.score_tile'}}
  fa.yield
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k2 = memref<2x2x256x64xbf16>
// document ids index both the query and the key position: same tokens
func.func @doc_ids_cross(%q: !q, %k: !k2, %v: !k2, %o: !q, %ids: memref<2x128xi32>) {
  // expected-error @+1 {{expects document masking to have seq_q (128) equal to seq_kv (256): one id per packed token serves both}}
  fa.attention ins(%q, %k, %v : !q, !k2, !k2) outs(%o : !q) document(%ids : memref<2x128xi32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
!s = memref<2x8x128xf32>
// dsinks is the gradient of sinks: not without them
func.func @dsinks_without_sinks(%q: !q, %k: !k, %v: !k, %o: !q, %do: !q, %lse: !s, %dq: !q, %dk: !k, %dv: !k, %ds: memref<8xf32>) {
  // expected-error @+1 {{expects dsinks only with the sinks they are the gradient of}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !k, !k, !q, !q, !s) outs(%dq, %dk, %dv : !q, !k, !k) dsinks(%ds : memref<8xf32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
!s = memref<2x8x128xf32>
// dsinks: one per query head, like sinks
func.func @dsinks_length(%q: !q, %k: !k, %v: !k, %o: !q, %do: !q, %lse: !s, %dq: !q, %dk: !k, %dv: !k, %s: memref<8xf32>, %ds: memref<4xf32>) {
  // expected-error @+1 {{expects dsinks to hold one value per query head (8), got 4}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !k, !k, !q, !q, !s) outs(%dq, %dk, %dv : !q, !k, !k) sinks(%s : memref<8xf32>) dsinks(%ds : memref<4xf32>)
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
!s = memref<2x8x128xf32>
// the backward's regions follow the same rules
func.func @grad_mask_yield(%q: !q, %k: !k, %v: !k, %o: !q, %do: !q, %lse: !s, %dq: !q, %dk: !k, %dv: !k) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !k, !k, !q, !q, !s) outs(%dq, %dk, %dv : !q, !k, !k) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %z = arith.constant 0 : index
    // expected-error @+1 {{expects the mask region to yield one 'i1', got 1 value(s) of type(s) ('index')}}
    fa.yield %z : index
  }
  return
}

// -----

!q = memref<2x8x128x64xbf16>
!k = memref<2x2x128x64xbf16>
// a region ends in fa.yield (an unregistered op may claim to be a terminator)
func.func @foreign_terminator(%q: !q, %k: !k, %v: !k, %o: !q) {
  // expected-error @+1 {{expects the mask region to end in fa.yield}}
  fa.attention ins(%q, %k, %v : !q, !k, !k) outs(%o : !q) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    "foo.end"() : () -> ()
  }
  return
}
