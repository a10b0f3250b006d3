//===- TrainKernels.cu - The training loop's own kernels ------------------===//
//
// The device side of TrainKernels.h (the math is stated there and above each
// function here). Every kernel exists as <name>_bf16 and <name>_f32 for the
// activations' element type, except those that only see f32. Loads convert
// to f32, all arithmetic is f32, stores round to nearest even.
//
// Geometry (TrainKernelsGeometry.h), kBlockThreads = 256 threads a block:
//  - elementwise kernels (gelu, add, cast, adamW): a grid-stride loop;
//  - row kernels (embedding_forward, heads): one block per row of B*T in
//    grid.x, its threads striding over the row;
//  - embedding_backward_wte / _wpe: one block per (vocab row or position,
//    chunk of 256 channels), a thread per channel;
//  - cross_entropy: one block per row;
//  - bias_gradient: column chunks x row spans, then one pass over the spans;
//  - reduce_*: fixed spans into partials, then one block.
// No atomics anywhere: each output element is summed by one thread, or by a
// block in a fixed tree, in an order that depends only on the sizes.
//
//===----------------------------------------------------------------------===//

#include "TrainKernelsGeometry.h"

#include "fa/train/Dropout.h"

#include <cuda_bf16.h>

using namespace fa::train::geometry;

namespace {

__device__ float toFloat(float x) { return x; }
__device__ float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ T fromFloat(float x);
template <> __device__ float fromFloat<float>(float x) { return x; }
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/// This thread's first index of a grid-stride loop, and the stride.
__device__ long long gridFirst() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ long long gridStride() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

/// The channel this thread owns in a (row, chunk of kBlockThreads channels)
/// block.
__device__ long long chunkChannel() {
  return static_cast<long long>(blockIdx.y) * kBlockThreads + threadIdx.x;
}

/// *out = *out + sum when accumulating, else sum: a gradient added to or
/// overwritten.
__device__ void storeGradient(float *out, float sum, int accumulate) {
  *out = accumulate ? *out + sum : sum;
}

/// The sum of every thread's `value` (blockDim.x == kBlockThreads), in a
/// fixed tree, returned to all threads. Call at most once per kernel.
__device__ float blockSum(float value) {
  __shared__ float scratch[kBlockThreads];
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int width = kBlockThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width)
      scratch[threadIdx.x] += scratch[threadIdx.x + width];
    __syncthreads();
  }
  return scratch[0];
}

// --- Embedding --------------------------------------------------------------

/// x[row, c] = wte[tokens[row], c] + wpe[row % seq, c]; block = row.
template <typename T>
__device__ void embeddingForward(const int *tokens, const T *wte, const T *wpe,
                                 T *x, long long seq, long long channels) {
  const long long row = blockIdx.x;
  const T *tokenRow = wte + tokens[row] * channels;
  const T *positionRow = wpe + (row % seq) * channels;
  for (long long c = threadIdx.x; c < channels; c += blockDim.x)
    x[row * channels + c] =
        fromFloat<T>(toFloat(tokenRow[c]) + toFloat(positionRow[c]));
}

