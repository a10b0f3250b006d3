//===- TileAttentionGrad.cpp - fa.attention_grad to tiled GPU kernels -----===//
//
// The backward of attention as three kernels on the same tile ops as the
// forward, with P recomputed from the forward's log-sum-exp (natural log, so
// P = exp2(s log2(e) - lse log2(e)) with s the scaled score):
//
//   <name>_delta  delta_i = rowsum(dO_i * O_i)                 query tiles
//   <name>_dkdv   per key tile, over the query heads sharing its kv head and
//                 their query tiles: S^T = K Q^T, P^T, dV += P^T dO,
//                 dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q;
//                 with split_dkdv (head_dim 256, where two block_m x 256 f32
//                 accumulators take every register) the blocks of grid z 0
//                 compute dV alone, those of z 1 dK alone (S^T recomputed)
//   <name>        per query tile, over key tiles: S = Q K^T, P,
//                 dP = dO V^T, dS = P (dP - delta), dQ += dS K
//
// Where the dK/dV kernel can (fusesDq: head_dim 128 on two warpgroups, no
// mask region) it computes dQ too: per query tile, dS^T goes to shared
// memory and dQ^T = K^T dS^T (the warpgroups 64 rows of head_dim each) is
// added into an f32 dq_accum [batch, heads, seq_q, head_dim], the key blocks
// taking turns per query tile in a fixed order through i32 dq_semaphores
// [batch, heads, query tiles] that the runtime zeroes (deterministic, unlike
// atomics in whatever order the blocks arrive); <name> then only computes
// dq = scale * dq_accum. Five products per tile pair instead of seven.
//   <name>_dsinks with sinks' gradient: per query head h, a row-wise kernel
//                 dsinks_h = -sum over batch and rows of
//                 exp(sink_h - lse) delta, in a fixed order
//
// With dropout (mask Z, kept values scaled by 1 / (1 - p)) the values saw
// P Z: dV += (P Z)^T dO, and dP is dO V^T Z; dS = P (dP - delta) holds as
// it is, delta = rowsum(dO O) being rowsum(P dP) still. The kernels
// regenerate Z from the forward's (p, seed, offset).
//
// Computing the transposed products in the dK/dV kernel keeps every product
// in the forms the tensor-core lowering has (A from registers or shared
// memory, B from shared memory, plain or transposed), and makes dK and dV
// sums over the kernel's own loop: no atomics. dQ takes a second pass over
// the scores rather than atomics from the dK/dV kernel (which would need f32
// atomic adds on every dQ element from every key tile).
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/DefaultTiles.h"
#include "fa/Dialect/FA/Transforms/Dropout.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/RegionTiles.h"
#include "fa/Dialect/FA/Transforms/ScoreDerivative.h"
#include "fa/Dialect/FA/Transforms/TileCopies.h"

#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FATILEATTENTIONGRAD
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// Tile sizes of the three kernels. In each kernel `block_m` is the rows of
/// its tiles (queries, or keys in the dK/dV kernel) and `block_n` the length
/// of the tiles its loop walks.
struct GradConfig {
  int64_t blockM, blockN, numWarps, numStages;
  /// Every product as a Hopper warpgroup MMA (fa.tile `wgmma = true`, both the
  /// dK/dV and the dQ kernel). The products already have wgmma's operand
  /// forms: the two score-like ones (S^T = K Q^T, dP^T = V dO^T and their dQ
  /// kernel counterparts) read A and a transposed B from shared memory
  /// (K-major), the two accumulating ones (dV += P^T dO, dK += dS^T Q,
  /// dQ += dS K) take A from registers and an MN-major B.
  bool warpgroupMma = false;
  /// The dK/dV kernel's blocks split over grid z (fa.tile `split_dkdv`):
  /// z = 0 accumulates dV only, z = 1 dK only, so each holds one block_m x
  /// head_dim accumulator instead of two (head_dim 256). Both recompute S^T;
  /// dP^T is dK's alone. Each gradient is still one block's sum over its own
  /// loop: no atomics.
  bool splitDkdv = false;

  /// Whether the dK/dV loop stages its queries' lse and delta with Q and dO
  /// (fa.stage_rows): with two stages fa-pipeline-kv-copies loads them one
  /// iteration ahead with the tiles (asynchronously; synchronously under
  /// pipeline_copies = false) and the loop reads them from shared memory.
  /// Read from global memory in the loop, they stalled the warps (latency
  /// bound at 2 warps per scheduler; H100, bf16: the dK/dV kernel 10-16%
  /// faster staged, bench/results/2026-11-27-h100-bwd-staged-rows), and
  /// hoisted above the products they cost registers (D=64 12% slower). Not
  /// under split_dkdv (head_dim 256): its causal kernels sit at ptxas's 255
  /// registers and spilled 32 bytes with the rows' copies.
  bool stagesRows() const { return numStages == 2 && !splitDkdv; }

  /// Whether the dK/dV kernel computes dQ too (see fusesDq): each key block
  /// adds its dQ^T = K^T dS^T for every query tile it visits into an f32
  /// workspace, in a fixed order, and the attention_bwd kernel only scales
  /// and converts the sums. Without it, that kernel recomputes S and dP for
  /// dQ: seven products per tile pair instead of five.
  bool fusedDq = false;

  /// The dK/dV kernel (only it) warp-specialised (fa.tile `warp_specialize`):
  /// fa-warp-specialize moves its Q, dO, lse and delta copies to a producer
  /// warp that feeds rings (WarpSpecializeKeyBlocks.cpp). With a fused dQ
  /// a writer warp of the producer takes the turns and adds dQ by TMA.
  bool warpSpecialize = false;
};

/// Whether a backward of `config` on `headDim` fuses dQ into its dK/dV
/// kernel. The product dQ^T = K^T dS^T has M = head_dim, which its two
/// warpgroups split 64 rows each: head_dim 128 on 8 warps of wgmma. The
/// order of the blocks' additions is fixed by which key blocks visit a query
/// tile: all of them, or under a causal mask key blocks 0 up to the
/// diagonal's; a mask region (whose empty tiles fa-eliminate-causal-tiles
/// skips) has no such order, and keeps the three kernels, as do split_dkdv
/// (head_dim 256) and the other head dims.
bool fusesDq(const GradConfig &config, int64_t headDim, bool maskRegion) {
  return config.warpgroupMma && !config.splitDkdv && config.numWarps == 8 &&
         headDim == config.numWarps / 4 * 64 && !maskRegion;
}

/// The probabilities' exponentials may be approximate (afn: fa-fast-exp2
/// makes each one ex2.approx.ftz.f32) in the warpgroup-MMA kernels of a
/// backward without a variant whose dK/dV tile (`config`, which decides for
/// the dQ kernel too) spans two warpgroups: H100, bf16, 16k tokens, D=64 +4-13%
/// (N=4096 281 -> 305 TFLOP/s, causal 245 -> 278), D=128 0-2.5%
/// (bench/results/2026-11-27-h100-exp2-ftz/backward.txt). The variants'
/// dK/dV kernels (document, sinks), those on one warpgroup (D=96: 64 keys
/// on 4 warps) and the mma.sync kernels keep libdevice's precise form: at
/// ptxas's 255-register ceiling the dK/dV kernels spill with it.
arith::FastMathFlagsAttr backwardExponentialFlags(MLIRContext *context,
                                                  const GradConfig &config,
                                                  StringRef variant) {
  bool approximate =
      config.warpgroupMma &&
      config.numWarps * kThreadsPerWarp == 2 * kThreadsPerWarpgroup &&
      variant.empty();
  return arith::FastMathFlagsAttr::get(
      context,
      approximate ? arith::FastMathFlags::afn : arith::FastMathFlags::none);
}

