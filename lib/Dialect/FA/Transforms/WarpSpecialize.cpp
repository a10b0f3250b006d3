//===- WarpSpecialize.cpp - A TMA producer and computing warpgroups -------===//
//
// After fa-pipeline-kv-copies every warp of a forward kernel copies its share
// of each K and V tile (cp.async) and the whole block waits for them at a
// barrier once per key tile. Here the copies move to a producer warpgroup of
// their own, one thread of which feeds both tiles through TMA rings
// (fa.ring_*), so the computing warpgroups only compute and wait on the
// mbarrier of the tile they need, never on each other. See Passes.td for the
// shape of the result.
//
// The kernel keeps its structure: each read of K or V slot j % 2 (a
// memref.subview that fa-pipeline-kv-copies or fa-overlap-softmax made with
// tileSlot) becomes fa.ring_consume of tile j, and the slot goes back to the
// producer (fa.ring_release) right after the op before which the warpgroup
// MMA lowering waits for the product reading it
// (TileMatmulOp::getFirstUseInBlock, which WarpgroupMma.cpp waits before).
//
//===----------------------------------------------------------------------===//

#include "WarpSpecialize.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/IR/Swizzle.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAWARPSPECIALIZE
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::warp_specialize;

namespace mlir::fa::warp_specialize {
/// The kernel's manifest entry in its module's fa.kernels.
KernelAttr kernelEntry(gpu::GPUFuncOp kernel) {
  auto module = kernel->getParentOfType<ModuleOp>();
  auto kernels =
      module ? module->getAttrOfType<DictionaryAttr>(kKernelsAttr) : nullptr;
  return kernels ? dyn_cast_or_null<KernelAttr>(kernels.get(kernel.getName()))
                 : KernelAttr();
}

/// Replaces the kernel's entry in fa.kernels by `entry`.
void setKernelEntry(gpu::GPUFuncOp kernel, KernelAttr entry) {
  auto module = kernel->getParentOfType<ModuleOp>();
  NamedAttrList kernels(module->getAttrOfType<DictionaryAttr>(kKernelsAttr));
  kernels.set(kernel.getNameAttr(), entry);
  module->setAttr(kKernelsAttr, kernels.getDictionary(module.getContext()));
}

/// The kernel's parameter `name` (by its manifest entry).
BlockArgument paramNamed(gpu::GPUFuncOp kernel, KernelAttr entry,
                         StringRef name) {
  for (auto [index, param] : llvm::enumerate(entry.getParams()))
    if (param.getName() == name)
      return kernel.getArgument(index);
  return {};
}

/// The tile index j of a slot `remui(j, S)`, as tileSlot makes it.
Value slotTileIndex(memref::SubViewOp slot, int64_t stages) {
  auto remainder =
      slot.getOffsets().empty()
          ? nullptr
          : slot.getOffsets().front().getDefiningOp<arith::RemUIOp>();
  APInt divisor;
  if (!remainder ||
      !matchPattern(remainder.getRhs(), m_ConstantInt(&divisor)) ||
      divisor.getSExtValue() != stages)
    return {};
  return remainder.getLhs();
}

/// Releases `tile` of `ring` at the insertion point, once per warp (the
/// rings count warps): each warp's wgmma wait covers its share of the
/// products reading the slot, and no lane reads it otherwise.
RingReleaseOp releaseByFirstLanes(OpBuilder &b, Location loc,
                                  TypedValue<RingType> ring, Value tile) {
  Value lane = arith::RemUIOp::create(
      b, loc, gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x),
      arith::ConstantIndexOp::create(b, loc, kThreadsPerWarp));
  Value isFirstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto firstLane = scf::IfOp::create(b, loc, isFirstLane,
                                     /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(firstLane.thenBlock());
  return RingReleaseOp::create(b, loc, ring, tile);
}

/// `!nvgpu.tensormap.descriptor` of one head's `rows` rows by one 128-byte
/// panel of `tensor` ([batch, heads, seq, head_dim]), 128-byte swizzle, zero
/// fill beyond the sequence.
nvgpu::TensorMapDescriptorType tensorMapType(MemRefType tensor, int64_t rows) {
  MLIRContext *context = tensor.getContext();
  int64_t panelElems =
      kWidestSwizzleBytes * 8 / tensor.getElementTypeBitWidth();
  auto box = MemRefType::get(
      {1, 1, rows, panelElems}, tensor.getElementType(),
      MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
  return nvgpu::TensorMapDescriptorType::get(
      context, box, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

scf::IfOp splitByRole(ImplicitLocOpBuilder &b, Operation *split,
                      int64_t computeThreads, RegisterSplit registers) {
  Block *body = split->getBlock();
  b.setInsertionPoint(split);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value isProducer =
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, thread,
                            arith::ConstantIndexOp::create(b, computeThreads));
  auto roles = scf::IfOp::create(b, isProducer, /*withElseRegion=*/true);
  roles->setAttr(kWarpRolesAttr, b.getUnitAttr());
  Block *consumer = roles.elseBlock();
  consumer->getOperations().splice(consumer->begin(), body->getOperations(),
                                   split->getIterator(),
                                   body->getTerminator()->getIterator());
  b.setInsertionPointToStart(consumer);
  NVVM::SetMaxRegisterOp::create(b, registers.consumer,
                                 NVVM::SetMaxRegisterAction::increase);
  b.setInsertionPointToStart(roles.thenBlock());
  NVVM::SetMaxRegisterOp::create(b, registers.producer,
                                 NVVM::SetMaxRegisterAction::decrease);
  return roles;
}

std::optional<std::pair<Value, Value>> copyEnds(Operation *op) {
  if (auto copy = dyn_cast<CopyTileAsyncOp>(op))
    return std::pair{copy.getSource(), copy.getDest()};
  if (auto copy = dyn_cast<CopyRowsAsyncOp>(op))
    return std::pair{copy.getSource(), copy.getDest()};
  return std::nullopt;
}

LogicalResult collectSlotCopies(gpu::GPUFuncOp kernel, KernelAttr entry,
                                StringRef name, BlockArgument &tensor,
                                Value &buffer,
                                SmallVectorImpl<Operation *> &copies,
                                StringRef pass) {
  tensor = paramNamed(kernel, entry, name);
  if (!tensor)
    return emitPassError(kernel, pass)
           << "expects a parameter '" << name << "'";
  WalkResult walk = kernel.walk([&](Operation *op) {
    std::optional<std::pair<Value, Value>> ends = copyEnds(op);
    if (!ends || ends->first != tensor)
      return WalkResult::advance();
    auto slot = ends->second.getDefiningOp<memref::SubViewOp>();
    Value slots = slot ? slot.getSource() : Value();
    if (!slots || (buffer && slots != buffer)) {
      emitPassError(op, pass) << "expects every copy of " << name
                              << " to fill a slot of one multi-buffered "
                                 "buffer (fa-pipeline-kv-copies with "
                                 "num_stages = 2)";
      return WalkResult::interrupt();
    }
    buffer = slots;
    copies.push_back(op);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (copies.empty())
    return emitPassError(kernel, pass)
           << "found no copy of " << name << " to move to the producer";
  return success();
}
} // namespace mlir::fa::warp_specialize

namespace {
/// What the pass needs of one of the K and V tensors.
struct StreamedTensor {
  StringRef name;
  /// The kernel's memref parameter.
  BlockArgument tensor;
  /// The `[S, R, C]` shared buffer its copies fill (a workgroup attribution).
  Value buffer;
  SmallVector<CopyTileAsyncOp> copies;
  TypedValue<RingType> ring;
};

/// Why `kernel` cannot be split, or success.
LogicalResult checkSplittable(gpu::GPUFuncOp kernel, KernelAttr entry,
                              TileAttr config, StringRef pass) {
  auto refuse = [&](StringRef why) {
    return emitPassError(kernel, pass)
           << "warp_specialize = true needs " << why << " (kernel "
           << kernel.getName() << ")";
  };
  if (!entry || entry.getOp() != KernelOp::AttentionFwd)
    return refuse("an attention forward kernel with its fa.kernels entry");
  if (!config.getWgmma())
    return refuse("wgmma = true: the producer feeds warpgroup MMAs");
  if (config.getStageCount() < 2)
    return refuse("num_stages = 2: the rings' slots are the K/V buffers' two "
                  "slots");
  // Without it the last product of a key loop is waited for only at the
  // loop's yield, after which no release can follow within the iteration.
  if (!config.getOverlapSoftmax())
    return refuse("overlap_softmax = true: each slot is released after an op "
                  "of the iteration that waits for its product");
  if (config.getPingPong() && config.getNumWarps() != 8)
    return refuse("num_warps = 8 with ping_pong = true: two computing "
                  "warpgroups take turns");
  if (entry.getVariant())
    return refuse("a forward without mask or score regions (plain or causal), "
                  "whose key tiles are [0, end of the last key loop) for "
                  "every query tile");
  ArrayRef<GridDim> grid = entry.getGrid();
  if (config.getPersistent() &&
      (grid.size() != 3 || grid[0] != GridDim::QueryTiles ||
       grid[1] != GridDim::BatchHeads || grid[2] != GridDim::One))
    return emitPassError(kernel, pass)
           << "persistent = true needs the grid [query_tiles, batch_heads, "
              "one], whose blocks become tiles of the persistent loop (kernel "
           << kernel.getName() << ")";
  return success();
}

/// Finds the parameter `stream.name`, its copies and the buffer their slots
/// belong to.
LogicalResult collectCopies(gpu::GPUFuncOp kernel, KernelAttr entry,
                            StreamedTensor &stream, StringRef pass) {
  SmallVector<Operation *> copies;
  if (failed(collectSlotCopies(kernel, entry, stream.name, stream.tensor,
                               stream.buffer, copies, pass)))
    return failure();
  // K and V ([batch, heads, seq, head_dim]) are tiles, never f32 rows.
  for (Operation *copy : copies)
    stream.copies.push_back(cast<CopyTileAsyncOp>(copy));
  return success();
}

/// `value` where `at` can use it: itself if it dominates `at`, else a clone
/// of its side-effect-free definition (recursively).
FailureOr<Value> valueAt(OpBuilder &b, Value value, Operation *at,
                         DominanceInfo &dominance) {
  if (dominance.properlyDominates(value, at))
    return value;
  Operation *def = value.getDefiningOp();
  if (!def || !isMemoryEffectFree(def) || def->getNumRegions() != 0)
    return failure();
  IRMapping mapping;
  for (Value operand : def->getOperands()) {
    FailureOr<Value> available = valueAt(b, operand, at, dominance);
    if (failed(available))
      return failure();
    mapping.map(operand, *available);
  }
  return b.clone(*def, mapping)
      ->getResult(cast<OpResult>(value).getResultNumber());
}

/// Releases `tile` of `ring` once `product`, which reads its slot, has
/// completed: right after its wait point. When that is the terminator of an
/// scf.if region (the result leaves the region, waited for just before), the
/// release follows the scf.if instead, under the region's condition, so it
/// runs exactly when the product did.
LogicalResult releaseAfter(TileMatmulOp product, TypedValue<RingType> ring,
                           Value tile, DominanceInfo &dominance) {
  Operation *point = product.getFirstUseInBlock();
  if (!point)
    point = product;
  // The scf.if regions left, innermost first, and whether each is the then.
  SmallVector<std::pair<scf::IfOp, bool>> guards;
  while (point->hasTrait<OpTrait::IsTerminator>()) {
    auto region = dyn_cast<scf::IfOp>(point->getParentOp());
    if (!region)
      return failure();
    guards.push_back(
        {region, point->getParentRegion() == &region.getThenRegion()});
    point = region;
  }
  OpBuilder b(point->getContext());
  b.setInsertionPointAfter(point);
  Location loc = product.getLoc();
  for (auto [region, inThen] : llvm::reverse(guards)) {
    Operation *at = &*b.getInsertionPoint();
    FailureOr<Value> condition =
        valueAt(b, region.getCondition(), at, dominance);
    if (failed(condition))
      return failure();
    Value taken = *condition;
    if (!inThen)
      taken = arith::XOrIOp::create(b, loc, taken,
                                    arith::ConstantIntOp::create(b, loc, 1, 1));
    auto guard = scf::IfOp::create(b, loc, taken, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  FailureOr<Value> tileThere =
      valueAt(b, tile, &*b.getInsertionPoint(), dominance);
  if (failed(tileThere))
    return failure();
  releaseByFirstLanes(b, loc, ring, *tileThere);
  return success();
}

/// Turns each read of a slot of `stream`'s buffer into a ring_consume of its
/// tile and releases it after the product reading it completes.
LogicalResult consumeFromRing(StreamedTensor &stream, int64_t stages,
                              DominanceInfo &dominance, StringRef pass) {
  SmallVector<memref::SubViewOp> slots;
  for (Operation *user : stream.buffer.getUsers())
    if (auto slot = dyn_cast<memref::SubViewOp>(user))
      slots.push_back(slot);
  for (memref::SubViewOp slot : slots) {
    if (slot.use_empty()) {
      slot.erase();
      continue;
    }
    Value tile = slotTileIndex(slot, stages);
    if (!tile)
      return emitPassError(slot, pass) << "expects a slot of " << stream.name
                                       << " at (tile mod " << stages << ")";
    OpBuilder b(slot);
    auto consume = RingConsumeOp::create(b, slot.getLoc(),
                                         stream.ring.getType().getSlotType(),
                                         stream.ring, tile);
    for (OpOperand &use : llvm::make_early_inc_range(slot->getUses())) {
      auto product = dyn_cast<TileMatmulOp>(use.getOwner());
      if (!product)
        return emitPassError(use.getOwner(), pass)
               << "expects the slots of " << stream.name
               << " to be read by fa.tile_matmul alone";
      use.set(consume);
      if (failed(releaseAfter(product, stream.ring, tile, dominance)))
        return emitPassError(product, pass)
               << "cannot release the slot of " << stream.name
               << " after the product reading it (its result must be used in "
                  "its block or leave it through scf.if regions)";
    }
    slot.erase();
  }
  return success();
}

/// The end of the key tiles the kernel visits: the upper bound of its last
/// key loop (fa-eliminate-causal-tiles' "full" then "partial" loops, whose
/// tiles run from 0 without a gap; the causal ones end at the query tile's
/// diagonal).
Value keyTilesEnd(gpu::GPUFuncOp kernel) {
  Value end;
  kernel.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
    if (loop->hasAttr(kKvTilesAttr))
      end = loop.getUpperBound();
  });
  return end;
}

/// The producer: one thread walks the key tiles [0, `tilesEnd`) and fills
/// both rings, tile j of K then of V, at (batch, kv head, j * R, 0). Returns
/// that thread's key loop.
FailureOr<scf::ForOp> buildProducer(ImplicitLocOpBuilder &b,
                                    int64_t computeThreads,
                                    ArrayRef<StreamedTensor> streams,
                                    ArrayRef<BlockArgument> maps, Value batch,
                                    Value head, Value tilesEnd) {
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value isIssuer =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, thread,
                            arith::ConstantIndexOp::create(b, computeThreads));
  auto issuer = scf::IfOp::create(b, isIssuer, /*withElseRegion=*/false);
  b.setInsertionPointToStart(issuer.thenBlock());
  Value rows = arith::ConstantIndexOp::create(
      b, streams.front().ring.getType().getTile().getDimSize(0));
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  // Computed again here when the computing side computes it after the split.
  DominanceInfo dominance(issuer->getParentOfType<gpu::GPUFuncOp>());
  FailureOr<Value> tiles =
      valueAt(b, tilesEnd, &*b.getInsertionPoint(), dominance);
  if (failed(tiles))
    return failure();
  auto loop = scf::ForOp::create(b, zero, *tiles, one);
  b.setInsertionPointToStart(loop.getBody());
  Value row = arith::MulIOp::create(b, loop.getInductionVar(), rows);
  for (auto [stream, map] : llvm::zip_equal(streams, maps))
    RingProduceOp::create(b, stream.ring, loop.getInductionVar(), map,
                          ValueRange{batch, head, row, zero});
  return loop;
}

/// The calling thread's computing warpgroup (0 or 1), as an i32.
Value warpgroupIndex(ImplicitLocOpBuilder &b) {
  Value warpgroup = arith::DivUIOp::create(
      b, gpu::ThreadIdOp::create(b, gpu::Dimension::x),
      arith::ConstantIndexOp::create(b, kThreadsPerWarpgroup));
  return arith::IndexCastOp::create(b, b.getI32Type(), warpgroup);
}

/// FlashAttention-3's ping-pong between the two computing warpgroups: in
/// each key loop, a warpgroup waits for its turn (named barrier
/// kTurnBarrierId + w, which the other warpgroup's arrival and its own 128
/// threads complete) before issuing its products, and hands the turn over
/// (arrives on the other's barrier) right after, so its softmax runs while
/// the other's products hold the tensor cores. Warpgroup 1 gives warpgroup 0
/// the first turn. Both run the same loops (one query tile, one key range),
/// so every wait is matched; the last hand-over is left pending at exit.
void schedulePingPong(Block *consumer, Operation *firstOp) {
  ImplicitLocOpBuilder b(firstOp->getLoc(), firstOp);
  Value threads = arith::ConstantIntOp::create(b, 2 * kThreadsPerWarpgroup, 32);
  Value warpgroup = warpgroupIndex(b);
  Value isSecond =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warpgroup,
                            arith::ConstantIntOp::create(b, 1, 32));
  auto firstTurn = scf::IfOp::create(b, isSecond, /*withElseRegion=*/false);
  b.setInsertionPointToStart(firstTurn.thenBlock());
  NVVM::BarrierArriveOp::create(
      b, arith::ConstantIntOp::create(b, kTurnBarrierId, 32), threads);

  SmallVector<scf::ForOp> loops;
  consumer->walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kKvTilesAttr))
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    auto products = llvm::to_vector(loop.getBody()->getOps<TileMatmulOp>());
    if (products.empty())
      continue;
    b.setInsertionPoint(products.front());
    Value mine = arith::AddIOp::create(
        b, arith::ConstantIntOp::create(b, kTurnBarrierId, 32), warpgroup);
    NVVM::BarrierOp::create(b, TypeRange{}, mine, threads,
                            NVVM::BarrierReductionAttr(), Value());
    b.setInsertionPointAfter(products.back());
    Value other = arith::SubIOp::create(
        b, arith::ConstantIntOp::create(b, 2 * kTurnBarrierId + 1, 32), mine);
    NVVM::BarrierArriveOp::create(b, other, threads);
  }
}

