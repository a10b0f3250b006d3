//===- layernorm.cu - Hand-written LayerNorm kernels ----------------------===//
//
// The kernels layernorm.h describes, and the host code that picks one and
// launches it. Every kernel is a template over the element type T, the
// access width V (elements per load: 16 bytes' worth, or 1) and, for the
// resident ones, the threads per row G and the vectors per thread C; the
// host instantiates a fixed list of (G, C) shapes per (T, V) and takes the
// smallest that holds the row.
//
//===----------------------------------------------------------------------===//

#include "layernorm.h"

#include "cuda_check.h"

#include "fa/runtime/Error.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace fa::handwritten {
namespace {

using Index = std::int64_t;

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

//===----------------------------------------------------------------------===//
// Element types and vectors
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float toFloat(float value) { return value; }
__device__ __forceinline__ float toFloat(__half value) {
  return __half2float(value);
}
__device__ __forceinline__ float toFloat(__nv_bfloat16 value) {
  return __bfloat162float(value);
}

template <typename T> __device__ __forceinline__ T fromFloat(float value);
template <> __device__ __forceinline__ float fromFloat<float>(float value) {
  return value;
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float value) {
  return __float2half_rn(value);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}

/// Elements of T in one 16-byte access.
template <typename T> constexpr int kWideVector = 16 / sizeof(T);

/// V elements loaded or stored as one access (one 16-byte ld/st.global.v4
/// for V = kWideVector<T>): rows of a multiple of V elements start aligned.
template <typename T, int V> struct alignas(sizeof(T) * V) Vector {
  T values[V];
};

template <typename T, int V>
__device__ __forceinline__ Vector<T, V> load(const T *address) {
  return *reinterpret_cast<const Vector<T, V> *>(address);
}

template <typename T, int V>
__device__ __forceinline__ void store(T *address, const Vector<T, V> &value) {
  *reinterpret_cast<Vector<T, V> *>(address) = value;
}

/// load(address), or zeros when `valid` is false (masked lanes and rows).
template <typename T, int V>
__device__ __forceinline__ Vector<T, V> loadOrZero(const T *address,
                                                   bool valid) {
  if (valid)
    return load<T, V>(address);
  Vector<T, V> zero;
#pragma unroll
  for (int i = 0; i < V; ++i)
    zero.values[i] = fromFloat<T>(0.0f);
  return zero;
}

/// Stores V floats with the widest accesses their alignment allows (the
/// partial sums: rows of a multiple of V floats).
template <int V>
__device__ __forceinline__ void storeFloats(float *address,
                                            const float (&values)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int i = 0; i < V; i += 4)
      *reinterpret_cast<float4 *>(address + i) =
          make_float4(values[i], values[i + 1], values[i + 2], values[i + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i)
      address[i] = values[i];
  }
}

//===----------------------------------------------------------------------===//
// Reductions over the threads of a row
//===----------------------------------------------------------------------===//

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
  __device__ float2 operator()(float2 a, float2 b) const {
    return make_float2(a.x + b.x, a.y + b.y);
  }
};

/// Count, mean and sum of squared deviations from the mean of a set of
/// values: merged pairwise (Chan et al.), so a row's variance comes from
/// centred values in one pass over it.
struct Moments {
  float count;
  float mean;
  float m2;
};

struct MergeMoments {
  __device__ Moments operator()(Moments a, Moments b) const {
    if (b.count == 0.0f)
      return a;
    const float count = a.count + b.count;
    const float delta = b.mean - a.mean;
    const float share = b.count / count;
    return {count, a.mean + delta * share,
            a.m2 + b.m2 + delta * delta * a.count * share};
  }
};

__device__ __forceinline__ float shuffleXor(float value, int offset) {
  return __shfl_xor_sync(kFullMask, value, offset);
}
__device__ __forceinline__ float2 shuffleXor(float2 value, int offset) {
  return make_float2(shuffleXor(value.x, offset), shuffleXor(value.y, offset));
}
__device__ __forceinline__ Moments shuffleXor(Moments value, int offset) {
  return {shuffleXor(value.count, offset), shuffleXor(value.mean, offset),
          shuffleXor(value.m2, offset)};
}

/// Combines `value` over the `Lanes` lanes of each aligned group of a warp
/// (xor butterfly: every lane gets the result).
template <int Lanes, typename F, typename Combine>
__device__ __forceinline__ F warpReduce(F value, Combine combine) {
#pragma unroll
  for (int offset = Lanes / 2; offset > 0; offset /= 2)
    value = combine(value, shuffleXor(value, offset));
  return value;
}

/// Waits for the G threads of row group `group` of a block of B threads:
/// the whole block, or (G < B) the group alone on its named barrier 1 +
/// group (barrier 0 is __syncthreads').
template <int G, int B> __device__ __forceinline__ void syncGroup(int group) {
  if constexpr (G == B) {
    __syncthreads();
  } else {
    static_assert(B / G < 16, "a block has 16 named barriers");
    __barrier_sync_count(group + 1, G);
  }
}