/// What every kernel of one attention_grad needs to build its body.
struct GradKernel {
  ImplicitLocOpBuilder &b;
  GradConfig config;
  bool causal;
  float scale;
  int64_t headDim;
  Type element;
  /// log2(e) times the softmax scale, and log2(e).
  float scoreScale, log2e;
  /// The kernel's q, k, v and dout arguments (null where it has none).
  Value query, key, value, dout;
  /// The op's mask and score regions with the kernel's captures, and the
  /// score region's derivative by the score (null without a score region).
  AttentionRegions regions;
  Region *scoreDerivative = nullptr;
  /// The derivative tile f'(s) of the last maskScores (null without a score
  /// region).
  Value lastDerivative;
  /// The kernel's dropout(p, seed, offset) parameters (null without).
  Value dropoutP, dropoutSeed, dropoutOffset;
  /// The fast-math flags of the probabilities' exponentials
  /// (backwardExponentialFlags).
  arith::FastMathFlagsAttr exponentials;

  Type f32() { return b.getF32Type(); }
  VectorType tile(int64_t rows, int64_t cols, Type type) {
    return VectorType::get({rows, cols}, type);
  }
  /// A product operand: f16/bf16 for the tensor cores; f32 stays f32 (the
  /// lowering splits it into TF32 parts).
  Value operand(Value tileF32) {
    if (element.isF32())
      return tileF32;
    auto type = cast<VectorType>(tileF32.getType());
    return arith::TruncFOp::create(b, type.clone(element), tileF32);
  }
  Value toElement(Value tileF32) { return operand(tileF32); }

  /// The raw scores q.k of the tile at `at` masked, after the score region
  /// (then in natural units: scale * q.k through the region), keeping the
  /// region's derivative at the same scores in lastDerivative.
  Value maskScores(Value raw, const TilePlace &at) {
    if (!regions.hasScore())
      return applyRegions(b, regions, raw, at);
    auto type = cast<VectorType>(raw.getType());
    Value scaled = arith::MulFOp::create(b, raw, splatConstant(b, type, scale));
    lastDerivative =
        applyScoreRegion(b, *scoreDerivative, scaled, at, regions.captures);
    return applyRegions(b, regions, scaled, at);
  }

  /// exp2(scores * c - lse log2(e)), `lse` a tile of the same shape, c =
  /// scale log2(e) for raw scores, log2(e) after a score region. Rows that a
  /// mask region leaves without keys have lse = -inf: there exp2(-inf -
  /// -inf) would be NaN where the probabilities are 0.
  Value probabilities(Value scores, Value lseTile) {
    auto type = cast<VectorType>(scores.getType());
    float c = regions.hasScore() ? log2e : scoreScale;
    Value scaled = arith::MulFOp::create(b, scores, splatConstant(b, type, c));
    if (regions.hasMask()) {
      Value noKey = arith::CmpFOp::create(
          b, arith::CmpFPredicate::OEQ, lseTile,
          splatConstant(b, type, -std::numeric_limits<double>::infinity()));
      lseTile = arith::SelectOp::create(b, noKey, splatConstant(b, type, 0.0),
                                        lseTile);
    }
    Value shift =
        arith::MulFOp::create(b, lseTile, splatConstant(b, type, log2e));
    return math::Exp2Op::create(b, arith::SubFOp::create(b, scaled, shift),
                                exponentials);
  }

  /// The dropout mask's values for query head `head` of `batch` (of
  /// `heads`), made once per head outside the tile loop; empty without
  /// dropout.
  DropoutParams dropoutOf(Value batch, Value head, Value heads) {
    if (!dropoutP)
      return {};
    return DropoutParams::build(b, dropoutP, dropoutSeed, dropoutOffset, batch,
                                head, heads);
  }

  /// dS = P (dP - delta), times f'(s) after a score region.
  Value scoreGradient(Value probs, Value dprobs, Value deltaTile) {
    Value dscores = arith::MulFOp::create(
        b, probs, arith::SubFOp::create(b, dprobs, deltaTile));
    if (regions.hasScore())
      dscores = arith::MulFOp::create(b, dscores, lastDerivative);
    return dscores;
  }

  /// A loop from `lower` to `upper` carrying `inits`; `keyLoop` marks a loop
  /// over key tiles for fa-eliminate-causal-tiles (which then drops the mask
  /// from the tiles that need none and visits no empty one), `copyLoop` one
  /// whose staged tiles fa-pipeline-kv-copies may load ahead.
  ValueRange loop(Value lower, Value upper, ValueRange inits,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body,
                  bool keyLoop = false, bool copyLoop = false) {
    auto forOp = scf::ForOp::create(
        b, lower, upper, index(b, 1), inits,
        [&](OpBuilder &nested, Location loc, Value iv, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, body(iv, carried));
        });
    if (keyLoop)
      forOp->setAttr(kKvLoopAttr, b.getUnitAttr());
    if (copyLoop)
      forOp->setAttr(kCopyLoopAttr, b.getUnitAttr());
    return forOp.getResults();
  }
};

/// The batch and head of block row `y` of a [batch * heads] grid dimension.
std::pair<Value, Value> batchAndHead(ImplicitLocOpBuilder &b, Value y,
                                     Value heads) {
  return {arith::DivUIOp::create(b, y, heads),
          arith::RemUIOp::create(b, y, heads)};
}

//===----------------------------------------------------------------------===//
// delta = rowsum(dO * O)
//===----------------------------------------------------------------------===//

void buildDelta(GradKernel &k, Value out, Value dout, Value delta) {
  ImplicitLocOpBuilder &b = k.b;
  const GradConfig &c = k.config;
  Value heads = memref::DimOp::create(b, out, 1);
  auto [batch, head] =
      batchAndHead(b, gpu::BlockIdOp::create(b, gpu::Dimension::y), heads);
  Value row0 = arith::MulIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), index(b, c.blockM));
  VectorType tileType = k.tile(c.blockM, k.headDim, k.element);
  auto loadF32 = [&](Value source) -> Value {
    Value tile = LoadTileOp::create(b, tileType, source, batch, head, row0);
    if (k.element.isF32())
      return tile;
    return arith::ExtFOp::create(b, tileType.clone(k.f32()), tile);
  };
  Value product = arith::MulFOp::create(b, loadF32(out), loadF32(dout));
  auto rowsType = VectorType::get({c.blockM}, k.f32());
  Value sums = vector::MultiDimReductionOp::create(
      b, product, splatConstant(b, rowsType, 0.0), ArrayRef<bool>{false, true},
      vector::CombiningKind::ADD);
  StoreRowsOp::create(b, sums, delta, batch, head, row0);
}

//===----------------------------------------------------------------------===//
// dK, dV: one key tile per block
//===----------------------------------------------------------------------===//

struct DkDvBuffers {
  Value key, value, query, dout; // shared tiles
  /// The query tile's lse and delta, block_n values each (null unless the
  /// configuration stagesRows).
  Value lseRows, deltaRows;
  /// With a fused dQ: dS of the query tile, 2 slots of block_n x block_m
  /// (dS^T stored transposed, so that dQ^T = K^T dS^T reads it as a K-major
  /// B), taken in turn by the nest's iterations.
  Value dscores;
};

/// Where a fused dQ goes (GradConfig::fusedDq): the f32 [batch, heads,
/// seq_q, head_dim] sums and the i32 [batch, heads, query tiles] counters
/// that order the key blocks' additions.
struct FusedDqTargets {
  Value accum, semaphores;
  explicit operator bool() const { return static_cast<bool>(accum); }
};

/// What a dK/dV loop nest accumulates: both gradients, or under split_dkdv
/// one of them (the blocks of grid z 0 dV, those of z 1 dK).
enum class DkDvPart { Both, Dv, Dk };

/// Where a key block visits a query tile in a fused dQ's order: the tile of
/// an iteration, and the block's turn among the tile's contributors.
struct DqTurn {
  Value tile;
  /// How many key blocks add into the tile before this one.
  Value expected;
};

