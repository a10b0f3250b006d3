//===- AttentionReference.cu - Attention in fp64 on the GPU ---------------===//
//
// The GPU twin of referenceAttentionCpu (see Reference.h for the math), for
// problems too large for the CPU. Deliberately naive: one block per query row
// (blockIdx.x = row, blockIdx.y = batch * heads + head), every product in
// double. Two sweeps over the keys: the first finds the row's log-sum-exp,
// the second accumulates the softmax-weighted values, a block-sized chunk of
// keys at a time.
//
// Built into a fatbin embedded in the runtime and launched through the driver
// API like any library kernel.
//
//===----------------------------------------------------------------------===//

#include "AttentionReferenceParams.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ double toDouble(float x) { return x; }
__device__ double toDouble(__half x) { return __half2float(x); }
__device__ double toDouble(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ double scaledScore(const double *query, const T *key,
                              const AttentionReferenceParams &p) {
  double sum = 0;
  for (long long d = 0; d < p.headDim; ++d)
    sum += query[d] * toDouble(key[d]);
  return p.scale * sum;
}

/// Merges two (running max, sum of exp(score - max)) pairs.
__device__ void mergeSoftmaxStats(double &max, double &sum, double otherMax,
                                  double otherSum) {
  if (otherSum == 0)
    return;
  if (sum == 0) {
    max = otherMax;
    sum = otherSum;
    return;
  }
  double merged = fmax(max, otherMax);
  sum = sum * exp(max - merged) + otherSum * exp(otherMax - merged);
  max = merged;
}

template <typename T>
__device__ void attentionReference(const T *q, const T *k, const T *v,
                                   double *out, double *lse,
                                   AttentionReferenceParams p) {
  // Shared: the query row, the output accumulator, and two per-thread
  // scratch arrays (softmax statistics, then chunk weights).
  extern __shared__ double shared[];
  double *query = shared;
  double *accumulator = query + p.headDim;
  double *scratchA = accumulator + p.headDim;
  double *scratchB = scratchA + blockDim.x;

  const long long row = blockIdx.x;
  const long long head = blockIdx.y % p.heads;
  const long long batch = blockIdx.y / p.heads;
  const long long kvHead = head / (p.heads / p.kvHeads);
  const long long rowIndex = blockIdx.y * p.seqQ + row;
  const T *keys = k + (batch * p.kvHeads + kvHead) * p.seqKv * p.headDim;
  const T *values = v + (batch * p.kvHeads + kvHead) * p.seqKv * p.headDim;
  const long long visible =
      p.causal ? min(row + 1, p.seqKv) : p.seqKv; // Top-left causal.

  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x) {
    query[d] = toDouble(q[rowIndex * p.headDim + d]);
    accumulator[d] = 0;
  }
  __syncthreads();

  // Sweep 1: each thread's softmax statistics over its keys, merged by
  // thread 0 into the row's log-sum-exp.
  double max = 0, sum = 0;
  for (long long j = threadIdx.x; j < visible; j += blockDim.x)
    mergeSoftmaxStats(max, sum, scaledScore(query, keys + j * p.headDim, p),
                      1.0);
  scratchA[threadIdx.x] = max;
  scratchB[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned t = 1; t < blockDim.x; ++t)
      mergeSoftmaxStats(max, sum, scratchA[t], scratchB[t]);
    scratchB[0] = max + log(sum);
  }
  __syncthreads();
  const double rowLse = scratchB[0];
  __syncthreads();

  // Sweep 2: weights of a chunk of keys, then every thread adds the chunk's
  // weighted values into the output dimensions it owns.
  for (long long start = 0; start < visible; start += blockDim.x) {
    long long j = start + threadIdx.x;
    scratchA[threadIdx.x] =
        j < visible ? exp(scaledScore(query, keys + j * p.headDim, p) - rowLse)
                    : 0.0;
    __syncthreads();
    long long chunk = min(static_cast<long long>(blockDim.x), visible - start);
    for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
      for (long long t = 0; t < chunk; ++t)
        accumulator[d] +=
            scratchA[t] * toDouble(values[(start + t) * p.headDim + d]);
    __syncthreads();
  }

  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    out[rowIndex * p.headDim + d] = accumulator[d];
  if (threadIdx.x == 0)
    lse[rowIndex] = rowLse;
}

} // namespace

#define FA_ATTENTION_REFERENCE_ENTRY(name, T)                                  \
  extern "C" __global__ void name(const T *q, const T *k, const T *v,          \
                                  double *out, double *lse,                    \
                                  AttentionReferenceParams p) {                \
    attentionReference(q, k, v, out, lse, p);                                  \
  }

FA_ATTENTION_REFERENCE_ENTRY(attention_reference_bf16, __nv_bfloat16)
FA_ATTENTION_REFERENCE_ENTRY(attention_reference_f16, __half)
FA_ATTENTION_REFERENCE_ENTRY(attention_reference_f32, float)