/// Combines `value` over the G threads of a row, in a block of B threads of
/// B / G rows, and returns the result to all of them. Every thread of the
/// row must call it. Beyond a warp, each warp's result goes through shared
/// memory; consecutive calls alternate between two buffers, so one barrier
/// per call suffices: a buffer is rewritten only two calls later, after
/// every thread of the row has passed the barrier of the call in between,
/// and so finished reading it.
template <int G, int B, typename F, typename Combine>
__device__ __forceinline__ F rowReduce(F value, Combine combine, int &parity) {
  if constexpr (G <= kWarp) {
    return warpReduce<G>(value, combine);
  } else {
    constexpr int kWarps = G / kWarp;
    __shared__ F warpResults[2][B / G][kWarps];
    const int group = threadIdx.x / G;
    value = warpReduce<kWarp>(value, combine);
    if (threadIdx.x % kWarp == 0)
      warpResults[parity][group][threadIdx.x % G / kWarp] = value;
    syncGroup<G, B>(group);
    // Every thread combines the warps' results in the same order, so all
    // get the same bits (MergeMoments is not commutative).
    F total = warpResults[parity][group][0];
#pragma unroll
    for (int other = 1; other < kWarps; ++other)
      total = combine(total, warpResults[parity][group][other]);
    parity ^= 1;
    return total;
  }
}

//===----------------------------------------------------------------------===//
// Resident kernels: a row in registers
//===----------------------------------------------------------------------===//

/// Threads per block of a resident kernel with G threads per row: blocks of
/// 256 threads (several rows each) or of one row.
__host__ __device__ constexpr int blockThreadsFor(int groupThreads) {
  return groupThreads > 256 ? groupThreads : 256;
}

/// Forward, one row per group of G threads; vector v of the row (V
/// elements) lives in thread v % G as its chunk v / G.
template <typename T, int V, int G, int C>
__global__ void __launch_bounds__(blockThreadsFor(G))
    layerNormForwardResident(const T *__restrict__ x,
                             const T *__restrict__ weight,
                             const T *__restrict__ bias, T *__restrict__ y,
                             float *__restrict__ mean, float *__restrict__ rstd,
                             Index rows, int cols, float eps) {
  constexpr int B = blockThreadsFor(G);
  constexpr int R = B / G;
  const int lane = threadIdx.x % G;
  const Index row = static_cast<Index>(blockIdx.x) * R + threadIdx.x / G;
  // Threads of rows past the end still take part in the reductions.
  const bool active = row < rows;
  const int rowVectors = cols / V;
  const Index offset = active ? row * cols : 0;

  Vector<T, V> xs[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int v = c * G + lane;
    xs[c] = loadOrZero<T, V>(x + offset + static_cast<Index>(v) * V,
                             active && v < rowVectors);
  }

  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int i = 0; i < V; ++i)
      sum += toFloat(xs[c].values[i]);
  int parity = 0;
  const float rowMean =
      rowReduce<G, B>(sum, Add{}, parity) / static_cast<float>(cols);

  float squares = 0.0f;
#pragma unroll
  for (int c = 0; c < C; ++c)
    if (c * G + lane < rowVectors)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float centred = toFloat(xs[c].values[i]) - rowMean;
        squares += centred * centred;
      }
  const float rowRstd = rsqrtf(
      rowReduce<G, B>(squares, Add{}, parity) / static_cast<float>(cols) + eps);
  if (!active)
    return;

#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int v = c * G + lane;
    if (v >= rowVectors)
      continue;
    const Vector<T, V> w = load<T, V>(weight + v * V);
    const Vector<T, V> b = load<T, V>(bias + v * V);
    Vector<T, V> out;
#pragma unroll
    for (int i = 0; i < V; ++i)
      out.values[i] = fromFloat<T>((toFloat(xs[c].values[i]) - rowMean) *
                                       rowRstd * toFloat(w.values[i]) +
                                   toFloat(b.values[i]));
    store(y + offset + static_cast<Index>(v) * V, out);
  }
  if (lane == 0) {
    mean[row] = rowMean;
    rstd[row] = rowRstd;
  }
}