/// dwte[v, c] (+)= sum of dx[i, c] over the rows i < rows with
/// tokens[i] = v, in increasing i; block = (v, channel chunk).
///
/// The block walks the tokens a tile of kBlockThreads at a time: each thread
/// tests one token, the matches are listed in shared memory in row order (a
/// ballot per warp, then the warps' counts in order), and each thread adds
/// its channel of the listed rows. So the work is the tokens' scan plus the
/// rows that match, not every row for every channel.
///
/// A row that no token hits (seen[v] = 0: mark_tokens) is 0, or left alone
/// when accumulating, without the scan: most rows of a GPT-2-sized
/// vocabulary, whose scans took 3.9 ms of an 85M step.
template <typename T>
__device__ void
embeddingBackwardWte(const int *tokens, const T *dx, float *dwte,
                     long long rows, long long channels,
                     const unsigned char *seen, int accumulate) {
  constexpr int kWarps = kBlockThreads / kWarpThreads;
  __shared__ int matches[kBlockThreads]; // Rows of the tile, from its start.
  __shared__ int warpMatches[kWarps];
  const int vocabRow = blockIdx.x;
  const long long c = chunkChannel();
  if (!seen[vocabRow]) {
    if (!accumulate && c < channels)
      dwte[vocabRow * channels + c] = 0;
    return; // The whole block: no barrier is reached.
  }
  const int lane = threadIdx.x % kWarpThreads,
            warp = threadIdx.x / kWarpThreads;
  float sum = 0;
  for (long long tile = 0; tile < rows; tile += kBlockThreads) {
    const long long row = tile + threadIdx.x;
    const bool match = row < rows && tokens[row] == vocabRow;
    const unsigned warpMask = __ballot_sync(0xFFFFFFFFu, match);
    if (lane == 0)
      warpMatches[warp] = __popc(warpMask);
    __syncthreads();
    int before = 0, count = 0; // Matches of earlier warps, of all warps.
    for (int w = 0; w < kWarps; ++w) {
      before += w < warp ? warpMatches[w] : 0;
      count += warpMatches[w];
    }
    if (match)
      matches[before + __popc(warpMask & ((1u << lane) - 1))] = threadIdx.x;
    __syncthreads();
    if (c < channels)
      for (int k = 0; k < count; ++k)
        sum += toFloat(dx[(tile + matches[k]) * channels + c]);
    __syncthreads(); // matches and warpMatches are rewritten next tile.
  }
  if (c < channels)
    storeGradient(&dwte[vocabRow * channels + c], sum, accumulate);
}

/// dwpe[t, c] = sum over b = 0 .. batch-1 of dx[b, t, c] (overwritten: no
/// other gradient shares wpe); block = (t, channel chunk).
template <typename T>
__device__ void embeddingBackwardWpe(const T *dx, float *dwpe, long long batch,
                                     long long seq, long long channels) {
  const long long t = blockIdx.x;
  const long long c = chunkChannel();
  if (c >= channels)
    return;
  float sum = 0;
  for (long long b = 0; b < batch; ++b)
    sum += toFloat(dx[(b * seq + t) * channels + c]);
  dwpe[t * channels + c] = sum;
}

// --- Heads ------------------------------------------------------------------

/// part0, part1 or part2 (a select, where an array would go to local memory).
template <typename Pointer>
__device__ Pointer selectPart(int part, Pointer part0, Pointer part1,
                              Pointer part2) {
  return part == 0 ? part0 : part == 1 ? part1 : part2;
}

/// One 16-byte chunk of a row: what one thread moves when a head's D
/// elements are whole chunks (D = 64 in bf16 is 8 of them). The chunk moves
/// through one 128-bit load and store instead of 8 (bf16) or 4 (f32) scalar
/// ones, each with its own index arithmetic: the scalar copy ran at a sixth
/// of the memory bandwidth (85M GPT on an H100: 5.1 ms of a 34.7 ms step).
struct alignas(16) Chunk {
  unsigned int words[4];
};

/// Copies one element, or with `chunked` one 16-byte chunk.
template <typename T>
__device__ void copyStep(T *to, const T *from, int chunked) {
  if (chunked)
    *reinterpret_cast<Chunk *>(to) = *reinterpret_cast<const Chunk *>(from);
  else
    *to = *from;
}

/// Calls visit(packed offset, part, head offset) for each step of packed
/// row (b, t) = blockIdx.x of [B, T, parts * C] (C = H * D): where its
/// column lives in the head-major tensors [B, H, T, D]. A step is one
/// element, or with `chunked` one 16-byte chunk (the launcher checks D and
/// every pointer's alignment).
template <typename T, typename Visit>
__device__ void forEachHeadStep(long long seq, long long heads,
                                long long headDim, int parts, int chunked,
                                Visit visit) {
  const long long row = blockIdx.x;
  const long long b = row / seq, t = row % seq;
  // Within a row every index fits in 32 bits: one row is parts * C elements.
  const int dim = static_cast<int>(headDim);
  const int channels = static_cast<int>(heads) * dim;
  const int width = parts * channels;
  const int step = chunked ? static_cast<int>(sizeof(Chunk) / sizeof(T)) : 1;
  for (int col = threadIdx.x * step; col < width; col += blockDim.x * step) {
    const int part = col / channels, inPart = col % channels;
    const int h = inPart / dim, d = inPart % dim;
    visit(row * width + col, part, ((b * heads + h) * seq + t) * headDim + d);
  }
}

