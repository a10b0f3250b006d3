//===- AttentionReference.cu - Attention in fp64 on the GPU ---------------===//
//
// The GPU twins of referenceAttentionCpu and referenceAttentionGradCpu (see
// Reference.h for the math), for problems too large for the CPU.
// Deliberately naive, every product in double:
//
//  - attention_reference_*: one block per query row (blockIdx.x = row,
//    blockIdx.y = batch * heads + head). Two sweeps over the keys: the first
//    finds the row's log-sum-exp, the second accumulates the softmax-weighted
//    values, a block-sized chunk of keys at a time.
//  - attention_grad_reference_rows_*: the same blocks; after the log-sum-exp,
//    a sweep for delta = sum_j P_ij dP_ij and one accumulating dq a chunk of
//    keys at a time. Writes lse and delta for the next kernel.
//  - attention_grad_reference_keys_*: one block per key row (blockIdx.y =
//    batch * kv_heads + kv_head), sweeping the rows of every query head of
//    its group that see it, a chunk at a time, for dk and dv.
//
// Variants (AttentionVariant.h) through p.rule (AttentionVariantRule.h, the
// CPU reference's code too): each sweep covers the causal/window key range
// of its row and skips keys the rule does not keep; scores go through
// ruleScore, dS gains ruleScoreDerivative. A row that keeps no key gets
// out = 0 and lse = -inf, and contributes nothing to the gradients. A sink
// joins each row's softmax statistics (its lse; an empty row's lse is the
// sink); dropout's Z_ij (ruleDropout, Philox.h's mask) multiplies P in the
// output and dV and dO . v in dP.
//
// Built into a fatbin embedded in the runtime and launched through the driver
// API like any library kernel.
//
//===----------------------------------------------------------------------===//

#include "AttentionReferenceParams.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

namespace {

__device__ double toDouble(float x) { return x; }
__device__ double toDouble(__half x) { return __half2float(x); }
__device__ double toDouble(__nv_bfloat16 x) { return __bfloat162float(x); }

/// dot(a, b) over the head dimension.
template <typename T>
__device__ double dot(const double *a, const T *b,
                      const AttentionReferenceParams &p) {
  double sum = 0;
  for (long long d = 0; d < p.headDim; ++d)
    sum += a[d] * toDouble(b[d]);
  return sum;
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

/// The sum of every thread's `value`, returned to all of them; `scratch`
/// holds blockDim.x doubles.
__device__ double blockSum(double value, double *scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned t = 1; t < blockDim.x; ++t)
      value += scratch[t];
    scratch[0] = value;
  }
  __syncthreads();
  double total = scratch[0];
  __syncthreads();
  return total;
}

/// One query row of a block-per-row kernel: where its tensors are and which
/// keys it may see.
template <typename T> struct QueryRow {
  long long index; // Into [batch * heads * seq_q].
  long long batch, head, row;
  const T *keys; // The row's kv head.
  const T *values;
  long long first, end; // The rule's key range [first, end).

  __device__ QueryRow(const T *k, const T *v,
                      const AttentionReferenceParams &p) {
    row = blockIdx.x;
    head = blockIdx.y % p.heads;
    batch = blockIdx.y / p.heads;
    const long long kvHead = head / (p.heads / p.kvHeads);
    index = blockIdx.y * p.seqQ + row;
    keys = k + (batch * p.kvHeads + kvHead) * p.seqKv * p.headDim;
    values = v + (batch * p.kvHeads + kvHead) * p.seqKv * p.headDim;
    ruleKeyRange(p.rule, row, first, end);
  }

  __device__ bool keeps(long long j, const AttentionReferenceParams &p) const {
    return ruleKeeps(p.rule, batch, head, row, j);
  }

  /// s_ij = scale * q_i . k_j, before the variant's score function.
  __device__ double rawScore(const double *query, long long j,
                             const AttentionReferenceParams &p) const {
    return p.scale * dot(query, keys + j * p.headDim, p);
  }

  /// s'_ij: the score the softmax sees.
  __device__ double score(const double *query, long long j,
                          const AttentionReferenceParams &p) const {
    return ruleScore(p.rule, rawScore(query, j, p), head, row, j);
  }

  /// P_ij, 0 for a key the row does not keep.
  __device__ double weight(const double *query, long long j, double lse,
                           const AttentionReferenceParams &p) const {
    return j < end && keeps(j, p) ? exp(score(query, j, p) - lse) : 0.0;
  }

  /// Z_ij: dropout's factor (1 without dropout).
  __device__ double dropout(long long j,
                            const AttentionReferenceParams &p) const {
    return ruleDropout(p.rule, batch, head, row, j);
  }
};