/// Backward, persistent: block b takes row tiles b, b + gridDim.x, ... of R
/// rows, one per group, and writes row b of the partial sums.
template <typename T, int V, int G, int C>
__global__ void __launch_bounds__(blockThreadsFor(G))
    layerNormBackwardResident(const T *__restrict__ x,
                              const T *__restrict__ weight,
                              const float *__restrict__ mean,
                              const float *__restrict__ rstd,
                              const T *__restrict__ dy, T *__restrict__ dx,
                              float *__restrict__ partialDweight,
                              float *__restrict__ partialDbias, Index rows,
                              int cols) {
  constexpr int B = blockThreadsFor(G);
  constexpr int R = B / G;
  const int lane = threadIdx.x % G;
  const int group = threadIdx.x / G;
  const int rowVectors = cols / V;

  Vector<T, V> ws[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int v = c * G + lane;
    ws[c] = loadOrZero<T, V>(weight + v * V, v < rowVectors);
  }
  // This thread's columns' sums of dy * xhat and dy over its rows.
  float dweight[C][V], dbias[C][V];
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int i = 0; i < V; ++i)
      dweight[c][i] = dbias[c][i] = 0.0f;

  int parity = 0;
  const Index rowStride = static_cast<Index>(gridDim.x) * R;
  // The loop's trip count is the same for the whole block (rowReduce may
  // synchronise it); rows past the end are masked.
  for (Index tile = static_cast<Index>(blockIdx.x) * R; tile < rows;
       tile += rowStride) {
    const Index row = tile + group;
    const bool active = row < rows;
    const Index offset = active ? row * cols : 0;
    Vector<T, V> xs[C], dys[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int v = c * G + lane;
      const bool valid = active && v < rowVectors;
      xs[c] = loadOrZero<T, V>(x + offset + static_cast<Index>(v) * V, valid);
      dys[c] = loadOrZero<T, V>(dy + offset + static_cast<Index>(v) * V, valid);
    }
    const float rowMean = active ? mean[row] : 0.0f;
    const float rowRstd = active ? rstd[row] : 0.0f;

    // Masked elements have dy = 0, so they add nothing below.
    float2 sums = make_float2(0.0f, 0.0f); // sum(g), sum(g * xhat)
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xhat = (toFloat(xs[c].values[i]) - rowMean) * rowRstd;
        const float d = toFloat(dys[c].values[i]);
        const float g = d * toFloat(ws[c].values[i]);
        sums.x += g;
        sums.y += g * xhat;
        dweight[c][i] += d * xhat;
        dbias[c][i] += d;
      }
    sums = rowReduce<G, B>(sums, Add{}, parity);
    const float meanG = sums.x / static_cast<float>(cols);
    const float meanGXhat = sums.y / static_cast<float>(cols);
    if (!active)
      continue;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int v = c * G + lane;
      if (v >= rowVectors)
        continue;
      Vector<T, V> out;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xhat = (toFloat(xs[c].values[i]) - rowMean) * rowRstd;
        const float g = toFloat(dys[c].values[i]) * toFloat(ws[c].values[i]);
        out.values[i] = fromFloat<T>(rowRstd * (g - meanG - xhat * meanGXhat));
      }
      store(dx + offset + static_cast<Index>(v) * V, out);
    }
  }

  float *dweightRow = partialDweight + static_cast<Index>(blockIdx.x) * cols;
  float *dbiasRow = partialDbias + static_cast<Index>(blockIdx.x) * cols;
  if constexpr (R == 1) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int v = c * G + lane;
      if (v < rowVectors) {
        storeFloats<V>(dweightRow + v * V, dweight[c]);
        storeFloats<V>(dbiasRow + v * V, dbias[c]);
      }
    }
  } else {
    // The R groups hold sums for the same columns: add them up in shared
    // memory, in group order.
    constexpr int kRowCapacity = G * C * V;
    __shared__ __align__(16) float groupSums[2][R][kRowCapacity];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int v = c * G + lane;
      if (v < rowVectors) {
        storeFloats<V>(&groupSums[0][group][v * V], dweight[c]);
        storeFloats<V>(&groupSums[1][group][v * V], dbias[c]);
      }
    }
    __syncthreads();
    for (int column = threadIdx.x; column < cols; column += B) {
      float dweightSum = 0.0f, dbiasSum = 0.0f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        dweightSum += groupSums[0][r][column];
        dbiasSum += groupSums[1][r][column];
      }
      dweightRow[column] = dweightSum;
      dbiasRow[column] = dbiasSum;
    }
  }
}

//===----------------------------------------------------------------------===//
// Kernels for rows of any length
//===----------------------------------------------------------------------===//

constexpr int kLoopThreads = 512;
/// Vectors each thread loads before using any (loads in flight).
constexpr int kLoopUnroll = 4;

/// Forward, one block per row: the row's moments in one pass (merged per
/// vector, then across threads), then a second pass that normalises.
template <typename T, int V>
__global__ void __launch_bounds__(kLoopThreads)
    layerNormForwardLoop(const T *__restrict__ x, const T *__restrict__ weight,
                         const T *__restrict__ bias, T *__restrict__ y,
                         float *__restrict__ mean, float *__restrict__ rstd,
                         int cols, float eps) {
  const Index row = blockIdx.x;
  const int rowVectors = cols / V;
  const T *xRow = x + row * cols;

  Moments moments = {0.0f, 0.0f, 0.0f};
  for (int first = threadIdx.x; first < rowVectors;
       first += kLoopThreads * kLoopUnroll) {
    Vector<T, V> xs[kLoopUnroll];
#pragma unroll
    for (int u = 0; u < kLoopUnroll; ++u) {
      const int v = first + u * kLoopThreads;
      xs[u] =
          loadOrZero<T, V>(xRow + static_cast<Index>(v) * V, v < rowVectors);
    }
#pragma unroll
    for (int u = 0; u < kLoopUnroll; ++u) {
      if (first + u * kLoopThreads >= rowVectors)
        break;
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < V; ++i)
        sum += toFloat(xs[u].values[i]);
      const float vectorMean = sum / V;
      float m2 = 0.0f;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float centred = toFloat(xs[u].values[i]) - vectorMean;
        m2 += centred * centred;
      }
      moments =
          MergeMoments{}(moments, {static_cast<float>(V), vectorMean, m2});
    }
  }
  int parity = 0;
  moments =
      rowReduce<kLoopThreads, kLoopThreads>(moments, MergeMoments{}, parity);
  const float rowMean = moments.mean;
  const float rowRstd = rsqrtf(moments.m2 / static_cast<float>(cols) + eps);

  T *yRow = y + row * cols;
