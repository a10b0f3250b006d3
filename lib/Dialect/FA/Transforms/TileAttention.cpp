//===- TileAttention.cpp - fa.attention to a tiled GPU kernel -------------===//
//
// Builds the tiled level of attention: an explicit grid mapping and key/value
// loops over tile-level ops. The softmax is left in its safe three-phase form
// (maximum, sum, weighted values) so that each later pass has one job: fusing
// the phases, and eliminating masked tiles.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/DefaultTiles.h"
#include "fa/Dialect/FA/Transforms/Dropout.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/RegionTiles.h"

#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FATILEATTENTION
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {

/// The kernel's configuration: its fa.tile with every size resolved (the
/// record on the kernel), the sizes copied out for the arithmetic. The flags
/// (TileAttr's getters): q_in_shared keeps the query tile in shared memory
/// (fewer registers, one more shared read per product); pipeline_copies lets
/// fa-pipeline-kv-copies overlap the K/V copies with compute;
/// skip_unit_rescale lets the lowering skip the accumulator rescale of warps
/// whose row maxima did not change (pays at D=128, costs at D=64; see
/// kernels/CMakeLists.txt); stage_output writes the output through shared
/// memory in 16-byte chunks (off by default: +3% at D=128 N=1024, up to -5%
/// causal on an H100); wgmma runs both products as Hopper warpgroup MMAs,
/// each 4-warp group owning 64 query rows; overlap_softmax lets
/// fa-overlap-softmax run each tile's softmax during the previous P @ V.
struct TileConfig {
  explicit TileConfig(TileAttr resolved)
      : attr(resolved), blockM(*resolved.getBlockM()),
        blockN(*resolved.getBlockN()), numWarps(*resolved.getNumWarps()),
        numStages(*resolved.getNumStages()) {}

  TileAttr attr;
  int64_t blockM, blockN, numWarps, numStages;
  bool queryInShared() const { return attr.getQInShared(); }
  bool stageOutput() const { return attr.getStageOutput(); }
  bool warpgroupMma() const { return attr.getWgmma(); }
};

/// The kernel's static shared memory: num_stages slots of the K and V tiles
/// (fa-pipeline-kv-copies or fa-overlap-softmax add the second), and the
/// query or output tile where it passes through shared memory (one buffer
/// serves both).
int64_t sharedBytes(const TileConfig &c, int64_t headDim, Type element) {
  int64_t rowBytes = headDim * element.getIntOrFloatBitWidth() / 8;
  int64_t bytes = 2 * c.numStages * c.blockN * rowBytes;
  if (c.queryInShared() || c.stageOutput())
    bytes += c.blockM * rowBytes;
  return bytes;
}

/// What sharedBytes counts, for its diagnostic.
std::string formatSharedTiles(const TileConfig &c, int64_t headDim,
                              Type element) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "K and V: " << c.numStages << " x " << c.blockN << " x " << headDim
     << " " << element << " each";
  if (c.queryInShared() || c.stageOutput())
    os << ", " << (c.queryInShared() ? "Q" : "the output") << ": " << c.blockM
       << " x " << headDim;
  return text;
}

/// Values of the kernel that every phase needs.
struct KernelContext {
  AttentionOp op;
  TileConfig config;
  Value batch, head, kvHead, row0, kvLen, numKvTiles;
  /// The query tile: a register tile, or a shared-memory tile.
  Value queryTile, keyBuffer, valueBuffer;
  /// Where the output tile passes on its way to global memory (stage_output):
  /// the query tile's buffer when Q is in shared memory (done with by then),
  /// else a buffer of its own; null without staging.
  Value outputStaging;
  Value zero, one;
  /// The dropout of the probabilities, where the op has it.
  DropoutParams dropout;
};

VectorType tileType(int64_t rows, int64_t cols, Type element) {
  return VectorType::get({rows, cols}, element);
}

