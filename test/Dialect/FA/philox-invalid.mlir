// RUN: fa-opt %s -split-input-file -verify-diagnostics
// fa.philox works on 32-bit words: other integer widths are refused, naming
// the operand or result (the generic form, since the custom form has no
// types to get wrong).

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