#pragma unroll 2
  for (int v = threadIdx.x; v < rowVectors; v += kLoopThreads) {
    const Vector<T, V> xv = load<T, V>(xRow + static_cast<Index>(v) * V);
    const Vector<T, V> w = load<T, V>(weight + static_cast<Index>(v) * V);
    const Vector<T, V> b = load<T, V>(bias + static_cast<Index>(v) * V);
    Vector<T, V> out;
#pragma unroll
    for (int i = 0; i < V; ++i)
      out.values[i] = fromFloat<T>((toFloat(xv.values[i]) - rowMean) * rowRstd *
                                       toFloat(w.values[i]) +
                                   toFloat(b.values[i]));
    store(yRow + static_cast<Index>(v) * V, out);
  }
  if (threadIdx.x == 0) {
    mean[row] = rowMean;
    rstd[row] = rowRstd;
  }
}

/// Backward of long rows, first kernel, one block per row: sum(g) and
/// sum(g * xhat) of the row, g = dy * weight.
template <typename T, int V>
__global__ void __launch_bounds__(kLoopThreads)
    layerNormBackwardRowSums(const T *__restrict__ x,
                             const T *__restrict__ weight,
                             const float *__restrict__ mean,
                             const float *__restrict__ rstd,
                             const T *__restrict__ dy,
                             float2 *__restrict__ rowSums, int cols) {
  const Index row = blockIdx.x;
  const int rowVectors = cols / V;
  const T *xRow = x + row * cols;
  const T *dyRow = dy + row * cols;
  const float rowMean = mean[row], rowRstd = rstd[row];

  float2 sums = make_float2(0.0f, 0.0f);
  for (int first = threadIdx.x; first < rowVectors;
       first += kLoopThreads * kLoopUnroll) {
    Vector<T, V> xs[kLoopUnroll], dys[kLoopUnroll], ws[kLoopUnroll];
#pragma unroll
    for (int u = 0; u < kLoopUnroll; ++u) {
      const int v = first + u * kLoopThreads;
      const Index at = static_cast<Index>(v) * V;
      const bool valid = v < rowVectors;
      xs[u] = loadOrZero<T, V>(xRow + at, valid);
      dys[u] = loadOrZero<T, V>(dyRow + at, valid);
      ws[u] = loadOrZero<T, V>(weight + at, valid);
    }
#pragma unroll
    for (int u = 0; u < kLoopUnroll; ++u)
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xhat = (toFloat(xs[u].values[i]) - rowMean) * rowRstd;
        const float g = toFloat(dys[u].values[i]) * toFloat(ws[u].values[i]);
        sums.x += g;
        sums.y += g * xhat;
      }
  }
  int parity = 0;
  sums = rowReduce<kLoopThreads, kLoopThreads>(sums, Add{}, parity);
  if (threadIdx.x == 0)
    rowSums[row] = sums;
}

constexpr int kColumnThreads = 256;
/// Rows each thread loads before using any.
constexpr int kColumnUnroll = 4;

/// Backward of long rows, second kernel: block (t, r) handles the
/// kColumnThreads vectors of column tile t over row group r (rows
/// [r * rowsPerGroup, (r + 1) * rowsPerGroup)): dx, and row r of the partial
/// sums for its columns.
template <typename T, int V>
__global__ void __launch_bounds__(kColumnThreads) layerNormBackwardColumns(
    const T *__restrict__ x, const T *__restrict__ weight,
    const float *__restrict__ mean, const float *__restrict__ rstd,
    const T *__restrict__ dy, const float2 *__restrict__ rowSums,
    T *__restrict__ dx, float *__restrict__ partialDweight,
    float *__restrict__ partialDbias, Index rows, int cols,
    Index rowsPerGroup) {
  const int v = blockIdx.x * kColumnThreads + threadIdx.x;
  if (v >= cols / V)
    return; // No barriers below.
  const Index column = static_cast<Index>(v) * V;
  const Index first = static_cast<Index>(blockIdx.y) * rowsPerGroup;
  const Index end = min(rows, first + rowsPerGroup);
  const float invCols = 1.0f / static_cast<float>(cols);

  const Vector<T, V> w = load<T, V>(weight + column);
  float dweight[V], dbias[V];
#pragma unroll
  for (int i = 0; i < V; ++i)
    dweight[i] = dbias[i] = 0.0f;

  for (Index base = first; base < end; base += kColumnUnroll) {
    Vector<T, V> xs[kColumnUnroll], dys[kColumnUnroll];
#pragma unroll
    for (int u = 0; u < kColumnUnroll; ++u) {
      const bool valid = base + u < end;
      const Index at = (valid ? base + u : first) * cols + column;
      xs[u] = loadOrZero<T, V>(x + at, valid);
      dys[u] = loadOrZero<T, V>(dy + at, valid);
    }
#pragma unroll
    for (int u = 0; u < kColumnUnroll; ++u) {
      const Index row = base + u;
      if (row >= end)
        break;
      const float rowMean = mean[row], rowRstd = rstd[row];
      const float2 sums = rowSums[row];
      const float meanG = sums.x * invCols, meanGXhat = sums.y * invCols;
      Vector<T, V> out;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float xhat = (toFloat(xs[u].values[i]) - rowMean) * rowRstd;
        const float d = toFloat(dys[u].values[i]);
        const float g = d * toFloat(w.values[i]);
        out.values[i] = fromFloat<T>(rowRstd * (g - meanG - xhat * meanGXhat));
        dweight[i] += d * xhat;
        dbias[i] += d;
      }
      store(dx + row * cols + column, out);
    }
  }
  const Index partialRow = static_cast<Index>(blockIdx.y) * cols;
  storeFloats<V>(partialDweight + partialRow + column, dweight);
  storeFloats<V>(partialDbias + partialRow + column, dbias);
}