/// parts[p][b, h, t, d] = packed[b, t, p*C + h*D + d]; block = row (b, t).
template <typename T>
__device__ void unpackHeads(const T *packed, T *part0, T *part1, T *part2,
                            long long seq, long long heads, long long headDim,
                            int parts, int chunked) {
  forEachHeadStep<T>(seq, heads, headDim, parts, chunked,
                     [&](long long at, int part, long long headAt) {
                       copyStep(selectPart(part, part0, part1, part2) + headAt,
                                packed + at, chunked);
                     });
}

/// The inverse: packed[b, t, p*C + h*D + d] = parts[p][b, h, t, d].
template <typename T>
__device__ void packHeads(const T *part0, const T *part1, const T *part2,
                          T *packed, long long seq, long long heads,
                          long long headDim, int parts, int chunked) {
  forEachHeadStep<T>(seq, heads, headDim, parts, chunked,
                     [&](long long at, int part, long long headAt) {
                       copyStep(packed + at,
                                selectPart(part, part0, part1, part2) + headAt,
                                chunked);
                     });
}

// --- GELU and elementwise ---------------------------------------------------

constexpr float kGeluScale = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

/// gelu(u) = 0.5 u (1 + tanh(z)), z = sqrt(2/pi) (u + 0.044715 u^3).
__device__ float gelu(float u) {
  const float z = kGeluScale * (u + kGeluCubic * u * u * u);
  return 0.5f * u * (1.0f + tanhf(z));
}

/// gelu'(u) = 0.5 (1 + tanh z) + 0.5 u (1 - tanh^2 z) dz/du,
/// dz/du = sqrt(2/pi) (1 + 3 * 0.044715 u^2).
__device__ float geluDerivative(float u) {
  const float z = kGeluScale * (u + kGeluCubic * u * u * u);
  const float th = tanhf(z);
  const float dz = kGeluScale * (1.0f + 3.0f * kGeluCubic * u * u);
  return 0.5f * (1.0f + th) + 0.5f * u * (1.0f - th * th) * dz;
}

/// A chunk's elements in registers: elementwise kernels move 16-byte chunks
/// (one 128-bit access instead of 8 bf16 or 4 f32 ones) when the launcher
/// found every pointer 16-byte aligned, and the last n % kLanes elements one
/// at a time.
template <typename T> struct alignas(16) Lanes {
  static constexpr int kCount = sizeof(Chunk) / sizeof(T);
  T values[kCount];
};

template <typename T>
__device__ Lanes<T> loadLanes(const T *base, long long c) {
  Lanes<T> lanes;
  *reinterpret_cast<Chunk *>(&lanes) = reinterpret_cast<const Chunk *>(base)[c];
  return lanes;
}

template <typename T>
__device__ void storeLanes(T *base, long long c, const Lanes<T> &lanes) {
  reinterpret_cast<Chunk *>(base)[c] = *reinterpret_cast<const Chunk *>(&lanes);
}

/// out[i] = op(in[i]...) for i < n, in f32 (toFloat, fromFloat), over the
/// grid: 16-byte chunks of every tensor when `chunked` (the launcher found
/// every pointer aligned), then the elements after the last whole chunk one
/// at a time. out may alias an input: each element, or chunk, is read, then
/// written, by the same thread.
template <typename T, typename Op, typename... In>
__device__ void mapElements(Op op, long long n, int chunked, T *out,
                            const In *...in) {
  constexpr int kLanes = Lanes<T>::kCount;
  const long long prefix = chunked ? n / kLanes * kLanes : 0;
  for (long long c = gridFirst(); c < prefix / kLanes; c += gridStride()) {
    Lanes<T> result;
    auto apply = [&](const Lanes<In> &...lanes) {
      for (int j = 0; j < kLanes; ++j)
        result.values[j] = fromFloat<T>(op(toFloat(lanes.values[j])...));
    };
    apply(loadLanes(in, c)...);
    storeLanes(out, c, result);
  }
  for (long long i = prefix + gridFirst(); i < n; i += gridStride())
    out[i] = fromFloat<T>(op(toFloat(in[i])...));
}