/// A persistent kernel's tiles, each a (query tile, (batch, head) row) that
/// was (block_id x, block_id y) of the grid [query_tiles, batch_heads, one],
/// numbered row by row so that tiles taken at about the same time share
/// rows, whose K and V stay in L2 (rows fastest lost up to 26% at causal
/// N=1024 on an H100: each tile read its K and V from memory).
///
/// Without a mask every tile weighs the same and block b walks tiles
/// b, b + grid, b + 2 grid, ... Causal tiles weigh more the later their
/// query tile, and no static order balanced every shape: stepping by the
/// grid's size gave some blocks only heavy tiles (N=16384: 685 -> 445
/// TFLOP/s), alternating rows (snake) lost N=8192 (466 against 623), and
/// alternating groups of rows lost 13-22% at N <= 4096. So causal kernels
/// take tiles dynamically, as FlashAttention-3 does: a block's first tile is
/// its block id, each next one grid + the value of a global counter it
/// increments (the kernel's `tile_counter`, which the runtime zeroes before
/// each launch), in the order tileCoordinates gives.
struct TileWalk {
  Value queryTiles, batchHeads;
  /// query_tiles * batch_heads.
  Value count;
  /// The dynamic schedule's counter (a memref<1xi32> parameter) and the
  /// workgroup memref<2xi32> through which the producer tells the computing
  /// warpgroups its tiles (slot k % 2 for the block's k-th tile); null for
  /// the static walk.
  Value counter, tileIds;
  /// The entry block's ops that compute a tile's indices from its block
  /// ids, in order: each role computes them again for every tile it walks.
  SmallVector<Operation *> perTileOps;

