//===- attention.h - Hand-written FlashAttention-2 kernels ------*- C++ -*-===//
//
// Hand-written CUDA kernels for scaled dot-product attention, forward and
// backward, in the style of FlashAttention-2: the baseline the compiler's
// generated kernels are benchmarked against. They compute exactly what the
// runtime's fp64 reference does (runtime/include/fa/runtime/Reference.h):
//
//   s_ij       = scale * dot(q[b,h,i,:], k[b,kvh,j,:])    kvh = h / (heads /
//   kvHeads) lse[b,h,i] = log(sum_j exp(s_ij))                      natural
//   log, f32 out[b,h,i] = sum_j exp(s_ij - lse[b,h,i]) * v[b,kvh,j,:]
//
// over the keys j < seqKv, or j <= i when causal (top-left aligned, as
// PyTorch's is_causal), and the gradients dq, dk, dv of Reference.h (dk and
// dv summed over the query heads that share a kv head).
//
// Layouts, all contiguous: q, out, dout, dq [batch, heads, seqQ, headDim];
// k, v, dk, dv [batch, kvHeads, seqKv, headDim]; lse [batch, heads, seqQ].
// Element types bf16 and f16 (f32 is not supported: the kernels are built
// around 16-bit tensor-core fragments), head_dim 64 or 128, every pointer
// 16-byte aligned (cudaMalloc's are). Launches are asynchronous on `stream`;
// a returned error is the launch's, an execution error shows up at the next
// synchronisation as usual.
//
//===----------------------------------------------------------------------===//

#ifndef FA_BENCH_HANDWRITTEN_ATTENTION_H
#define FA_BENCH_HANDWRITTEN_ATTENTION_H

#include <cuda_runtime_api.h>

#include <cstddef>

namespace fa::handwritten {

enum class AttentionDType { BF16, F16, F32 };

struct AttentionProblem {
  int batch = 1;
  int heads = 1;
  int kvHeads = 1; // heads % kvHeads == 0 (grouped-query attention).
  int seqQ = 1;
  int seqKv = 1;
  int headDim = 64;
  bool causal = false;
  float scale = 0; // 0 means the default 1 / sqrt(headDim).
};

/// The scale the kernels apply: problem.scale, or 1 / sqrt(headDim) when 0.
float attentionScale(const AttentionProblem &problem);

/// Why these kernels cannot run `problem` in `dtype` (e.g. "head_dim must
/// be 64 or 128"), or nullptr when they can. The launch functions return
/// cudaErrorInvalidValue when this is non-null or a tensor pointer is null,
/// and cudaErrorMisalignedAddress for a pointer that is not 16-byte aligned
/// (lse excepted), before launching anything.
const char *attentionUnsupportedReason(AttentionDType dtype,
                                       const AttentionProblem &problem);

/// out and lse from q, k, v. `lse` may be null when it is not wanted.
cudaError_t launchAttentionForward(AttentionDType dtype,
                                   const AttentionProblem &problem,
                                   const void *q, const void *k, const void *v,
                                   void *out, float *lse, cudaStream_t stream);

/// Bytes of device scratch launchAttentionBackward needs: delta = rowsum(dout
/// * out) and an f32 dq accumulator, both [batch, heads, seqQ(, headDim)].
std::size_t attentionBackwardWorkspaceBytes(const AttentionProblem &problem);

/// dq, dk, dv from the forward's inputs, its out and lse, and the incoming
/// gradient dout. `workspace` holds attentionBackwardWorkspaceBytes(problem)
/// bytes (256-byte aligned, as cudaMalloc's are); it needs no initialising.
/// Three kernels on `stream`: delta (and zeroing the accumulator), the main
/// one over key tiles, and dq's conversion to the element type.
cudaError_t launchAttentionBackward(AttentionDType dtype,
                                    const AttentionProblem &problem,
                                    const void *q, const void *k, const void *v,
                                    const void *out, const void *dout,
                                    const float *lse, void *dq, void *dk,
                                    void *dv, void *workspace,
                                    cudaStream_t stream);

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_ATTENTION_H