/// dweight and dbias: the column sums of the partial sums [partialRows,
/// cols]. A block takes 32 columns; each of its 32 warps sums every 32nd
/// partial row (one coalesced 128-byte row segment per warp and step), then
/// warp w adds up column w across the warps.
__global__ void __launch_bounds__(kWarp *kWarp)
    layerNormBackwardParams(const float *__restrict__ partialDweight,
                            const float *__restrict__ partialDbias,
                            float *__restrict__ dweight,
                            float *__restrict__ dbias, int partialRows,
                            int cols) {
  __shared__ float sums[2][kWarp][kWarp + 1]; // +1: no bank conflicts.
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int column = blockIdx.x * kWarp + lane;
  float dweightSum = 0.0f, dbiasSum = 0.0f;
  if (column < cols)
#pragma unroll 4
    for (int p = warp; p < partialRows; p += kWarp) {
      dweightSum += partialDweight[static_cast<Index>(p) * cols + column];
      dbiasSum += partialDbias[static_cast<Index>(p) * cols + column];
    }
  sums[0][warp][lane] = dweightSum;
  sums[1][warp][lane] = dbiasSum;
  __syncthreads();
  const float2 total = warpReduce<kWarp>(
      make_float2(sums[0][lane][warp], sums[1][lane][warp]), Add{});
  const int outColumn = blockIdx.x * kWarp + warp;
  if (lane == 0 && outColumn < cols) {
    dweight[outColumn] = total.x;
    dbias[outColumn] = total.y;
  }
}

//===----------------------------------------------------------------------===//
// Host side: choosing and launching
//===----------------------------------------------------------------------===//

/// Pointers of a forward or backward problem, as the kernels take them.
struct ForwardArgs {
  const void *x, *weight, *bias;
  void *y;
  float *mean, *rstd;
  Index rows;
  int cols;
  float eps;
};

struct BackwardArgs {
  const void *x, *weight;
  const float *mean, *rstd;
  const void *dy;
  void *dx;
  float *partialDweight, *partialDbias;
  float2 *rowSums; // Non-resident only.
  Index rows;
  int cols;
  Index rowsPerGroup; // Non-resident only.
};

using ForwardLauncher = void (*)(const ForwardArgs &, dim3, cudaStream_t);
using BackwardLauncher = void (*)(const BackwardArgs &, dim3, cudaStream_t);

/// A resident layout's threads per row and vectors per thread.
struct ResidentShape {
  int groupThreads;
  int chunks;
};

// The resident shapes, in order of capacity (G * C vectors). The forward
// holds 4 vectors of x per thread (16 registers). The backward holds x, dy
// and weight and 2 * V column sums per vector, so 2 vectors per thread
// (48 registers for bf16) and blocks of at most 512 threads (1024 would
// leave 64 registers a thread).
constexpr ResidentShape kForwardShapes[] = {
    {4, 1},  {8, 1},   {16, 1},  {32, 1},  {32, 2},  {32, 4},
    {64, 4}, {128, 4}, {256, 4}, {512, 4}, {1024, 4}};
constexpr ResidentShape kBackwardShapes[] = {{4, 1},   {8, 1},   {16, 1},
                                             {32, 1},  {32, 2},  {64, 2},
                                             {128, 2}, {256, 2}, {512, 2}};

/// One kernel instantiation: its layout, its launcher, and its address for
/// occupancy queries.
template <typename Launcher> struct KernelEntry {
  RowLayout layout;
  Launcher launch;
  const void *kernel;
};

template <typename T, int V, int G, int C>
KernelEntry<ForwardLauncher> forwardResidentEntry() {
  auto launch = [](const ForwardArgs &a, dim3 grid, cudaStream_t stream) {
    layerNormForwardResident<T, V, G, C>
        <<<grid, blockThreadsFor(G), 0, stream>>>(
            static_cast<const T *>(a.x), static_cast<const T *>(a.weight),
            static_cast<const T *>(a.bias), static_cast<T *>(a.y), a.mean,
            a.rstd, a.rows, a.cols, a.eps);
  };
  return {
      {V, G, C, blockThreadsFor(G), true},
      launch,
      reinterpret_cast<const void *>(&layerNormForwardResident<T, V, G, C>)};
}