  bool isDynamic() const { return static_cast<bool>(counter); }
};

/// Counts the tiles (before `split`) and finds the index computations of the
/// entry block that depend on gpu.block_id.
TileWalk planTileWalk(ImplicitLocOpBuilder &b, Operation *split, Value query,
                      int64_t blockM) {
  TileWalk walk;
  llvm::SmallPtrSet<Value, 16> perTile;
  for (Operation &op :
       llvm::make_range(split->getBlock()->begin(), split->getIterator())) {
    bool dependent = isa<gpu::BlockIdOp>(op) ||
                     llvm::any_of(op.getOperands(), [&](Value operand) {
                       return perTile.contains(operand);
                     });
    if (!dependent)
      continue;
    walk.perTileOps.push_back(&op);
    perTile.insert(op.result_begin(), op.result_end());
  }
  b.setInsertionPoint(split);
  auto dim = [&](int64_t index) {
    return memref::DimOp::create(b, query, index).getResult();
  };
  walk.queryTiles = arith::CeilDivUIOp::create(
      b, dim(2), arith::ConstantIndexOp::create(b, blockM));
  walk.batchHeads = arith::MulIOp::create(b, dim(0), dim(1));
  walk.count = arith::MulIOp::create(b, walk.queryTiles, walk.batchHeads);
  return walk;
}

