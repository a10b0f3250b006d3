// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of the fa ops; each would parse cleanly if its
// rule were removed, so the expected error pins the rule down.

// query_rank
func.func @query_rank(%q: memref<2x8x100xbf16>, %k: memref<2x8x100xbf16>, %v: memref<2x8x100xbf16>, %o: memref<2x8x100xbf16>) {
  // expected-error @+1 {{operand #0 must be 4D memref}}
  fa.attention ins(%q, %k, %v : memref<2x8x100xbf16>, memref<2x8x100xbf16>, memref<2x8x100xbf16>) outs(%o : memref<2x8x100xbf16>)
  return
}

// -----

// element_type
func.func @element_type(%q: memref<2x8x100x64xi32>, %k: memref<2x8x100x64xi32>, %v: memref<2x8x100x64xi32>, %o: memref<2x8x100x64xi32>) {
  // expected-error @+1 {{operand #0 must be 4D memref of 16-bit float or bfloat16 type or 32-bit float values}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xi32>, memref<2x8x100x64xi32>, memref<2x8x100x64xi32>) outs(%o : memref<2x8x100x64xi32>)
  return
}

// -----

// dynamic_head_dim
func.func @dynamic_head_dim(%q: memref<2x8x100x?xbf16>, %k: memref<2x8x100x?xbf16>, %v: memref<2x8x100x?xbf16>, %o: memref<2x8x100x?xbf16>) {
  // expected-error @+1 {{expects a static query head_dim}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x?xbf16>, memref<2x8x100x?xbf16>, memref<2x8x100x?xbf16>) outs(%o : memref<2x8x100x?xbf16>)
  return
}

// -----

// unsupported_head_dim
func.func @unsupported_head_dim(%q: memref<2x8x100x80xbf16>, %k: memref<2x8x100x80xbf16>, %v: memref<2x8x100x80xbf16>, %o: memref<2x8x100x80xbf16>) {
  // expected-error @+1 {{expects query head_dim to be one of 32, 64, 96, 128, 256, got 80}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x80xbf16>, memref<2x8x100x80xbf16>, memref<2x8x100x80xbf16>) outs(%o : memref<2x8x100x80xbf16>)
  return
}

// -----

// key_element_type
func.func @key_element_type(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects key element type 'f16' to equal query element type 'bf16'}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// value_element_type
func.func @value_element_type(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects value element type 'f16' to equal query element type 'bf16'}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// value_shape
func.func @value_shape(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x99x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects value dimension 2 (99) to equal key dimension 2 (100)}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x99x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// key_batch
func.func @key_batch(%q: memref<2x8x100x64xbf16>, %k: memref<3x8x100x64xbf16>, %v: memref<3x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects key batch 3 to equal query batch 2}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<3x8x100x64xbf16>, memref<3x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// key_head_dim
func.func @key_head_dim(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x128xbf16>, %v: memref<2x8x100x128xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects key head_dim 128 to equal query head_dim 64}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x128xbf16>, memref<2x8x100x128xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// gqa_heads
func.func @gqa_heads(%q: memref<2x8x100x64xbf16>, %k: memref<2x3x100x64xbf16>, %v: memref<2x3x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects query heads 8 to be a multiple of key/value heads 3}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x3x100x64xbf16>, memref<2x3x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// zero_kv_heads: the kernels divide by the kv head count.
func.func @zero_kv_heads(%q: memref<2x8x100x64xbf16>, %k: memref<2x0x100x64xbf16>, %v: memref<2x0x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects key heads to be at least 1, got 0}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x0x100x64xbf16>, memref<2x0x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// zero_query_heads
func.func @zero_query_heads(%q: memref<2x0x100x64xbf16>, %k: memref<2x4x100x64xbf16>, %v: memref<2x4x100x64xbf16>, %o: memref<2x0x100x64xbf16>) {
  // expected-error @+1 {{expects query heads to be at least 1, got 0}}
  fa.attention ins(%q, %k, %v : memref<2x0x100x64xbf16>, memref<2x4x100x64xbf16>, memref<2x4x100x64xbf16>) outs(%o : memref<2x0x100x64xbf16>)
  return
}

// -----

