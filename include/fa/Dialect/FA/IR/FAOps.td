//===- FAOps.td - Operations of the fa dialect --------------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_TD
#define FA_DIALECT_FA_IR_FAOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

// Element types the kernels support: storage in f16, bf16 or f32; arithmetic
// accumulates in f32 in every case.
def FA_ElementType : AnyTypeOf<[F16, BF16, F32]>;
def FA_Tensor4D : MemRefRankOf<[FA_ElementType], [4]>;
// Per-row statistics (log-sum-exp, mean, rstd) are always kept in f32.
def FA_StatsMemRef : MemRefOf<[F32]>;

def FA_AttentionOp : FA_Op<"attention"> {
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

    `causal` masks key `j` from query `i` when `j > i` (top-left aligned, as
    PyTorch's `is_causal`). `scale` defaults to `1/sqrt(head_dim)`.

    Example:

    ```mlir
    fa.attention ins(%q, %k, %v : memref<2x8x1024x64xbf16>,
                     memref<2x2x1024x64xbf16>, memref<2x2x1024x64xbf16>)
                 outs(%out : memref<2x8x1024x64xbf16>)
                 lse(%lse : memref<2x8x1024xf32>) causal
    ```
  }];

  let arguments = (ins
    Arg<FA_Tensor4D, "query", [MemRead]>:$query,
    Arg<FA_Tensor4D, "key", [MemRead]>:$key,
    Arg<FA_Tensor4D, "value", [MemRead]>:$value,
    Arg<FA_Tensor4D, "output", [MemWrite]>:$out,
    Arg<Optional<FA_StatsMemRef>, "log-sum-exp of each query row",
        [MemWrite]>:$lse,
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$scale);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
              type($value) `)`
    `outs` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`causal` $causal^)? (`scale` `(` $scale^ `)`)? attr-dict
  }];

  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    float getScaleOrDefault();
    /// Head dimension (static by verification).
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
  }];

  let hasVerifier = 1;
}

def FA_AttentionGradOp : FA_Op<"attention_grad"> {
  let summary = "scaled dot-product attention, backward";
  let description = [{
    Given the forward's inputs, its output `out`, the output gradient `dout`
    and the forward's log-sum-exp `lse`, computes the gradients `dq`, `dk`
    and `dv`. With fewer key/value heads than query heads, `dk` and `dv` sum
    the contributions of every query head that shares a key/value head.
    Shapes and attributes follow `fa.attention`: `out`, `dout`, `dq` like
    `q`; `dk`, `dv` like `k`; `lse` is `[batch, heads, seq_q]` f32.

    Example:

    ```mlir
    fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : ...)
                      outs(%dq, %dk, %dv : ...) causal
    ```
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
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$scale);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `,` $out `,` $dout `,` $lse `:`
              type($query) `,` type($key) `,` type($value) `,` type($out) `,`
              type($dout) `,` type($lse) `)`
    `outs` `(` $dquery `,` $dkey `,` $dvalue `:` type($dquery) `,`
               type($dkey) `,` type($dvalue) `)`
    (`causal` $causal^)? (`scale` `(` $scale^ `)`)? attr-dict
  }];

  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    float getScaleOrDefault();
  }];

  let hasVerifier = 1;
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

    Example:

    ```mlir
    fa.layernorm ins(%x, %w, %b : memref<4096x1024xbf16>, memref<1024xbf16>,
                     memref<1024xbf16>)
                 outs(%y : memref<4096x1024xbf16>)
                 stats(%mean, %rstd : memref<4096xf32>, memref<4096xf32>)
                 eps(%eps : f32)
    ```
  }];

  let arguments = (ins
    Arg<MemRefOf<[FA_ElementType]>, "input rows", [MemRead]>:$x,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "scale", [MemRead]>:$weight,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "shift", [MemRead]>:$bias,
    Arg<MemRefOf<[FA_ElementType]>, "normalised rows", [MemWrite]>:$y,
    Arg<Optional<FA_StatsMemRef>, "row means", [MemWrite]>:$mean,
    Arg<Optional<FA_StatsMemRef>, "row reciprocal std", [MemWrite]>:$rstd,
    Arg<F32, "added to the variance">:$eps);

  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $bias `:` type($x) `,` type($weight) `,`
              type($bias) `)`
    `outs` `(` $y `:` type($y) `)`
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

    Example:

    ```mlir
    fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : ...)
                      outs(%dx, %dw, %db : ...)
    ```
  }];

  let arguments = (ins
    Arg<MemRefOf<[FA_ElementType]>, "forward input rows", [MemRead]>:$x,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "scale", [MemRead]>:$weight,
    Arg<FA_StatsMemRef, "row means", [MemRead]>:$mean,
    Arg<FA_StatsMemRef, "row reciprocal std", [MemRead]>:$rstd,
    Arg<MemRefOf<[FA_ElementType]>, "gradient of the output", [MemRead]>:$dy,
    Arg<MemRefOf<[FA_ElementType]>, "gradient of the input", [MemWrite]>:$dx,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "gradient of the scale",
        [MemWrite]>:$dweight,
    Arg<MemRefRankOf<[FA_ElementType], [1]>, "gradient of the shift",
        [MemWrite]>:$dbias);

  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $mean `,` $rstd `,` $dy `:` type($x) `,`
              type($weight) `,` type($mean) `,` type($rstd) `,` type($dy) `)`
    `outs` `(` $dx `,` $dweight `,` $dbias `:` type($dx) `,` type($dweight)
               `,` type($dbias) `)` attr-dict
  }];

  let hasVerifier = 1;
}

include "fa/Dialect/FA/IR/FATileOps.td"

#endif // FA_DIALECT_FA_IR_FAOPS_TD