/// Adds the key block's part of query tile `turn.tile`'s dQ, dS K (up to
/// the scale, which the attention_bwd kernel applies to the sum), into the
/// fused-dQ workspace: with dS stored in shared memory (`dscores`, the
/// iteration's slot of shared.dscores, block_n x block_m), the warpgroups
/// each take 64 rows of dQ^T = K^T dS^T from it and the staged key tile,
/// then the block waits for its turn
/// (counter of the tile = turn.expected), adds or, first, stores, and lets
/// the next one go. Deterministic: every element's additions happen in the
/// same order whatever the schedule.
void addDqPart(GradKernel &k, const DkDvBuffers &shared, Value dscores,
               const FusedDqTargets &targets, Value batch, Value head,
               DqTurn turn, Value q0) {
  ImplicitLocOpBuilder &b = k.b;
  const GradConfig &c = k.config;
  VectorType dqType = k.tile(k.headDim, c.blockN, k.f32());
  Value dqT = TileMatmulOp::create(b, dqType, shared.key, dscores,
                                   splatConstant(b, dqType, 0.0),
                                   /*transpose_b=*/true, /*transpose_a=*/true);
  OrderedWaitOp::create(b, targets.semaphores, batch, head, turn.tile,
                        turn.expected);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                      turn.expected, index(b, 0));
  AccumulateTileOp::create(b, dqT, targets.accum, batch, head, q0,
                           /*transposed=*/true, first);
  OrderedSignalOp::create(b, targets.semaphores, batch, head, turn.tile);
}

/// The turn of key block `kb` (of nkb) on query tile j under a causal mask:
/// block kb visits the tiles from its diagonal up, and tile j is visited by
/// the blocks up to last(j) = ((j + 1) block_n - 1) / block_m, each
/// reaching it block_m / block_n iterations after the block above. So the
/// blocks take their turns from last(j) down: kb's is min(last(j), nkb - 1)
/// - kb, and a block never waits for one that reaches the tile later.
DqTurn causalTurn(ImplicitLocOpBuilder &b, Value tile, Value keyBlock,
                  int64_t blockM, int64_t blockN) {
  Value keyBlocks = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value lastVisitor = arith::DivUIOp::create(
      b,
      arith::SubIOp::create(
          b,
          arith::MulIOp::create(b, arith::AddIOp::create(b, tile, index(b, 1)),
                                index(b, blockN)),
          index(b, 1)),
      index(b, blockM));
  Value last = arith::MinUIOp::create(
      b, lastVisitor, arith::SubIOp::create(b, keyBlocks, index(b, 1)));
  return {tile, arith::SubIOp::create(b, last, keyBlock)};
}

/// The loop nest of one key tile's dK and/or dV (`part`), from staging the
/// value tile (which dV alone does not read) to storing the gradients. The
/// key tile `key0` (key block `keyBlock`) of kv head `kvHead` is staged
/// already. With `fusedDq` the nest adds each query tile's dQ part there.
void buildDkDvNest(GradKernel &k, const DkDvBuffers &shared, Value lse,
                   Value delta, Value dk, Value dv, DkDvPart part, Value batch,
                   Value kvHead, Value keyBlock, Value key0, Value heads,
                   Value group, Value seqQ, FusedDqTargets fusedDq) {
  ImplicitLocOpBuilder &b = k.b;
  const GradConfig &c = k.config;
  Value query = k.query;
  bool withDk = part != DkDvPart::Dv, withDv = part != DkDvPart::Dk;
  if (withDk)
    StageTileOp::create(b, k.value, batch, kvHead, key0, shared.value);

  Value numQueryTiles = arith::CeilDivUIOp::create(b, seqQ, index(b, c.blockN));
  // Under a causal mask the query tiles wholly before the key tile see none
  // of its keys. A mask region's classification (fa-eliminate-causal-tiles,
  // causal included) finds the tiles to visit itself.
  bool regionMask = k.regions.hasMask();
  Value firstQueryTile =
      k.causal && !regionMask
          ? arith::DivUIOp::create(b, key0, index(b, c.blockN))
          : index(b, 0);
  VectorType accType = k.tile(c.blockM, k.headDim, k.f32());
  VectorType scoresType = k.tile(c.blockM, c.blockN, k.f32());
  Value zeroAcc = splatConstant(b, accType, 0.0);
  // The accumulators carried: {dK, dV}, or the one the part computes.
  SmallVector<Value> zeros(part == DkDvPart::Both ? 2 : 1, zeroAcc);
  // The query tile of an iteration and the block's turn there. A fused dQ
  // adds the key blocks' parts into a query tile in a fixed order, each
  // waiting for the one before. Under a causal mask block kb visits the
  // query tiles from kb's diagonal on, in order, and the blocks take turns
  // from the last key block down (causalTurn): the block before kb on a
  // tile reached it iterations earlier. Without a mask every block visits
  // every tile in order and the blocks take turns in key-block order, so
  // block kb starts about kb turns late (the SM idles meanwhile).
  auto turnOf = [&](Value iteration) -> DqTurn {
    if (!fusedDq)
      return {iteration, Value()};
    if (k.causal)
      return causalTurn(b, iteration, keyBlock, c.blockM, c.blockN);
    return {iteration, keyBlock};
  };

  // The nest's iterations counted across its query heads: h * (number of
  // tiles a head visits) + tile, consecutive from one iteration to the
  // next (the dS slots alternate with it).
  Value tilesPerHead = arith::SubIOp::create(b, numQueryTiles, firstQueryTile);
  ValueRange sums = k.loop(
      index(b, 0), group, zeros,
      [&](Value h, ValueRange acc) -> SmallVector<Value> {
        Value head = arith::AddIOp::create(
            b, arith::MulIOp::create(b, kvHead, group), h);
        DropoutParams dropout = k.dropoutOf(batch, head, heads);
        ValueRange inner = k.loop(
            firstQueryTile, numQueryTiles, acc,
            [&](Value iteration, ValueRange acc) -> SmallVector<Value> {
              DqTurn turn = turnOf(iteration);
              Value j = turn.tile;
              Value q0 = arith::MulIOp::create(b, j, index(b, c.blockN));
              StageTileOp::create(b, query, batch, head, q0, shared.query);
              StageTileOp::create(b, k.dout, batch, head, q0, shared.dout);
              if (shared.lseRows) {
                StageRowsOp::create(b, lse, batch, head, q0, shared.lseRows);
                if (withDk)
                  StageRowsOp::create(b, delta, batch, head, q0,
                                      shared.deltaRows);
              }
              // The queries' lse or delta down every row of a scores tile.
              auto columns = [&](Value stats, Value staged) -> Value {
                if (staged)
                  return ColumnBroadcastSharedOp::create(b, scoresType, staged);
                return ColumnBroadcastOp::create(b, scoresType, stats, batch,
                                                 head, q0);
              };
              // Both score-like products first: with wgmma the second runs
              // while the warps compute the probabilities, and dV's while
              // they compute dS (see warpgroupWaitPoint).
              Value scores = TileMatmulOp::create(
                  b, scoresType, shared.key, shared.query,
                  splatConstant(b, scoresType, 0.0), /*transpose_b=*/true);
              Value dprobs;
              if (withDk)
                dprobs = TileMatmulOp::create(
                    b, scoresType, shared.value, shared.dout,
                    splatConstant(b, scoresType, 0.0), /*transpose_b=*/true);
              // Queries past the end and (causal) before the key: -inf.
              TilePlace place{key0,
                              q0,
                              seqQ,
                              batch,
                              head,
                              /*transposed=*/true};
              scores = k.maskScores(scores, place);
              Value lseCols = columns(lse, shared.lseRows);
              Value probs = k.probabilities(scores, lseCols);
              Value valueWeights = probs;
              if (dropout) {
                Value keep = dropout.factors(b, scoresType, key0, q0,
                                             /*transposed=*/true);
                if (withDv)
                  valueWeights = arith::MulFOp::create(b, probs, keep);
                if (withDk)
                  dprobs = arith::MulFOp::create(b, dprobs, keep);
              }
              SmallVector<Value> next;
              auto scoreGradient = [&] {
                Value deltaCols = columns(delta, shared.deltaRows);
                return k.operand(k.scoreGradient(probs, dprobs, deltaCols));
              };
              // dV's A is P^T from registers, fused dQ or not: only its own
              // warpgroup reads it, and a shared copy cost a stmatrix pass
              // and two block barriers per query tile. A fused dQ computes
              // dS first, so that P^T is live only while dV's product runs,
              // not through dS's arithmetic: its computing warpgroups fit
              // in 232 registers so (40 bytes spilled the other way round;
              // bench/results/2026-12-07-bwd-p-registers/).
              Value dscores;
              if (withDk && fusedDq)
                dscores = scoreGradient();
              Value dvNew;
              if (withDv)
                dvNew =
                    TileMatmulOp::create(b, accType, k.operand(valueWeights),
                                         shared.dout, acc.back());
              if (withDk) {
                if (!dscores)
                  dscores = scoreGradient();
                // A fused dQ stores dS^T to shared memory for dQ^T; dK then
                // reads it there too, which spares the registers of its A
                // operand (the kernel is at 255 with it: 92 bytes spilled).
                // Its two slots alternate, so the store needs no barrier
                // for the readers of its slot: those of two iterations back
                // were waited for before the warps computed this
                // iteration's S^T, and every warp passed the previous
                // store's barrier after that. This holds while a tile's
                // products are issued in program order: a schedule issuing
                // the next tile's S^T before this dK needs the barrier back.
                if (fusedDq) {
                  Value slot =
                      tileSlot(b, shared.dscores,
                               arith::AddIOp::create(
                                   b, arith::MulIOp::create(b, h, tilesPerHead),
                                   iteration));
                  StoreTileSharedOp::create(b, dscores, slot,
                                            /*transposed=*/true,
                                            /*no_leading_barrier=*/true);
                  dscores = slot;
                }
                next.push_back(TileMatmulOp::create(
                    b, accType, dscores, shared.query, acc[0],
                    /*transpose_b=*/false, /*transpose_a=*/bool(fusedDq)));
                if (fusedDq)
                  addDqPart(k, shared, dscores, fusedDq, batch, head, turn, q0);
              }
              if (withDv)
                next.push_back(dvNew);
              return next;
            },
            /*keyLoop=*/regionMask, /*copyLoop=*/true);
        return SmallVector<Value>(inner.begin(), inner.end());
      });
  if (withDk) {
    // dS holds the derivative by the scaled score; the scale comes in once.
    Value dkTile =
        arith::MulFOp::create(b, sums[0], splatConstant(b, accType, k.scale));
    StoreTileOp::create(b, k.toElement(dkTile), dk, batch, kvHead, key0,
                        Value());
  }
  if (withDv)
    StoreTileOp::create(b, k.toElement(sums.back()), dv, batch, kvHead, key0,
                        Value());
}

