//===- attention_forward.cu - FlashAttention-2 forward --------------------===//
//
// out = softmax(scale * Q K^T) V and lse, the math of attention.h, as
// FlashAttention-2 computes it on sm80+ tensor cores.
//
// Tiles (FlashAttention-2's for head_dim 64 and 128): one block of 4 warps
// per 128 query rows of one (batch, head), stepping through the keys 64 at a
// time. Each warp owns 32 query rows, two m16 row blocks, so every K or V
// fragment it loads from shared memory feeds two mma.sync.
//
// Shared memory: Q [128][D], K [64][D], V [64][D], all XOR-swizzled (see
// attention_common.cuh): 32 KiB at D = 64, 64 KiB at D = 128 (two blocks
// per SM). Copies are cp.async, K and V alternating as in FlashAttention-2,
// a two-stage pipeline with one buffer each: V_n is fetched while S = Q K_n^T
// and the softmax are computed, K_{n-1} while P V_n is; each wait for a copy
// is followed by one block barrier, which is also what lets the next copy
// overwrite the tile just read. (Issuing K_{n-1} before the softmax, as
// FlashAttention-2 does, keeps the copy's addresses live beside S and O and
// made the D = 128 kernel spill.)
//
// Registers per warp and key step: S (32 x 64 f32, 64 per lane) as C
// fragments; after the online softmax they are rounded to 16 bits, two per
// register, and are then the A fragments of P V (C and A fragment layouts
// line up, so P never leaves registers); O (32 x D f32, D per lane)
// accumulates across the steps (255 registers at D = 128, no spills). Q
// stays in shared memory and is read per k-step (ldmatrix), as K; V is read
// with ldmatrix.trans since P V's B operand is V itself, stored [keys][D].
//
// Softmax: the running maximum is of unscaled scores; exponentials are
// exp2(s * scale * log2 e - max * scale * log2 e), one FFMA and one ex2 per
// score; each lane keeps a partial row sum over its own columns, reduced over
// the four lanes of the row once at the end, where O is divided by it.
//
// Key steps run from the last tile to the first, so the tiles that need a
// mask (the partial last tile of the keys; the causal diagonal) come first
// and the loop splits into a masked and an unmasked part; causal blocks stop
// at their diagonal, and their grid order puts the longest (last) query
// blocks first so that they do not finish last.
//
//===----------------------------------------------------------------------===//

#include "attention_common.cuh"

#include <climits>
#include <cmath>

namespace fa::handwritten {
namespace detail {
namespace {

template <int D> struct ForwardTiles {
  static constexpr int kBlockM = 128; // Query rows per block.
  static constexpr int kBlockN = 64;  // Keys per step.
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kWarpRows = kBlockM / kWarps;
  static constexpr int kRowBlocks = kWarpRows / 16; // m16 blocks per warp.
  static constexpr int kKeyTiles = kBlockN / 8;     // n8 tiles of S.
  static constexpr int kDimTiles = D / 8;           // n8 tiles of O.
  using QTile = Tile<kBlockM, D>;
  using KVTile = Tile<kBlockN, D>;
  static constexpr int kSharedBytes = QTile::kBytes + 2 * KVTile::kBytes;
};

struct ForwardParams {
  const void *q, *k, *v;
  void *out;
  float *lse; // May be null.
  int heads, kvHeads, seqQ, seqKv;
  bool causal;
  float scale;     // For lse, which is in natural log.
  float scaleLog2; // scale * log2(e): the softmax runs on exp2.
};

/// One block's work: its query rows, its kv head, and the state of its
/// online softmax; every lane holds the fragments of its warp's rows.
template <typename T, int D> struct ForwardBlock {
  using Tiles = ForwardTiles<D>;
  static constexpr int kRowBlocks = Tiles::kRowBlocks;
  static constexpr int kKeyTiles = Tiles::kKeyTiles;
  static constexpr int kDimTiles = Tiles::kDimTiles;
  using Scores = float[kRowBlocks][kKeyTiles][4];
  // P as the A fragments of P V: [row block][k-step of 16 keys].
  using Probabilities = uint32_t[kRowBlocks][Tiles::kBlockN / 16][4];

  const ForwardParams &p;
  const int lane, warpRow0; // The warp's first row within the block.
  int rowStart, rows;       // The block's first query row, and how many.
  const T *q, *k, *v;       // The block's rows; its kv head's keys, values.
  typename Tiles::QTile qTile;
  typename Tiles::KVTile kTile, vTile;
  LaneAddress<typename Tiles::QTile> qLanes; // A of Q K^T, the warp's rows.
  LaneAddress<typename Tiles::KVTile> kLanes, vLanes; // B of Q K^T, P V.
  TileCopy<Tiles::kThreads, typename Tiles::KVTile> keyCopy;

  float o[kRowBlocks][kDimTiles][4];
  float rowMax[kRowBlocks][2]; // Of unscaled scores; rows g and g + 8.
  float rowSum[kRowBlocks][2]; // Partial: this lane's columns only.

  __device__ ForwardBlock(const ForwardParams &params, unsigned char *shared)
      : p(params), lane(threadIdx.x % kWarpSize),
        warpRow0(threadIdx.x / kWarpSize * Tiles::kWarpRows) {
    // Causal blocks are scheduled longest first: y = 0 takes the last rows.
    const int rowBlock = p.causal ? gridDim.y - 1 - blockIdx.y : blockIdx.y;
    rowStart = rowBlock * Tiles::kBlockM;
    rows = min(Tiles::kBlockM, p.seqQ - rowStart);
    const int bh = blockIdx.x;
    const int kvIndex =
        bh / p.heads * p.kvHeads + bh % p.heads / (p.heads / p.kvHeads);
    q = static_cast<const T *>(p.q) +
        (static_cast<size_t>(bh) * p.seqQ + rowStart) * D;
    k = static_cast<const T *>(p.k) +
        static_cast<size_t>(kvIndex) * p.seqKv * D;
    v = static_cast<const T *>(p.v) +
        static_cast<size_t>(kvIndex) * p.seqKv * D;
    qTile.base = sharedAddress(shared);
    kTile.base = qTile.base + Tiles::QTile::kBytes;
    vTile.base = kTile.base + Tiles::KVTile::kBytes;
    qLanes = rowsOf16(qTile, warpRow0, lane);
    kLanes = pairsOf8(kTile, 0, lane);
    vLanes = rowsOf16(vTile, 0, lane);
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) {
      zero(o[rb]);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        rowMax[rb][half] = -INFINITY;
        rowSum[rb][half] = 0.f;
      }
    }
  }