/// The scaled, masked scores of key tile `j`: scale * q @ k_j^T, masked.
Value buildScores(ImplicitLocOpBuilder &b, KernelContext &ctx, Value j) {
  const TileConfig &c = ctx.config;
  Value col0 = arith::MulIOp::create(b, j, index(b, c.blockN));
  Value key = ctx.op.getKey();
  StageTileOp::create(b, key, ctx.batch, ctx.kvHead, col0, ctx.keyBuffer);
  VectorType scoresType = tileType(c.blockM, c.blockN, b.getF32Type());
  Value scores = TileMatmulOp::create(
      b, scoresType, ctx.queryTile, ctx.keyBuffer,
      splatConstant(b, scoresType, 0.0), /*transpose_b=*/true);
  scores = arith::MulFOp::create(
      b, scores, splatConstant(b, scoresType, ctx.op.getScaleOrDefault()));
  AttentionRegions regions{&ctx.op.getMask(), &ctx.op.getScore(),
                           ctx.op.getCausal(), ctx.op.getCaptures(),
                           ctx.op->hasAttr(kSortedDocumentIdsAttr)};
  return applyRegions(b, regions, scores,
                      {ctx.row0, col0, ctx.kvLen, ctx.batch, ctx.head});
}

/// exp(scores - rowMax), the unnormalised probabilities of one key tile.
Value buildProbabilities(ImplicitLocOpBuilder &b, Value scores, Value rowMax) {
  Value broadcastMax = RowBroadcastOp::create(b, scores.getType(), rowMax);
  return math::ExpOp::create(b, arith::SubFOp::create(b, scores, broadcastMax));
}

/// One loop over all key tiles carrying `init`; `body` returns the new value.
Value buildKvLoop(
    ImplicitLocOpBuilder &b, KernelContext &ctx, SoftmaxPhase phase, Value init,
    function_ref<Value(ImplicitLocOpBuilder &, Value, Value)> body) {
  auto loop = scf::ForOp::create(
      b, ctx.zero, ctx.numKvTiles, ctx.one, ValueRange{init},
      [&](OpBuilder &nested, Location loc, Value j, ValueRange carried) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(nb, body(nb, j, carried.front()));
      });
  loop->setAttr(kKvLoopAttr, b.getUnitAttr());
  loop->setAttr(kSoftmaxPhaseAttr,
                SoftmaxPhaseAttr::get(b.getContext(), phase));
  return loop.getResult(0);
}

/// The sink logit of the block's head joins each row's softmax (GPT-OSS):
/// with m the row maximum and l the sum of exp(s - m), the maximum becomes
/// m' = max(m, sink), the sum l' = l e^(m - m') + e^(sink - m') and the
/// accumulator is rescaled by e^(m - m'). A row with no kept key (m = -inf)
/// gets l' = 1 and a zero output, its log-sum-exp the sink: l' > 0 always.
void joinSinks(ImplicitLocOpBuilder &b, KernelContext &ctx, Value &rowMax,
               Value &rowSum, Value &acc) {
  auto rowsType = cast<VectorType>(rowMax.getType());
  Value sink = memref::LoadOp::create(b, ctx.op.getSinks(), ctx.head);
  Value sinkRows = vector::BroadcastOp::create(b, rowsType, sink);
  Value newMax = arith::MaximumFOp::create(b, rowMax, sinkRows);
  Value log2e = splatConstant(b, rowsType, M_LOG2E);
  auto expOf = [&](Value difference) -> Value {
    return math::Exp2Op::create(b, arith::MulFOp::create(b, difference, log2e));
  };
  Value rescale = expOf(arith::SubFOp::create(b, rowMax, newMax));
  rowSum =
      arith::AddFOp::create(b, arith::MulFOp::create(b, rowSum, rescale),
                            expOf(arith::SubFOp::create(b, sinkRows, newMax)));
  acc = arith::MulFOp::create(
      b, acc, RowBroadcastOp::create(b, acc.getType(), rescale));
  rowMax = newMax;
}

