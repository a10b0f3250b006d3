// The named variants, each sugar for a mask or score region
// (--fa-expand-attention-variants, which fa-to-ptx runs first): their values
// are kernel parameters the runtime binds by name (window_left, window_right,
// doc_ids, softcap, alibi_slopes), so one kernel serves every value. The
// kernel library holds these for every head dim and both half types; this
// file shows how to compile one yourself.
//
//   fa-opt examples/attention-variants.mlir --fa-to-ptx="export-dir=out"
//   # Sliding window of 1024 keys behind each query (Mistral):
//   fa-run attention --kernels out --causal --window 1024,0 --batch 4 \
//          --heads 16 --seq 4096 --dim 128 --dtype bf16 --check --bench
//   # Packed documents (the ids must not decrease along the sequence):
//   fa-run attention --kernels out --causal --doc-lens 300,1000,700 ...
//   # Gemma's softcap; ALiBi with the paper's slopes:
//   fa-run attention --kernels out --causal --softcap 30 ...
//   fa-run attention --kernels out --causal --alibi ...
//   # Decoding (seq_q < seq_kv), causal aligned bottom-right:
//   fa-run attention --kernels out --causal=bottom-right --seq 16 \
//          --kv-seq 4096 ...
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>

func.func @attention_window(%q: !t, %k: !t, %v: !t, %out: !t, %lse: !s,
                            %window_left: index, %window_right: index) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%out : !t) lse(%lse : !s)
               causal window(%window_left, %window_right)
  return
}

func.func @attention_document(%q: !t, %k: !t, %v: !t, %out: !t, %lse: !s,
                              %doc_ids: memref<?x?xi32>) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%out : !t) lse(%lse : !s)
               causal document(%doc_ids : memref<?x?xi32>)
  return
}

func.func @attention_softcap(%q: !t, %k: !t, %v: !t, %out: !t, %lse: !s,
                             %softcap: f32) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%out : !t) lse(%lse : !s)
               causal softcap(%softcap)
  return
}

func.func @attention_alibi(%q: !t, %k: !t, %v: !t, %out: !t, %lse: !s,
                           %alibi_slopes: memref<?xf32>) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%out : !t) lse(%lse : !s)
               causal alibi(%alibi_slopes : memref<?xf32>)
  return
}

func.func @attention_bottom_right(%q: !t, %k: !t, %v: !t, %out: !t,
                                  %lse: !s) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%out : !t) lse(%lse : !s)
               causal_bottom_right
  return
}
