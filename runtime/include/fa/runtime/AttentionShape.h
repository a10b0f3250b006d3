//===- AttentionShape.h - The sizes of one attention problem ----*- C++ -*-===//
//
// Tensors are contiguous [batch, heads, seq, head_dim]: q and out have `heads`
// heads and seq_q rows, k and v have `kv_heads` heads and seq_kv rows, and
// lse is [batch, heads, seq_q] in f32. Query head h reads key/value head
// h / (heads / kv_heads) (grouped-query attention; kv_heads == heads is
// ordinary multi-head attention).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_ATTENTIONSHAPE_H
#define FA_RUNTIME_ATTENTIONSHAPE_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace fa {

struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kvHeads = 1;
  std::int64_t seqQ = 1;
  std::int64_t seqKv = 1;
  std::int64_t headDim = 64;

  Shape query() const { return {batch, heads, seqQ, headDim}; }
  Shape keyValue() const { return {batch, kvHeads, seqKv, headDim}; }
  Shape logSumExp() const { return {batch, heads, seqQ}; }

  std::int64_t kvHeadOf(std::int64_t head) const {
    return head / (heads / kvHeads);
  }

  /// Throws unless every size is positive and kv_heads divides heads.
  void validate() const;
  /// 4 * B * H * N * M * D (two matrix products), halved when causal: the
  /// convention of the FlashAttention papers and of PyTorch's benchmarks.
  double flops(bool causal) const;
  /// 2.5 * flops(causal): the backward's five matrix products (S = QK^T
  /// recomputed, dV, dP, dQ, dK) to the forward's two, the FlashAttention
  /// papers' convention.
  double backwardFlops(bool causal) const;
  /// "batch=2 heads=8 kv_heads=2 seq_q=128 seq_kv=128 head_dim=64".
  std::string describe() const;
};

/// The device memory a naive attention needs beyond its tensors, against
/// what the kernels keep instead (bytes):
///
///   matrix    = B * H * N * M elements: S = Q K^T of every head, which a
///               naive forward materialises (softmaxed in place into P);
///               a naive backward keeps P and also materialises dP = dO V^T
///               (dS = P * (dP - delta) in its place): 2 matrices. Causal
///               attention needs them whole too (masked, not smaller).
///   kept      = B * H * N * 4: the forward's f32 lse per query row, and
///               the backward's f32 delta = rowsum(dO * O) as much again.
///   tensors   = (2 * B*H*N*D + 2 * B*Hk*M*D) * element size: q, out, k and
///               v; the backward's dout, dq, dk and dv as much again.
///   saved / tensors = (matrices * matrix * 4 - kept) / tensors, with the
///               matrices in f32.
struct AttentionMemory {
  int matrices = 1;
  std::int64_t matrixElements = 0; // One matrix: B * H * N * M.
  std::int64_t matricesBytesF32 = 0;
  std::int64_t matricesBytesElement = 0; // In the tensors' element type.
  std::int64_t keptBytes = 0;
  std::int64_t tensorBytes = 0;

  double savedVsTensors() const {
    return static_cast<double>(matricesBytesF32 - keptBytes) /
           static_cast<double>(tensorBytes);
  }
};

/// The forward's, or with `backward` the forward's and backward's together.
AttentionMemory attentionMemory(const AttentionShape &shape, DType dtype,
                                bool backward);

} // namespace fa

#endif // FA_RUNTIME_ATTENTIONSHAPE_H
