// RUN: fa-opt %s -split-input-file -verify-diagnostics
// fa.philox works on 32-bit words: other integer widths are refused, naming
// the operand or result (the generic form, since the custom form has no
// types to get wrong). fa.apply_dropout takes an f32 tile and gives one of
// the same type.

func.func @philox_key_i64(%k: i64, %c: i32) {
  // expected-error @+1 {{'fa.philox' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  %r:4 = "fa.philox"(%k, %c, %c, %c, %c, %c) : (i64, i32, i32, i32, i32, i32) -> (i32, i32, i32, i32)
  return
}

// -----

func.func @philox_counter_index(%k: i32, %c: index) {
  // expected-error @+1 {{'fa.philox' op operand #5 must be 32-bit signless integer, but got 'index'}}
  %r:4 = "fa.philox"(%k, %k, %k, %k, %k, %c) : (i32, i32, i32, i32, i32, index) -> (i32, i32, i32, i32)
  return
}

// -----

func.func @philox_word_i16(%k: i32) {
  // expected-error @+1 {{'fa.philox' op result #3 must be 32-bit signless integer, but got 'i16'}}
  %r:4 = "fa.philox"(%k, %k, %k, %k, %k, %k) : (i32, i32, i32, i32, i32, i32) -> (i32, i32, i32, i16)
  return
}

// -----

func.func @philox_three_words(%k: i32) {
  // expected-error @+1 {{'fa.philox' op expected 4 results}}
  %r:3 = "fa.philox"(%k, %k, %k, %k, %k, %k) : (i32, i32, i32, i32, i32, i32) -> (i32, i32, i32)
  return
}

// -----

func.func @apply_dropout_bf16(%probs: vector<16x16xbf16>, %i: index, %w: i32, %p: f32) {
  // expected-error @+1 {{'fa.apply_dropout' op operand #0 must be vector of 32-bit float values of ranks 2, but got 'vector<16x16xbf16>'}}
  %d = fa.apply_dropout %probs rows(%i) cols(%i) batch_head(%w) seed(%w, %w) offset(%w) p(%p) : vector<16x16xbf16>
  return
}

// -----

func.func @apply_dropout_result_type(%probs: vector<16x16xf32>, %i: index, %w: i32, %p: f32) {
  // expected-error @+1 {{'fa.apply_dropout' op failed to verify that all of {probs, result} have same type}}
  %d = "fa.apply_dropout"(%probs, %i, %i, %w, %w, %w, %w, %p) : (vector<16x16xf32>, index, index, i32, i32, i32, i32, f32) -> vector<16x32xf32>
  return
}