void buildAttentionBody(ImplicitLocOpBuilder &b, KernelContext &ctx) {
  const TileConfig &c = ctx.config;
  AttentionOp op = ctx.op;
  Type f32 = b.getF32Type();
  auto rowsType = VectorType::get({c.blockM}, f32);

  Value rowMax = buildKvLoop(
      b, ctx, SoftmaxPhase::Max,
      splatConstant(b, rowsType, -std::numeric_limits<double>::infinity()),
      [&](ImplicitLocOpBuilder &nb, Value j, Value runningMax) -> Value {
        return vector::MultiDimReductionOp::create(
            nb, buildScores(nb, ctx, j), runningMax,
            ArrayRef<bool>{false, true}, vector::CombiningKind::MAXNUMF);
      });

  Value rowSum = buildKvLoop(
      b, ctx, SoftmaxPhase::Sum, splatConstant(b, rowsType, 0.0),
      [&](ImplicitLocOpBuilder &nb, Value j, Value runningSum) -> Value {
        Value p = buildProbabilities(nb, buildScores(nb, ctx, j), rowMax);
        return vector::MultiDimReductionOp::create(nb, p, runningSum,
                                                   ArrayRef<bool>{false, true},
                                                   vector::CombiningKind::ADD);
      });

  Type element = op.getQuery().getType().getElementType();
  int64_t headDim = op.getHeadDim();
  Value acc = buildKvLoop(
      b, ctx, SoftmaxPhase::Accumulate,
      splatConstant(b, tileType(c.blockM, headDim, f32), 0.0),
      [&](ImplicitLocOpBuilder &nb, Value j, Value runningAcc) -> Value {
        Value p = buildProbabilities(nb, buildScores(nb, ctx, j), rowMax);
        Value col0 = arith::MulIOp::create(nb, j, index(nb, c.blockN));
        // Dropout acts on the values' weights only: the row sums above are
        // those of the softmax without it.
        if (ctx.dropout)
          p = ctx.dropout.apply(nb, p, ctx.row0, col0);
        // f16/bf16 operands for the tensor cores; f32 stays f32 (the
        // lowering splits it into TF32 parts).
        Value pOperand =
            element.isF32() ? p
                            : arith::TruncFOp::create(
                                  nb, tileType(c.blockM, c.blockN, element), p);
        StageTileOp::create(nb, op.getValue(), ctx.batch, ctx.kvHead, col0,
                            ctx.valueBuffer);
        return TileMatmulOp::create(nb, runningAcc.getType(), pOperand,
                                    ctx.valueBuffer, runningAcc,
                                    /*transpose_b=*/false);
      });

  if (op.getSinks())
    joinSinks(b, ctx, rowMax, rowSum, acc);
  // Normalise once: one reciprocal per row, then a multiply per element
  // (a full-precision division per element cost about 10 instructions each).
  auto sumType = cast<VectorType>(rowSum.getType());
  Value inverseSum =
      arith::DivFOp::create(b, splatConstant(b, sumType, 1.0), rowSum);
  if (!op.getMask().empty() && !op.getSinks()) {
    // A mask region may keep no key of a row (documents, bottom-right
    // alignment): its sum is 0, and 0 * (1/0) would be NaN where the
    // output must be 0 (and the log-sum-exp -inf, as it is).
    Value noKey = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, rowSum,
                                        splatConstant(b, sumType, 0.0));
    inverseSum = arith::SelectOp::create(
        b, noKey, splatConstant(b, sumType, 0.0), inverseSum);
  }
  Value out = arith::MulFOp::create(
      b, acc, RowBroadcastOp::create(b, acc.getType(), inverseSum));
  if (element != f32)
    out = arith::TruncFOp::create(b, tileType(c.blockM, headDim, element), out);
  StoreTileOp::create(b, out, op.getOut(), ctx.batch, ctx.head, ctx.row0,
                      ctx.outputStaging);
  if (Value lse = op.getLse()) {
    // log(l) as log2(l) * ln(2): the GPU has a fast log2, not a natural log.
    Value logSum = arith::MulFOp::create(
        b, math::Log2Op::create(b, rowSum),
        splatConstant(b, cast<VectorType>(rowSum.getType()), M_LN2));
    Value logSumExp = arith::AddFOp::create(b, rowMax, logSum);
    StoreRowsOp::create(b, logSumExp, lse, ctx.batch, ctx.head, ctx.row0);
  }
}