/// The key block of this dK/dV block; the grid is [key blocks, batch x kv
/// heads] and launches x fastest. A causal fused dQ's blocks take turns
/// from the last key block down (buildDkDvNest), and a block may only wait
/// for blocks launched before it: there x runs the key blocks backwards.
Value dkdvKeyBlock(ImplicitLocOpBuilder &b, bool backwards) {
  Value x = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (!backwards)
    return x;
  Value lastKeyBlock = arith::SubIOp::create(
      b, gpu::GridDimOp::create(b, gpu::Dimension::x), index(b, 1));
  return arith::SubIOp::create(b, lastKeyBlock, x);
}

void buildDkDv(GradKernel &k, const DkDvBuffers &shared, Value lse, Value delta,
               Value dk, Value dv, FusedDqTargets fusedDq) {
  ImplicitLocOpBuilder &b = k.b;
  const GradConfig &c = k.config;
  Value heads = memref::DimOp::create(b, k.query, 1);
  Value kvHeads = memref::DimOp::create(b, k.key, 1);
  Value seqQ = memref::DimOp::create(b, k.query, 2);
  Value group = arith::DivUIOp::create(b, heads, kvHeads);
  auto [batch, kvHead] =
      batchAndHead(b, gpu::BlockIdOp::create(b, gpu::Dimension::y), kvHeads);
  Value keyBlock = dkdvKeyBlock(b, fusedDq && k.causal);
  Value key0 = arith::MulIOp::create(b, keyBlock, index(b, c.blockM));
  StageTileOp::create(b, k.key, batch, kvHead, key0, shared.key);
  auto nest = [&](DkDvPart part) {
    buildDkDvNest(k, shared, lse, delta, dk, dv, part, batch, kvHead, keyBlock,
                  key0, heads, group, seqQ, fusedDq);
  };
  if (!c.splitDkdv)
    return nest(DkDvPart::Both);
  // split_dkdv: a uniform branch on the block's grid z (dkdv_parts), so that
  // each block holds one accumulator and ptxas allocates for the larger
  // nest, not for both.
  Value isDv = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq, gpu::BlockIdOp::create(b, gpu::Dimension::z),
      index(b, 0));
  auto parts = scf::IfOp::create(b, isDv, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(parts.thenYield());
  nest(DkDvPart::Dv);
  b.setInsertionPoint(parts.elseYield());
  nest(DkDvPart::Dk);
}

//===----------------------------------------------------------------------===//
// dQ: one query tile per block
//===----------------------------------------------------------------------===//

struct DqBuffers {
  Value query, dout, key, value; // shared tiles
};

void buildDq(GradKernel &k, const DqBuffers &shared, Value lse, Value delta,
             Value dq) {
  ImplicitLocOpBuilder &b = k.b;
  const GradConfig &c = k.config;
  Value heads = memref::DimOp::create(b, k.query, 1);
  Value kvHeads = memref::DimOp::create(b, k.key, 1);
  Value seqKv = memref::DimOp::create(b, k.key, 2);
  auto [batch, head] =
      batchAndHead(b, gpu::BlockIdOp::create(b, gpu::Dimension::y), heads);
  Value kvHead = arith::DivUIOp::create(
      b, head, arith::DivUIOp::create(b, heads, kvHeads));
  Value row0 = arith::MulIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), index(b, c.blockM));
  StageTileOp::create(b, k.query, batch, head, row0, shared.query);
  StageTileOp::create(b, k.dout, batch, head, row0, shared.dout);
  auto rowsType = VectorType::get({c.blockM}, k.f32());
  Value lseRows = LoadRowsOp::create(b, rowsType, lse, batch, head, row0);
  Value deltaRows = LoadRowsOp::create(b, rowsType, delta, batch, head, row0);

  // Every key tile, every tile masked, as in the forward's tiled form:
  // fa-eliminate-causal-tiles stops the loop at the diagonal and drops the
  // mask from the tiles before it.
  Value numKeyTiles = arith::CeilDivUIOp::create(b, seqKv, index(b, c.blockN));
  VectorType accType = k.tile(c.blockM, k.headDim, k.f32());
  VectorType scoresType = k.tile(c.blockM, c.blockN, k.f32());
  Value lseTile = RowBroadcastOp::create(b, scoresType, lseRows);
  Value deltaTile = RowBroadcastOp::create(b, scoresType, deltaRows);
  DropoutParams dropout = k.dropoutOf(batch, head, heads);
  Value sum = k.loop(
      index(b, 0), numKeyTiles, {splatConstant(b, accType, 0.0)},
      [&](Value j, ValueRange acc) -> SmallVector<Value> {
        Value col0 = arith::MulIOp::create(b, j, index(b, c.blockN));
        StageTileOp::create(b, k.key, batch, kvHead, col0, shared.key);
        StageTileOp::create(b, k.value, batch, kvHead, col0, shared.value);
        // dP issued right after S runs during the probabilities (wgmma).
        Value scores =
            TileMatmulOp::create(b, scoresType, shared.query, shared.key,
                                 splatConstant(b, scoresType, 0.0),
                                 /*transpose_b=*/true);
        Value dprobs =
            TileMatmulOp::create(b, scoresType, shared.dout, shared.value,
                                 splatConstant(b, scoresType, 0.0),
                                 /*transpose_b=*/true);
        TilePlace place{row0, col0, seqKv, batch, head};
        scores = k.maskScores(scores, place);
        Value probs = k.probabilities(scores, lseTile);
        if (dropout)
          dprobs = arith::MulFOp::create(
              b, dprobs, dropout.factors(b, scoresType, row0, col0));
        Value dscores = k.scoreGradient(probs, dprobs, deltaTile);
        return {TileMatmulOp::create(b, accType, k.operand(dscores), shared.key,
                                     acc[0],
                                     /*transpose_b=*/false)};
      },
      /*keyLoop=*/true, /*copyLoop=*/true)[0];
  Value dqTile =
      arith::MulFOp::create(b, sum, splatConstant(b, accType, k.scale));
  StoreTileOp::create(b, k.toElement(dqTile), dq, batch, head, row0, Value());
}