/// The iteration operand of a fa.ring_produce, _consume or _release, else
/// null.
OpOperand *ringIteration(Operation *op) {
  if (auto produce = dyn_cast<RingProduceOp>(op))
    return &produce.getIterationMutable();
  if (auto consume = dyn_cast<RingConsumeOp>(op))
    return &consume.getIterationMutable();
  if (auto release = dyn_cast<RingReleaseOp>(op))
    return &release.getIterationMutable();
  return nullptr;
}

/// Gives the ring op `op` iteration `base + its own`: each role numbers the
/// key tiles of all its query tiles in one sequence, so the rings' slots and
/// phases run on across tiles exactly as the other role's do.
void rebaseRingIteration(OpBuilder &b, Operation *op, Value base) {
  OpOperand *iteration = ringIteration(op);
  b.setInsertionPoint(op);
  iteration->set(
      arith::AddIOp::create(b, op->getLoc(), base, iteration->get()));
}

/// The (query tile, row) of tile `tile`, as (block_id x, block_id y) of the
/// old grid. The static walk numbers tiles row by row. The dynamic one
/// numbers them in groups of R = ceil(2 grid / query_tiles) rows (about two
/// waves of tiles), by query tile first within a group: a causal kernel
/// reverses its block id x, so each group's heaviest tiles come first and
/// the last tiles handed out are the lightest, while the tiles in flight
/// share few enough rows for their K and V to stay in L2.
std::pair<Value, Value> tileCoordinates(ImplicitLocOpBuilder &b,
                                        const TileWalk &walk, Value tile) {
  if (!walk.isDynamic())
    return {arith::RemUIOp::create(b, tile, walk.queryTiles),
            arith::DivUIOp::create(b, tile, walk.queryTiles)};
  Value twoWaves =
      arith::MulIOp::create(b, gpu::GridDimOp::create(b, gpu::Dimension::x),
                            arith::ConstantIndexOp::create(b, 2));
  Value rows = arith::CeilDivUIOp::create(b, twoWaves, walk.queryTiles);
  Value groupTiles = arith::MulIOp::create(b, rows, walk.queryTiles);
  Value firstRow = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, tile, groupTiles), rows);
  Value within = arith::RemUIOp::create(b, tile, groupTiles);
  Value groupRows = arith::MinUIOp::create(
      b, rows, arith::SubIOp::create(b, walk.batchHeads, firstRow));
  return {arith::DivUIOp::create(b, within, groupRows),
          arith::AddIOp::create(b, firstRow,
                                arith::RemUIOp::create(b, within, groupRows))};
}