/// The role of each kernel parameter, in the order of the function arguments.
FailureOr<SmallVector<StringRef>> parameterNames(func::FuncOp func,
                                                 AttentionOp op) {
  SmallVector<StringRef> names(func.getNumArguments());
  SmallVector<std::pair<StringRef, Value>> roles = {
      {"q", op.getQuery()},
      {"k", op.getKey()},
      {"v", op.getValue()},
      {"out", op.getOut()},
      {"lse", op.getLse()},
      {"sinks", op.getSinks()},
      {"dropout_p", op.getDropoutP()},
      {"dropout_seed", op.getDropoutSeed()},
      {"dropout_offset", op.getDropoutOffset()}};
  // Captures the function receives become parameters (named by their
  // fa.name); those the prelude computes are computed in the kernel.
  for (Value capture : op.getCaptures()) {
    auto arg = dyn_cast<BlockArgument>(capture);
    if (!arg || arg.getOwner() != &func.getBody().front())
      continue;
    roles.push_back(
        {getExtraParamName(func, arg, op.getCaptures()).getValue(), capture});
  }
  for (auto [name, value] : roles) {
    if (!value)
      continue;
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return op.emitOpError() << "expects " << name
                              << " to be an argument of the enclosing function",
             failure();
    names[arg.getArgNumber()] = name;
  }
  // Arguments that only the prelude reads (a window's half-widths summed
  // into a capture) are parameters too, named by their fa.name.
  for (auto [index, name] : llvm::enumerate(names))
    if (auto given = func.getArgAttrOfType<StringAttr>(index, kParamNameAttr);
        name.empty() && given)
      name = given.getValue();
  for (auto [index, name] : llvm::enumerate(names))
    if (name.empty())
      return func.emitError()
                 << "argument #" << index << " is not used by the attention op",
             failure();
  return names;
}

/// The kernel of `func` (whose body is `op`), with its manifest entry: the
/// function's parameters, named by role; the K and V tiles in shared memory,
/// and the query or output tile where it passes through shared memory.
gpu::GPUFuncOp createAttentionKernel(ImplicitLocOpBuilder &b, func::FuncOp func,
                                     AttentionOp op, const TileConfig &config,
                                     ArrayRef<StringRef> names,
                                     SmallVectorImpl<NamedAttribute> &kernels) {
  Type element = op.getQuery().getType().getElementType();
  int64_t headDim = op.getHeadDim();
  SmallVector<KernelParam> params;
  for (auto [name, type] : llvm::zip_equal(names, func.getArgumentTypes()))
    params.push_back({name, type});
  KernelAttr entry = getKernelEntry(
      b.getContext(), KernelOp::AttentionFwd, element, config.attr,
      config.numWarps * kThreadsPerWarp,
      {GridDim::QueryTiles, GridDim::BatchHeads, GridDim::One}, params,
      AttentionEntry{headDim, op.getCausal(), op.getScaleOrDefault(),
                     getKernelVariant(func, op)});
  auto shared = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  auto sharedTile = [&](int64_t rows) -> Type {
    return MemRefType::get({rows, headDim}, element,
                           MemRefLayoutAttrInterface{}, shared);
  };
  SmallVector<Type> sharedTiles = {sharedTile(config.blockN),
                                   sharedTile(config.blockN)};
  if (config.queryInShared() || config.stageOutput())
    sharedTiles.push_back(sharedTile(config.blockM));
  gpu::GPUFuncOp kernel =
      createKernel(b, func, func.getName(), entry, kernels, sharedTiles,
                   sharedTileAlignment(config.warpgroupMma()));
  // ptxas caps the registers per thread so that this many blocks fit (PTX
  // .minnctapersm): a tile sized for two blocks per multiprocessor loses
  // half its occupancy when a register more does not fit.
  if (std::optional<int64_t> blocks = config.attr.getBlocksPerSm())
    kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    b.getI32IntegerAttr(*blocks));
  return kernel;
}