template <typename T, int V> KernelEntry<ForwardLauncher> forwardLoopEntry() {
  auto launch = [](const ForwardArgs &a, dim3 grid, cudaStream_t stream) {
    layerNormForwardLoop<T, V><<<grid, kLoopThreads, 0, stream>>>(
        static_cast<const T *>(a.x), static_cast<const T *>(a.weight),
        static_cast<const T *>(a.bias), static_cast<T *>(a.y), a.mean, a.rstd,
        a.cols, a.eps);
  };
  return {{V, kLoopThreads, 1, kLoopThreads, false},
          launch,
          reinterpret_cast<const void *>(&layerNormForwardLoop<T, V>)};
}

template <typename T, int V, int G, int C>
KernelEntry<BackwardLauncher> backwardResidentEntry() {
  auto launch = [](const BackwardArgs &a, dim3 grid, cudaStream_t stream) {
    layerNormBackwardResident<T, V, G, C>
        <<<grid, blockThreadsFor(G), 0, stream>>>(
            static_cast<const T *>(a.x), static_cast<const T *>(a.weight),
            a.mean, a.rstd, static_cast<const T *>(a.dy),
            static_cast<T *>(a.dx), a.partialDweight, a.partialDbias, a.rows,
            a.cols);
  };
  return {
      {V, G, C, blockThreadsFor(G), true},
      launch,
      reinterpret_cast<const void *>(&layerNormBackwardResident<T, V, G, C>)};
}

/// The non-resident backward's second kernel (dx and partial sums); see
/// rowSumsLauncher for the first.
template <typename T, int V> KernelEntry<BackwardLauncher> backwardLoopEntry() {
  auto launch = [](const BackwardArgs &a, dim3 grid, cudaStream_t stream) {
    layerNormBackwardColumns<T, V><<<grid, kColumnThreads, 0, stream>>>(
        static_cast<const T *>(a.x), static_cast<const T *>(a.weight), a.mean,
        a.rstd, static_cast<const T *>(a.dy), a.rowSums, static_cast<T *>(a.dx),
        a.partialDweight, a.partialDbias, a.rows, a.cols, a.rowsPerGroup);
  };
  return {{V, kColumnThreads, 1, kColumnThreads, false},
          launch,
          reinterpret_cast<const void *>(&layerNormBackwardColumns<T, V>)};
}

template <typename T, int V, std::size_t... I>
std::array<KernelEntry<ForwardLauncher>, sizeof...(I) + 1>
forwardEntries(std::index_sequence<I...>) {
  return {forwardResidentEntry<T, V, kForwardShapes[I].groupThreads,
                               kForwardShapes[I].chunks>()...,
          forwardLoopEntry<T, V>()};
}

template <typename T, int V, std::size_t... I>
std::array<KernelEntry<BackwardLauncher>, sizeof...(I) + 1>
backwardEntries(std::index_sequence<I...>) {
  return {backwardResidentEntry<T, V, kBackwardShapes[I].groupThreads,
                                kBackwardShapes[I].chunks>()...,
          backwardLoopEntry<T, V>()};
}

/// The first resident entry whose capacity holds `cols`, else the last (the
/// loop).
template <typename Entry, std::size_t N>
const Entry &chooseEntry(const std::array<Entry, N> &entries,
                         std::int64_t cols) {
  for (const Entry &entry : entries)
    if (entry.layout.resident && entry.layout.capacity() >= cols)
      return entry;
  return entries.back();
}

template <typename T>
const KernelEntry<ForwardLauncher> &chooseForward(std::int64_t cols) {
  constexpr auto shapes = std::make_index_sequence<std::size(kForwardShapes)>();
  constexpr int wide = kWideVector<T>;
  static const auto wideEntries = forwardEntries<T, wide>(shapes);
  static const auto scalarEntries = forwardEntries<T, 1>(shapes);
  return cols % wide == 0 ? chooseEntry(wideEntries, cols)
                          : chooseEntry(scalarEntries, cols);
}

template <typename T>
const KernelEntry<BackwardLauncher> &chooseBackward(std::int64_t cols) {
  constexpr auto shapes =
      std::make_index_sequence<std::size(kBackwardShapes)>();
  constexpr int wide = kWideVector<T>;
  static const auto wideEntries = backwardEntries<T, wide>(shapes);
  static const auto scalarEntries = backwardEntries<T, 1>(shapes);
  return cols % wide == 0 ? chooseEntry(wideEntries, cols)
                          : chooseEntry(scalarEntries, cols);
}

const KernelEntry<ForwardLauncher> &chooseForward(DType dtype,
                                                  std::int64_t cols) {
  switch (dtype) {
  case DType::BF16:
    return chooseForward<__nv_bfloat16>(cols);
  case DType::F16:
    return chooseForward<__half>(cols);
  case DType::F32:
    return chooseForward<float>(cols);
  }
  throw Error("hand-written layernorm forward: unknown dtype");
}

const KernelEntry<BackwardLauncher> &chooseBackward(DType dtype,
                                                    std::int64_t cols) {
  switch (dtype) {
  case DType::BF16:
    return chooseBackward<__nv_bfloat16>(cols);
  case DType::F16:
    return chooseBackward<__half>(cols);
  case DType::F32:
    return chooseBackward<float>(cols);
  }
  throw Error("hand-written layernorm backward: unknown dtype");
}