/// Moves the ops [begin, end) to the end of `body`, the body of `loop` (a
/// role's loop over tiles) on tile `tile`: the tile's indices are computed
/// again from it at the body's start (block ids replaced), and the rings'
/// iterations continue from `base`, but for `queryRing`'s, which count tiles
/// (setLocalTile). Returns `keyTiles` (the tile's key tiles, a value of the
/// moved ops or defined before them) as the body sees it.
Value moveIntoTileLoop(ImplicitLocOpBuilder &b, Operation *loop, Block *body,
                       Block::iterator begin, Block::iterator end,
                       const TileWalk &walk, Value tile, Value base,
                       Value keyTiles, Value queryRing) {
  body->getOperations().splice(body->end(), begin->getBlock()->getOperations(),
                               begin, end);
  b.setInsertionPointToStart(body);
  auto [queryTile, row] = tileCoordinates(b, walk, tile);
  auto blockIdOf = [&](gpu::BlockIdOp id) {
    return id.getDimension() == gpu::Dimension::x ? queryTile : row;
  };
  IRMapping mapping;
  for (Operation *op : walk.perTileOps) {
    if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      mapping.map(id.getResult(), blockIdOf(id));
    else
      b.clone(*op, mapping);
  }
  auto inLoop = [&](OpOperand &use) {
    return loop->isProperAncestor(use.getOwner());
  };
  for (Operation *op : walk.perTileOps)
    for (Value result : op->getResults())
      result.replaceUsesWithIf(mapping.lookup(result), inLoop);
  body->walk([&](gpu::BlockIdOp id) {
    if (id.getDimension() != gpu::Dimension::z)
      id.getResult().replaceAllUsesWith(blockIdOf(id));
  });

  SmallVector<Operation *> ringOps;
  body->walk([&](Operation *op) {
    if (ringIteration(op) && op->getOperand(0) != queryRing)
      ringOps.push_back(op);
  });
  for (Operation *op : ringOps)
    rebaseRingIteration(b, op, base);
  return mapping.lookupOrDefault(keyTiles);
}

/// The static walk: moves the ops [begin, end) of a role into a loop
/// `for t = block_id.x; t < count; t += grid_dim.x` (moveIntoTileLoop),
/// carrying the key tiles walked before the tile.
scf::ForOp loopOverTiles(ImplicitLocOpBuilder &b, Block::iterator begin,
                         Block::iterator end, const TileWalk &walk,
                         Value keyTiles, Value queryRing) {
  b.setInsertionPoint(&*begin);
  Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value stride = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  auto loop = scf::ForOp::create(b, first, walk.count, stride, zero);
  Block *body = loop.getBody();
  Value base = loop.getRegionIterArg(0);
  Value tileKeys =
      moveIntoTileLoop(b, loop, body, begin, end, walk, loop.getInductionVar(),
                       base, keyTiles, queryRing);
  b.setInsertionPointToEnd(body);
  scf::YieldOp::create(b, arith::AddIOp::create(b, base, tileKeys).getResult());
  return loop;
}

/// A new workgroup buffer of `kernel`, aligned to `align` bytes if given.
BlockArgument addWorkgroupBuffer(gpu::GPUFuncOp kernel, MemRefType type,
                                 Attribute align = {}) {
  BlockArgument buffer = kernel.addWorkgroupAttribution(type, kernel.getLoc());
  if (align)
    kernel.setWorkgroupAttributionAttr(kernel.getNumWorkgroupAttributions() - 1,
                                       "llvm.align", align);
  return buffer;
}

/// A persistent kernel's query tile comes through a ring of one slot (a
/// buffer of its own), which the producer fills by TMA for the block's k-th
/// tile as soon as the computing warpgroups released tile k - 1, during
/// their epilogue; the query tile's old buffer only stages the output.
struct QueryRing {
  TypedValue<RingType> ring;
  /// The ops whose operand is the block's tile count k: setLocalTile, or a
  /// dynamic walk's loop (which carries k), sets it.
  SmallVector<Operation *> users;
};

/// The ring, over a new `[1, R, C]` workgroup buffer aligned as the old one.
QueryRing createQueryRing(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel,
                          CopyTileAsyncOp queryCopy, int64_t computeThreads) {
  auto tile = cast<MemRefType>(queryCopy.getDest().getType());
  auto slots = MemRefType::get(
      {1, tile.getDimSize(0), tile.getDimSize(1)}, tile.getElementType(),
      MemRefLayoutAttrInterface(), tile.getMemorySpace());
  auto old = cast<BlockArgument>(queryCopy.getDest());
  Attribute align = kernel.getWorkgroupAttributionAttr(
      old.getArgNumber() - kernel.getFirstWorkgroupAttributionIndex(),
      "llvm.align");
  BlockArgument buffer = addWorkgroupBuffer(kernel, slots, align);
  auto ringType = RingType::get(
      b.getContext(), 1,
      MemRefType::get(tile.getShape(), tile.getElementType(),
                      MemRefLayoutAttrInterface(), tile.getMemorySpace()));
  return {RingCreateOp::create(b, ringType, buffer,
                               computeThreads / kThreadsPerWarp)
              .getRing(),
          {}};
}

/// The producer's load of the query tile (before its key loop), at the
/// copy's (batch, head, row); its iteration is set by setLocalTile.
void produceQuery(ImplicitLocOpBuilder &b, QueryRing &queryRing,
                  CopyTileAsyncOp queryCopy, BlockArgument queryMap) {
  Value zero = arith::ConstantIndexOp::create(b, 0);
  auto produce = RingProduceOp::create(b, queryRing.ring, zero, queryMap,
                                       ValueRange{queryCopy.getBatch(),
                                                  queryCopy.getHead(),
                                                  queryCopy.getRow(), zero});
  queryRing.users.push_back(produce);
}

/// Sets the iteration of the query ring's ops in `loop` (a role's loop over
/// tiles) to the block's tile count k = (t - first) / step.
void setLocalTile(ImplicitLocOpBuilder &b, scf::ForOp loop,
                  const QueryRing &queryRing) {
  b.setInsertionPointToStart(loop.getBody());
  Value walked =
      arith::SubIOp::create(b, loop.getInductionVar(), loop.getLowerBound());
  Value count = arith::DivUIOp::create(b, walked, loop.getStep());
  for (Operation *op : queryRing.users)
    if (loop->isProperAncestor(op))
      ringIteration(op)->set(count);
}