/// The attention_bwd kernel of a fused dQ: dq = scale * dq_accum in the
/// element type, one block_m x head_dim tile per block.
void buildDqConvert(GradKernel &k, Value accum, Value dq) {
  ImplicitLocOpBuilder &b = k.b;
  Value heads = memref::DimOp::create(b, dq, 1);
  auto [batch, head] =
      batchAndHead(b, gpu::BlockIdOp::create(b, gpu::Dimension::y), heads);
  Value row0 =
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            index(b, k.config.blockM));
  VectorType tileType = k.tile(k.config.blockM, k.headDim, k.f32());
  Value sums = LoadTileOp::create(b, tileType, accum, batch, head, row0);
  Value dqTile =
      arith::MulFOp::create(b, sums, splatConstant(b, tileType, k.scale));
  StoreTileOp::create(b, k.toElement(dqTile), dq, batch, head, row0, Value());
}

//===----------------------------------------------------------------------===//
// dsinks: one query head per block
//===----------------------------------------------------------------------===//

/// The dsinks kernel's layout: one row (a head's statistics over the
/// queries of one batch) of 1024 columns, 8 per thread of 4 warps. It reads
/// 8 bytes per query row and head, a few microseconds beside the backward.
constexpr RowsLayout kDsinksLayout{/*rows=*/1, /*cols=*/1024, /*threads=*/128};

/// dsinks[h] = -sum over (b, i) of exp(sinks[h] - lse[b, h, i]) delta[b, h, i]
/// (P_sink = exp(sink - lse) is the sink's probability in row i, and
/// dL/dsink = sum_i P_sink (0 - delta_i)), for head h = block x: each thread
/// sums its columns over every batch and column block, then the block sums
/// its threads, in an order fixed by the layout (no atomics).
void buildDsinks(GradKernel &k, Value lse, Value delta, Value sinks,
                 Value dsinks) {
  ImplicitLocOpBuilder &b = k.b;
  const RowsLayout &layout = kDsinksLayout;
  Type f32 = b.getF32Type();
  auto blockType = VectorType::get({layout.rows, layout.cols}, f32);
  auto rowType = VectorType::get({layout.rows}, f32);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value batches = memref::DimOp::create(b, lse, 0);
  Value heads = memref::DimOp::create(b, lse, 1);
  Value queries = memref::DimOp::create(b, lse, 2);
  Value colTiles =
      arith::CeilDivUIOp::create(b, queries, index(b, layout.cols));
  // [batch, heads, queries] as [batch * heads, queries]: row b * H + h.
  SmallVector<ReassociationIndices> rowsOfHeads = {{0, 1}, {2}};
  Value lseRows = memref::CollapseShapeOp::create(b, lse, rowsOfHeads);
  Value deltaRows = memref::CollapseShapeOp::create(b, delta, rowsOfHeads);
  Value sink = RowBroadcastOp::create(
      b, blockType, LoadBlockOp::create(b, rowType, sinks, ValueRange{head}));
  Value log2e = splatConstant(b, blockType, M_LOG2E);
  Value sums = k.loop(
      index(b, 0), batches, {splatConstant(b, blockType, 0.0)},
      [&](Value batch, ValueRange acc) -> SmallVector<Value> {
        Value row = arith::AddIOp::create(
            b, arith::MulIOp::create(b, batch, heads), head);
        ValueRange inner = k.loop(
            index(b, 0), colTiles, acc,
            [&](Value tile, ValueRange acc) -> SmallVector<Value> {
              Value col0 =
                  arith::MulIOp::create(b, tile, index(b, layout.cols));
              Value logSumExp = LoadBlockOp::create(b, blockType, lseRows,
                                                    ValueRange{row, col0});
              Value deltas = LoadBlockOp::create(b, blockType, deltaRows,
                                                 ValueRange{row, col0});
              Value sinkProbability = math::Exp2Op::create(
                  b, arith::MulFOp::create(
                         b, arith::SubFOp::create(b, sink, logSumExp), log2e));
              Value term = arith::MulFOp::create(b, sinkProbability, deltas);
              // Columns past the queries read lse = 0: exp(sink) may be inf
              // there, and inf * 0 NaN.
              term = ZeroColumnsOp::create(b, blockType, term, col0, queries);
              return {arith::AddFOp::create(b, acc[0], term)};
            });
        return {inner[0]};
      })[0];
  Value total = vector::MultiDimReductionOp::create(
      b, sums, splatConstant(b, rowType, 0.0), ArrayRef<bool>{false, true},
      vector::CombiningKind::ADD);
  StoreBlockOp::create(b, arith::NegFOp::create(b, total), dsinks,
                       ValueRange{head});
}

//===----------------------------------------------------------------------===//
// Kernels and their manifest entries
//===----------------------------------------------------------------------===//

/// The configuration recorded on a kernel (kTileConfigAttr): its sizes, its
/// wgmma and split_dkdv, and the forward's flags at their defaults but
/// skip_unit_rescale, which the warp-level lowering must not apply (the
/// backward has no online rescale).
TileAttr kernelConfigAttr(MLIRContext *context, const GradConfig &c) {
  TileAttr none = TileAttr::get(context);
  return TileAttr::get(context, c.blockM, c.blockN, c.numWarps, c.numStages,
                       none.getQInShared(), none.getPipelineCopies(),
                       /*skip_unit_rescale=*/false, none.getStageOutput(),
                       c.warpgroupMma, none.getOverlapSoftmax(),
                       /*dq_block_m=*/std::nullopt, /*dq_block_n=*/std::nullopt,
                       /*dq_num_warps=*/std::nullopt, c.splitDkdv,
                       c.warpSpecialize, none.getPingPong(),
                       /*blocks_per_sm=*/std::nullopt, none.getPersistent(),
                       c.fusedDq);
}

/// The forward-only flags `tile` sets to other than their defaults, which
/// the backward refuses.
SmallVector<StringRef> forwardOnlyFlags(TileAttr tile) {
  TileAttr none = TileAttr::get(tile.getContext());
  std::pair<StringRef, bool> flags[] = {
      {"q_in_shared", tile.getQInShared() != none.getQInShared()},
      {"pipeline_copies", tile.getPipelineCopies() != none.getPipelineCopies()},
      {"skip_unit_rescale",
       tile.getSkipUnitRescale() != none.getSkipUnitRescale()},
      {"stage_output", tile.getStageOutput() != none.getStageOutput()},
      {"overlap_softmax", tile.getOverlapSoftmax() != none.getOverlapSoftmax()},
      {"ping_pong", tile.getPingPong() != none.getPingPong()},
      {"blocks_per_sm", tile.getBlocksPerSm().has_value()},
      {"persistent", tile.getPersistent() != none.getPersistent()}};
  SmallVector<StringRef> set;
  for (auto [name, isSet] : flags)
    if (isSet)
      set.push_back(name);
  return set;
}

/// The kernels of one attention_grad, as its function gives them.
struct GradFunction {
  func::FuncOp func;
  AttentionGradOp op;
  /// The captures the function receives, which the dK/dV and dQ kernels take
  /// as parameters after their own (named by fa.name, else captureN).
  SmallVector<KernelParam> captureParams;
  /// The manifest's variant (fa.variant; "custom" for unnamed regions).
  StringRef variant;
  /// The kernels' shared tiles have the query's element type and head_dim.
  Type sharedTile(int64_t rows) {
    return sharedTile(rows, op.getQuery().getType().getDimSize(3));
  }
  Type sharedTile(int64_t rows, int64_t cols) {
    MemRefType query = op.getQuery().getType();
    return MemRefType::get(
        {rows, cols}, query.getElementType(), MemRefLayoutAttrInterface{},
        gpu::AddressSpaceAttr::get(
            func.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace()));
  }
  /// A shared buffer of `rows` f32 statistics (staged lse or delta).
  Type sharedRows(int64_t rows) {
    return MemRefType::get(
        {rows}, Float32Type::get(func.getContext()),
        MemRefLayoutAttrInterface{},
        gpu::AddressSpaceAttr::get(
            func.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace()));
  }
  /// A fused dQ's sums, [batch, heads, seq_q, head_dim] in f32, and the
  /// counters ordering them, [batch, heads, query tiles] in i32.
  Type dqAccumType() {
    MemRefType query = op.getQuery().getType();
    return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                            ShapedType::kDynamic, query.getDimSize(3)},
                           Float32Type::get(func.getContext()));
  }
  Type dqSemaphoresType() {
    return MemRefType::get(SmallVector<int64_t>(3, ShapedType::kDynamic),
                           IntegerType::get(func.getContext(), 32));
  }
  /// The delta, lse and partial statistics: [batch, heads, seq] in f32.
  Type statsType() {
    return MemRefType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
        Float32Type::get(func.getContext()));
  }
};

