//===- attention_backward.cu - FlashAttention-2 backward ------------------===//
//
// dq, dk, dv of attention.h, as FlashAttention-2 computes them: three
// kernels on one stream.
//
//  1. prepare: delta_i = rowsum(dO_i * O_i) in f32 (Reference.h's delta),
//     and the f32 dq accumulator zeroed, one row per D/8 threads.
//  2. main: one block per (batch, kv head, tile of keys), looping over every
//     query head of the kv head's group and, for each, over the query tiles
//     that see its keys (causal: from the tile holding its first key on).
//     Per query tile, with P and dS recomputed from Q, K and lse:
//       S^T  = K Q^T                     P^T = exp2(S^T * scale * log2 e - lse
//       * log2 e) dV  += P^T dO                    dP^T = V dO^T dS^T = P^T *
//       (dP^T - delta)      dK += dS^T Q dQ  += dS K                      (f32
//       atomics into the workspace)
//     dK and dV stay in registers across the whole loop, the group's query
//     heads included, so grouped-query attention needs no atomics for them.
//  3. convert: dq = scale * accumulator, rounded to the element type.
//
// Tiles: each warp owns 16 keys (one m16 row block) and computes the
// transposed products S^T and dP^T, so that P^T and dS^T come out as C
// fragments with the keys as rows: rounded to 16 bits they are directly the
// A fragments of dV += P^T dO and dK += dS^T Q, no shared memory between.
// Only dQ = dS K needs dS with the queries as rows: dS^T goes to shared
// memory (its C-fragment layout, as is) and comes back through
// ldmatrix.trans. Q and dO are B operands twice: read by rows (ldmatrix) for
// S^T and dP^T, by columns (ldmatrix.trans) for dK and dV.
//   D = 64:  128 keys per block, 8 warps, 64 queries per step; dQ of a step
//            (64 x 64) split into 8 pieces of 16 rows x 32 columns.
//   D = 128: 64 keys per block, 4 warps, 64 queries per step (at 128 keys
//            the 8-warp block would hold 144 KiB of shared memory, one block
//            per SM); dQ in 8 pieces of 16 x 64, two per warp.
// Registers per lane: dK and dV (2 x D/2 floats), S^T and dP^T (2 x 32).
//
// Shared memory, XOR-swizzled as in attention_common.cuh: K and V of the
// block's keys; Q, dO, lse and delta of a query tile, twice (the next tile's
// cp.async copies run during the whole current step); dS^T [keys][64].
// 81 KiB at D = 64, 105 KiB at D = 128: two blocks per SM either way.
// A step synchronises the block twice: once after its copies landed (which
// also frees the other stage and dS^T for reuse), once after dS^T is
// written.
//
// Padding: query rows past seqQ arrive as zeros (Q, dO, lse and delta), so
// their P is 1 but every product with their dO, Q or delta is 0, and their
// dQ is not written; keys past seqKv arrive as zeros and are masked to
// P = 0, since exp(0 - lse) need not be small.
//
//===----------------------------------------------------------------------===//

#include "attention_common.cuh"

namespace fa::handwritten {
namespace detail {
namespace {

template <int kBlockNArg, int kWarpsArg, int kDqColsArg, int D>
struct BackwardTilesBase {
  static constexpr int kBlockN = kBlockNArg; // Keys per block.
  static constexpr int kWarps = kWarpsArg;   // 16 keys each.
  static constexpr int kBlockM = 64;         // Queries per step.
  static constexpr int kDqCols = kDqColsArg; // Columns of a dQ piece.
  static_assert(kBlockN == 16 * kWarps, "one m16 row block per warp");
  static constexpr int kThreads = kWarps * kWarpSize;
  static_assert(kThreads >= 2 * kBlockM, "one lse or delta copy per thread");
  static constexpr int kQueryTiles = kBlockM / 8; // n8 tiles of S^T.
  static constexpr int kDimTiles = D / 8;         // n8 tiles of dK, dV.
  static constexpr int kDqPieces = (kBlockM / 16) * (D / kDqCols);
  static_assert(kDqPieces % kWarps == 0, "dQ pieces shared evenly");