/// Replaces the query tile's copy and wait by a wait on the ring, reads the
/// slot where the products read the old buffer, and releases it before the
/// output is stored (every product reading Q was waited for by then).
/// Returns the wait.
FailureOr<Operation *> consumeQuery(ImplicitLocOpBuilder &b,
                                    QueryRing &queryRing,
                                    CopyTileAsyncOp queryCopy) {
  auto wait = dyn_cast_or_null<WaitTilesOp>(queryCopy->getNextNode());
  Block *block = queryCopy->getBlock();
  auto stores = block->getOps<StoreTileOp>();
  if (!wait || stores.empty())
    return failure();
  Value old = queryCopy.getDest();
  b.setInsertionPoint(queryCopy);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  auto consume = RingConsumeOp::create(
      b, queryRing.ring.getType().getSlotType(), queryRing.ring, zero);
  queryRing.users.push_back(consume);
  old.replaceUsesWithIf(consume.getSlot(), [&](OpOperand &use) {
    return isa<TileMatmulOp>(use.getOwner()) &&
           block->findAncestorOpInBlock(*use.getOwner());
  });
  b.setInsertionPoint(*stores.begin());
  queryRing.users.push_back(
      releaseByFirstLanes(b, b.getLoc(), queryRing.ring, zero));
  wait.erase();
  queryCopy.erase();
  return consume.getOperation();
}

/// Builds `while (t < count)` over `inits` (t first), the condition's
/// region only comparing t, and leaves the builder at the start of the
/// (empty) body.
scf::WhileOp whileTilesLeft(ImplicitLocOpBuilder &b, const TileWalk &walk,
                            ValueRange inits) {
  SmallVector<Type> types(inits.getTypes());
  SmallVector<Location> locs(inits.size(), b.getLoc());
  auto loop = scf::WhileOp::create(b, types, inits);
  Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
  Value more = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                     before->getArgument(0), walk.count);
  scf::ConditionOp::create(b, more, before->getArguments());
  b.createBlock(&loop.getAfter(), {}, types, locs);
  return loop;
}

/// The tile after the ones taken so far: grid + the counter's old value.
Value takeTile(ImplicitLocOpBuilder &b, const TileWalk &walk) {
  Value taken = memref::AtomicRMWOp::create(
      b, arith::AtomicRMWKind::addi, arith::ConstantIntOp::create(b, 1, 32),
      walk.counter, ValueRange{arith::ConstantIndexOp::create(b, 0)});
  return arith::AddIOp::create(
      b, gpu::GridDimOp::create(b, gpu::Dimension::x),
      arith::IndexCastUIOp::create(b, b.getIndexType(), taken));
}

/// The slot of `walk.tileIds` that holds the block's tile `localTile`.
Value tileIdSlot(ImplicitLocOpBuilder &b, Value localTile) {
  return arith::RemUIOp::create(b, localTile,
                                arith::ConstantIndexOp::create(b, 2));
}

/// The loops over tiles carry (tile, k, key tiles walked): k is the block's
/// count of tiles before this one (the query ring's iteration).
enum TileLoopValue { kTile, kLocalTile, kBase };

/// The dynamic walk's loop of a role: moves its ops [begin, end) into
/// `while (t < count)` from t = block_id.x (moveIntoTileLoop), carrying
/// (tile, k, key tiles walked). `nextTile(k)` builds, where the role gets
/// it, the block's next tile and k + 1.
scf::WhileOp loopOverTilesDynamically(
    ImplicitLocOpBuilder &b, Block::iterator begin, Block::iterator end,
    const TileWalk &walk, Value keyTiles, Value queryRing,
    function_ref<std::pair<Value, Value>(Value)> nextTile) {
  b.setInsertionPoint(&*begin);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  scf::WhileOp loop = whileTilesLeft(b, walk, ValueRange{first, zero, zero});
  Block *body = &loop.getAfter().front();
  Value base = body->getArgument(kBase);
  Value tileKeys =
      moveIntoTileLoop(b, loop, body, begin, end, walk,
                       body->getArgument(kTile), base, keyTiles, queryRing);
  auto [next, nextK] = nextTile(body->getArgument(kLocalTile));
  b.setInsertionPointToEnd(body);
  scf::YieldOp::create(
      b, ValueRange{next, nextK, arith::AddIOp::create(b, base, tileKeys)});
  return loop;
}

/// k + 1.
Value nextLocalTile(ImplicitLocOpBuilder &b, Value k) {
  return arith::AddIOp::create(b, k, arith::ConstantIndexOp::create(b, 1));
}

/// The dynamic walk's producer: moves the issuer's ops [begin, end) (the
/// query tile's load, then the key loop) into its loop over tiles. At the
/// start of tile k it takes tile k + 1 from the counter and publishes it in
/// the ids' slot (k + 1) % 2 just before loading query tile k, so that the
/// computing warpgroups know their next tile, and compute its indices,
/// before they wait for its query tile. (The atomic's latency passes while
/// the thread would wait for the query slot anyway: the computing
/// warpgroups free it only near the end of tile k - 1.) The slot it
/// overwrites held tile k - 1, which they read when they got query tile
/// k - 2, before they released it for the load of query tile k - 1.
void produceTilesDynamically(ImplicitLocOpBuilder &b, Block::iterator begin,
                             Block::iterator end, const TileWalk &walk,
                             Value keyTiles, RingProduceOp queryProduce) {
  loopOverTilesDynamically(
      b, begin, end, walk, keyTiles, queryProduce.getRing(), [&](Value k) {
        b.setInsertionPoint(queryProduce);
        queryProduce.getIterationMutable().set(k);
        Value next = takeTile(b, walk);
        Value nextK = nextLocalTile(b, k);
        memref::StoreOp::create(
            b, arith::IndexCastUIOp::create(b, b.getI32Type(), next),
            walk.tileIds, ValueRange{tileIdSlot(b, nextK)});
        return std::make_pair(next, nextK);
      });
}