/// Builds kernel `name` of `g` computing `kernelOp` on `params` with
/// configuration `c` over `grid`, and records its manifest entry in
/// `kernels`. A kernel that stages tiles (`stagesTiles`: the dK/dV and dQ
/// kernels) gets four shared tiles, two of block_m rows and two of block_n,
/// and one that stages rows (`stagesRows`: the dK/dV kernel where
/// c.stagesRows) two shared buffers of block_n f32 after them (lse, delta),
/// and the dK/dV kernel of a fused dQ (c.fusedDq) a block_n x block_m tile
/// for dS last. The builder is left in its body.
gpu::GPUFuncOp createGradKernel(ImplicitLocOpBuilder &b, GradFunction g,
                                StringRef name, KernelOp kernelOp,
                                const GradConfig &c, ArrayRef<GridDim> grid,
                                ArrayRef<KernelParam> params, bool stagesTiles,
                                SmallVectorImpl<NamedAttribute> &kernels,
                                KernelCompanions companions = {},
                                bool stagesRows = false) {
  MemRefType query = g.op.getQuery().getType();
  KernelAttr entry =
      getKernelEntry(b.getContext(), kernelOp, query.getElementType(),
                     kernelConfigAttr(b.getContext(), c),
                     c.numWarps * kThreadsPerWarp, grid, params,
                     AttentionEntry{query.getDimSize(3), g.op.getCausal(),
                                    g.op.getScaleOrDefault(), g.variant},
                     companions);
  SmallVector<Type> sharedTiles;
  if (stagesTiles)
    sharedTiles = {g.sharedTile(c.blockM), g.sharedTile(c.blockM),
                   g.sharedTile(c.blockN), g.sharedTile(c.blockN)};
  if (stagesRows)
    sharedTiles.append(2, g.sharedRows(c.blockN));
  if (stagesTiles && c.fusedDq && kernelOp == KernelOp::AttentionBwdDkdv)
    sharedTiles.push_back(g.sharedTile(c.blockN, c.blockM));
  return createKernel(b, g.func, name, entry, kernels, sharedTiles,
                      sharedTileAlignment(c.warpgroupMma));
}