  using KVTile = Tile<kBlockN, D>;
  using QTile = Tile<kBlockM, D>;
  using DSTile = Tile<kBlockN, kBlockM>;
  // Byte offsets: K, V, then per stage Q and dO, then dS^T, lse, delta.
  static constexpr int kVOffset = KVTile::kBytes;
  static constexpr int kStageOffset = 2 * KVTile::kBytes;
  static constexpr int kStageBytes = 2 * QTile::kBytes; // Q, then dO.
  static constexpr int kDSOffset = kStageOffset + 2 * kStageBytes;
  static constexpr int kLseOffset = kDSOffset + DSTile::kBytes;
  static constexpr int kDeltaOffset = kLseOffset + 2 * kBlockM * 4;
  static constexpr int kSharedBytes = kDeltaOffset + 2 * kBlockM * 4;
};

template <int D> struct BackwardTiles;
template <> struct BackwardTiles<64> : BackwardTilesBase<128, 8, 32, 64> {};
template <> struct BackwardTiles<128> : BackwardTilesBase<64, 4, 64, 128> {};

struct BackwardParams {
  const void *q, *k, *v, *out, *dout;
  const float *lse;
  void *dq, *dk, *dv;
  float *delta;   // [batch, heads, seqQ], workspace.
  float *dqAccum; // [batch, heads, seqQ, headDim], workspace.
  int heads, kvHeads, seqQ, seqKv;
  int group; // heads / kvHeads: the query heads of a kv head.
  bool causal;
  float scale;
  float scaleLog2;
};

//===----------------------------------------------------------------------===//
// 1. delta and the zeroed dq accumulator
//===----------------------------------------------------------------------===//

constexpr int kPrepareThreads = 256;

template <typename T, int D>
__global__ void __launch_bounds__(kPrepareThreads)
    attentionBackwardPrepareKernel(const __grid_constant__ BackwardParams p,
                                   long long rows) {
  constexpr int kThreadsPerRow = D / 8; // 16 bytes of a row each.
  const long long thread =
      static_cast<long long>(blockIdx.x) * kPrepareThreads + threadIdx.x;
  const long long row = thread / kThreadsPerRow;
  const long long offset = thread * 8; // == row * D + its 8 columns.
  float sum = 0.f;
  if (row < rows) {
    const uint4 o = *reinterpret_cast<const uint4 *>(
        static_cast<const T *>(p.out) + offset);
    const uint4 d = *reinterpret_cast<const uint4 *>(
        static_cast<const T *>(p.dout) + offset);
    const uint32_t os[4] = {o.x, o.y, o.z, o.w};
    const uint32_t ds[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 a = Element<T>::unpack(os[i]);
      const float2 b = Element<T>::unpack(ds[i]);
      sum = fmaf(a.x, b.x, fmaf(a.y, b.y, sum));
    }
    float4 *accumulator = reinterpret_cast<float4 *>(p.dqAccum + offset);
    accumulator[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    accumulator[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // A row's threads are consecutive lanes of one warp (D / 8 divides 32).
#pragma unroll
  for (int lanes = kThreadsPerRow / 2; lanes > 0; lanes /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, lanes);
  if (row < rows && thread % kThreadsPerRow == 0)
    p.delta[row] = sum;
}

//===----------------------------------------------------------------------===//
// 2. dK, dV and the dq accumulator
//===----------------------------------------------------------------------===//

/// Where one step's query tile is: row `rowStart` of query head row block
/// `headRow` (= (batch * heads + head) * seqQ), `rows` of them real.
struct QueryTile {
  size_t headRow;
  int rowStart, rows;
};

template <typename T, int D> struct BackwardBlock {
  using Tiles = BackwardTiles<D>;
  using KVTile = typename Tiles::KVTile;
  using QTile = typename Tiles::QTile;
  using DSTile = typename Tiles::DSTile;
  static constexpr int kQueryTiles = Tiles::kQueryTiles;
  static constexpr int kDimTiles = Tiles::kDimTiles;
  using Scores = float[kQueryTiles][4]; // 16 keys x kBlockM queries.
  using Fragments = uint32_t[Tiles::kBlockM / 16][4];

  // Block index: (batch * kvHeads + kv head, key tile). Few members, as
  // every register they hold is taken from the fragments for the whole loop.
  const BackwardParams &p;
  const int lane, warpKey0; // warpKey0: the warp's first key row.
  int keyStart, keys;       // The block's first key, and how many.
  int firstHead;            // batch * heads + the group's first query head.
  int firstRowBlock, rowBlocks, steps;
  uint32_t shared; // Shared address of the dynamic shared memory.
  TileCopy<Tiles::kThreads, QTile> queryCopy;
  // ldmatrix lane addresses, of K and of stage 0's Q: V, dO and stage 1 are
  // at fixed offsets from them, with the same patterns.
  LaneAddress<KVTile> keyRowsOfWarp; // A of S^T = K Q^T (V: A of dP^T).
  LaneAddress<KVTile> keyRows;       // B of dS K.
  LaneAddress<QTile> queryRows;      // B of dV += P^T dO, dK += dS^T Q.
  LaneAddress<QTile> queryPairs;     // B of S^T = K Q^T, dP^T = V dO^T.
  LaneAddress<DSTile> dsPairs;       // A of dS K.

  float dk[kDimTiles][4], dv[kDimTiles][4];

  __device__ BackwardBlock(const BackwardParams &params)
      : p(params), lane(threadIdx.x % kWarpSize),
        warpKey0(threadIdx.x / kWarpSize * 16) {
    extern __shared__ __align__(1024) unsigned char sharedMemory[];
    shared = sharedAddress(sharedMemory);
    firstHead = blockIdx.x * p.group; // (batch * kvHeads + kv) * group.
    keyStart = blockIdx.y * Tiles::kBlockN;
    keys = min(Tiles::kBlockN, p.seqKv - keyStart);
    // Causal: row i sees key j when j <= i, so the first query tile with a
    // row that sees this block's first key is the one holding row keyStart.
    firstRowBlock = p.causal ? keyStart / Tiles::kBlockM : 0;
    rowBlocks = max(0, ceilDiv(p.seqQ, Tiles::kBlockM) - firstRowBlock);
    steps = p.group * rowBlocks;

    const KVTile kTile{shared};
    const QTile qTile{shared + Tiles::kStageOffset};
    keyRowsOfWarp = rowsOf16(kTile, warpKey0, lane);
    keyRows = rowsOf16(kTile, 0, lane);
    queryRows = rowsOf16(qTile, 0, lane);
    queryPairs = pairsOf8(qTile, 0, lane);
    dsPairs = pairsOf8(DSTile{shared + Tiles::kDSOffset}, 0, lane);
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dk[dt][e] = dv[dt][e] = 0.f;
  }

  __device__ QueryTile queryTile(int step) const {
    const int head = firstHead + step / rowBlocks;
    const int rowStart = (firstRowBlock + step % rowBlocks) * Tiles::kBlockM;
    return {static_cast<size_t>(head) * p.seqQ, rowStart,
            min(Tiles::kBlockM, p.seqQ - rowStart)};
  }

  __device__ uint32_t stageBase(int stage) const {
    return shared + Tiles::kStageOffset + stage * Tiles::kStageBytes;
  }

  __device__ void copyKeysAsync() const {
    TileCopy<Tiles::kThreads, KVTile> copy;
    const size_t first =
        (static_cast<size_t>(blockIdx.x) * p.seqKv + keyStart) * D;
    copy.template copy<Tiles::kBlockN>(
        KVTile{shared}, static_cast<const T *>(p.k) + first, keys);
    copy.template copy<Tiles::kBlockN>(KVTile{shared + Tiles::kVOffset},
                                       static_cast<const T *>(p.v) + first,
                                       keys);
  }

  /// Q, dO, lse and delta of step `step` into stage `stage`.
  __device__ void copyQueriesAsync(int step, int stage) const {
    const QueryTile tile = queryTile(step);
    const size_t first = tile.headRow + tile.rowStart;
    const uint32_t base = stageBase(stage);
    queryCopy.template copy<Tiles::kBlockM>(
        QTile{base}, static_cast<const T *>(p.q) + first * D, tile.rows);
    queryCopy.template copy<Tiles::kBlockM>(
        QTile{base + QTile::kBytes}, static_cast<const T *>(p.dout) + first * D,
        tile.rows);
    // Rows past the end get lse = delta = 0 (see the note at the top).
    const int i = threadIdx.x % Tiles::kBlockM;
    const bool isDelta = threadIdx.x >= Tiles::kBlockM;
    if (threadIdx.x < 2 * Tiles::kBlockM)
      copyAsync4(shared + (isDelta ? Tiles::kDeltaOffset : Tiles::kLseOffset) +
                     (stage * Tiles::kBlockM + i) * 4,
                 (isDelta ? p.delta : p.lse) + first + min(i, tile.rows - 1),
                 i < tile.rows);
  }

  /// The per-query values lse or delta of stage kStage, for this lane's
  /// two columns 2t, 2t+1 of n8 tile nt.
  template <int kStage> __device__ float2 perQuery(int offset, int nt) const {
    float2 value;
    asm volatile(
        "ld.shared.v2.f32 {%0, %1}, [%2];\n"
        : "=f"(value.x), "=f"(value.y)
        : "r"(shared + offset +
              (kStage * Tiles::kBlockM + nt * 8 + 2 * (lane % 4)) * 4));
    return value;
  }

  /// s = X Y^T for the warp's 16 rows of X (K or V: `rows` plus xBytes) and
  /// the stage's Y (Q or dO: `columns` plus yBytes): S^T or dP^T.
  __device__ static void transposedScores(Scores &s, LaneAddress<KVTile> rows,
                                          int xBytes,
                                          LaneAddress<QTile> columns,
                                          int yBytes) {
#pragma unroll
    for (int nt = 0; nt < kQueryTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = 0.f;
#pragma unroll
    for (int k0 = 0; k0 < D; k0 += 16) {
      uint32_t a[4];
      loadA(a, rows, 0, k0, xBytes);
#pragma unroll
      for (int n0 = 0; n0 < Tiles::kBlockM; n0 += 16) {
        uint32_t b[4];
        loadBPairFromRows(b, columns, n0, k0, yBytes);
        Element<T>::mma(s[n0 / 8], a, b[0], b[1]);
        Element<T>::mma(s[n0 / 8 + 1], a, b[2], b[3]);
      }
    }
  }

  /// acc += A Y for A from registers (16 keys x kBlockM queries) and the
  /// stage's Y (dO or Q, [queries][D]: `columns` plus yBytes): dV or dK.
  __device__ static void accumulateKeyGradient(float (&acc)[kDimTiles][4],
                                               const Fragments &a,
                                               LaneAddress<QTile> columns,
                                               int yBytes) {
#pragma unroll
    for (int k0 = 0; k0 < Tiles::kBlockM; k0 += 16)
#pragma unroll
      for (int n0 = 0; n0 < D; n0 += 16) {
        uint32_t b[4];
        loadBPairFromColumns(b, columns, k0, n0, yBytes);
        Element<T>::mma(acc[n0 / 8], a[k0 / 16], b[0], b[1]);
        Element<T>::mma(acc[n0 / 8 + 1], a[k0 / 16], b[2], b[3]);
      }
  }

  static __device__ void round(Fragments &a, const Scores &s) {
#pragma unroll
    for (int kk = 0; kk < Tiles::kBlockM / 16; ++kk)
      accumulatorsToA<T>(a[kk], s[2 * kk], s[2 * kk + 1]);
  }

  /// S^T becomes P^T = exp(scale * S^T - lse).
  template <int kStage> __device__ void probabilities(Scores &s) const {
#pragma unroll
    for (int nt = 0; nt < kQueryTiles; ++nt) {
      const float2 lse = perQuery<kStage>(Tiles::kLseOffset, nt);
      const float lseLog2[2] = {lse.x * kLog2e, lse.y * kLog2e};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] = fastExp2(fmaf(s[nt][e], p.scaleLog2, -lseLog2[e % 2]));
    }
  }

  /// P = 0 for keys past seqKv and, when causal, for keys after the query.
  __device__ void mask(Scores &s, int rowStart) const {
    const int key0 = keyStart + warpKey0 + lane / 4;
    const int query0 = rowStart + 2 * (lane % 4);
#pragma unroll
    for (int nt = 0; nt < kQueryTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + (e / 2) * 8, query = query0 + nt * 8 + e % 2;
        if (key >= p.seqKv || (p.causal && key > query))
          s[nt][e] = 0.f;
      }
  }

  /// dP^T becomes dS^T = P^T * (dP^T - delta).
  template <int kStage>
  __device__ void scoreGradients(Scores &dp, const Scores &pt) const {
#pragma unroll
    for (int nt = 0; nt < kQueryTiles; ++nt) {
      const float2 delta = perQuery<kStage>(Tiles::kDeltaOffset, nt);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dp[nt][e] = pt[nt][e] * (dp[nt][e] - (e % 2 ? delta.y : delta.x));
    }
  }

  /// The warp's rows of dS^T into shared memory, straight from its A
  /// fragments (a C fragment's registers, paired).
  __device__ void storeScoreGradients(const Fragments &ds) const {
    const DSTile tile{shared + Tiles::kDSOffset};
    const int row = warpKey0 + lane / 4, col = 2 * (lane % 4);
#pragma unroll
    for (int kk = 0; kk < Tiles::kBlockM / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(tile.element(
                         row + (r % 2) * 8, kk * 16 + (r / 2) * 8 + col)),
                     "r"(ds[kk][r]));
  }

  /// dq accumulator += dS K for this warp's pieces of the step's tile.
  __device__ void accumulateQueryGradient(const QueryTile &tile) const {
    constexpr int kRowBlocks = Tiles::kBlockM / 16;
    constexpr int kPieceTiles = Tiles::kDqCols / 8;
#pragma unroll
    for (int i = 0; i < Tiles::kDqPieces / Tiles::kWarps; ++i) {
      const int piece = i * Tiles::kWarps + warpKey0 / 16;
      const int row0 = piece % kRowBlocks * 16;
      const int col0 = piece / kRowBlocks * Tiles::kDqCols;
      float acc[kPieceTiles][4];
#pragma unroll
      for (int nt = 0; nt < kPieceTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[nt][e] = 0.f;
#pragma unroll
      for (int k0 = 0; k0 < Tiles::kBlockN; k0 += 16) {
        uint32_t a[4];
        loadATransposed(a, dsPairs, row0, k0);
#pragma unroll
        for (int n0 = 0; n0 < Tiles::kDqCols; n0 += 16) {
          uint32_t b[4];
          loadBPairFromColumns(b, keyRows, k0, col0 + n0);
          Element<T>::mma(acc[n0 / 8], a, b[0], b[1]);
          Element<T>::mma(acc[n0 / 8 + 1], a, b[2], b[3]);
        }
      }
      addQueryGradient(acc, tile, row0, col0);
    }
  }

  template <int kPieceTiles>
  __device__ void addQueryGradient(const float (&acc)[kPieceTiles][4],
                                   const QueryTile &tile, int row0,
                                   int col0) const {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = tile.rowStart + row0 + half * 8 + lane / 4;
      if (row >= p.seqQ)
        continue;
      float *to = p.dqAccum + (tile.headRow + row) * D + col0 + 2 * (lane % 4);
#pragma unroll
      for (int nt = 0; nt < kPieceTiles; ++nt)
        atomicAddPair(to + nt * 8, acc[nt][2 * half], acc[nt][2 * half + 1]);
    }
  }

  static __device__ void atomicAddPair(float *to, float x, float y) {
#if __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2 *>(to), make_float2(x, y));
#else
    atomicAdd(to, x);
    atomicAdd(to + 1, y);
#endif
  }

  /// One query tile, whose Q, dO, lse and delta are (being) copied into
  /// stage kStage = step % 2; a compile-time stage makes every shared
  /// address below a lane address plus an immediate.
  template <int kStage> __device__ void step(int step) {
    opaque(keyRowsOfWarp.address);
    opaque(keyRows.address);
    opaque(queryRows.address);
    opaque(queryPairs.address);
    opaque(dsPairs.address);
    waitAllCopies();
    // The step's tiles landed for every warp; every warp is done with the
    // previous step, so the other stage and dS^T may be overwritten.
    __syncthreads();
    if (step + 1 < steps) {
      copyQueriesAsync(step + 1, 1 - kStage);
      commitCopies();
    }
    const QueryTile tile = queryTile(step);
    constexpr int kQBytes = kStage * Tiles::kStageBytes;
    constexpr int kDOBytes = kQBytes + QTile::kBytes;

    Scores pt; // S^T, then P^T.
    transposedScores(pt, keyRowsOfWarp, 0, queryPairs, kQBytes);
    probabilities<kStage>(pt);
    if (keys < Tiles::kBlockN ||
        (p.causal && keyStart + Tiles::kBlockN - 1 > tile.rowStart))
      mask(pt, tile.rowStart);
    Fragments a;
    round(a, pt);
    accumulateKeyGradient(dv, a, queryRows, kDOBytes);

    Scores ds; // dP^T, then dS^T.
    transposedScores(ds, keyRowsOfWarp, Tiles::kVOffset, queryPairs, kDOBytes);
    scoreGradients<kStage>(ds, pt);
    round(a, ds);
    storeScoreGradients(a);
    accumulateKeyGradient(dk, a, queryRows, kQBytes);

    __syncthreads(); // dS^T complete.
    accumulateQueryGradient(tile);
  }

  /// dK (scaled) and dV through the warp's rows of the K and V tiles to
  /// whole-row global stores.
  __device__ void finish() {
    waitAllCopies(); // The K and V copies, when there were no steps.
    __syncthreads(); // Every warp is done reading K and V.
    const KVTile kTile{shared}, vTile{shared + Tiles::kVOffset};
#pragma unroll
    for (int dt = 0; dt < kDimTiles; ++dt) {
      storeAccumulator<T>(kTile, warpKey0, dt * 8, dk[dt], p.scale, p.scale,
                          lane);
      storeAccumulator<T>(vTile, warpKey0, dt * 8, dv[dt], 1.f, 1.f, lane);
    }
    __syncwarp();
    const size_t first =
        (static_cast<size_t>(blockIdx.x) * p.seqKv + keyStart + warpKey0) * D;
    storeWarpRows(kTile, warpKey0, 16, static_cast<T *>(p.dk) + first,
                  keys - warpKey0, lane);
    storeWarpRows(vTile, warpKey0, 16, static_cast<T *>(p.dv) + first,
                  keys - warpKey0, lane);
  }
};

template <typename T, int D>
__global__ void __launch_bounds__(BackwardTiles<D>::kThreads)
    attentionBackwardKernel(const __grid_constant__ BackwardParams p) {
  BackwardBlock<T, D> block(p);
  block.copyKeysAsync();
  if (block.steps > 0)
    block.copyQueriesAsync(0, 0);
  commitCopies();
  for (int step = 0; step < block.steps; step += 2) {
    block.template step<0>(step);
    if (step + 1 < block.steps)
      block.template step<1>(step + 1);
  }
  block.finish();
}

//===----------------------------------------------------------------------===//
// 3. dq from its accumulator
//===----------------------------------------------------------------------===//

constexpr int kConvertThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kConvertThreads)
    attentionBackwardConvertKernel(const __grid_constant__ BackwardParams p,
                                   long long chunks) {
  const long long chunk =
      static_cast<long long>(blockIdx.x) * kConvertThreads + threadIdx.x;
  if (chunk >= chunks)
    return;
  const float4 *from = reinterpret_cast<const float4 *>(p.dqAccum) + 2 * chunk;
  const float4 x = from[0], y = from[1];
  const float s = p.scale;
  reinterpret_cast<uint4 *>(p.dq)[chunk] = make_uint4(
      Element<T>::pack(x.x * s, x.y * s), Element<T>::pack(x.z * s, x.w * s),
      Element<T>::pack(y.x * s, y.y * s), Element<T>::pack(y.z * s, y.w * s));
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

size_t queryRowCount(const AttentionProblem &problem) {
  return static_cast<size_t>(problem.batch) * problem.heads * problem.seqQ;
}

/// delta's bytes, rounded up so that the accumulator after it stays
/// 256-byte aligned.
size_t deltaBytes(const AttentionProblem &problem) {
  return (queryRowCount(problem) * sizeof(float) + 255) / 256 * 256;
}

unsigned blocksFor(long long threads, int perBlock) {
  return static_cast<unsigned>((threads + perBlock - 1) / perBlock);
}

template <typename T, int D>
cudaError_t launchBackward(const AttentionProblem &problem,
                           const BackwardParams &params, cudaStream_t stream) {
  using Tiles = BackwardTiles<D>;
  const long long rows = static_cast<long long>(queryRowCount(problem));
  const long long chunks = rows * D / 8; // Also the prepare kernel's threads.
  attentionBackwardPrepareKernel<T, D>
      <<<blocksFor(chunks, kPrepareThreads), kPrepareThreads, 0, stream>>>(
          params, rows);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    return error;
  const dim3 grid(problem.batch * problem.kvHeads,
                  ceilDiv(problem.seqKv, Tiles::kBlockN));
  error = launchWithSharedMemory(attentionBackwardKernel<T, D>, grid,
                                 dim3(Tiles::kThreads), Tiles::kSharedBytes,
                                 stream, params);
  if (error != cudaSuccess)
    return error;
  attentionBackwardConvertKernel<T>
      <<<blocksFor(chunks, kConvertThreads), kConvertThreads, 0, stream>>>(
          params, chunks);
  return cudaGetLastError();
}

} // namespace
} // namespace detail

size_t attentionBackwardWorkspaceBytes(const AttentionProblem &problem) {
  return detail::deltaBytes(problem) +
         detail::queryRowCount(problem) * problem.headDim * sizeof(float);
}

cudaError_t launchAttentionBackward(AttentionDType dtype,
                                    const AttentionProblem &problem,
                                    const void *q, const void *k, const void *v,
                                    const void *out, const void *dout,
                                    const float *lse, void *dq, void *dk,
                                    void *dv, void *workspace,
                                    cudaStream_t stream) {
  const void *pointers[] = {q, k, v, out, dout, lse, dq, dk, dv, workspace};
  if (attentionUnsupportedReason(dtype, problem))
    return cudaErrorInvalidValue;
  for (const void *pointer : pointers) {
    if (!pointer)
      return cudaErrorInvalidValue;
    if (pointer != lse && !detail::aligned16(pointer))
      return cudaErrorMisalignedAddress;
  }
  const float scale = attentionScale(problem);
  char *scratch = static_cast<char *>(workspace);
  const detail::BackwardParams params{
      q,
      k,
      v,
      out,
      dout,
      lse,
      dq,
      dk,
      dv,
      reinterpret_cast<float *>(scratch),
      reinterpret_cast<float *>(scratch + detail::deltaBytes(problem)),
      problem.heads,
      problem.kvHeads,
      problem.seqQ,
      problem.seqKv,
      problem.heads / problem.kvHeads,
      problem.causal,
      scale,
      scale * detail::kLog2e};
  return detail::dispatch(dtype, problem.headDim, [&](auto type, auto dim) {
    using T = typename decltype(type)::type;
    return detail::launchBackward<T, decltype(dim)::value>(problem, params,
                                                           stream);
  });
}

} // namespace fa::handwritten