/// The dynamic walk's computing warpgroups: move the ops [begin, end) (from
/// the query tile's wait, `queryConsume`, on) into their loop over tiles,
/// reading the next tile, which the producer published with the query
/// tile, right after the wait.
void consumeTilesDynamically(ImplicitLocOpBuilder &b, Block::iterator begin,
                             Block::iterator end, const TileWalk &walk,
                             Value keyTiles, RingConsumeOp queryConsume,
                             const QueryRing &queryRing) {
  loopOverTilesDynamically(
      b, begin, end, walk, keyTiles, queryRing.ring, [&](Value k) {
        for (Operation *op : queryRing.users)
          if (k.getParentBlock()->findAncestorOpInBlock(*op))
            ringIteration(op)->set(k);
        b.setInsertionPointAfter(queryConsume);
        Value nextK = nextLocalTile(b, k);
        Value published = memref::LoadOp::create(
            b, walk.tileIds, ValueRange{tileIdSlot(b, nextK)});
        return std::make_pair(
            arith::IndexCastUIOp::create(b, b.getIndexType(), published)
                .getResult(),
            nextK);
      });
}

/// persistent = true: both roles walk the tiles of the grid
/// [query_tiles, batch_heads, one] in a loop, statically or (causal, with
/// `counter`) dynamically (TileWalk), the producer's issuer around its key
/// loop (`producerKeys`) and the computing warpgroups from the query tile's
/// copy on; what precedes them (setmaxnreg, ping-pong's first turn) runs
/// once. The producer thus loads the next tile's K and V while the computing
/// warpgroups store the current tile's output.
LogicalResult walkTilesPersistently(gpu::GPUFuncOp kernel, scf::IfOp roles,
                                    scf::ForOp producerKeys,
                                    CopyTileAsyncOp queryCopy,
                                    Value consumerKeyTiles,
                                    BlockArgument queryMap,
                                    BlockArgument counter, int64_t blockM,
                                    int64_t computeThreads, StringRef pass) {
  ImplicitLocOpBuilder b(roles.getLoc(), roles);
  TileWalk walk = planTileWalk(b, roles, queryCopy.getSource(), blockM);
  b.setInsertionPoint(roles);
  QueryRing queryRing = createQueryRing(b, kernel, queryCopy, computeThreads);
  if (counter) {
    walk.counter = counter;
    walk.tileIds = addWorkgroupBuffer(
        kernel,
        MemRefType::get({2}, b.getI32Type(), MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            b.getContext(), gpu::AddressSpace::Workgroup)));
  }
  Block *issuer = producerKeys->getBlock();
  b.setInsertionPoint(producerKeys);
  produceQuery(b, queryRing, queryCopy, queryMap);
  auto queryProduce = cast<RingProduceOp>(queryRing.users.back());
  Block::iterator issuerBegin = issuer->begin(),
                  issuerEnd = issuer->getTerminator()->getIterator();
  if (walk.isDynamic()) {
    produceTilesDynamically(b, issuerBegin, issuerEnd, walk,
                            producerKeys.getUpperBound(), queryProduce);
  } else {
    scf::ForOp producerTiles =
        loopOverTiles(b, issuerBegin, issuerEnd, walk,
                      producerKeys.getUpperBound(), queryRing.ring);
    setLocalTile(b, producerTiles, queryRing);
  }

  Block *consumer = queryCopy->getBlock();
  FailureOr<Operation *> queryWait = consumeQuery(b, queryRing, queryCopy);
  if (failed(queryWait))
    return emitPassError(queryCopy, pass)
           << "expects the query tile's copy followed by its fa.wait_tiles and "
              "the tile's output stored (fa.store_tile) in the same block";
  Block::iterator consumerEnd = consumer->getTerminator()->getIterator();
  if (walk.isDynamic()) {
    consumeTilesDynamically(b, (*queryWait)->getIterator(), consumerEnd, walk,
                            consumerKeyTiles, cast<RingConsumeOp>(*queryWait),
                            queryRing);
  } else {
    scf::ForOp consumerTiles =
        loopOverTiles(b, (*queryWait)->getIterator(), consumerEnd, walk,
                      consumerKeyTiles, queryRing.ring);
    setLocalTile(b, consumerTiles, queryRing);
  }
  // The block's own indices are left unused but for the loops' start.
  for (Operation *op : llvm::reverse(walk.perTileOps))
    if (op->use_empty())
      op->erase();
  return success();
}

