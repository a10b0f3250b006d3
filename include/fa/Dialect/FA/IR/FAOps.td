//===- FAOps.td - Operations of the fa dialect --------------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_TD
#define FA_DIALECT_FA_IR_FAOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

// Element types the kernels support: storage in f16, bf16 or f32; arithmetic
// accumulates in f32 in every case.
def FA_ElementType : AnyTypeOf<[F16, BF16, F32]>;
def FA_Tensor4D : MemRefRankOf<[FA_ElementType], [4]>;
// Per-row statistics (log-sum-exp, mean, rstd) are always kept in f32.
def FA_StatsMemRef : MemRefOf<[F32]>;

// Values a mask or score region may read (see fa.attention): tables as
// memrefs of i32, i64 or f32, scalars as index, i32 or f32.
def FA_CaptureType : AnyTypeOf<[MemRefOf<[I32, I64, F32]>, Index, I32, F32]>;
// Per-head values (sinks, ALiBi slopes): `[heads]` f32.
def FA_PerHeadMemRef : MemRefRankOf<[F32], [1]>;
// Document ids of packed sequences: `[batch, seq]`.
def FA_DocIdsMemRef : MemRefRankOf<[I32, I64], [2]>;

def FA_YieldOp : FA_Op<"yield", [Pure, ReturnLike, Terminator,
    ParentOneOf<["AttentionOp", "AttentionGradOp", "MaskTileOp",
                "ScoreTileOp"]>]> {
  let summary = "the value of a mask or score region";
  let description = [{
    Ends the `mask` region of `fa.attention` / `fa.attention_grad` with its
    keep bit (`i1`) and the `score` region with the modified score (`f32`).
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def FA_AttentionOp : FA_Op<"attention", [AttrSizedOperandSegments,
                                         IsolatedFromAbove]> {
  let summary = "scaled dot-product attention, forward";
  let description = [{
    Computes `out = softmax(scale * q @ k^T + mask) @ v` for every
    `(batch, head)` pair, and optionally the natural-log log-sum-exp of each
    query row (`lse[b, h, i] = log(sum_j exp(scale * q_i . k_j))` over the
    keys the row attends to), which the backward pass needs.

    Shapes: `q`, `out`: `[batch, heads, seq_q, head_dim]`; `k`, `v`:
    `[batch, kv_heads, seq_kv, head_dim]` with `heads % kv_heads == 0`
    (query head `h` reads key/value head `h / (heads / kv_heads)`); `lse`:
    `[batch, heads, seq_q]` in f32. `q`, `k`, `v` and `out` share one
    element type. Dimensions other than `head_dim` may be dynamic.

    Layouts: `q`, `k`, `v` and `out` are contiguous row-major (the identity
    layout) or strided views whose `head_dim` is contiguous (innermost stride
    1): `strided<[?, ?, ?, 1], offset: ?>`, static or dynamic strides and
    offset, which the kernels read from the memref descriptor. One head of a
    fused `[batch, seq, 3C]` QKV projection is such a view (strides
    `(seq * 3C, head_dim, 3C, 1)`, k at offset `C`, v at `2C`), as is `out`
    written into a merged `[batch, seq, C]` buffer: no copy to or from
    `[batch, heads, seq, head_dim]` is needed. `lse`, the region captures and
    the variants' tables are contiguous (identity layout), as every operand
    of the other fa ops. Written views must not overlap.

    `causal` masks key `j` from query `i` when `j > i` (top-left aligned, as
    PyTorch's `is_causal`). `scale` defaults to `1/sqrt(head_dim)`.

    Example:

    ```mlir
    fa.attention ins(%q, %k, %v : memref<2x8x1024x64xbf16>,
                     memref<2x2x1024x64xbf16>, memref<2x2x1024x64xbf16>)
                 outs(%out : memref<2x8x1024x64xbf16>)
                 lse(%lse : memref<2x8x1024xf32>) causal
    ```

    **Mask and score regions** (FlexAttention's mask_mod and score_mod, as
    IR). The optional `mask` region decides for each `(batch, head, q_idx,
    kv_idx)` whether the key is kept (`fa.yield %keep : i1`); the optional
    `score` region rewrites each scaled score `scale * q . k` (f32, natural
    units, before the softmax) into the value the softmax sees
    (`fa.yield %s : f32`). A region's block arguments are
    `(batch, head, q_idx, kv_idx : index)` for `mask` and
    `(score : f32, batch, head, q_idx, kv_idx : index)` for `score`, followed
    in both by one argument per `captures` operand, of the same type. The op
    is IsolatedFromAbove: a region reads nothing but its arguments, so the
    compiler that outlines a kernel from it knows every value the kernel must
    be passed (the captures become kernel parameters, one kernel serving
    every value). Regions are pure: their ops may read captured memrefs
    (`memref.load`) but have no other memory effect. `causal` and a mask
    region combine: a key is kept when both keep it.

    ```mlir
    // Prefix-LM: bidirectional over the first %prefix keys, causal after.
    fa.attention ins(%q, %k, %v : ...) outs(%out : ...)
        captures(%prefix : index)
        mask {
        ^bb0(%b: index, %h: index, %i: index, %j: index, %p: index):
          %causal = arith.cmpi sle, %j, %i : index
          %inPrefix = arith.cmpi slt, %j, %p : index
          %keep = arith.ori %causal, %inPrefix : i1
          fa.yield %keep : i1
        }
    ```

    **Named variants** are sugar that `--fa-expand-attention-variants`
    rewrites into these regions (one path compiles them all); their values
    are operands, so a kernel serves every window, cap or table. With
    `off = seq_kv - seq_q` (FlashAttention's bottom-right alignment; 0 when
    the lengths are equal):
    - `causal_bottom_right`: keep `kv_idx <= q_idx + off` (decoding).
    - `window(%left, %right)` (index): keep
      `q_idx + off - left <= kv_idx <= q_idx + off + right`.
    - `document(%ids : memref<BxSxi32>)`: keep
      `ids[b, q_idx] == ids[b, kv_idx]` (packed sequences; seq_q == seq_kv).
      The ids must not decrease along a sequence: the kernels find each
      tile's documents by binary search (the expansion marks the op
      `fa.sorted_document_ids`, which a user's region comparing sorted ids
      may carry too). fa-run checks it.
    - `softcap(%c)` (f32 > 0): `score = c * tanh(score / c)` (Gemma).
    - `alibi(%slopes : memref<Hxf32>)`:
      `score = score - slopes[h] * |q_idx + off - kv_idx|`, FlashAttention's
      `alibi_slopes` convention (for kept causal keys, PyTorch's
      `score + slope * (kv_idx - q_idx)`).
    Mask variants combine by `and` (and with `causal`); score variants apply
    softcap first, then ALiBi. A variant excludes a region of its kind.

    `sinks(%s : memref<Hxf32>)`: one learnable logit per head that joins
    every row's softmax denominator (GPT-OSS): the row's weights become
    `exp(s_ij) / (exp(sink_h) + sum_j exp(s_ij))`; not a region, recorded
    for the kernels.

    `dropout(%p, %seed, %offset)` (f32 in [0, 1), i64, i32): attention
    dropout on the probabilities, the mask of
    runtime/include/fa/runtime/Philox.h (`fa.apply_dropout`): P[b, h, i, j]
    is dropped where its 16 Philox bits of (seed, offset, b * heads + h, i,
    j) fall below floor(p * 2^16), the kept ones scaled by 1 / (1 - p). The
    softmax's statistics (the log-sum-exp) are those without dropout; the
    backward, given the same three values, regenerates the same mask.

    ```mlir
    fa.attention ins(%q, %k, %v : ...) outs(%out : ...)
        lse(%lse : memref<2x8x1024xf32>) sinks(%sinks : memref<8xf32>)
        causal window(%left, %right) document(%ids : memref<2x1024xi32>)
        softcap(%cap) alibi(%slopes : memref<8xf32>)
        dropout(%p, %seed, %offset)
    ```
  }];

  let arguments = (ins
    Arg<FA_Tensor4D, "query", [MemRead]>:$query,
    Arg<FA_Tensor4D, "key", [MemRead]>:$key,
    Arg<FA_Tensor4D, "value", [MemRead]>:$value,
    Arg<FA_Tensor4D, "output", [MemWrite]>:$out,
    Arg<Optional<FA_StatsMemRef>, "log-sum-exp of each query row",
        [MemWrite]>:$lse,
    Arg<Optional<FA_PerHeadMemRef>, "attention sink logit of each head",
        [MemRead]>:$sinks,
    Optional<Index>:$window_left,
    Optional<Index>:$window_right,
    Arg<Optional<FA_DocIdsMemRef>, "document id of each token",
        [MemRead]>:$doc_ids,
    Optional<F32>:$softcap,
    Arg<Optional<FA_PerHeadMemRef>, "ALiBi slope of each head",
        [MemRead]>:$alibi_slopes,
    Optional<F32>:$dropout_p,
    Optional<I64>:$dropout_seed,
    Optional<I32>:$dropout_offset,
    Arg<Variadic<FA_CaptureType>, "values the regions read",
        [MemRead]>:$captures,
    UnitAttr:$causal,
    UnitAttr:$causal_bottom_right,
    OptionalAttr<F32Attr>:$scale);

  let regions = (region MaxSizedRegion<1>:$mask, MaxSizedRegion<1>:$score);

  // Plain attention (no variant, region or sink), the common C++ case: the
  // generated builders take every optional operand.
  let builders = [
    OpBuilder<(ins "Value":$query, "Value":$key, "Value":$value,
                   "Value":$out, "Value":$lse, "bool":$causal,
                   CArg<"FloatAttr", "{}">:$scale), [{
      build($_builder, $_state, query, key, value, out, lse, /*sinks=*/Value(),
            /*window_left=*/Value(), /*window_right=*/Value(),
            /*doc_ids=*/Value(), /*softcap=*/Value(),
            /*alibi_slopes=*/Value(), /*dropout_p=*/Value(),
            /*dropout_seed=*/Value(), /*dropout_offset=*/Value(),
            /*captures=*/ValueRange(), causal,
            /*causal_bottom_right=*/false, scale);
    }]>
  ];

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
              type($value) `)`
    `outs` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`causal` $causal^)? (`causal_bottom_right` $causal_bottom_right^)?
    (`window` `(` $window_left^ `,` $window_right `)`)?
    (`document` `(` $doc_ids^ `:` type($doc_ids) `)`)?
    (`softcap` `(` $softcap^ `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`dropout` `(` $dropout_p^ `,` $dropout_seed `,` $dropout_offset `)`)?
    (`scale` `(` $scale^ `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`mask` $mask^)? (`score` $score^)? attr-dict
  }];

  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    float getScaleOrDefault();
    /// Head dimension (static by verification).
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
    /// Whether the op needs more than the plain or `causal` kernel: a mask
    /// or score region, a named variant, or sinks.
    bool hasVariants();
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def FA_AttentionGradOp : FA_Op<"attention_grad", [AttrSizedOperandSegments,
                                                  IsolatedFromAbove]> {
  let summary = "scaled dot-product attention, backward";
  let description = [{
    Given the forward's inputs, its output `out`, the output gradient `dout`
    and the forward's log-sum-exp `lse`, computes the gradients `dq`, `dk`
    and `dv`. With fewer key/value heads than query heads, `dk` and `dv` sum
    the contributions of every query head that shares a key/value head.
    Shapes and attributes follow `fa.attention`: `out`, `dout`, `dq` like
    `q`; `dk`, `dv` like `k`; `lse` is `[batch, heads, seq_q]` f32. As
    there, `q`, `k`, `v`, `out`, `dout`, `dq`, `dk` and `dv` may be strided
    views with a contiguous `head_dim` (`strided<[?, ?, ?, 1], offset: ?>`;
    dq, dk and dv e.g. heads of one fused `[batch, seq, 3C]` gradient);
    `lse` and every other operand are contiguous.

    Example:

    ```mlir
    fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : ...)
                      outs(%dq, %dk, %dv : ...) causal
    ```

    The mask and score regions, captures and named variants are those of
    `fa.attention`, with the same syntax and meaning; the backward must be
    given the forward's. `sinks(%s : memref<Hxf32>)` are the forward's sink
    logits; `dsinks(%ds : memref<Hxf32>)`, when given, receives their
    gradient (`-sum over rows of P_sink * delta`), summed over batch and
    query rows. `dropout(%p, %seed, %offset)` is the forward's: the same
    values give the same mask.
  }];

  let arguments = (ins
    Arg<FA_Tensor4D, "query", [MemRead]>:$query,
    Arg<FA_Tensor4D, "key", [MemRead]>:$key,
    Arg<FA_Tensor4D, "value", [MemRead]>:$value,
    Arg<FA_Tensor4D, "forward output", [MemRead]>:$out,
    Arg<FA_Tensor4D, "gradient of the output", [MemRead]>:$dout,
    Arg<FA_StatsMemRef, "forward log-sum-exp", [MemRead]>:$lse,
    Arg<FA_Tensor4D, "gradient of the query", [MemWrite]>:$dquery,
    Arg<FA_Tensor4D, "gradient of the key", [MemWrite]>:$dkey,
    Arg<FA_Tensor4D, "gradient of the value", [MemWrite]>:$dvalue,
    Arg<Optional<FA_PerHeadMemRef>, "attention sink logit of each head",
        [MemRead]>:$sinks,
    Arg<Optional<FA_PerHeadMemRef>, "gradient of the sinks",
        [MemWrite]>:$dsinks,
    Optional<Index>:$window_left,
    Optional<Index>:$window_right,
    Arg<Optional<FA_DocIdsMemRef>, "document id of each token",
        [MemRead]>:$doc_ids,
    Optional<F32>:$softcap,
    Arg<Optional<FA_PerHeadMemRef>, "ALiBi slope of each head",
        [MemRead]>:$alibi_slopes,
    Optional<F32>:$dropout_p,
    Optional<I64>:$dropout_seed,
    Optional<I32>:$dropout_offset,
    Arg<Variadic<FA_CaptureType>, "values the regions read",
        [MemRead]>:$captures,
    UnitAttr:$causal,
    UnitAttr:$causal_bottom_right,
    OptionalAttr<F32Attr>:$scale);

  let regions = (region MaxSizedRegion<1>:$mask, MaxSizedRegion<1>:$score);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `,` $out `,` $dout `,` $lse `:`
              type($query) `,` type($key) `,` type($value) `,` type($out) `,`
              type($dout) `,` type($lse) `)`
    `outs` `(` $dquery `,` $dkey `,` $dvalue `:` type($dquery) `,`
               type($dkey) `,` type($dvalue) `)`
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`dsinks` `(` $dsinks^ `:` type($dsinks) `)`)?
    (`causal` $causal^)? (`causal_bottom_right` $causal_bottom_right^)?
    (`window` `(` $window_left^ `,` $window_right `)`)?
    (`document` `(` $doc_ids^ `:` type($doc_ids) `)`)?
    (`softcap` `(` $softcap^ `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`dropout` `(` $dropout_p^ `,` $dropout_seed `,` $dropout_offset `)`)?
    (`scale` `(` $scale^ `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`mask` $mask^)? (`score` $score^)? attr-dict
  }];

  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    float getScaleOrDefault();
    /// Whether the op needs more than the plain or `causal` kernels: a mask
    /// or score region, a named variant, or sinks.
    bool hasVariants();
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def FA_LayerNormOp : FA_Op<"layernorm", [AttrSizedOperandSegments]> {
  let summary = "LayerNorm over the last dimension, forward";
  let description = [{
    Normalises each row of `x` (every dimension but the last indexes a row):
    `y = (x - mean) * rstd * weight + bias` with
    `rstd = 1 / sqrt(var + eps)` and the biased variance. Statistics are
    computed in f32. `mean` and `rstd` (shape of `x` without its last
    dimension, f32) are written when given, for the backward pass; give both
    or neither.

    `eps` is an f32 value, not an attribute: as an argument of the kernel
    function it becomes a kernel parameter, so one kernel serves every eps
    (models use 1e-5, 1e-6, 1e-12). A constant eps must be positive and
    finite.

    Residual add: with `residual(%r : type)` and `sum(%s : type)` (both or
    neither, each of x's shape and type) the op first forms `s = x + r`,
    added in f32 and stored to `sum` rounded to the element type, and
    normalises `s` *as stored* (the rounded value, not the f32 sum): mean,
    rstd and y are those of the rounded `s`, so a backward that reads `sum`
    as its `x` sees exactly what the forward normalised. `sum` may be the
    same buffer as `x` or `residual` (each element is read, then written, by
    the same thread).

    Example:

    ```mlir
    fa.layernorm ins(%x, %w, %b : memref<4096x1024xbf16>, memref<1024xbf16>,
                     memref<1024xbf16>)
                 outs(%y : memref<4096x1024xbf16>)
                 stats(%mean, %rstd : memref<4096xf32>, memref<4096xf32>)
                 eps(%eps : f32)
    // A transformer's residual stream: s = x + r, y = LayerNorm(s).
    fa.layernorm ins(%x, %w, %b : memref<4096x1024xbf16>, memref<1024xbf16>,
                     memref<1024xbf16>)
                 residual(%r : memref<4096x1024xbf16>)
                 outs(%y : memref<4096x1024xbf16>)
                 sum(%s : memref<4096x1024xbf16>)
                 stats(%mean, %rstd : memref<4096xf32>, memref<4096xf32>)
                 eps(%eps : f32)
    ```
  }];

  let arguments = (ins
    Arg<MemRefOf<[FA_ElementType]>, "input rows", [MemRead]>:$x,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "scale", [MemRead]>:$weight,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "shift", [MemRead]>:$bias,
    Arg<Optional<MemRefOf<[FA_ElementType]>>, "added to x before the norm",
        [MemRead]>:$residual,
    Arg<MemRefOf<[FA_ElementType]>, "normalised rows", [MemWrite]>:$y,
    Arg<Optional<MemRefOf<[FA_ElementType]>>, "x + residual, as normalised",
        [MemWrite]>:$sum,
    Arg<Optional<FA_StatsMemRef>, "row means", [MemWrite]>:$mean,
    Arg<Optional<FA_StatsMemRef>, "row reciprocal std", [MemWrite]>:$rstd,
    Arg<F32, "added to the variance">:$eps);

  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $bias `:` type($x) `,` type($weight) `,`
              type($bias) `)`
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    `outs` `(` $y `:` type($y) `)`
    (`sum` `(` $sum^ `:` type($sum) `)`)?
    (`stats` `(` $mean^ `,` $rstd `:` type($mean) `,` type($rstd) `)`)?
    `eps` `(` $eps `:` type($eps) `)` attr-dict
  }];

  let hasVerifier = 1;
}