/// The row's log-sum-exp, returned to every thread: each thread's softmax
/// statistics over its keys, merged by thread 0. `scratchA` and `scratchB`
/// hold blockDim.x doubles each.
template <typename T>
__device__ double rowLogSumExp(const double *query, const QueryRow<T> &row,
                               const AttentionReferenceParams &p,
                               double *scratchA, double *scratchB) {
  double max = 0, sum = 0;
  for (long long j = row.first + threadIdx.x; j < row.end; j += blockDim.x)
    if (row.keeps(j, p))
      mergeSoftmaxStats(max, sum, row.score(query, j, p), 1.0);
  scratchA[threadIdx.x] = max;
  scratchB[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned t = 1; t < blockDim.x; ++t)
      mergeSoftmaxStats(max, sum, scratchA[t], scratchB[t]);
    if (p.rule.sinks) // The sink: one more term of the denominator.
      mergeSoftmaxStats(max, sum, p.rule.sinks[row.head], 1.0);
    scratchB[0] = sum > 0 ? max + log(sum) : -CUDART_INF; // No kept key.
  }
  __syncthreads();
  const double lse = scratchB[0];
  __syncthreads();
  return lse;
}

/// accumulator[d] += sum_t weights[t] * rows[t * head_dim + d] over a chunk
/// of `count` rows, each thread the dimensions it owns.
template <typename T>
__device__ void accumulateRows(double *accumulator, const double *weights,
                               const T *rows, long long count,
                               const AttentionReferenceParams &p) {
  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    for (long long t = 0; t < count; ++t)
      accumulator[d] += weights[t] * toDouble(rows[t * p.headDim + d]);
}

template <typename T>
__device__ void loadRow(double *to, const T *from,
                        const AttentionReferenceParams &p) {
  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    to[d] = toDouble(from[d]);
}

__device__ void zeroRow(double *row, const AttentionReferenceParams &p) {
  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    row[d] = 0;
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

  const QueryRow<T> row(k, v, p);
  loadRow(query, q + row.index * p.headDim, p);
  zeroRow(accumulator, p);
  __syncthreads();
  const double rowLse = rowLogSumExp(query, row, p, scratchA, scratchB);

  // Weights of a chunk of keys, then every thread adds the chunk's weighted
  // values into the output dimensions it owns.
  for (long long start = row.first; start < row.end; start += blockDim.x) {
    const long long j = start + threadIdx.x;
    scratchA[threadIdx.x] =
        j < row.end ? row.weight(query, j, rowLse, p) * row.dropout(j, p) : 0.0;
    __syncthreads();
    accumulateRows(accumulator, scratchA, row.values + start * p.headDim,
                   min(static_cast<long long>(blockDim.x), row.end - start), p);
    __syncthreads();
  }

  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    out[row.index * p.headDim + d] = accumulator[d];
  if (threadIdx.x == 0)
    lse[row.index] = rowLse;
}

template <typename T>
__device__ void attentionGradRows(const T *q, const T *k, const T *v,
                                  const T *dout, double *dq, double *lse,
                                  double *delta, AttentionReferenceParams p) {
  // Shared: the query and dout rows, the dq accumulator, two scratch arrays.
  extern __shared__ double shared[];
  double *query = shared;
  double *gradOut = query + p.headDim;
  double *accumulator = gradOut + p.headDim;
  double *scratchA = accumulator + p.headDim;
  double *scratchB = scratchA + blockDim.x;

  const QueryRow<T> row(k, v, p);
  loadRow(query, q + row.index * p.headDim, p);
  loadRow(gradOut, dout + row.index * p.headDim, p);
  zeroRow(accumulator, p);
  __syncthreads();
  const double rowLse = rowLogSumExp(query, row, p, scratchA, scratchB);

  // delta = sum_j P_ij dP_ij, dP_ij = Z_ij dout_i . v_j: dot(dout_i, out_i).
  double partial = 0;
  for (long long j = row.first + threadIdx.x; j < row.end; j += blockDim.x)
    if (row.keeps(j, p))
      partial += exp(row.score(query, j, p) - rowLse) * row.dropout(j, p) *
                 dot(gradOut, row.values + j * p.headDim, p);
  const double rowDelta = blockSum(partial, scratchA);

  // dS_ij of a chunk of keys, then dq += dS k over the chunk.
  for (long long start = row.first; start < row.end; start += blockDim.x) {
    long long j = start + threadIdx.x;
    double dscore = 0;
    if (j < row.end && row.keeps(j, p)) {
      double raw = row.rawScore(query, j, p);
      dscore =
          exp(ruleScore(p.rule, raw, row.head, row.row, j) - rowLse) *
          (row.dropout(j, p) * dot(gradOut, row.values + j * p.headDim, p) -
           rowDelta) *
          ruleScoreDerivative(p.rule, raw);
    }
    scratchA[threadIdx.x] = dscore;
    __syncthreads();
    accumulateRows(accumulator, scratchA, row.keys + start * p.headDim,
                   min(static_cast<long long>(blockDim.x), row.end - start), p);
    __syncthreads();
  }

  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x)
    dq[row.index * p.headDim + d] = p.scale * accumulator[d];
  if (threadIdx.x == 0) {
    lse[row.index] = rowLse;
    delta[row.index] = rowDelta;
  }
}