template <typename T>
__device__ void geluForward(const T *u, T *g, long long n, int chunked) {
  mapElements([](float x) { return gelu(x); }, n, chunked, g, u);
}

template <typename T>
__device__ void geluBackward(const T *u, const T *dg, T *du, long long n,
                             int chunked) {
  mapElements([](float x, float grad) { return grad * geluDerivative(x); }, n,
              chunked, du, u, dg);
}

/// out = a + b; out may alias a or b.
template <typename T>
__device__ void add(const T *a, const T *b, T *out, long long n, int chunked) {
  mapElements([](float x, float y) { return x + y; }, n, chunked, out, a, b);
}

/// What element n (of `block`, the Philox block of n / 8) is multiplied by.
__device__ float dropoutFactor(const fa::PhiloxCounter &block, long long n,
                               const DropoutMask &mask) {
  return fa::train::activationDropoutBits(block, static_cast<int>(n % 8)) >=
                 mask.threshold
             ? mask.scale
             : 0.0f;
}

__device__ fa::PhiloxCounter dropoutBlock(long long n,
                                          const DropoutMask &mask) {
  return fa::train::activationDropoutBlock(
      mask.seed, mask.site, mask.step, static_cast<unsigned long long>(n) / 8);
}

/// out = a + mask * b, or out = mask * b when `a` is null; out may alias a
/// or b. As mapElements: 16-byte chunks when `chunked`, whose elements share
/// one Philox block (a chunk holds 8 or 4 elements, so it never straddles
/// two), then the tail one element at a time.
template <typename T>
__device__ void dropoutAdd(const T *a, const T *b, T *out, long long n,
                           int chunked, DropoutMask mask) {
  constexpr int kLanes = Lanes<T>::kCount;
  const long long prefix = chunked ? n / kLanes * kLanes : 0;
  for (long long c = gridFirst(); c < prefix / kLanes; c += gridStride()) {
    const long long first = c * kLanes;
    const fa::PhiloxCounter block = dropoutBlock(first, mask);
    const Lanes<T> branch = loadLanes(b, c);
    Lanes<T> result;
    if (a != nullptr) {
      const Lanes<T> skip = loadLanes(a, c);
      for (int j = 0; j < kLanes; ++j)
        result.values[j] = fromFloat<T>(toFloat(skip.values[j]) +
                                        dropoutFactor(block, first + j, mask) *
                                            toFloat(branch.values[j]));
    } else {
      for (int j = 0; j < kLanes; ++j)
        result.values[j] = fromFloat<T>(dropoutFactor(block, first + j, mask) *
                                        toFloat(branch.values[j]));
    }
    storeLanes(out, c, result);
  }
  for (long long i = prefix + gridFirst(); i < n; i += gridStride()) {
    const float dropped =
        dropoutFactor(dropoutBlock(i, mask), i, mask) * toFloat(b[i]);
    out[i] = fromFloat<T>(a != nullptr ? toFloat(a[i]) + dropped : dropped);
  }
}

template <typename T>
__device__ void castFromF32(const float *values, T *out, long long n) {
  for (long long i = gridFirst(); i < n; i += gridStride())
    out[i] = fromFloat<T>(values[i]);
}

// --- Bias gradient ----------------------------------------------------------