// zero_seq: an empty launch grid.
func.func @zero_seq(%q: memref<2x8x0x64xbf16>, %k: memref<2x8x?x64xbf16>, %v: memref<2x8x?x64xbf16>, %o: memref<2x8x0x64xbf16>) {
  // expected-error @+1 {{expects query seq to be at least 1, got 0}}
  fa.attention ins(%q, %k, %v : memref<2x8x0x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>) outs(%o : memref<2x8x0x64xbf16>)
  return
}

// -----

// zero_scale
func.func @zero_scale(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects scale to be positive and finite, got 0}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) scale(0.0)
  return
}

// -----

// negative_scale
func.func @negative_scale(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects scale to be positive and finite, got -1}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) scale(-1.0)
  return
}

// -----

// infinite_scale
func.func @infinite_scale(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects scale to be positive and finite, got INF}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) scale(0x7F800000)
  return
}

// -----

// out_element_type
func.func @out_element_type(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xf32>) {
  // expected-error @+1 {{expects out element type 'f32' to equal query element type 'bf16'}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xf32>)
  return
}

// -----

// out_shape
func.func @out_shape(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x101x64xbf16>) {
  // expected-error @+1 {{expects out dimension 2 (101) to equal query dimension 2 (100)}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x101x64xbf16>)
  return
}

// -----

// lse_rank
func.func @lse_rank(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>, %lse: memref<2x8x100x1xf32>) {
  // expected-error @+1 {{expects lse to have rank 3 (one value per row of query), got rank 4}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) lse(%lse : memref<2x8x100x1xf32>)
  return
}

// -----

// lse_shape
func.func @lse_shape(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>, %lse: memref<2x4x100xf32>) {
  // expected-error @+1 {{expects lse dimension 1 (4) to equal query dimension 1 (8)}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) lse(%lse : memref<2x4x100xf32>)
  return
}

// -----

// lse_element_type
func.func @lse_element_type(%q: memref<2x8x100x64xbf16>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>, %lse: memref<2x8x100xbf16>) {
  // expected-error @+1 {{operand #4 must be memref of 32-bit float values}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>) lse(%lse : memref<2x8x100xbf16>)
  return
}

// -----

