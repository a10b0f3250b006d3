//===- Reference.h - Attention computed in fp64 -----------------*- C++ -*-===//
//
// What every attention kernel is checked against. For each batch b, head h
// and query row i, over the keys j that row may see (all j < seq_kv, or
// j <= i when causal: top-left aligned, as PyTorch's is_causal):
//   s_j        = scale * dot(q[b,h,i,:], k[b,kvh,j,:])     kvh = h / group
//   lse[b,h,i] = log(sum_j exp(s_j))                        natural log
//   out[b,h,i] = sum_j exp(s_j - lse[b,h,i]) * v[b,kvh,j,:]
// Inputs are the values the kernel saw (already rounded to its dtype); all
// arithmetic is in double.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_REFERENCE_H
#define FA_RUNTIME_REFERENCE_H

#include "fa/runtime/AttentionShape.h"
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

/// On the GPU, one thread block per query row, in fp64; reads q, k and v in
/// their kernel element type straight from device memory.
AttentionReference referenceAttentionGpu(const AttentionShape &shape,
                                         DType dtype, CUdeviceptr q,
                                         CUdeviceptr k, CUdeviceptr v,
                                         double scale, bool causal,
                                         const Stream &stream);

} // namespace fa

#endif // FA_RUNTIME_REFERENCE_H