/// partials[y, col] = sum of dy[row, col] over the rows of span y:
/// [y * span, min(rows, (y + 1) * span)). Block (kBiasColumns, kBiasRowLanes)
/// threads: thread x owns a 16-byte chunk of columns when `chunked` (cols a
/// whole number of chunks, dy aligned; one column otherwise), lane y adds
/// rows y, y + kBiasRowLanes, ... of the span, then lane 0 adds the lanes'
/// sums in lane order.
template <typename T>
__device__ void biasGradientPartials(const T *dy, float *partials,
                                     long long rows, long long cols,
                                     long long span, int chunked) {
  constexpr int kLanes = Lanes<T>::kCount;
  __shared__ float laneSums[kBiasRowLanes][kBiasColumns * kLanes];
  const int width = chunked ? kLanes : 1;
  const long long first =
      (static_cast<long long>(blockIdx.x) * kBiasColumns + threadIdx.x) * width;
  const long long begin = blockIdx.y * span;
  const long long end = min(rows, begin + span);
  float sums[kLanes] = {};
  if (first < cols && chunked) {
#pragma unroll 4
    for (long long row = begin + threadIdx.y; row < end; row += kBiasRowLanes) {
      const Lanes<T> lanes = loadLanes(dy + row * cols, first / kLanes);
      for (int k = 0; k < kLanes; ++k)
        sums[k] += toFloat(lanes.values[k]);
    }
  } else if (first < cols) {
    for (long long row = begin + threadIdx.y; row < end; row += kBiasRowLanes)
      sums[0] += toFloat(dy[row * cols + first]);
  }
  for (int k = 0; k < width; ++k)
    laneSums[threadIdx.y][threadIdx.x * width + k] = sums[k];
  __syncthreads();
  if (threadIdx.y != 0)
    return;
  for (int k = 0; k < width && first + k < cols; ++k) {
    float sum = sums[k];
    for (int lane = 1; lane < kBiasRowLanes; ++lane)
      sum += laneSums[lane][threadIdx.x * width + k];
    partials[blockIdx.y * cols + first + k] = sum;
  }
}

// --- Cross-entropy ----------------------------------------------------------

/// Online softmax statistics of a run of logits: their max and the sum of
/// exp(x - max), one element or one other run at a time. A NaN logit makes
/// the sum NaN; -inf logits add nothing.
struct SoftmaxStats {
  float max = -INFINITY;
  float sum = 0;

  __device__ void add(float x) {
    if (x > max) {
      sum = sum * expf(max - x) + 1.0f;
      max = x;
    } else if (x != -INFINITY) {
      sum += expf(x - max);
    }
  }
  /// Symmetric: merging a into b gives b into a's bits.
  __device__ void merge(const SoftmaxStats &other) {
    const float merged = fmaxf(max, other.max);
    if (merged == -INFINITY)
      return; // Both empty (or all -inf): nothing to add.
    sum = sum * expf(max - merged) + other.sum * expf(other.max - merged);
    max = merged;
  }
};

/// The block's statistics, merged in a fixed order (a butterfly per warp,
/// then the warps in order), returned to every thread.
__device__ SoftmaxStats blockSoftmaxStats(SoftmaxStats stats) {
  constexpr int kWarps = kBlockThreads / kWarpThreads;
  __shared__ SoftmaxStats warpStats[kWarps];
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
    SoftmaxStats other;
    other.max = __shfl_xor_sync(0xFFFFFFFFu, stats.max, offset);
    other.sum = __shfl_xor_sync(0xFFFFFFFFu, stats.sum, offset);
    stats.merge(other);
  }
  if (threadIdx.x % kWarpThreads == 0)
    warpStats[threadIdx.x / kWarpThreads] = stats;
  __syncthreads();
  SoftmaxStats block = warpStats[0];
  for (int w = 1; w < kWarps; ++w)
    block.merge(warpStats[w]);
  return block;
}

/// Four consecutive elements: the unit of a row's 16-byte logits loads (and
/// 8- or 16-byte dlogits stores) when `quads`.
template <typename T> struct alignas(4 * sizeof(T)) Quad {
  T values[4];
};

