// The bundled example: causal, grouped-query attention in bf16 with the
// log-sum-exp for the backward pass. Batch and sequence are dynamic, so one
// kernel serves every length.
//
//   fa-opt examples/attention.mlir --fa-to-ptx="export-dir=out"
//   fa-run attention --kernels out --batch 2 --heads 8 --kv-heads 2 \
//          --seq 1000 --dim 64 --dtype bf16 --causal --check --bench
func.func @attention_bf16_d64_causal(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>,
    %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
                   memref<?x?x?x64xbf16>)
               outs(%out : memref<?x?x?x64xbf16>)
               lse(%lse : memref<?x?x?xf32>) causal
  return
}
