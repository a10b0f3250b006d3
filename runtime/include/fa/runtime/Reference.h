//===- Reference.h - Attention and its gradients in fp64 --------*- C++ -*-===//
//
// What every attention kernel is checked against. For each batch b, head h
// and query row i, over the keys j that row may see (all j < seq_kv, or
// j <= i when causal: top-left aligned, as PyTorch's is_causal):
//   s_ij       = scale * dot(q[b,h,i,:], k[b,kvh,j,:])     kvh = h / group
//   lse[b,h,i] = log(sum_j exp(s_ij))                       natural log
//   P_ij       = exp(s_ij - lse[b,h,i])                     (0 if not seen)
//   out[b,h,i] = sum_j P_ij * v[b,kvh,j,:]
// and the gradients for an incoming gradient dout (shaped like out), the
// sums over h running over the query heads of kv head kvh's group:
//   dP_ij       = dot(dout[b,h,i,:], v[b,kvh,j,:])
//   delta_i     = sum_j P_ij dP_ij                 (= dot(dout_i, out_i))
//   dS_ij       = P_ij * (dP_ij - delta_i)
//   dq[b,h,i]   = scale * sum_j dS_ij * k[b,kvh,j,:]
//   dk[b,kvh,j] = scale * sum_h sum_i dS_ij * q[b,h,i,:]
//   dv[b,kvh,j] = sum_h sum_i P_ij * dout[b,h,i,:]
// Inputs are the values the kernel saw (already rounded to its dtype); all
// arithmetic is in double.
//
// The overloads taking an AttentionVariant compute its semantics
// (AttentionVariant.h): only kept keys enter the sums, s_ij becomes the
// variant's score s'_ij in P, and dS_ij gains the factor ds'/ds; a row that
// keeps no key has out = 0, lse = -inf and no gradient. Sinks join every
// row's denominator (its lse; a row that keeps no key has lse = sinks[h])
// and have a gradient dsinks; dropout multiplies P by Philox.h's mask Z in
// out, dV and dP (AttentionVariant.h states both). `causal` = true is the
// variant with top-left causal alone.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_REFERENCE_H
#define FA_RUNTIME_REFERENCE_H

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/Stream.h"

#include <cuda.h>

#include <vector>

namespace fa {

struct AttentionReference {
  std::vector<double> out; // [batch, heads, seq_q, head_dim]
  std::vector<double> lse; // [batch, heads, seq_q]
};

/// On the CPU; for small problems (its cost is B*H*N*M*D multiply-adds).
AttentionReference referenceAttentionCpu(const AttentionShape &shape,
                                         const std::vector<float> &q,
                                         const std::vector<float> &k,
                                         const std::vector<float> &v,
                                         double scale, bool causal);

AttentionReference
referenceAttentionCpu(const AttentionShape &shape, const std::vector<float> &q,
                      const std::vector<float> &k, const std::vector<float> &v,
                      double scale, const AttentionVariant &variant);

/// On the GPU, one thread block per query row, in fp64; reads q, k and v in
/// their kernel element type straight from device memory.
AttentionReference referenceAttentionGpu(const AttentionShape &shape,
                                         DType dtype, CUdeviceptr q,
                                         CUdeviceptr k, CUdeviceptr v,
                                         double scale, bool causal,
                                         const Stream &stream);
/// The same for a variant; its tensors (slopes, doc ids, mask) are copied
/// to the device for the reference kernels.
AttentionReference
referenceAttentionGpu(const AttentionShape &shape, DType dtype, CUdeviceptr q,
                      CUdeviceptr k, CUdeviceptr v, double scale,
                      const AttentionVariant &variant, const Stream &stream);

struct AttentionGradReference {
  std::vector<double> dq; // [batch, heads, seq_q, head_dim]
  std::vector<double> dk; // [batch, kv_heads, seq_kv, head_dim]
  std::vector<double> dv; // [batch, kv_heads, seq_kv, head_dim]
  /// [heads]: -sum_{b,i} exp(sinks[h] - lse) * delta; empty without sinks.
  std::vector<double> dsinks;
};

/// On the CPU; for small problems (about 3x the forward's cost).
AttentionGradReference referenceAttentionGradCpu(const AttentionShape &shape,
                                                 const std::vector<float> &q,
                                                 const std::vector<float> &k,
                                                 const std::vector<float> &v,
                                                 const std::vector<float> &dout,
                                                 double scale, bool causal);
AttentionGradReference referenceAttentionGradCpu(
    const AttentionShape &shape, const std::vector<float> &q,
    const std::vector<float> &k, const std::vector<float> &v,
    const std::vector<float> &dout, double scale,
    const AttentionVariant &variant);

/// On the GPU, in fp64: one thread block per query row for dq, then one per
/// key row for dk and dv; reads q, k, v and dout in their kernel element
/// type straight from device memory. dsinks is summed on the host from the
/// rows' fp64 lse and delta.
AttentionGradReference referenceAttentionGradGpu(const AttentionShape &shape,
                                                 DType dtype, CUdeviceptr q,
                                                 CUdeviceptr k, CUdeviceptr v,
                                                 CUdeviceptr dout, double scale,
                                                 bool causal,
                                                 const Stream &stream);
AttentionGradReference referenceAttentionGradGpu(
    const AttentionShape &shape, DType dtype, CUdeviceptr q, CUdeviceptr k,
    CUdeviceptr v, CUdeviceptr dout, double scale,
    const AttentionVariant &variant, const Stream &stream);

} // namespace fa

#endif // FA_RUNTIME_REFERENCE_H