/// One block per row i: lse = max + log(sum_j exp(x_j - max)), losses[i] =
/// lse - x[target] (NaN for a target outside [0, vocab)); dlogits[i, j] =
/// (exp(x_j - max) / sum - [j == target]) * gradScale when dlogits is set.
/// The block's threads read the row once for the statistics (online: max
/// and sum in one pass) and once more for dlogits (from the L2 cache while
/// the rows of the blocks in flight fit in it; not at GPT-2's vocabulary,
/// 200 KB a row). With `quads` (vocab % 4 == 0, the rows 16-byte aligned)
/// the threads move four elements at a time; else one.
template <typename T>
__device__ void crossEntropy(const float *logits, const int *targets,
                             float *losses, T *dlogits, long long vocab,
                             float gradScale, int quads) {
  const long long row = blockIdx.x;
  const float *x = logits + row * vocab;
  const long long step = quads ? 4 : 1;
  SoftmaxStats stats;
  for (long long j = threadIdx.x * step; j < vocab; j += kBlockThreads * step)
    if (quads) {
      const Quad<float> q = *reinterpret_cast<const Quad<float> *>(x + j);
      for (float value : q.values)
        stats.add(value);
    } else {
      stats.add(x[j]);
    }
  const SoftmaxStats rowStats = blockSoftmaxStats(stats);

  const int target = targets[row];
  const bool valid = target >= 0 && target < vocab;
  if (threadIdx.x == 0)
    losses[row] = valid ? rowStats.max + logf(rowStats.sum) - x[target] : NAN;
  if (dlogits == nullptr)
    return;
  const float inverseSum = 1.0f / rowStats.sum;
  auto gradient = [&](long long j, float value) {
    const float probability = expf(value - rowStats.max) * inverseSum;
    const float onehot = j == target ? 1.0f : 0.0f;
    return fromFloat<T>((probability - onehot) * gradScale);
  };
  T *out = dlogits + row * vocab;
  for (long long j = threadIdx.x * step; j < vocab; j += kBlockThreads * step)
    if (quads) {
      const Quad<float> q = *reinterpret_cast<const Quad<float> *>(x + j);
      Quad<T> result;
      for (int k = 0; k < 4; ++k)
        result.values[k] = gradient(j + k, q.values[k]);
      *reinterpret_cast<Quad<T> *>(out + j) = result;
    } else {
      out[j] = gradient(j, x[j]);
    }
}

// --- Sums -------------------------------------------------------------------

/// partials[b] = sum of values[i] (squared when `squares`) over span b:
/// [b * span, min(n, (b + 1) * span)), each thread every blockDim.x-th
/// element, then blockSum.
template <bool squares>
__device__ void reducePartials(const float *values, float *partials,
                               long long n, long long span) {
  const long long begin = blockIdx.x * span;
  const long long end = min(n, begin + span);
  float sum = 0;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float value = values[i];
    sum += squares ? value * value : value;
  }
  sum = blockSum(sum);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

// --- AdamW ------------------------------------------------------------------

/// min(1, maxNorm / ||g||) with ||g||^2 = *normSquared; 1 when maxNorm <= 0
/// (normSquared is not read then) or the norm is 0. NaN when the norm is
/// not finite: the step then turns every parameter NaN, so an overflowing
/// gradient shows at once instead of being clipped to nothing.
__device__ float clipFactor(const float *normSquared, float maxNorm) {
  if (maxNorm <= 0)
    return 1.0f;
  const float squared = *normSquared;
  if (!isfinite(squared))
    return NAN;
  const float norm = sqrtf(squared);
  return norm > maxNorm ? maxNorm / norm : 1.0f;
}

/// TrainKernels.h's AdamW update of one element (torch.optim.AdamW:
/// decoupled weight decay on the parameter before the update): the new
/// parameter; m and v are updated in place.
__device__ float adamWElement(float param, float grad, float &m, float &v,
                              bool decays, float clip, const AdamWParams &p) {
  const float g = grad * clip;
  m = p.beta1 * m + (1.0f - p.beta1) * g;
  v = p.beta2 * v + (1.0f - p.beta2) * g * g;
  const float mHat = m / p.biasCorrection1;
  const float vHat = v / p.biasCorrection2;
  const float decayed = decays ? p.weightDecay : 0.0f;
  return param - p.lr * (mHat / (sqrtf(vHat) + p.eps) + decayed * param);
}