  __device__ void copyKeysAsync(typename Tiles::KVTile tile, const T *from,
                                int keyTile) const {
    const int first = keyTile * Tiles::kBlockN;
    keyCopy.template copy<Tiles::kBlockN>(tile,
                                          from + static_cast<size_t>(first) * D,
                                          min(Tiles::kBlockN, p.seqKv - first));
  }

  __device__ void copyQueriesAsync() const {
    TileCopy<Tiles::kThreads, typename Tiles::QTile>()
        .template copy<Tiles::kBlockM>(qTile, q, rows);
  }

  /// S = Q K^T for the warp's rows and the resident key tile.
  __device__ void computeScores(Scores &s) const {
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
      zero(s[rb]);
#pragma unroll
    for (int k0 = 0; k0 < D; k0 += 16) {
      uint32_t a[kRowBlocks][4];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb)
        loadA(a[rb], qLanes, rb * 16, k0);
#pragma unroll
      for (int n0 = 0; n0 < Tiles::kBlockN; n0 += 16) {
        uint32_t b[4];
        loadBPairFromRows(b, kLanes, n0, k0);
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) {
          Element<T>::mma(s[rb][n0 / 8], a[rb], b[0], b[1]);
          Element<T>::mma(s[rb][n0 / 8 + 1], a[rb], b[2], b[3]);
        }
      }
    }
  }

  /// -inf for the keys past the sequence and, when causal, after the row.
  __device__ void maskScores(Scores &s, int keyTile) const {
    const int row0 = rowStart + warpRow0 + lane / 4;
    const int col0 = keyTile * Tiles::kBlockN + 2 * (lane % 4);
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + rb * 16 + (e / 2) * 8;
          const int col = col0 + nt * 8 + e % 2;
          if (col >= p.seqKv || (p.causal && col > row))
            s[rb][nt][e] = -INFINITY;
        }
  }

  /// The online softmax step: new row maxima, O and the sums rescaled to
  /// them, and s replaced by P = exp(scale * (s - max)).
  __device__ void updateSoftmax(Scores &s) {
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float tileMax = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt)
          tileMax = fmaxf(tileMax,
                          fmaxf(s[rb][nt][2 * half], s[rb][nt][2 * half + 1]));
        const float newMax = fmaxf(rowMax[rb][half], quadMax(tileMax));
        // A row that has so far seen only masked keys keeps max -inf;
        // subtracting 0 instead keeps its exponentials at 0 rather than NaN.
        const float maxLog2 = newMax == -INFINITY ? 0.f : newMax * p.scaleLog2;
        const float correction =
            fastExp2(rowMax[rb][half] * p.scaleLog2 - maxLog2);
        rowMax[rb][half] = newMax;
        float sum = rowSum[rb][half] * correction;
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
          for (int e = 2 * half; e < 2 * half + 2; ++e) {
            s[rb][nt][e] = fastExp2(fmaf(s[rb][nt][e], p.scaleLog2, -maxLog2));
            sum += s[rb][nt][e];
          }
        rowSum[rb][half] = sum;