template <typename T, int V>
void launchRowSums(const BackwardArgs &a, dim3 grid, cudaStream_t stream) {
  layerNormBackwardRowSums<T, V><<<grid, kLoopThreads, 0, stream>>>(
      static_cast<const T *>(a.x), static_cast<const T *>(a.weight), a.mean,
      a.rstd, static_cast<const T *>(a.dy), a.rowSums, a.cols);
}

template <typename T> BackwardLauncher rowSumsLauncher(int vector) {
  return vector == kWideVector<T> ? &launchRowSums<T, kWideVector<T>>
                                  : &launchRowSums<T, 1>;
}

/// The non-resident backward's first kernel (row sums) for rows read
/// `vector` elements at a time.
BackwardLauncher rowSumsLauncher(DType dtype, int vector) {
  switch (dtype) {
  case DType::BF16:
    return rowSumsLauncher<__nv_bfloat16>(vector);
  case DType::F16:
    return rowSumsLauncher<__half>(vector);
  case DType::F32:
    return rowSumsLauncher<float>(vector);
  }
  throw Error("hand-written layernorm backward: unknown dtype");
}

/// Rows of x the kernels can index: cols fits an int with room for the
/// vector arithmetic, and grids stay within CUDA's limits.
void checkShape(const LayerNormShape &shape, const char *pass) {
  shape.validate();
  const std::string what =
      std::string("hand-written layernorm ") + pass + ": " + shape.describe();
  if (shape.cols >= (std::int64_t{1} << 30))
    throw Error(what + ": rows of 2^30 elements or more are not supported");
  if (shape.rows > 0x7fffffff)
    throw Error(what + ": more than 2^31 - 1 rows are not supported");
}

std::string kernelNameFor(const char *op, DType dtype,
                          const RowLayout &layout) {
  return std::string("handwritten_") + op + "_" + dtypeName(dtype) + "_" +
         layout.name();
}

/// What a launch error names: "kernel (grid 37x1, 256 threads)".
std::string describeLaunch(const std::string &kernel, dim3 grid, int block) {
  return kernel + " (grid " + std::to_string(grid.x) + "x" +
         std::to_string(grid.y) + ", " + std::to_string(block) + " threads)";
}

/// Blocks of `kernel` one SM runs at once with `blockThreads` threads;
/// throws (naming the kernel) when not even one fits.
int residentBlocksPerSm(const void *kernel, int blockThreads,
                        const std::string &name) {
  int blocks = 0;
  checkCuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel,
                                                          blockThreads, 0),
            "querying the occupancy of " + name);
  if (blocks < 1)
    throw Error(name + ": not one block of " + std::to_string(blockThreads) +
                " threads fits on an SM");
  return blocks;
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Threads per SM the backward keeps at most. Each block writes a row of
/// partial sums, so its grid is as small as keeps memory busy: 1024 threads,
/// each with 2 rows x 2 vectors of 16 bytes in flight, is 64 KiB per SM,
/// about twice what the H100's latency-bandwidth product asks for.
constexpr int kBackwardThreadsPerSm = 1024;

/// Rows a non-resident backward block adds up at least, so that writing and
/// reading back its partial sums (8 bytes per column) costs at most about a
/// quarter of reading x and dy for them.
constexpr std::int64_t kMinRowsPerGroup = 16;

constexpr const char *kParamsKernelName = "handwritten_layernorm_bwd_params";

LayerNormBackward::Plan planBackward(DType dtype, const LayerNormShape &shape,
                                     const DeviceInfo &device) {
  checkShape(shape, "backward");
  const KernelEntry<BackwardLauncher> &entry =
      chooseBackward(dtype, shape.cols);
  LayerNormBackward::Plan plan;
  plan.layout = entry.layout;
  plan.name = kernelNameFor("layernorm_bwd", dtype, plan.layout);
  plan.paramsName = kParamsKernelName;
  const int blocksPerSm = std::min(
      residentBlocksPerSm(entry.kernel, plan.layout.blockThreads, plan.name),
      std::max(1, kBackwardThreadsPerSm / plan.layout.blockThreads));
  const std::int64_t gridBlocks =
      static_cast<std::int64_t>(blocksPerSm) * device.multiprocessors;
  if (plan.layout.resident) {
    // Persistent: blocks loop over the row tiles, at most one each.
    plan.partialRows =
        std::min(ceilDiv(shape.rows, plan.layout.rowsPerBlock()), gridBlocks);
    plan.grid = dim3(static_cast<unsigned>(plan.partialRows));
    return plan;
  }
  const std::int64_t columnTiles =
      ceilDiv(shape.cols / plan.layout.vector, kColumnThreads);
  const std::int64_t groups = std::max<std::int64_t>(
      1, std::min(ceilDiv(gridBlocks, columnTiles),
                  ceilDiv(shape.rows, kMinRowsPerGroup)));
  plan.rowsPerGroup = ceilDiv(shape.rows, groups);
  plan.partialRows = ceilDiv(shape.rows, plan.rowsPerGroup);
  plan.grid = dim3(static_cast<unsigned>(columnTiles),
                   static_cast<unsigned>(plan.partialRows));
  return plan;
}

std::size_t partialBytes(const LayerNormBackward::Plan &plan,
                         const LayerNormShape &shape) {
  return static_cast<std::size_t>(plan.partialRows) *
         static_cast<std::size_t>(shape.cols) * sizeof(float);
}

