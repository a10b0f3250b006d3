//===- TrainKernels.h - The training loop's own kernels ---------*- C++ -*-===//
//
// Everything the GPT model needs besides matrix products (cuBLASLt, Matmul.h)
// and attention/LayerNorm (the compiler's kernel library): hand-written CUDA
// C++ in TrainKernels.cu, built by nvcc into a fatbin embedded in the library
// and loaded through the driver API into the current context.
//
// `dtype` is the activations' element type (BF16 or F32; F16 is refused);
// gradients of parameters and all reductions are f32. Tensors are contiguous
// row-major; shapes use B (batch), T (seq), C (d_model), H (heads), D = C / H,
// V (vocab), M = B * T rows. Every reduction is deterministic (a fixed order,
// no atomics), so a run and its resumed twin produce the same bits.
// Every function enqueues on `stream` and returns without synchronising.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_TRAINKERNELS_H
#define FA_TRAIN_TRAINKERNELS_H

#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Module.h"
#include "fa/runtime/Stream.h"
#include "fa/train/Dropout.h"

#include <cuda.h>

#include <cstdint>

namespace fa::train {

struct AdamWStep;

/// The kernels, loaded once into the current context (construct after
/// fa::Context). Sizes must be non-negative; an F16 dtype, a negative size or
/// a grid beyond the launch limits throws fa::Error.
class TrainKernels {
public:
  TrainKernels();

  /// x[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. tokens int32 [B, T] (each in
  /// [0, V); not checked on the device), wte [V, C], wpe [>= T, C],
  /// x [B, T, C], all `dtype` but tokens.
  void embeddingForward(DType dtype, CUdeviceptr tokens, CUdeviceptr wte,
                        CUdeviceptr wpe, CUdeviceptr x, std::int64_t batch,
                        std::int64_t seq, std::int64_t channels,
                        const Stream &stream) const;

  /// dwte[v,:] (+)= sum of dx[b,t,:] over the positions with tokens[b,t] = v,
  /// dwpe[t,:] = sum over b of dx[b,t,:]; dx `dtype` [B, T, C], dwte f32
  /// [V, C], dwpe f32 [>= T, C] (rows >= T untouched). accumulate: add to
  /// dwte instead of overwriting it (the tied LM head wrote it first); dwpe
  /// is always overwritten. `seen`: V bytes of scratch, where the tokens of
  /// the batch are marked first, so that the rows of dwte no token hits
  /// (most of a GPT-2-sized vocabulary) skip the scan of the tokens.
  void embeddingBackward(DType dtype, CUdeviceptr tokens, CUdeviceptr dx,
                         CUdeviceptr dwte, CUdeviceptr dwpe, std::int64_t batch,
                         std::int64_t seq, std::int64_t channels,
                         std::int64_t vocab, bool accumulate, CUdeviceptr seen,
                         const Stream &stream) const;

  /// qkv [B, T, 3C] -> q, k, v [B, H, T, D] (GptConfig.h: q at column h*D+d,
  /// k at C + h*D+d, v at 2C + h*D+d).
  void splitHeads(DType dtype, CUdeviceptr qkv, CUdeviceptr q, CUdeviceptr k,
                  CUdeviceptr v, std::int64_t batch, std::int64_t seq,
                  std::int64_t heads, std::int64_t headDim,
                  const Stream &stream) const;
  /// The inverse: dq, dk, dv [B, H, T, D] -> dqkv [B, T, 3C].
  void joinHeads(DType dtype, CUdeviceptr dq, CUdeviceptr dk, CUdeviceptr dv,
                 CUdeviceptr dqkv, std::int64_t batch, std::int64_t seq,
                 std::int64_t heads, std::int64_t headDim,
                 const Stream &stream) const;
  /// y [B, H, T, D] -> merged [B, T, C] (column h*D+d), and back.
  void mergeHeads(DType dtype, CUdeviceptr y, CUdeviceptr merged,
                  std::int64_t batch, std::int64_t seq, std::int64_t heads,
                  std::int64_t headDim, const Stream &stream) const;
  void unmergeHeads(DType dtype, CUdeviceptr merged, CUdeviceptr y,
                    std::int64_t batch, std::int64_t seq, std::int64_t heads,
                    std::int64_t headDim, const Stream &stream) const;

  /// g = gelu(u), tanh form (GptConfig.h), computed in f32; n elements.
  void geluForward(DType dtype, CUdeviceptr u, CUdeviceptr g, std::int64_t n,
                   const Stream &stream) const;
  /// du = dg * gelu'(u).
  void geluBackward(DType dtype, CUdeviceptr u, CUdeviceptr dg, CUdeviceptr du,
                    std::int64_t n, const Stream &stream) const;