/// adamWElement over the n elements, then each one's working copy: 16-byte
/// chunks (4 f32 of params, grads, m and v; 4 decay flags; 4 working
/// values) when `chunked` (the launcher found every pointer 16-byte
/// aligned), then the last n % 4 one at a time. The step is bound by memory
/// (31 bytes an element in bf16): per-element 4-byte accesses reached about
/// 70% of the H100's bandwidth. Each element's arithmetic is the same either
/// way, so the chunks change no bit of the result.
template <typename T>
__device__ void adamW(float *params, const float *grads, float *m, float *v,
                      const unsigned char *decay, const float *normSquared,
                      T *working, long long n, int chunked, AdamWParams p) {
  const float clip = clipFactor(normSquared, p.maxNorm);
  constexpr int kLanes = Lanes<float>::kCount;
  const long long prefix = chunked ? n / kLanes * kLanes : 0;
  for (long long c = gridFirst(); c < prefix / kLanes; c += gridStride()) {
    Lanes<float> param = loadLanes(params, c), grad = loadLanes(grads, c),
                 mc = loadLanes(m, c), vc = loadLanes(v, c);
    const uchar4 decays = reinterpret_cast<const uchar4 *>(decay)[c];
    const unsigned char flags[kLanes] = {decays.x, decays.y, decays.z,
                                         decays.w};
    for (int j = 0; j < kLanes; ++j)
      param.values[j] =
          adamWElement(param.values[j], grad.values[j], mc.values[j],
                       vc.values[j], flags[j] != 0, clip, p);
    storeLanes(m, c, mc);
    storeLanes(v, c, vc);
    storeLanes(params, c, param);
    if (working != nullptr) {
      struct alignas(kLanes * sizeof(T)) Quad {
        T values[kLanes];
      } copy;
      for (int j = 0; j < kLanes; ++j)
        copy.values[j] = fromFloat<T>(param.values[j]);
      reinterpret_cast<Quad *>(working)[c] = copy;
    }
  }
  for (long long i = prefix + gridFirst(); i < n; i += gridStride()) {
    const float param =
        adamWElement(params[i], grads[i], m[i], v[i], decay[i] != 0, clip, p);
    params[i] = param;
    if (working != nullptr)
      working[i] = fromFloat<T>(param);
  }
}

} // namespace

// --- Entry points -----------------------------------------------------------