template <typename T>
__device__ void attentionGradKeys(const T *q, const T *k, const T *v,
                                  const T *dout, const double *lse,
                                  const double *delta, double *dk, double *dv,
                                  AttentionReferenceParams p) {
  // Shared: the key and value rows, the dk and dv accumulators, and the P
  // and dS of a chunk of query rows.
  extern __shared__ double shared[];
  double *key = shared;
  double *value = key + p.headDim;
  double *dkAccumulator = value + p.headDim;
  double *dvAccumulator = dkAccumulator + p.headDim;
  double *weights = dvAccumulator + p.headDim;
  double *dscores = weights + blockDim.x;

  const long long keyRow = blockIdx.x;
  const long long batch = blockIdx.y / p.kvHeads;
  const long long kvHead = blockIdx.y % p.kvHeads;
  const long long group = p.heads / p.kvHeads;
  const long long keyIndex = blockIdx.y * p.seqKv + keyRow;
  loadRow(key, k + keyIndex * p.headDim, p);
  loadRow(value, v + keyIndex * p.headDim, p);
  zeroRow(dkAccumulator, p);
  zeroRow(dvAccumulator, p);
  __syncthreads();

  // The query rows whose causal/window range holds this key; the rule
  // decides the rest per row.
  long long firstQuery, endQuery;
  ruleQueryRange(p.rule, keyRow, firstQuery, endQuery);
  for (long long member = 0; member < group; ++member) {
    const long long head = kvHead * group + member;
    const long long rows = (batch * p.heads + head) * p.seqQ;
    for (long long start = firstQuery; start < endQuery; start += blockDim.x) {
      long long i = start + threadIdx.x;
      weights[threadIdx.x] = dscores[threadIdx.x] = 0;
      if (i < endQuery && ruleKeeps(p.rule, batch, head, i, keyRow)) {
        long long row = rows + i;
        double raw = p.scale * dot(key, q + row * p.headDim, p);
        double weight = exp(ruleScore(p.rule, raw, head, i, keyRow) - lse[row]);
        double dropout = ruleDropout(p.rule, batch, head, i, keyRow);
        weights[threadIdx.x] = weight * dropout;
        dscores[threadIdx.x] =
            weight *
            (dropout * dot(value, dout + row * p.headDim, p) - delta[row]) *
            ruleScoreDerivative(p.rule, raw);
      }
      __syncthreads();
      long long count =
          min(static_cast<long long>(blockDim.x), endQuery - start);
      long long first = (rows + start) * p.headDim;
      accumulateRows(dvAccumulator, weights, dout + first, count, p);
      accumulateRows(dkAccumulator, dscores, q + first, count, p);
      __syncthreads();
    }
  }

  for (long long d = threadIdx.x; d < p.headDim; d += blockDim.x) {
    dk[keyIndex * p.headDim + d] = p.scale * dkAccumulator[d];
    dv[keyIndex * p.headDim + d] = dvAccumulator[d];
  }
}

} // namespace

#define FA_ATTENTION_REFERENCE_ENTRIES(suffix, T)                              \
  extern "C" __global__ void attention_reference_##suffix(                     \
      const T *q, const T *k, const T *v, double *out, double *lse,            \
      AttentionReferenceParams p) {                                            \
    attentionReference(q, k, v, out, lse, p);                                  \
  }                                                                            \
  extern "C" __global__ void attention_grad_reference_rows_##suffix(           \
      const T *q, const T *k, const T *v, const T *dout, double *dq,           \
      double *lse, double *delta, AttentionReferenceParams p) {                \
    attentionGradRows(q, k, v, dout, dq, lse, delta, p);                       \
  }                                                                            \
  extern "C" __global__ void attention_grad_reference_keys_##suffix(           \
      const T *q, const T *k, const T *v, const T *dout, const double *lse,    \
      const double *delta, double *dk, double *dv,                             \
      AttentionReferenceParams p) {                                            \
    attentionGradKeys(q, k, v, dout, lse, delta, dk, dv, p);                   \
  }

FA_ATTENTION_REFERENCE_ENTRIES(bf16, __nv_bfloat16)
FA_ATTENTION_REFERENCE_ENTRIES(f16, __half)
FA_ATTENTION_REFERENCE_ENTRIES(f32, float)