struct FATileAttentionGradPass
    : public mlir::fa::impl::FATileAttentionGradBase<FATileAttentionGradPass> {
  using Base::Base;

  /// The configuration of the delta and dK/dV kernels, and of the dQ kernel
  /// (the first's, with dq_* entries in its place where given): the pass
  /// options, or the chip's default (DefaultTiles.def) for a function
  /// without fa.tile when no tile option was given, then fa.tile.
  FailureOr<std::pair<GradConfig, GradConfig>> configsFor(func::FuncOp func,
                                                          AttentionGradOp op) {
    Type element = op.getQuery().getType().getElementType();
    // A variant taking the chip's default gets its own (lookupDefaultTile:
    // the structure before warp specialisation).
    bool variant = !getKernelVariant(func, op).empty();
    FailureOr<TileAttr> tile = getFunctionTileConfig(
        func, chip,
        blockM.hasValue() || blockN.hasValue() || numWarps.hasValue() ||
            numStages.hasValue(),
        variant ? AttentionDirection::BackwardVariant
                : AttentionDirection::Backward,
        element, op.getQuery().getType().getDimSize(3), op.getCausal());
    if (failed(tile))
      return failure();
    if (SmallVector<StringRef> flags = forwardOnlyFlags(*tile); !flags.empty())
      return emitPassError(func, getArgument())
                 << "fa.tile " << flags.front()
                 << " configures the forward (fa-tile-attention); the "
                    "backward takes block_m, block_n, num_warps, num_stages, "
                    "dq_block_m, dq_block_n, dq_num_warps, wgmma, "
                    "split_dkdv, warp_specialize and fuse_dq",
             failure();
    TileAttr resolved =
        tile->withDefaultSizes(blockM, blockN, numWarps, numStages);
    GradConfig config{*resolved.getBlockM(),   *resolved.getBlockN(),
                      *resolved.getNumWarps(), *resolved.getNumStages(),
                      resolved.getWgmma(),     resolved.getSplitDkdv()};
    config.warpSpecialize = resolved.getWarpSpecialize();
    // Asked for; tileFunction checks that the kernel can (fusesDq).
    config.fusedDq = resolved.getFuseDq();
    GradConfig dq{resolved.getDqBlockM().value_or(config.blockM),
                  resolved.getDqBlockN().value_or(config.blockN),
                  resolved.getDqNumWarps().value_or(config.numWarps),
                  config.numStages, config.warpgroupMma};
    if (config.numStages < 1 || config.numStages > 2)
      return emitPassError(func, getArgument())
             << "num_stages must be 1 (synchronous copies) or 2, not "
             << config.numStages;
    auto checkShape = [&](const GradConfig &c, StringRef rows) {
      if (failed(checkMmaTileShape(func, getArgument(), c.blockM, c.blockN,
                                   c.numWarps, rows)))
        return failure();
      if (!c.warpgroupMma)
        return success();
      return checkWarpgroupTileShape(func, getArgument(), element, c.blockM,
                                     c.numWarps, rows);
    };
    if (failed(checkShape(config, "keys of the dK/dV kernel")) ||
        failed(checkShape(dq, "queries of the dQ kernel")))
      return failure();
    return std::pair{config, dq};
  }

  /// Every tile is staged in shared memory: block_m rows of K and V and
  /// block_n of Q and dO in the dK/dV kernel, the reverse in the dQ kernel.
  /// In registers, the dK/dV kernel holds two accumulators and two
  /// score-like tiles (one accumulator under split_dkdv), the dQ kernel one
  /// and two.
  LogicalResult checkTileSizes(func::FuncOp func, Type element, int64_t headDim,
                               const GradConfig &dkdv, const GradConfig &dq) {
    StringRef pass = getArgument();
    auto check = [&](StringRef tile, int64_t rows, const GradConfig &c) {
      return checkTileCopy(func, pass, tile, rows, headDim, element,
                           c.numWarps);
    };
    return success(
        succeeded(check("dK/dV kernel's key/value", dkdv.blockM, dkdv)) &&
        succeeded(check("dK/dV kernel's query/dout", dkdv.blockN, dkdv)) &&
        succeeded(check("dQ kernel's query/dout", dq.blockM, dq)) &&
        succeeded(check("dQ kernel's key/value", dq.blockN, dq)) &&
        succeeded(checkTileValuesPerThread(
            func, pass,
            dkdv.splitDkdv
                ? "the dK/dV kernel's S^T, dP^T (block_m x block_n) and dK "
                  "or dV (block_m x head_dim, split_dkdv)"
            : dkdv.fusedDq
                ? "the dK/dV kernel's S^T, dP^T (block_m x block_n), dK and "
                  "dV (block_m x head_dim) and dQ^T (head_dim x block_n, "
                  "fuse-dq)"
                : "the dK/dV kernel's S^T, dP^T (block_m x block_n), dK and "
                  "dV (block_m x head_dim)",
            element,
            dkdv.blockM *
                    (2 * dkdv.blockN + (dkdv.splitDkdv ? 1 : 2) * headDim) +
                (dkdv.fusedDq ? headDim * dkdv.blockN : 0),
            dkdv.numWarps)) &&
        succeeded(checkTileValuesPerThread(
            func, pass,
            "the dQ kernel's S, dP (block_m x block_n) and dQ (block_m x "
            "head_dim)",
            element, dq.blockM * (2 * dq.blockN + headDim), dq.numWarps)) &&
        succeeded(checkKernelSharedMemory(func, "dK/dV kernel", "K and V",
                                          "Q and dO", element, headDim, dkdv,
                                          dkdv.stagesRows())) &&
        succeeded(checkKernelSharedMemory(func, "dQ kernel", "Q and dO",
                                          "K and V", element, headDim, dq,
                                          /*stagesRows=*/false)));
  }

  /// Both kernels stage four tiles: two of block_m rows (`blockMTiles`)
  /// once, two of block_n rows (`blockNTiles`) in the loop, num_stages slots
  /// each (fa-pipeline-kv-copies); a kernel that stages rows (`stagesRows`:
  /// the dK/dV kernel where c.stagesRows) also lse and delta of block_n
  /// queries, num_stages slots each.
  LogicalResult checkKernelSharedMemory(func::FuncOp func, StringRef kernel,
                                        StringRef blockMTiles,
                                        StringRef blockNTiles, Type element,
                                        int64_t headDim, const GradConfig &c,
                                        bool stagesRows) {
    int64_t rowBytes = headDim * element.getIntOrFloatBitWidth() / 8;
    int64_t bytes = 2 * (c.blockM + c.numStages * c.blockN) * rowBytes;
    if (stagesRows)
      bytes += 2 * c.numStages * c.blockN * 4;
    // A fused dQ stores dS (2 slots of block_n x block_m); warp-specialised,
    // its writer warps read dQ from an f32 staging buffer of block_n rows of
    // head_dim, TMA's swizzled boxes (WarpSpecializeKeyBlocks.cpp).
    int64_t dscoresBytes = c.fusedDq ? 2 * c.blockN * c.blockM *
                                           element.getIntOrFloatBitWidth() / 8
                                     : 0;
    int64_t stagedDqBytes =
        c.fusedDq && c.warpSpecialize ? c.blockN * headDim * 4 : 0;
    bytes += dscoresBytes + stagedDqBytes;
    std::string config;
    llvm::raw_string_ostream os(config);
    os << blockMTiles << ": " << c.blockM << " x " << headDim << " " << element
       << " each, " << blockNTiles << ": " << c.numStages << " x " << c.blockN
       << " x " << headDim << " each";
    if (stagesRows)
      os << ", lse and delta: " << c.numStages << " x " << c.blockN
         << " f32 each";
    if (dscoresBytes)
      os << ", dS for the fused dQ: 2 x " << c.blockN << " x " << c.blockM
         << " " << element;
    if (stagedDqBytes)
      os << ", dQ staged for its writer warps: " << c.blockN << " x " << headDim
         << " f32";
    return checkSharedMemory(func, getArgument(), kernel, config, bytes, chip,
                             sharedBudget);
  }

  LogicalResult tileFunction(func::FuncOp func, AttentionGradOp op,
                             SmallVectorImpl<NamedAttribute> &kernels) {
    MemRefType queryType = op.getQuery().getType();
    FailureOr<std::pair<GradConfig, GradConfig>> configs = configsFor(func, op);
    if (failed(configs))
      return failure();
    // The pass option fuses wherever a kernel can; a function's fa.tile
    // asking for it where its kernel cannot is an error.
    bool canFuseDq =
        fusesDq(configs->first, queryType.getDimSize(3), !op.getMask().empty());
    if (configs->first.fusedDq && !canFuseDq)
      return emitPassError(func, getArgument())
                 << "fa.tile fuse_dq = true needs head_dim 128 on 8 warps of "
                    "wgmma, without split_dkdv and without a mask region",
             failure();
    configs->first.fusedDq = (configs->first.fusedDq || fuseDq) && canFuseDq;
    if (failed(checkTileSizes(func, queryType.getElementType(),
                              queryType.getDimSize(3), configs->first,
                              configs->second)))
      return failure();
    auto isCapture = [&](OpOperand &operand) {
      return llvm::is_contained(op.getCaptures(), operand.get());
    };
    for (OpOperand &operand : op->getOpOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand.get());
      if (!isCapture(operand) &&
          (!arg || arg.getOwner() != &func.getBody().front()))
        return op.emitOpError("expects every operand but the captures to be "
                              "an argument of the enclosing function");
    }
    ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
    float scale = op.getScaleOrDefault();
    GradKernel k{b,
                 configs->first,
                 op.getCausal(),
                 scale,
                 queryType.getDimSize(3),
                 queryType.getElementType(),
                 static_cast<float>(scale * M_LOG2E),
                 static_cast<float>(M_LOG2E)};
    GradFunction g{func, op, captureParams(func, op),
                   getKernelVariant(func, op)};
    k.exponentials =
        backwardExponentialFlags(func.getContext(), k.config, g.variant);
    k.regions = {&op.getMask(),
                 &op.getScore(),
                 op.getCausal(),
                 {},
                 op->hasAttr(kSortedDocumentIdsAttr)};
    // The derivative of the score region, built once and copied into every
    // tile that needs it.
    Region derivative;
    if (k.regions.hasScore()) {
      OpBuilder builder(func.getContext());
      if (failed(buildScoreDerivative(builder, op.getScore(), derivative)))
        return emitPassError(func, getArgument())
               << "cannot differentiate the score region for the backward";
      k.scoreDerivative = &derivative;
    }
    buildKernels(g, k, configs->second, kernels);
    return success();
  }

  /// The arguments of `func` beyond the op's tensors (its captures, and
  /// values only the prelude reads), as the dK/dV and dQ kernels' last
  /// parameters: named by fa.name, else captureN for capture N.
  static SmallVector<KernelParam> captureParams(func::FuncOp func,
                                                AttentionGradOp op) {
    SmallVector<KernelParam> params;
    for (BlockArgument arg : func.getArguments()) {
      auto isTensor = [&](OpOperand &use) {
        return use.getOwner() == op &&
               !llvm::is_contained(op.getCaptures(), arg);
      };
      if (llvm::any_of(arg.getUses(), isTensor))
        continue;
      params.push_back(
          {getExtraParamName(func, arg, op.getCaptures()).getValue(),
           arg.getType(), arg});
    }
    return params;
  }

  /// Maps the op's q, k, v, dout (the first four parameters of `kernel`)
  /// and the captures (its last parameters) into `kernel`, recomputes the
  /// function's prelude there, and returns the kernel's captures.
  static SmallVector<Value> kernelCaptures(ImplicitLocOpBuilder &b,
                                           GradFunction &g,
                                           gpu::GPUFuncOp kernel) {
    IRMapping mapping;
    AttentionGradOp op = g.op;
    mapping.map(
        ValueRange{op.getQuery(), op.getKey(), op.getValue(), op.getDout()},
        kernel.getArguments().take_front(4));
    // The parameters, without the workgroup attributions after them.
    ValueRange params = kernel.getArguments().take_front(
        kernel.getFunctionType().getNumInputs());
    for (auto [param, arg] : llvm::zip_equal(
             g.captureParams, params.take_back(g.captureParams.size())))
      mapping.map(param.value, arg);
    clonePrelude(b, op, mapping);
    return llvm::map_to_vector(op.getCaptures(), [&](Value capture) {
      return mapping.lookup(capture);
    });
  }

  /// The three kernels of `g`, in the order the runtime launches them:
  /// delta, dK/dV (both with `k`'s configuration) and dQ (with `dq`).
  void buildKernels(GradFunction g, GradKernel &k, const GradConfig &dq,
                    SmallVectorImpl<NamedAttribute> &kernels) {
    ImplicitLocOpBuilder &b = k.b;
    AttentionGradOp op = g.op;
    Type stats = g.statsType();
    std::string name = g.func.getName().str();
    std::string deltaName = name + "_delta", dkdvName = name + "_dkdv";
    // The q, k, v, dout of a kernel taking them first.
    auto withOperands = [&](gpu::GPUFuncOp kernel, const GradConfig &c) {
      GradKernel copy = k;
      copy.config = c;
      copy.query = kernel.getArgument(0);
      copy.key = kernel.getArgument(1);
      copy.value = kernel.getArgument(2);
      copy.dout = kernel.getArgument(3);
      return copy;
    };
    auto sharedBuffers = [](gpu::GPUFuncOp kernel) {
      auto buffers = kernel.getWorkgroupAttributions();
      return std::array<Value, 4>{buffers[0], buffers[1], buffers[2],
                                  buffers[3]};
    };

    // split_dkdv and fuse_dq are the dK/dV kernel's alone.
    GradConfig deltaConfig = k.config;
    deltaConfig.splitDkdv = false;
    deltaConfig.fusedDq = false;
    deltaConfig.warpSpecialize = false;
    gpu::GPUFuncOp deltaKernel = createGradKernel(
        b, g, deltaName, KernelOp::AttentionBwdDelta, deltaConfig,
        {GridDim::QueryTiles, GridDim::BatchHeads, GridDim::One},
        {{"out", op.getOut().getType()},
         {"dout", op.getDout().getType()},
         {"delta", stats}},
        /*stagesTiles=*/false, kernels);
    buildDelta(k, deltaKernel.getArgument(0), deltaKernel.getArgument(1),
               deltaKernel.getArgument(2));
    gpu::ReturnOp::create(b);

    SmallVector<KernelParam> params = {{"q", op.getQuery().getType()},
                                       {"k", op.getKey().getType()},
                                       {"v", op.getValue().getType()},
                                       {"dout", op.getDout().getType()},
                                       {"lse", stats},
                                       {"delta", stats}};
    // Dropout's values follow each kernel's outputs, before the captures.
    SmallVector<KernelParam> dropoutParams;
    if (op.getDropoutP())
      dropoutParams = {{"dropout_p", op.getDropoutP().getType()},
                       {"dropout_seed", op.getDropoutSeed().getType()},
                       {"dropout_offset", op.getDropoutOffset().getType()}};
    auto bindDropout = [&](GradKernel &kernel, gpu::GPUFuncOp func,
                           unsigned first) {
      if (dropoutParams.empty())
        return;
      kernel.dropoutP = func.getArgument(first);
      kernel.dropoutSeed = func.getArgument(first + 1);
      kernel.dropoutOffset = func.getArgument(first + 2);
    };
    bool fusedDq = k.config.fusedDq;
    SmallVector<KernelParam> dkdvParams = params;
    dkdvParams.append(
        {{"dk", op.getDkey().getType()}, {"dv", op.getDvalue().getType()}});
    if (fusedDq)
      dkdvParams.append({{"dq_accum", g.dqAccumType()},
                         {"dq_semaphores", g.dqSemaphoresType()}});
    unsigned dkdvDropout = dkdvParams.size();
    dkdvParams.append(dropoutParams);
    dkdvParams.append(g.captureParams);
    gpu::GPUFuncOp dkdvKernel = createGradKernel(
        b, g, dkdvName, KernelOp::AttentionBwdDkdv, k.config,
        {GridDim::KeyTiles, GridDim::BatchKvHeads,
         k.config.splitDkdv ? GridDim::DkdvParts : GridDim::One},
        dkdvParams,
        /*stagesTiles=*/true, kernels, /*companions=*/{},
        k.config.stagesRows());
    auto [key, value, query, dout] = sharedBuffers(dkdvKernel);
    DkDvBuffers dkdvShared{key, value, query, dout};
    if (k.config.stagesRows()) {
      dkdvShared.lseRows = dkdvKernel.getWorkgroupAttributions()[4];
      dkdvShared.deltaRows = dkdvKernel.getWorkgroupAttributions()[5];
    }
    FusedDqTargets dqTargets;
    if (fusedDq) {
      auto buffers = dkdvKernel.getWorkgroupAttributions();
      dkdvShared.dscores = buffers.back();
      multiBufferTile(dkdvShared.dscores, /*stages=*/2);
      dqTargets =
          FusedDqTargets{dkdvKernel.getArgument(8), dkdvKernel.getArgument(9)};
    }
    GradKernel kk = withOperands(dkdvKernel, k.config);
    bindDropout(kk, dkdvKernel, dkdvDropout);
    SmallVector<Value> dkdvCaptures = kernelCaptures(b, g, dkdvKernel);
    kk.regions.captures = dkdvCaptures;
    buildDkDv(kk, dkdvShared, dkdvKernel.getArgument(4),
              dkdvKernel.getArgument(5), dkdvKernel.getArgument(6),
              dkdvKernel.getArgument(7), dqTargets);
    gpu::ReturnOp::create(b);

    std::string dsinksName = op.getDsinks() ? name + "_dsinks" : "";
    if (fusedDq) {
      GradConfig convert = dq;
      convert.fusedDq = false;
      gpu::GPUFuncOp convertKernel = createGradKernel(
          b, g, name, KernelOp::AttentionBwd, convert,
          {GridDim::QueryTiles, GridDim::BatchHeads, GridDim::One},
          {{"dq_accum", g.dqAccumType()}, {"dq", op.getDquery().getType()}},
          /*stagesTiles=*/false, kernels,
          {deltaName, dkdvName, /*paramsKernel=*/"", dsinksName});
      GradKernel kc = k;
      kc.config = convert;
      buildDqConvert(kc, convertKernel.getArgument(0),
                     convertKernel.getArgument(1));
      gpu::ReturnOp::create(b);
    } else {
      SmallVector<KernelParam> dqParams = params;
      dqParams.push_back({"dq", op.getDquery().getType()});
      unsigned dqDropout = dqParams.size();
      dqParams.append(dropoutParams);
      dqParams.append(g.captureParams);
      gpu::GPUFuncOp dqKernel = createGradKernel(
          b, g, name, KernelOp::AttentionBwd, dq,
          {GridDim::QueryTiles, GridDim::BatchHeads, GridDim::One}, dqParams,
          /*stagesTiles=*/true, kernels,
          {deltaName, dkdvName, /*paramsKernel=*/"", dsinksName});
      auto [dqQuery, dqDout, dqKey, dqValue] = sharedBuffers(dqKernel);
      GradKernel kq = withOperands(dqKernel, dq);
      bindDropout(kq, dqKernel, dqDropout);
      SmallVector<Value> dqCaptures = kernelCaptures(b, g, dqKernel);
      kq.regions.captures = dqCaptures;
      buildDq(kq, {dqQuery, dqDout, dqKey, dqValue}, dqKernel.getArgument(4),
              dqKernel.getArgument(5), dqKernel.getArgument(6));
      gpu::ReturnOp::create(b);
    }

    if (dsinksName.empty())
      return;
    MLIRContext *context = b.getContext();
    const RowsLayout &layout = kDsinksLayout;
    KernelAttr entry = getKernelEntry(
        context, KernelOp::AttentionBwdDsinks, b.getF32Type(),
        RowsAttr::get(context, layout.rows, layout.cols,
                      layout.threads / kThreadsPerWarp,
                      /*resident=*/std::nullopt, /*persistent=*/false),
        layout.threads, {GridDim::Heads, GridDim::One, GridDim::One},
        {{"lse", stats},
         {"delta", stats},
         {"sinks", op.getSinks().getType()},
         {"dsinks", op.getDsinks().getType()}});
    gpu::GPUFuncOp dsinksKernel =
        createKernel(b, g.func, dsinksName, entry, kernels);
    buildDsinks(k, dsinksKernel.getArgument(0), dsinksKernel.getArgument(1),
                dsinksKernel.getArgument(2), dsinksKernel.getArgument(3));
    gpu::ReturnOp::create(b);
  }

  void runOnOperation() override {
    if (failed(tileKernelFunctionsOf<AttentionGradOp>(
            getOperation(), getArgument(), chip, sharedBudget,
            [&](func::FuncOp func, AttentionGradOp op,
                SmallVectorImpl<NamedAttribute> &kernels) {
              return tileFunction(func, op, kernels);
            })))
      signalPassFailure();
  }

  /// The static shared memory a kernel for `chip` may use.
  int64_t sharedBudget = 0;
};
} // namespace