#define FA_TRAIN_KERNEL_ENTRIES(suffix, T)                                     \
  extern "C" __global__ void embedding_forward_##suffix(                       \
      const int *tokens, const T *wte, const T *wpe, T *x, long long seq,      \
      long long channels) {                                                    \
    embeddingForward(tokens, wte, wpe, x, seq, channels);                      \
  }                                                                            \
  extern "C" __global__ void embedding_backward_wte_##suffix(                  \
      const int *tokens, const T *dx, float *dwte, long long rows,             \
      long long channels, const unsigned char *seen, int accumulate) {         \
    embeddingBackwardWte(tokens, dx, dwte, rows, channels, seen, accumulate);  \
  }                                                                            \
  extern "C" __global__ void embedding_backward_wpe_##suffix(                  \
      const T *dx, float *dwpe, long long batch, long long seq,                \
      long long channels) {                                                    \
    embeddingBackwardWpe(dx, dwpe, batch, seq, channels);                      \
  }                                                                            \
  extern "C" __global__ void unpack_heads_##suffix(                            \
      const T *packed, T *part0, T *part1, T *part2, long long seq,            \
      long long heads, long long headDim, int parts, int chunked) {            \
    unpackHeads(packed, part0, part1, part2, seq, heads, headDim, parts,       \
                chunked);                                                      \
  }                                                                            \
  extern "C" __global__ void pack_heads_##suffix(                              \
      const T *part0, const T *part1, const T *part2, T *packed,               \
      long long seq, long long heads, long long headDim, int parts,            \
      int chunked) {                                                           \
    packHeads(part0, part1, part2, packed, seq, heads, headDim, parts,         \
              chunked);                                                        \
  }                                                                            \
  extern "C" __global__ void gelu_forward_##suffix(const T *u, T *g,           \
                                                   long long n, int chunked) { \
    geluForward(u, g, n, chunked);                                             \
  }                                                                            \
  extern "C" __global__ void gelu_backward_##suffix(                           \
      const T *u, const T *dg, T *du, long long n, int chunked) {              \
    geluBackward(u, dg, du, n, chunked);                                       \
  }                                                                            \
  extern "C" __global__ void add_##suffix(const T *a, const T *b, T *out,      \
                                          long long n, int chunked) {          \
    add(a, b, out, n, chunked);                                                \
  }                                                                            \
  extern "C" __global__ void dropout_add_##suffix(                             \
      const T *a, const T *b, T *out, long long n, int chunked,                \
      DropoutMask mask) {                                                      \
    dropoutAdd(a, b, out, n, chunked, mask);                                   \
  }                                                                            \
  extern "C" __global__ void cast_from_f32_##suffix(const float *values,       \
                                                    T *out, long long n) {     \
    castFromF32(values, out, n);                                               \
  }                                                                            \
  extern "C" __global__ void bias_gradient_partials_##suffix(                  \
      const T *dy, float *partials, long long rows, long long cols,            \
      long long span, int chunked) {                                           \
    biasGradientPartials(dy, partials, rows, cols, span, chunked);             \
  }                                                                            \
  extern "C" __global__ void cross_entropy_##suffix(                           \
      const float *logits, const int *targets, float *losses, T *dlogits,      \
      long long vocab, float gradScale, int quads) {                           \
    crossEntropy(logits, targets, losses, dlogits, vocab, gradScale, quads);   \
  }                                                                            \
  extern "C" __global__ void adamw_##suffix(                                   \
      float *params, const float *grads, float *m, float *v,                   \
      const unsigned char *decay, const float *normSquared, T *working,        \
      long long n, int chunked, AdamWParams p) {                               \
    adamW(params, grads, m, v, decay, normSquared, working, n, chunked, p);    \
  }

FA_TRAIN_KERNEL_ENTRIES(bf16, __nv_bfloat16)
FA_TRAIN_KERNEL_ENTRIES(f32, float)

/// seen[v] = 1 for each token v of tokens[0 .. rows) in [0, vocab) (the
/// caller cleared seen); many threads may store the same 1.
extern "C" __global__ void mark_tokens(const int *tokens, unsigned char *seen,
                                       long long rows, long long vocab) {
  for (long long i = gridFirst(); i < rows; i += gridStride()) {
    const int token = tokens[i];
    if (token >= 0 && token < vocab)
      seen[token] = 1;
  }
}

/// dbias[col] (+)= sum over y = 0 .. spans-1 of partials[y, col].
extern "C" __global__ void bias_gradient_finish(const float *partials,
                                                float *dbias, long long cols,
                                                long long spans,
                                                int accumulate) {
  for (long long col = gridFirst(); col < cols; col += gridStride()) {
    float sum = 0;
    for (long long y = 0; y < spans; ++y)
      sum += partials[y * cols + col];
    storeGradient(&dbias[col], sum, accumulate);
  }
}

extern "C" __global__ void reduce_sum_partials(const float *values,
                                               float *partials, long long n,
                                               long long span) {
  reducePartials<false>(values, partials, n, span);
}

extern "C" __global__ void reduce_sum_of_squares_partials(const float *values,
                                                          float *partials,
                                                          long long n,
                                                          long long span) {
  reducePartials<true>(values, partials, n, span);
}

/// result[0] = sum of partials[0 .. count), one block: thread t adds
/// partials t, t + 256, ..., then blockSum.
extern "C" __global__ void reduce_finish(const float *partials, float *result,
                                         long long count) {
  float sum = 0;
  for (long long i = threadIdx.x; i < count; i += blockDim.x)
    sum += partials[i];
  sum = blockSum(sum);
  if (threadIdx.x == 0)
    result[0] = sum;
}