const void *devicePointer(CUdeviceptr pointer) {
  return reinterpret_cast<const void *>(static_cast<std::uintptr_t>(pointer));
}
void *mutableDevicePointer(CUdeviceptr pointer) {
  return reinterpret_cast<void *>(static_cast<std::uintptr_t>(pointer));
}
float *floatPointer(CUdeviceptr pointer) {
  return static_cast<float *>(mutableDevicePointer(pointer));
}

} // namespace

std::string RowLayout::name() const {
  std::string vectorName = "vector" + std::to_string(vector);
  if (!resident)
    return "loop_" + vectorName;
  return "group" + std::to_string(groupThreads) + "_chunks" +
         std::to_string(chunks) + "_" + vectorName;
}

RowLayout forwardLayout(DType dtype, std::int64_t cols) {
  return chooseForward(dtype, cols).layout;
}

RowLayout backwardLayout(DType dtype, std::int64_t cols) {
  return chooseBackward(dtype, cols).layout;
}

LayerNormForward::LayerNormForward(DType dtype, const LayerNormShape &shape,
                                   double eps,
                                   const LayerNormForwardBuffers &buffers) {
  checkShape(shape, "forward");
  const KernelEntry<ForwardLauncher> &entry = chooseForward(dtype, shape.cols);
  rowLayout = entry.layout;
  name = kernelNameFor("layernorm_fwd", dtype, rowLayout);
  const dim3 grid(static_cast<unsigned>(
      rowLayout.resident ? ceilDiv(shape.rows, rowLayout.rowsPerBlock())
                         : shape.rows));
  const ForwardArgs args = {devicePointer(buffers.x),
                            devicePointer(buffers.weight),
                            devicePointer(buffers.bias),
                            mutableDevicePointer(buffers.y),
                            floatPointer(buffers.mean),
                            floatPointer(buffers.rstd),
                            shape.rows,
                            static_cast<int>(shape.cols),
                            static_cast<float>(eps)};
  launch = [launcher = entry.launch, args, grid,
            what = describeLaunch(name, grid, rowLayout.blockThreads)](
               cudaStream_t stream) {
    launcher(args, grid, stream);
    checkLaunch(what);
  };
}

LayerNormBackward::LayerNormBackward(DType dtype, const LayerNormShape &shape,
                                     const LayerNormBackwardBuffers &buffers,
                                     const DeviceInfo &device)
    : plan(planBackward(dtype, shape, device)),
      partialDweight("partial dweight", partialBytes(plan, shape)),
      partialDbias("partial dbias", partialBytes(plan, shape)) {
  if (!plan.layout.resident)
    rowSums.emplace("row sums",
                    static_cast<std::size_t>(shape.rows) * sizeof(float2));
  const BackwardArgs args = {
      devicePointer(buffers.x),
      devicePointer(buffers.weight),
      floatPointer(buffers.mean),
      floatPointer(buffers.rstd),
      devicePointer(buffers.dy),
      mutableDevicePointer(buffers.dx),
      floatPointer(partialDweight.get()),
      floatPointer(partialDbias.get()),
      rowSums ? static_cast<float2 *>(mutableDevicePointer(rowSums->get()))
              : nullptr,
      shape.rows,
      static_cast<int>(shape.cols),
      plan.rowsPerGroup};
  const dim3 rowSumsGrid(static_cast<unsigned>(shape.rows));
  const dim3 paramsGrid(static_cast<unsigned>(ceilDiv(shape.cols, kWarp)));
  launch = [rowSums = plan.layout.resident
                          ? nullptr
                          : rowSumsLauncher(dtype, plan.layout.vector),
            backward = chooseBackward(dtype, shape.cols).launch, args,
            rowSumsGrid, grid = plan.grid, paramsGrid,
            partialRows = static_cast<int>(plan.partialRows),
            dweight = floatPointer(buffers.dweight),
            dbias = floatPointer(buffers.dbias),
            rowSumsWhat =
                describeLaunch("handwritten_layernorm_bwd_row_sums_" +
                                   std::string(dtypeName(dtype)) + "_vector" +
                                   std::to_string(plan.layout.vector),
                               rowSumsGrid, kLoopThreads),
            backwardWhat =
                describeLaunch(plan.name, plan.grid, plan.layout.blockThreads),
            paramsWhat = describeLaunch(plan.paramsName, paramsGrid,
                                        kWarp * kWarp)](cudaStream_t stream) {
    if (rowSums) {
      rowSums(args, rowSumsGrid, stream);
      checkLaunch(rowSumsWhat);
    }
    backward(args, grid, stream);
    checkLaunch(backwardWhat);
    layerNormBackwardParams<<<paramsGrid, kWarp * kWarp, 0, stream>>>(
        args.partialDweight, args.partialDbias, dweight, dbias, partialRows,
        args.cols);
    checkLaunch(paramsWhat);
  };
}

void LayerNormBackward::fillWorkspace(std::uint8_t value, cudaStream_t stream) {
  partialDweight.fill(value, stream);
  partialDbias.fill(value, stream);
  if (rowSums)
    rowSums->fill(value, stream);
}

} // namespace fa::handwritten