#pragma unroll
        for (int dt = 0; dt < kDimTiles; ++dt) {
          o[rb][dt][2 * half] *= correction;
          o[rb][dt][2 * half + 1] *= correction;
        }
      }
  }

  /// P rounded to T, in half the registers of the scores, all converted
  /// before P V so that no f32 score lives beside the whole of O.
  static __device__ void roundProbabilities(Probabilities &pa,
                                            const Scores &s) {
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int kk = 0; kk < Tiles::kBlockN / 16; ++kk)
        accumulatorsToA<T>(pa[rb][kk], s[rb][2 * kk], s[rb][2 * kk + 1]);
  }

  /// O += P V, P from registers, V from the resident value tile.
  __device__ void accumulateValues(const Probabilities &pa) {
#pragma unroll
    for (int k0 = 0; k0 < Tiles::kBlockN; k0 += 16)
#pragma unroll
      for (int n0 = 0; n0 < D; n0 += 16) {
        uint32_t b[4];
        loadBPairFromColumns(b, vLanes, k0, n0);
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) {
          Element<T>::mma(o[rb][n0 / 8], pa[rb][k0 / 16], b[0], b[1]);
          Element<T>::mma(o[rb][n0 / 8 + 1], pa[rb][k0 / 16], b[2], b[3]);
        }
      }
  }

  /// One key tile. On entry K_keyTile is in flight (or landed); on exit
  /// K_{keyTile-1} is in flight when there is one.
  template <bool kMasked> __device__ void step(int keyTile) {
    opaque(qLanes.address);
    opaque(kLanes.address);
    opaque(vLanes.address);
    waitAllCopies();
    __syncthreads(); // K landed for every warp; every warp is done with V.
    copyKeysAsync(vTile, v, keyTile);
    commitCopies();

    Scores s;
    computeScores(s);
    if (kMasked)
      maskScores(s, keyTile);
    updateSoftmax(s);
    Probabilities pa;
    roundProbabilities(pa, s);

    waitAllCopies();
    __syncthreads(); // V landed for every warp; every warp is done with K.
    if (keyTile > 0) {
      copyKeysAsync(kTile, k, keyTile - 1);
      commitCopies();
    }
    accumulateValues(pa);
  }

  /// O divided by the row sums, through the warp's rows of the (no longer
  /// needed) Q tile to whole-row global stores; lse.
  __device__ void finish() {
    float inverse[kRowBlocks][2];
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        // Every real row sees key 0, so sum > 0 but for padding rows.
        const float sum = quadSum(rowSum[rb][half]);
        inverse[rb][half] = sum > 0.f ? 1.f / sum : 0.f;
        const int row = rowStart + warpRow0 + rb * 16 + half * 8 + lane / 4;
        if (p.lse && lane % 4 == 0 && row < p.seqQ)
          p.lse[static_cast<size_t>(blockIdx.x) * p.seqQ + row] =
              sum > 0.f ? rowMax[rb][half] * p.scale + logf(sum) : -INFINITY;
      }
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb)
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt)
        storeAccumulator<T>(qTile, warpRow0 + rb * 16, dt * 8, o[rb][dt],
                            inverse[rb][0], inverse[rb][1], lane);
    __syncwarp();
    T *out =
        static_cast<T *>(p.out) +
        (static_cast<size_t>(blockIdx.x) * p.seqQ + rowStart + warpRow0) * D;
    storeWarpRows(qTile, warpRow0, Tiles::kWarpRows, out, rows - warpRow0,
                  lane);
  }
};

struct KeyTileRange {
  int end;        // Tiles 0 .. end - 1 are visited,
  int maskedFrom; // and those from maskedFrom on need the mask.
};

template <int kBlockN>
__device__ KeyTileRange forwardKeyTiles(int rowStart, int rows, int seqKv,
                                        bool causal) {
  int end = ceilDiv(seqKv, kBlockN);
  int maskedFrom = seqKv / kBlockN; // The partial last tile, if any.
  if (causal) {
    // Row i sees keys 0..i: the block's last row bounds the tiles, and a
    // tile needs the mask once its last key is after the block's first row.
    end = min(end, (rowStart + rows - 1) / kBlockN + 1);
    maskedFrom = min(maskedFrom, (rowStart + 1) / kBlockN);
  }
  return {end, min(maskedFrom, end)};
}