/// The grid mapping of `kernel` (block (x, y): query tile x of (batch, head)
/// = divmod(y, heads)) and its shared tiles, for the body of `op`, its copy
/// in the kernel; loads or stages the query tile.
KernelContext buildKernelContext(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel,
                                 AttentionOp op, const TileConfig &config) {
  KernelContext ctx{op, config};
  ctx.zero = index(b, 0);
  ctx.one = index(b, 1);
  Value queryTileIndex = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (op.getCausal()) {
    // Blocks start roughly in index order; under a causal mask the last
    // query tiles have the most key tiles, so they go first and the short
    // ones fill the tail of the grid.
    Value numQueryTiles = arith::CeilDivUIOp::create(
        b, memref::DimOp::create(b, op.getQuery(), 2), index(b, config.blockM));
    queryTileIndex = arith::SubIOp::create(
        b, arith::SubIOp::create(b, numQueryTiles, queryTileIndex),
        index(b, 1));
  }
  Value batchHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value heads = memref::DimOp::create(b, op.getQuery(), 1);
  Value kvHeads = memref::DimOp::create(b, op.getKey(), 1);
  ctx.kvLen = memref::DimOp::create(b, op.getKey(), 2);
  ctx.batch = arith::DivUIOp::create(b, batchHead, heads);
  ctx.head = arith::RemUIOp::create(b, batchHead, heads);
  Value group = arith::DivUIOp::create(b, heads, kvHeads);
  ctx.kvHead = arith::DivUIOp::create(b, ctx.head, group);
  ctx.row0 = arith::MulIOp::create(b, queryTileIndex, index(b, config.blockM));
  ctx.numKvTiles =
      arith::CeilDivUIOp::create(b, ctx.kvLen, index(b, config.blockN));
  if (op.getDropoutP())
    ctx.dropout =
        DropoutParams::build(b, op.getDropoutP(), op.getDropoutSeed(),
                             op.getDropoutOffset(), ctx.batch, ctx.head, heads);
  ctx.keyBuffer = kernel.getWorkgroupAttributions()[0];
  ctx.valueBuffer = kernel.getWorkgroupAttributions()[1];
  if (config.queryInShared() || config.stageOutput()) {
    Value tile = kernel.getWorkgroupAttributions()[2];
    ctx.outputStaging = config.stageOutput() ? tile : Value();
    if (config.queryInShared())
      ctx.queryTile = tile;
  }
  if (config.queryInShared()) {
    StageTileOp::create(b, op.getQuery(), ctx.batch, ctx.head, ctx.row0,
                        ctx.queryTile);
  } else {
    ctx.queryTile =
        LoadTileOp::create(b,
                           tileType(config.blockM, op.getHeadDim(),
                                    op.getQuery().getType().getElementType()),
                           op.getQuery(), ctx.batch, ctx.head, ctx.row0);
  }
  return ctx;
}