def FA_LayerNormGradOp : FA_Op<"layernorm_grad"> {
  let summary = "LayerNorm over the last dimension, backward";
  let description = [{
    From the forward's input `x`, `weight`, the saved `mean` and `rstd` and
    the output gradient `dy`, computes `dx` (same shape as `x`) and the
    parameter gradients `dweight`, `dbias` (shape `[cols]`, f32 or the
    weight's element type), summed over all rows.

    With `dresidual(%g : type)` (x's shape and type), the gradient that
    reaches the forward's input through the other path of a residual add,
    `dx = dresidual + (the LayerNorm's input gradient)`, added in f32 and
    rounded once. For a forward with a residual operand, `x` here is its
    `sum`. `dresidual` may be the same buffer as `dx`: each element is read,
    then written, by the same thread.

    Example:

    ```mlir
    fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : ...)
                      outs(%dx, %dw, %db : ...)
    fa.layernorm_grad ins(%s, %w, %mean, %rstd, %dy : ...)
                      dresidual(%g : memref<4096x1024xbf16>)
                      outs(%dx, %dw, %db : ...)
    ```
  }];

  let arguments = (ins
    Arg<MemRefOf<[FA_ElementType]>, "forward input rows", [MemRead]>:$x,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "scale", [MemRead]>:$weight,
    Arg<FA_StatsMemRef, "row means", [MemRead]>:$mean,
    Arg<FA_StatsMemRef, "row reciprocal std", [MemRead]>:$rstd,
    Arg<MemRefOf<[FA_ElementType]>, "gradient of the output", [MemRead]>:$dy,
    Arg<Optional<MemRefOf<[FA_ElementType]>>,
        "gradient of the input from outside the norm, added to dx",
        [MemRead]>:$dresidual,
    Arg<MemRefOf<[FA_ElementType]>, "gradient of the input", [MemWrite]>:$dx,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "gradient of the scale",
        [MemWrite]>:$dweight,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "gradient of the shift",
        [MemWrite]>:$dbias);

  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $mean `,` $rstd `,` $dy `:` type($x) `,`
              type($weight) `,` type($mean) `,` type($rstd) `,` type($dy) `)`
    (`dresidual` `(` $dresidual^ `:` type($dresidual) `)`)?
    `outs` `(` $dx `,` $dweight `,` $dbias `:` type($dx) `,` type($dweight)
               `,` type($dbias) `)` attr-dict
  }];

  let hasVerifier = 1;
}

include "fa/Dialect/FA/IR/FATileOps.td"
include "fa/Dialect/FA/IR/FAAsyncOps.td"

#endif // FA_DIALECT_FA_IR_FAOPS_TD