LogicalResult warpSpecialize(gpu::GPUFuncOp kernel, StringRef pass) {
  TileAttr config = getTileConfig(kernel);
  if (!config.getWarpSpecialize())
    return success();
  std::optional<ArrayRef<int32_t>> block = kernel.getKnownBlockSize();
  if (!block)
    return emitPassError(kernel, pass) << "expects known_block_size";
  int64_t computeThreads = (*block)[0];
  KernelAttr entry = kernelEntry(kernel);
  if (entry && entry.getOp() == KernelOp::AttentionBwdDkdv)
    return warpSpecializeKeyBlocks(kernel, entry, config, computeThreads, pass);
  if (failed(checkSplittable(kernel, entry, config, pass)))
    return failure();
  int64_t stages = config.getStageCount();

  // The tensors, their copies and the query tile's copy, where the block
  // splits: everything before it only computes indices.
  SmallVector<StreamedTensor> streams = {{"k"}, {"v"}};
  for (StreamedTensor &stream : streams)
    if (failed(collectCopies(kernel, entry, stream, pass)))
      return failure();
  BlockArgument query = paramNamed(kernel, entry, "q");
  Block &body = kernel.getBody().front();
  CopyTileAsyncOp queryCopy;
  for (Operation &op : body) {
    if (auto copy = dyn_cast<CopyTileAsyncOp>(op);
        copy && copy.getSource() == query) {
      queryCopy = copy;
      break;
    }
    if (!isMemoryEffectFree(&op) || op.getNumRegions() != 0)
      return emitPassError(&op, pass)
             << "expects only index computations before the query tile's "
                "copy, where the producer splits off";
  }
  if (!queryCopy)
    return emitPassError(kernel, pass)
           << "expects the query tile's fa.copy_tile_async in the kernel's "
              "entry block";
  Value tilesEnd = keyTilesEnd(kernel);
  if (!tilesEnd)
    return emitPassError(kernel, pass)
           << "expects key loops marked " << kKvTilesAttr
           << " (fa-eliminate-causal-tiles)";
  CopyTileAsyncOp firstKey = streams.front().copies.front();
  DominanceInfo dominance(kernel);
  Value batch = firstKey.getBatch(), head = firstKey.getHead();
  if (!dominance.properlyDominates(batch, queryCopy) ||
      !dominance.properlyDominates(head, queryCopy))
    return emitPassError(firstKey, pass)
           << "expects the batch and head of K's tiles computed before the "
              "query tile's copy";

  // The tensor maps: more parameters, in the manifest as <name>_tma (K and
  // V; Q too where a persistent producer loads it).
  MLIRContext *context = kernel.getContext();
  SmallVector<KernelParamAttr> params(entry.getParams());
  auto addParam = [&](const std::string &name,
                      Type type) -> FailureOr<BlockArgument> {
    unsigned index = kernel.getNumArguments();
    if (failed(kernel.insertArgument(index, type, {}, kernel.getLoc())))
      return emitPassError(kernel, pass)
             << "cannot add the parameter '" << name << "'";
    params.push_back(KernelParamAttr::get(context, name, type));
    return kernel.getArgument(index);
  };
  auto addTensorMap = [&](StringRef name, Value tensor, int64_t rows) {
    return addParam((name + kTensorMapParamSuffix).str(),
                    tensorMapType(cast<MemRefType>(tensor.getType()), rows));
  };
  SmallVector<BlockArgument> maps;
  for (StreamedTensor &stream : streams) {
    auto bufferType = cast<MemRefType>(stream.buffer.getType());
    FailureOr<BlockArgument> map =
        addTensorMap(stream.name, stream.tensor, bufferType.getDimSize(1));
    if (failed(map))
      return failure();
    maps.push_back(*map);
  }
  BlockArgument queryMap, tileCounter;
  if (config.getPersistent()) {
    FailureOr<BlockArgument> map =
        addTensorMap("q", query, *config.getBlockM());
    if (failed(map))
      return failure();
    queryMap = *map;
  }
  // Causal tiles are taken dynamically (TileWalk), from this counter.
  if (config.getPersistent() && entry.getCausal().value_or(false)) {
    FailureOr<BlockArgument> counter =
        addParam(kTileCounterParam.str(),
                 MemRefType::get({1}, IntegerType::get(context, 32)));
    if (failed(counter))
      return failure();
    tileCounter = *counter;
  }

  // Rings over the existing buffers, before the split (every thread).
  ImplicitLocOpBuilder b(kernel.getLoc(), queryCopy);
  for (StreamedTensor &stream : streams) {
    auto bufferType = cast<MemRefType>(stream.buffer.getType());
    auto tile = MemRefType::get(
        {bufferType.getDimSize(1), bufferType.getDimSize(2)},
        bufferType.getElementType(), MemRefLayoutAttrInterface(),
        bufferType.getMemorySpace());
    stream.ring = RingCreateOp::create(
                      b, RingType::get(context, bufferType.getDimSize(0), tile),
                      stream.buffer, computeThreads / kThreadsPerWarp)
                      .getRing();
  }

  // The computing side: reads from the rings, no K/V copies, and one wait
  // (for the query tile) instead of one per key tile.
  for (StreamedTensor &stream : streams) {
    for (CopyTileAsyncOp copy : stream.copies) {
      auto slot = copy.getDest().getDefiningOp<memref::SubViewOp>();
      copy.erase();
      if (slot.use_empty())
        slot.erase();
    }
    if (failed(consumeFromRing(stream, stages, dominance, pass)))
      return failure();
  }
  kernel.walk([](WaitTilesOp wait) { wait.erase(); });
  b.setInsertionPointAfter(queryCopy);
  WaitTilesOp::create(b);

  // The split: producer threads after the computing ones.
  RegisterSplit registers =
      config.getPersistent() ? kPersistentRegisters : kRegisters;
  scf::IfOp roles = splitByRole(b, queryCopy, computeThreads, registers);
  if (config.getPingPong())
    schedulePingPong(roles.elseBlock(), queryCopy);
  b.setInsertionPoint(roles.thenBlock()->getTerminator());
  FailureOr<scf::ForOp> producerKeys =
      buildProducer(b, computeThreads, streams, maps, batch, head, tilesEnd);
  if (failed(producerKeys))
    return emitPassError(kernel, pass)
           << "cannot compute the end of the key tiles in the producer";
  SmallVector<GridDim> grid(entry.getGrid());
  if (config.getPersistent()) {
    if (failed(walkTilesPersistently(
            kernel, roles, *producerKeys, queryCopy, tilesEnd, queryMap,
            tileCounter, *config.getBlockM(), computeThreads, pass)))
      return failure();
    grid = {GridDim::PersistentQueryTiles, GridDim::One, GridDim::One};
  }

  int64_t threads = computeThreads + kProducerThreads;
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  kernel->setAttr(kProducerThreadsAttr, b.getI64IntegerAttr(kProducerThreads));
  setKernelEntry(
      kernel, KernelAttr::get(
                  context, entry.getOp(), entry.getDtype(), entry.getHeadDim(),
                  entry.getCausal(), entry.getScale(), entry.getConfig(),
                  {threads, 1, 1}, grid, params, entry.getDeltaKernel(),
                  entry.getDkdvKernel(), entry.getParamsKernel(),
                  entry.getDsinksKernel(), entry.getVariant()));
  return success();
}

struct FAWarpSpecializePass
    : public mlir::fa::impl::FAWarpSpecializeBase<FAWarpSpecializePass> {
  void runOnOperation() override {
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp kernel) {
          return warpSpecialize(kernel, getArgument());
        })))
      signalPassFailure();
  }
};
} // namespace