  /// out = a + b (out may alias a or b); n elements.
  void add(DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
           std::int64_t n, const Stream &stream) const;
  /// out = a + drop(b), drop the activation dropout mask of `site` in
  /// `draw` (Dropout.h: element i of b times 0 or 1 / (1 - p)); a = 0:
  /// out = drop(b). out may alias a or b; n elements. Throws unless
  /// 0 <= draw.p < 1.
  void dropoutAdd(DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                  std::int64_t n, const DropoutDraw &draw, std::uint32_t site,
                  const Stream &stream) const;

  /// dbias[j] (+)= sum over the M rows of dy[i, j]; dy `dtype` [M, N], dbias
  /// f32 [N], N <= 2^20. Partial sums over spans of rows go through a
  /// scratch buffer of this object, so calls must not run concurrently on
  /// different streams.
  void biasGradient(DType dtype, CUdeviceptr dy, CUdeviceptr dbias,
                    std::int64_t rows, std::int64_t cols, bool accumulate,
                    const Stream &stream) const;

  /// Per row i of logits (f32 [M, V]) with target t = targets[i] (int32):
  /// losses[i] = logsumexp(logits[i]) - logits[i, t] (f32 [M]); when dlogits
  /// (`dtype` [M, V]) is non-zero, dlogits[i] = (softmax(logits[i]) -
  /// onehot(t)) * gradScale (the mean's 1/M). vocab >= 1; a target outside
  /// [0, V) gives a NaN loss (and no one-hot term) rather than a stray read.
  void crossEntropy(DType dtype, CUdeviceptr logits, CUdeviceptr targets,
                    CUdeviceptr losses, CUdeviceptr dlogits, std::int64_t rows,
                    std::int64_t vocab, float gradScale,
                    const Stream &stream) const;

  /// result[0] = sum of values[0..n) (f32), in a fixed order. `workspace`
  /// holds at least reductionWorkspaceFloats(n) floats.
  void sum(CUdeviceptr values, CUdeviceptr result, std::int64_t n,
           CUdeviceptr workspace, const Stream &stream) const;
  /// result[0] = sum of values[i]^2 (f32), as sum().
  void sumOfSquares(CUdeviceptr values, CUdeviceptr result, std::int64_t n,
                    CUdeviceptr workspace, const Stream &stream) const;
  static std::int64_t reductionWorkspaceFloats(std::int64_t n);

  /// out (`dtype`) = values (f32), n elements (the master weights' working
  /// copy; for F32 a copy).
  void castFromF32(DType dtype, CUdeviceptr values, CUdeviceptr out,
                   std::int64_t n, const Stream &stream) const;

private:
  friend void adamW(const TrainKernels &kernels, DType dtype,
                    const AdamWStep &hyper, CUdeviceptr params,
                    CUdeviceptr grads, CUdeviceptr m, CUdeviceptr v,
                    CUdeviceptr decay, CUdeviceptr normSquared,
                    CUdeviceptr working, std::int64_t n, const Stream &stream);

  Module module;
  DeviceBuffer biasPartials; // biasGradient's per-span column sums.
};

/// One AdamW step over a flat parameter array (decoupled weight decay, as
/// torch.optim.AdamW): with the gradient g = grads[i] * clip, where
/// clip = min(1, maxNorm / sqrt(normSquared[0])) when maxNorm > 0, else 1:
///   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
///   p -= lr * (m / (1 - beta1^step) / (sqrt(v / (1 - beta2^step)) + eps)
///              + weightDecay * decay[i] * p)
/// and working[i] = p in `dtype` when working is non-zero. normSquared is a
/// device f32 (sumOfSquares of the gradients), read on the device, so
/// clipping needs no host synchronisation (and not read when maxNorm <= 0).
/// A normSquared that is not finite makes clip NaN: the step turns the
/// parameters NaN, so an overflow shows instead of being clipped away.
/// decay is uint8 [n] (1: decayed, 0: not). step must be >= 1.
struct AdamWStep {
  float lr = 0;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weightDecay = 0.1f;
  float maxNorm = 1.0f;
  std::int64_t step = 1; // 1-based, for the bias corrections.
};

void adamW(const TrainKernels &kernels, DType dtype, const AdamWStep &hyper,
           CUdeviceptr params, CUdeviceptr grads, CUdeviceptr m, CUdeviceptr v,
           CUdeviceptr decay, CUdeviceptr normSquared, CUdeviceptr working,
           std::int64_t n, const Stream &stream);

} // namespace fa::train

#endif // FA_TRAIN_TRAINKERNELS_H