// strided_query: a view whose head_dim is not contiguous (the kernels move
// rows as contiguous elements; strided.mlir has the views they take)
func.func @strided_query(%q: memref<2x8x100x64xbf16, strided<[102400, 12800, 128, 2], offset: 64>>, %k: memref<2x8x100x64xbf16>, %v: memref<2x8x100x64xbf16>, %o: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{expects operand #0 to have the identity layout or a strided layout with innermost stride 1 (e.g. strided<[?, ?, ?, 1], offset: ?>), got 'memref<2x8x100x64xbf16, strided<[102400, 12800, 128, 2], offset: 64>>'}}
  fa.attention ins(%q, %k, %v : memref<2x8x100x64xbf16, strided<[102400, 12800, 128, 2], offset: 64>>, memref<2x8x100x64xbf16>, memref<2x8x100x64xbf16>) outs(%o : memref<2x8x100x64xbf16>)
  return
}

// -----

// shared_query: a kernel parameter in shared memory, which the runtime cannot
// pass (the manifest says memref).
func.func @shared_query(%q: memref<?x?x?x64xbf16, 3>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{expects operand #0 in the default memory space (device memory), got 'memref<?x?x?x64xbf16, 3>'}}
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16, 3>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// workgroup_out
func.func @workgroup_out(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects operand #3 in the default memory space (device memory), got 'memref<?x?x?x64xbf16, #gpu.address_space<workgroup>>'}}
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%o : memref<?x?x?x64xbf16, #gpu.address_space<workgroup>>)
  return
}

// -----

// unknown attribute: a misspelt causal is an error, not silently ignored
func.func @unknown_attribute(%q: memref<1x1x8x64xf16>) {
  // expected-error @+1 {{does not understand attribute 'causl'}}
  "fa.attention"(%q, %q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}> ({}, {}) {causl} : (memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) -> ()
  return
}

// -----

// grad_gqa_heads
func.func @grad_gqa_heads(%q: memref<2x8x?x64xbf16>, %k: memref<2x3x?x64xbf16>, %v: memref<2x3x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x3x?x64xbf16>, %dv: memref<2x3x?x64xbf16>) {
  // expected-error @+1 {{expects query heads 8 to be a multiple of key/value heads 3}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x3x?x64xbf16>, memref<2x3x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x3x?x64xbf16>, memref<2x3x?x64xbf16>)
  return
}

// -----

// grad_zero_kv_heads
func.func @grad_zero_kv_heads(%q: memref<2x8x?x64xbf16>, %k: memref<2x0x?x64xbf16>, %v: memref<2x0x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x0x?x64xbf16>, %dv: memref<2x0x?x64xbf16>) {
  // expected-error @+1 {{expects key heads to be at least 1, got 0}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x0x?x64xbf16>, memref<2x0x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x0x?x64xbf16>, memref<2x0x?x64xbf16>)
  return
}

// -----

// grad_lse_space
func.func @grad_lse_space(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32, 1>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects operand #5 in the default memory space (device memory), got 'memref<2x8x?xf32, 1>'}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32, 1>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_out_shape
func.func @grad_out_shape(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x4x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects out dimension 1 (4) to equal query dimension 1 (8)}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_dout_type
func.func @grad_dout_type(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects dout element type 'f16' to equal query element type 'bf16'}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_dquery_shape
func.func @grad_dquery_shape(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<1x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects dquery dimension 0 (1) to equal query dimension 0 (2)}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<1x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_dkey_shape
func.func @grad_dkey_shape(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x8x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects dkey dimension 1 (8) to equal key dimension 1 (4)}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_dvalue_type
func.func @grad_dvalue_type(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xf32>) {
  // expected-error @+1 {{expects dvalue element type 'f32' to equal key element type 'bf16'}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xf32>)
  return
}

// -----

// grad_lse_shape
func.func @grad_lse_shape(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<3x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects lse dimension 0 (3) to equal query dimension 0 (2)}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<3x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>)
  return
}

// -----

// grad_negative_scale
func.func @grad_negative_scale(%q: memref<2x8x?x64xbf16>, %k: memref<2x4x?x64xbf16>, %v: memref<2x4x?x64xbf16>, %o: memref<2x8x?x64xbf16>, %do: memref<2x8x?x64xbf16>, %lse: memref<2x8x?xf32>, %dq: memref<2x8x?x64xbf16>, %dk: memref<2x4x?x64xbf16>, %dv: memref<2x4x?x64xbf16>) {
  // expected-error @+1 {{expects scale to be positive and finite, got -2}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?x64xbf16>, memref<2x8x?xf32>)
                    outs(%dq, %dk, %dv : memref<2x8x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>) scale(-2.0)
  return
}

// -----

// ln_rank0
func.func @ln_rank0(%x: memref<bf16>, %w: memref<1xbf16>, %b: memref<1xbf16>, %y: memref<bf16>, %eps: f32) {
  // expected-error @+1 {{expects x to have rank >= 1}}
  fa.layernorm ins(%x, %w, %b : memref<bf16>, memref<1xbf16>, memref<1xbf16>) outs(%y : memref<bf16>) eps(%eps : f32)
  return
}

// -----

// ln_shared_x
func.func @ln_shared_x(%x: memref<16x1024xbf16, 3>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{expects operand #0 in the default memory space (device memory), got 'memref<16x1024xbf16, 3>'}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16, 3>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_weight_type
func.func @ln_weight_type(%x: memref<16x1024xbf16>, %w: memref<1024xf32>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{expects weight element type to be 'bf16', got 'f32'}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xf32>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_weight_rank
func.func @ln_weight_rank(%x: memref<16x1024xbf16>, %w: memref<1x1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{operand #1 must be 1D memref}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1x1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_weight_length
func.func @ln_weight_length(%x: memref<16x1024xbf16>, %w: memref<512xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{expects weight length 512 to equal the row length (last dimension of x) 1024}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<512xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_bias_length
func.func @ln_bias_length(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<2048xbf16>, %y: memref<16x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{expects bias length 2048 to equal the row length (last dimension of x) 1024}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<2048xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_y_shape
func.func @ln_y_shape(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<8x1024xbf16>, %eps: f32) {
  // expected-error @+1 {{expects y dimension 0 (8) to equal x dimension 0 (16)}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<8x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_y_type
func.func @ln_y_type(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xf16>, %eps: f32) {
  // expected-error @+1 {{expects y element type 'f16' to equal x element type 'bf16'}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xf16>) eps(%eps : f32)
  return
}

// -----

// ln_mean_shape
func.func @ln_mean_shape(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %mean: memref<15xf32>, %rstd: memref<16xf32>, %eps: f32) {
  // expected-error @+1 {{expects mean dimension 0 (15) to equal x dimension 0 (16)}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) stats(%mean, %rstd : memref<15xf32>, memref<16xf32>) eps(%eps : f32)
  return
}

// -----

// ln_rstd_rank
func.func @ln_rstd_rank(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %mean: memref<16xf32>, %rstd: memref<16x1xf32>, %eps: f32) {
  // expected-error @+1 {{expects rstd to have rank 1 (one value per row of x), got rank 2}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) stats(%mean, %rstd : memref<16xf32>, memref<16x1xf32>) eps(%eps : f32)
  return
}

// -----

// ln_stats_type
func.func @ln_stats_type(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %mean: memref<16xbf16>, %rstd: memref<16xf32>, %eps: f32) {
  // expected-error @+1 {{must be memref of 32-bit float values}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) stats(%mean, %rstd : memref<16xbf16>, memref<16xf32>) eps(%eps : f32)
  return
}

// -----

// ln_zero_eps (a constant eps)
func.func @ln_zero_eps(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>) {
  %eps = arith.constant 0.0 : f32
  // expected-error @+1 {{expects eps to be positive and finite, got 0}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_negative_eps
func.func @ln_negative_eps(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>) {
  %eps = arith.constant -1.0e-5 : f32
  // expected-error @+1 {{expects eps to be positive and finite, got -1.000000e-05}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_infinite_eps
func.func @ln_infinite_eps(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>) {
  %eps = arith.constant 0x7F800000 : f32
  // expected-error @+1 {{expects eps to be positive and finite, got INF}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f32)
  return
}

// -----

// ln_eps_type (the statistics are f32, and so is eps)
func.func @ln_eps_type(%x: memref<16x1024xbf16>, %w: memref<1024xbf16>, %b: memref<1024xbf16>, %y: memref<16x1024xbf16>, %eps: f64) {
  // expected-error @+1 {{operand #4 must be 32-bit float, but got 'f64'}}
  fa.layernorm ins(%x, %w, %b : memref<16x1024xbf16>, memref<1024xbf16>, memref<1024xbf16>) outs(%y : memref<16x1024xbf16>) eps(%eps : f64)
  return
}

// -----

// mean without rstd (only expressible in the generic form)
func.func @ln_mean_without_rstd(%x: memref<4x8xf32>, %w: memref<8xf32>, %m: memref<4xf32>, %eps: f32) {
  // expected-error @+1 {{expects mean and rstd to be given together}}
  "fa.layernorm"(%x, %w, %w, %x, %m, %eps) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 1, 0, 1>}> : (memref<4x8xf32>, memref<8xf32>, memref<8xf32>, memref<4x8xf32>, memref<4xf32>, f32) -> ()
  return
}

// -----

// lng_rank0
func.func @lng_rank0(%x: memref<f16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects x to have rank >= 1}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<f16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_dy_shape
func.func @lng_dy_shape(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x128xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects dy dimension 1 (128) to equal x dimension 1 (256)}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x128xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_dx_type
func.func @lng_dx_type(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xbf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects dx element type 'bf16' to equal x element type 'f16'}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xbf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_weight_type
func.func @lng_weight_type(%x: memref<16x256xf16>, %w: memref<256xbf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects weight element type to be 'f16', got 'bf16'}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xbf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_weight_length
func.func @lng_weight_length(%x: memref<16x256xf16>, %w: memref<255xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects weight length 255 to equal the row length (last dimension of x) 256}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<255xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_dweight_type
func.func @lng_dweight_type(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xbf16>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects dweight element type to be 'f16' or 'f32', got 'bf16'}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xbf16>, memref<256xf32>)
  return
}

// -----

// lng_dbias_length
func.func @lng_dbias_length(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<1xf32>) {
  // expected-error @+1 {{expects dbias length 1 to equal the row length (last dimension of x) 256}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<1xf32>)
  return
}

// -----

// lng_mean_shape
func.func @lng_mean_shape(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<17xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects mean dimension 0 (17) to equal x dimension 0 (16)}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<17xf32>, memref<16xf32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// lng_rstd_rank
func.func @lng_rstd_rank(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<f32>, %dy: memref<16x256xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects rstd to have rank 1 (one value per row of x), got rank 0}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<f32>, memref<16x256xf16>)
                    outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}