template <typename T, int D>
__global__ void __launch_bounds__(ForwardTiles<D>::kThreads)
    attentionForwardKernel(const __grid_constant__ ForwardParams p) {
  extern __shared__ __align__(1024) unsigned char shared[];
  ForwardBlock<T, D> block(p, shared);
  const KeyTileRange tiles = forwardKeyTiles<ForwardTiles<D>::kBlockN>(
      block.rowStart, block.rows, p.seqKv, p.causal);

  block.copyQueriesAsync();
  block.copyKeysAsync(block.kTile, block.k, tiles.end - 1);
  commitCopies();
  int keyTile = tiles.end - 1;
  for (; keyTile >= tiles.maskedFrom; --keyTile)
    block.template step<true>(keyTile);
  for (; keyTile >= 0; --keyTile)
    block.template step<false>(keyTile);
  block.finish();
}

template <typename T, int D>
cudaError_t launchForward(const AttentionProblem &problem,
                          const ForwardParams &params, cudaStream_t stream) {
  using Tiles = ForwardTiles<D>;
  const dim3 grid(problem.batch * problem.heads,
                  ceilDiv(problem.seqQ, Tiles::kBlockM));
  return launchWithSharedMemory(attentionForwardKernel<T, D>, grid,
                                dim3(Tiles::kThreads), Tiles::kSharedBytes,
                                stream, params);
}

} // namespace
} // namespace detail

float attentionScale(const AttentionProblem &problem) {
  return problem.scale != 0.f
             ? problem.scale
             : 1.f / std::sqrt(static_cast<float>(problem.headDim));
}

const char *attentionUnsupportedReason(AttentionDType dtype,
                                       const AttentionProblem &problem) {
  if (dtype == AttentionDType::F32)
    return "element type f32 is not supported (the kernels are built on "
           "16-bit tensor-core fragments): use bf16 or f16";
  if (dtype != AttentionDType::BF16 && dtype != AttentionDType::F16)
    return "unknown element type";
  if (problem.headDim != 64 && problem.headDim != 128)
    return "head_dim must be 64 or 128";
  if (problem.batch <= 0 || problem.heads <= 0 || problem.kvHeads <= 0)
    return "batch, heads and kv_heads must be positive";
  if (problem.heads % problem.kvHeads != 0)
    return "heads must be a multiple of kv_heads";
  if (problem.seqQ <= 0 || problem.seqKv <= 0)
    return "sequence lengths must be positive";
  if (!std::isfinite(problem.scale) || problem.scale < 0.f)
    // The softmax keeps its running maximum over unscaled scores.
    return "scale must be finite and non-negative (0 for 1/sqrt(head_dim))";
  if (static_cast<long long>(problem.batch) * problem.heads > INT_MAX)
    return "batch * heads must fit in an int";
  // Grid y counts 128-query blocks (forward), 64- or 128-key blocks
  // (backward); 65535 is its limit.
  if (detail::ceilDiv(problem.seqQ, 128) > 65535 ||
      detail::ceilDiv(problem.seqKv, 64) > 65535)
    return "sequence too long (at most 65535 * 64 keys, 65535 * 128 queries)";
  return nullptr;
}

cudaError_t launchAttentionForward(AttentionDType dtype,
                                   const AttentionProblem &problem,
                                   const void *q, const void *k, const void *v,
                                   void *out, float *lse, cudaStream_t stream) {
  if (attentionUnsupportedReason(dtype, problem) || !q || !k || !v || !out)
    return cudaErrorInvalidValue;
  if (!detail::aligned16(q) || !detail::aligned16(k) || !detail::aligned16(v) ||
      !detail::aligned16(out))
    return cudaErrorMisalignedAddress;
  const float scale = attentionScale(problem);
  const detail::ForwardParams params{q,
                                     k,
                                     v,
                                     out,
                                     lse,
                                     problem.heads,
                                     problem.kvHeads,
                                     problem.seqQ,
                                     problem.seqKv,
                                     problem.causal,
                                     scale,
                                     scale * detail::kLog2e};
  return detail::dispatch(dtype, problem.headDim, [&](auto type, auto dim) {
    using T = typename decltype(type)::type;
    return detail::launchForward<T, decltype(dim)::value>(problem, params,
                                                          stream);
  });
}

} // namespace fa::handwritten