struct FATileAttentionPass
    : public mlir::fa::impl::FATileAttentionBase<FATileAttentionPass> {
  using Base::Base;

  /// The function's fa.tile (`#fa.tile<block_m = 64, block_n = 32, ...>`),
  /// its absent sizes from the pass options, so one library can hold kernels
  /// of different configurations. A function without fa.tile, when no tile
  /// option was given, takes the chip's default (DefaultTiles.def), as the
  /// library's kernels do.
  FailureOr<TileConfig> configFor(func::FuncOp func, AttentionOp op) {
    // A variant (mask or score regions, dropout) taking the chip's default
    // gets its own (lookupDefaultTile: the structure before warp
    // specialisation).
    bool variant = !getKernelVariant(func, op).empty();
    FailureOr<TileAttr> tile =
        getFunctionTileConfig(func, chip,
                              blockM.hasValue() || blockN.hasValue() ||
                                  numWarps.hasValue() || numStages.hasValue(),
                              variant ? AttentionDirection::ForwardVariant
                                      : AttentionDirection::Forward,
                              op.getQuery().getType().getElementType(),
                              op.getHeadDim(), op.getCausal());
    if (failed(tile))
      return failure();
    auto fail = [&](const Twine &message) {
      emitPassError(func, getArgument()) << message;
      return failure();
    };
    if (tile->hasDqEntries())
      return fail("dq_block_m, dq_block_n and dq_num_warps configure the "
                  "backward's dQ kernel (fa-tile-attention-grad)");
    if (tile->getSplitDkdv())
      return fail("split_dkdv configures the backward's dK/dV kernel "
                  "(fa-tile-attention-grad)");
    if (tile->getFuseDq())
      return fail("fuse_dq configures the backward's dK/dV kernel "
                  "(fa-tile-attention-grad)");
    TileConfig config(
        tile->withDefaultSizes(blockM, blockN, numWarps, numStages));
    if (failed(checkMmaTileShape(func, getArgument(), config.blockM,
                                 config.blockN, config.numWarps, "queries")))
      return failure();
    if (config.numStages != 1 && config.numStages != 2)
      return fail("num-stages " + Twine(config.numStages) +
                  " is not supported (1: one K and one V buffer, 2: two each)");
    bool pipelineCopies = config.attr.getPipelineCopies();
    if (config.numStages == 2 && !pipelineCopies)
      return fail("num-stages 2 needs pipeline_copies: the second buffers "
                  "only serve copies started ahead");
    if (config.attr.getOverlapSoftmax() &&
        failed(checkOverlapSoftmaxConfig(func, getArgument(),
                                         config.warpgroupMma(),
                                         config.numStages, pipelineCopies)))
      return failure();
    return config;
  }

  /// wgmma's operands: the query tile (A) and the key tile (B, K-major) in
  /// shared memory, the probabilities (A) in registers, the value tile (B,
  /// MN-major) in shared memory; all f16/bf16. Rows of 128 bytes (D=64) are
  /// exactly the 128-byte swizzle atoms of the shared tiles' layout; longer
  /// ones are stored as 128-byte panels.
  LogicalResult checkWarpgroupMma(func::FuncOp func, AttentionOp op,
                                  const TileConfig &c) {
    if (!c.warpgroupMma())
      return success();
    if (failed(checkWarpgroupTileShape(func, getArgument(),
                                       op.getQuery().getType().getElementType(),
                                       c.blockM, c.numWarps, "query rows")))
      return failure();
    if (!c.queryInShared())
      return emitPassError(func, getArgument())
             << "wgmma reads the query tile from shared memory: set "
                "q_in_shared";
    return success();
  }

  /// The shared tiles the kernel copies (K and V, and Q or the output where
  /// they pass through shared memory) and its register tiles.
  LogicalResult checkTileSizes(func::FuncOp func, AttentionOp op,
                               const TileConfig &c) {
    Type element = op.getQuery().getType().getElementType();
    auto check = [&](StringRef tile, int64_t rows) {
      return checkTileCopy(func, getArgument(), tile, rows, op.getHeadDim(),
                           element, c.numWarps);
    };
    if (failed(check("key/value", c.blockN)))
      return failure();
    if (failed(checkTileValuesPerThread(
            func, getArgument(),
            "the scores (block_m x block_n) and the accumulator (block_m x "
            "head_dim)",
            element, c.blockM * (c.blockN + op.getHeadDim()), c.numWarps)))
      return failure();
    if ((c.queryInShared() || c.stageOutput()) &&
        failed(check(c.queryInShared() ? "query" : "output", c.blockM)))
      return failure();
    return checkSharedMemory(func, getArgument(), "kernel",
                             formatSharedTiles(c, op.getHeadDim(), element),
                             sharedBytes(c, op.getHeadDim(), element), chip,
                             sharedBudget);
  }

  LogicalResult tileFunction(func::FuncOp func, AttentionOp op,
                             SmallVectorImpl<NamedAttribute> &kernels) {
    FailureOr<SmallVector<StringRef>> names = parameterNames(func, op);
    if (failed(names))
      return failure();
    FailureOr<TileConfig> config = configFor(func, op);
    if (failed(config) || failed(checkWarpgroupMma(func, op, *config)) ||
        failed(checkTileSizes(func, op, *config)))
      return failure();

    ImplicitLocOpBuilder b(func.getLoc(), func.getContext());
    gpu::GPUFuncOp kernel =
        createAttentionKernel(b, func, op, *config, *names, kernels);
    // Rebuild the op inside the kernel on the kernel's arguments.
    IRMapping mapping;
    mapping.map(func.getArguments(),
                kernel.getArguments().take_front(func.getNumArguments()));
    clonePrelude(b, op, mapping);
    auto kernelOp = cast<AttentionOp>(b.clone(*op, mapping));
    KernelContext ctx = buildKernelContext(b, kernel, kernelOp, *config);
    buildAttentionBody(b, ctx);
    gpu::ReturnOp::create(b);
    kernelOp.erase();
    return success();
  }

  void runOnOperation() override {
    if (failed(tileKernelFunctionsOf<AttentionOp>(
            getOperation(), getArgument(), chip, sharedBudget,
            [&](func::FuncOp func, AttentionOp op,
                SmallVectorImpl<NamedAttribute> &kernels) {
              return tileFunction(func, op, kernels);
            })))
      signalPassFailure();
  }

  /// The static shared memory a kernel for `chip` may use.
  int64_t sharedBudget = 0;
};
} // namespace
