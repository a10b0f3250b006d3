// A mask no named variant covers, written as a region: prefix-LM attention
// (bidirectional over the first `prefix` keys, causal after them), forward
// and backward. The region is plain arith on the indices, so the tile
// classifier bounds it at compile time: tiles inside the prefix or below the
// diagonal run without any mask, tiles past both are never visited. `prefix`
// is a kernel parameter (fa.name), so one kernel serves every prefix length;
// fa.variant names the kernels in the manifest.
//
//   fa-opt examples/attention-prefix-lm.mlir --fa-to-ptx="export-dir=out"
//   python3 -c "import numpy as np; n, p = 1000, 256; i = np.arange(n)[:, None]; j = np.arange(n)[None, :]; np.save('prefix_mask.npy', ((j <= i) | (j < p)).astype(np.uint8))"
//   fa-run attention --kernels out --variant prefix_lm --param prefix=256 \
//          --mask-file prefix_mask.npy --batch 2 --heads 8 --seq 1000 \
//          --dim 64 --dtype bf16 --grad --check --bench
func.func @attention_prefix_lm(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>,
    %lse: memref<?x?x?xf32>, %prefix: index {fa.name = "prefix"})
    attributes {fa.variant = "prefix_lm"} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
                   memref<?x?x?x64xbf16>)
               outs(%out : memref<?x?x?x64xbf16>)
               lse(%lse : memref<?x?x?xf32>)
               captures(%prefix : index) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %p: index):
    %causal = arith.cmpi sle, %j, %i : index
    %inPrefix = arith.cmpi slt, %j, %p : index
    %keep = arith.ori %causal, %inPrefix : i1
    fa.yield %keep : i1
  }
  return
}

// The backward reads the same region; fa-run finds it as the dQ kernel of
// the same variant.
func.func @attention_bwd_prefix_lm(
    %q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>,
    %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>,
    %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>,
    %dv: memref<?x?x?x64xbf16>, %prefix: index {fa.name = "prefix"})
    attributes {fa.variant = "prefix_lm"} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse
                        : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
                          memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
                          memref<?x?x?x64xbf16>, memref<?x?x?xf32>)
                    outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>,
                         memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
                    captures(%prefix : index) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %p: index):
    %causal = arith.cmpi sle, %j, %i : index
    %inPrefix = arith.cmpi slt, %j, %p : index
    %keep = arith.ori %causal, %inPrefix : i1
    fa.yield %keep : i1
  }
  return
}
