//===- WarpSpecializeKeyBlocks.cpp - The dK/dV kernel on a producer warp --===//
//
// The backward's dK/dV kernel (fa-tile-attention-grad) holds one block of
// keys and walks every query tile of the query heads of its kv head. After
// fa-pipeline-kv-copies every warp copies its share of each tile's Q and dO
// and of its lse and delta rows (cp.async, one tile ahead), and the block
// waits for them at a barrier once per tile. Here one warp of a producer
// warpgroup feeds four rings instead: Q and dO by TMA (its first lane), lse
// and delta by cp.async (all its lanes: rows of any length, which a TMA
// tensor map cannot describe), and the computing warpgroups wait only on the
// mbarriers of the tile they need. setmaxnreg gives the producer's registers
// to them.
//
// Both roles walk the same tiles. The producer rebuilds the computing side's
// loop nest (the loop over the group's query heads around the loop over
// query tiles, with the same bounds) and loads each tile at the coordinates
// of the pipeline's copy of it. Tile j of the group's head h is ring
// iteration h * n + (j - first), n the query loop's trip count, which does
// not depend on h.
//
// Each slot is read by two products, one of which accumulates across the
// loop (S^T = K Q^T and dK += dS^T Q read Q; dP^T = V dO^T and dV += P^T dO
// read dO), and WarpgroupMma.cpp waits for an accumulation at the loop's
// yield. So the slots of a tile go back to the producer at the start of the
// next iteration, and those of a loop's last tile after the loop.
//
// With a fused dQ (fa-tile-attention-grad fuse-dq) the computing warpgroups
// no longer take the key blocks' turns themselves: they stage each tile's
// dQ^T in shared memory and go on, and two producer warps take the turns
// and add the staged tiles by TMA, a tile each in turn (writeDqTiles); the
// four rings then share two walkers.
//
//===----------------------------------------------------------------------===//

#include "WarpSpecialize.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::warp_specialize;

namespace {
/// The staged dQ's alignment: TMA's 128-byte swizzle repeats every 1024
/// bytes and is computed from the shared address, so the buffer starts on
/// such a boundary for its rows' swizzle phases to be the ones
/// fa.stage_accumulator's `swizzled` stores assume.
constexpr int64_t kSwizzledAlignment = 1024;
/// A fused dQ's f32 workspace parameter.
constexpr StringLiteral kDqAccumParam = "dq_accum";
/// Warps writing a fused dQ, taking its tiles in turn (writeDqTiles).
constexpr int64_t kDqWriters = 2;

/// A tensor whose per-tile copies a ring takes over.
struct RingedStream {
  StringRef name;
  /// lse and delta: f32 rows, which the producer warp copies (cp.async);
  /// else a tile, which its first lane loads by TMA.
  bool rows;
  BlockArgument tensor;
  /// The slots' `[S, R, C]` (tiles) or `[S, R]` (rows) workgroup buffer.
  Value buffer;
  /// The pipeline's copies into the slots: fa.copy_tile_async or
  /// fa.copy_rows_async.
  SmallVector<Operation *> copies;
  TypedValue<RingType> ring;
  /// The TMA tensor map of a tile stream.
  BlockArgument map;
};

/// The (batch, head, row) a tile or row copy reads at.
SmallVector<Value, 3> copyCoordinates(Operation *op) {
  if (auto copy = dyn_cast<CopyTileAsyncOp>(op))
    return {copy.getBatch(), copy.getHead(), copy.getRow()};
  auto copy = cast<CopyRowsAsyncOp>(op);
  return {copy.getBatch(), copy.getHead(), copy.getRow()};
}

LogicalResult checkSplittable(gpu::GPUFuncOp kernel, KernelAttr entry,
                              TileAttr config, StringRef pass) {
  auto refuse = [&](StringRef why) {
    return emitPassError(kernel, pass)
           << "warp_specialize = true on a dK/dV kernel needs " << why
           << " (kernel " << kernel.getName() << ")";
  };
  if (!config.getWgmma())
    return refuse("wgmma = true: the producer feeds warpgroup MMAs");
  if (config.getStageCount() != 2)
    return refuse("num_stages = 2: the rings' slots are the Q/dO buffers' two "
                  "slots");
  if (config.getNumWarps() != 8)
    return refuse("num_warps = 8: two computing warpgroups");
  if (config.getSplitDkdv())
    return refuse("split_dkdv = false");
  if (entry.getVariant())
    return refuse("a backward without mask or score regions (plain or "
                  "causal), whose query tiles are one loop per query head");
  return success();
}

/// The slots of `stream` that the kernel reads (every subview of its buffer
/// that no copy fills).
SmallVector<memref::SubViewOp> readSlots(const RingedStream &stream) {
  SmallVector<memref::SubViewOp> slots;
  for (Operation *user : stream.buffer.getUsers()) {
    auto slot = dyn_cast<memref::SubViewOp>(user);
    if (slot && llvm::none_of(slot->getUsers(), [](Operation *op) {
          return copyEnds(op).has_value();
        }))
      slots.push_back(slot);
  }
  return slots;
}

/// The loop nest the tiles are walked in: the loop over query tiles, which
/// reads slot j % 2 in iteration j, and the loop over the group's query
/// heads around it, if any.
struct TileLoops {
  scf::ForOp heads, tiles;
};

FailureOr<TileLoops> findTileLoops(gpu::GPUFuncOp kernel,
                                   ArrayRef<RingedStream> streams,
                                   int64_t stages, StringRef pass) {
  scf::ForOp tiles;
  for (const RingedStream &stream : streams) {
    for (memref::SubViewOp slot : readSlots(stream)) {
      auto loop = dyn_cast<scf::ForOp>(slot->getParentOp());
      if (!loop || slotTileIndex(slot, stages) != loop.getInductionVar() ||
          (tiles && loop != tiles))
        return emitPassError(slot, pass)
               << "expects every read of " << stream.name
               << " in one loop over query tiles, at slot (tile mod " << stages
               << ")";
      tiles = loop;
    }
  }
  if (!tiles)
    return emitPassError(kernel, pass) << "found no read of the query tiles";
  if (!matchPattern(tiles.getStep(), m_One()))
    return emitPassError(tiles, pass) << "expects query tiles in steps of 1";
  TileLoops loops{nullptr, tiles};
  Operation *parent = tiles->getParentOp();
  if (parent == kernel.getOperation())
    return loops;
  loops.heads = dyn_cast<scf::ForOp>(parent);
  if (!loops.heads || loops.heads->getParentOp() != kernel.getOperation() ||
      !loops.heads.isDefinedOutsideOfLoop(tiles.getLowerBound()) ||
      !loops.heads.isDefinedOutsideOfLoop(tiles.getUpperBound()))
    return emitPassError(tiles, pass)
           << "expects the loop over query tiles in the kernel's body or in "
              "one loop over query heads there, with bounds that do not "
              "depend on the head";
  return loops;
}

/// `index` (below 2^32: a head, block or tile count or index) as an i32.
/// The producer's 24 registers and the computing side's 240 hold no
/// 64-bit counters (each spilled there).
Value toI32(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}

/// The query loop's trip count: max(end - start, 0).
Value tripCount(ImplicitLocOpBuilder &b, Value start, Value end) {
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, end, start);
  return arith::SelectOp::create(b, any, arith::SubIOp::create(b, end, start),
                                 zero);
}

/// The ring iteration of query tile `tile` of the head at `head` (null
/// without a loop over heads): ((head - first) / step) * count + (tile -
/// start).
Value ringIterationOf(ImplicitLocOpBuilder &b, scf::ForOp heads, Value head,
                      Value count, Value tile, Value start) {
  Value within = arith::SubIOp::create(b, tile, start);
  if (!heads)
    return within;
  Value headIndex = arith::DivUIOp::create(
      b, arith::SubIOp::create(b, head, heads.getLowerBound()),
      heads.getStep());
  return arith::AddIOp::create(b, arith::MulIOp::create(b, headIndex, count),
                               within);
}

/// Releases iteration `iteration` of every ring, once per warp.
void releaseAll(ImplicitLocOpBuilder &b, ArrayRef<RingedStream> streams,
                Value iteration) {
  for (const RingedStream &stream : streams)
    releaseByFirstLanes(b, b.getLoc(), stream.ring, iteration);
}

/// The computing side: each read slot becomes the ring's slot of the
/// iteration, released at the next iteration's start and after the loop.
/// Returns the ring iteration, in the query loop's body.
Value consumeFromRings(ImplicitLocOpBuilder &b, TileLoops loops,
                       ArrayRef<RingedStream> streams) {
  scf::ForOp tiles = loops.tiles;
  Value start = tiles.getLowerBound();
  b.setInsertionPoint(loops.heads ? loops.heads : tiles);
  Value count = tripCount(b, start, tiles.getUpperBound());
  Value head = loops.heads ? loops.heads.getInductionVar() : Value();

  b.setInsertionPointToStart(tiles.getBody());
  Value iteration = ringIterationOf(b, loops.heads, head, count,
                                    tiles.getInductionVar(), start);
  for (const RingedStream &stream : streams) {
    for (memref::SubViewOp slot : readSlots(stream)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(slot);
      auto consume = RingConsumeOp::create(
          b, stream.ring.getType().getSlotType(), stream.ring, iteration);
      slot.getResult().replaceAllUsesWith(consume.getSlot());
      slot.erase();
    }
  }
  Value notFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                         tiles.getInductionVar(), start);
  auto previous = scf::IfOp::create(b, notFirst, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(previous.thenBlock());
    releaseAll(b, streams,
               arith::SubIOp::create(b, iteration,
                                     arith::ConstantIndexOp::create(b, 1)));
  }

  b.setInsertionPointAfter(tiles);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value last = ringIterationOf(
      b, loops.heads, head, count,
      arith::SubIOp::create(b, arith::AddIOp::create(b, start, count), one),
      start);
  Value walked = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, count,
                                       arith::ConstantIndexOp::create(b, 0));
  auto lastTile = scf::IfOp::create(b, walked, /*withElseRegion=*/false);
  b.setInsertionPointToStart(lastTile.thenBlock());
  releaseAll(b, streams, last);
  return iteration;
}

/// `value` for the producer, whose region starts at `roles` in the kernel's
/// entry block: itself when defined before `roles` there (or a kernel
/// parameter), else mapped by `mapping`, else a clone of its side-effect-free
/// definition (recursively) at the insertion point.
FailureOr<Value> producerValue(OpBuilder &b, Value value, IRMapping &mapping,
                               scf::IfOp roles) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Block *entry = roles->getBlock();
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == entry ? FailureOr<Value>(value)
                                   : FailureOr<Value>(failure());
  Operation *def = value.getDefiningOp();
  if (def->getBlock() == entry && def->isBeforeInBlock(roles))
    return value;
  if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
    return failure();
  for (Value operand : def->getOperands())
    if (failed(producerValue(b, operand, mapping, roles)))
      return failure();
  b.clone(*def, mapping);
  return mapping.lookup(value);
}

/// The copy of `stream` inside the query loop (the pipeline's copy of a
/// later tile), whose coordinates the producer evaluates at its own tile.
Operation *copyInLoop(const RingedStream &stream, scf::ForOp tiles) {
  for (Operation *copy : stream.copies)
    if (tiles->isProperAncestor(copy))
      return copy;
  return nullptr;
}

/// Rewrites `loop` (index bounds below 2^32) in place onto 32-bit bounds,
/// its body reading the induction variable through an index cast. Both
/// sides' loops get it once they are built (the computing side's after the
/// producer has cloned their bounds).
void narrowInductionVariable(scf::ForOp loop) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  loop.getLowerBoundMutable().assign(toI32(b, loc, loop.getLowerBound()));
  loop.getUpperBoundMutable().assign(toI32(b, loc, loop.getUpperBound()));
  loop.getStepMutable().assign(toI32(b, loc, loop.getStep()));
  Value iv = loop.getInductionVar();
  iv.setType(b.getI32Type());
  b.setInsertionPointToStart(loop.getBody());
  auto index =
      arith::IndexCastUIOp::create(b, loop.getLoc(), b.getIndexType(), iv);
  iv.replaceAllUsesExcept(index, index);
}

/// A walker's work on one tile, built at the insertion point in its tile
/// loop: `mapping` takes the computing side's loop variables to the
/// walker's, `iteration` is the tile's ring iteration.
using TileWork =
    function_ref<LogicalResult(IRMapping &mapping, Value iteration)>;

/// One producer role at the insertion point: walks the loop nest `loops`
/// (the same bounds as the computing side) and does `work` on each tile.
LogicalResult walkTiles(ImplicitLocOpBuilder &b, scf::IfOp roles,
                        TileLoops loops, StringRef pass, TileWork work) {
  IRMapping mapping;
  auto mapped = [&](Value value) {
    return producerValue(b, value, mapping, roles);
  };
  Value head;
  scf::ForOp heads;
  if (loops.heads) {
    FailureOr<Value> first = mapped(loops.heads.getLowerBound());
    FailureOr<Value> end = mapped(loops.heads.getUpperBound());
    FailureOr<Value> step = mapped(loops.heads.getStep());
    if (failed(first) || failed(end) || failed(step))
      return emitPassError(loops.heads, pass)
             << "cannot compute the loop over query heads in the producer";
    heads = scf::ForOp::create(b, *first, *end, *step);
    head = heads.getInductionVar();
    mapping.map(loops.heads.getInductionVar(), head);
    b.setInsertionPointToStart(heads.getBody());
  }
  FailureOr<Value> start = mapped(loops.tiles.getLowerBound());
  FailureOr<Value> end = mapped(loops.tiles.getUpperBound());
  if (failed(start) || failed(end))
    return emitPassError(loops.tiles, pass)
           << "cannot compute the query tiles' range in the producer";
  Value count = tripCount(b, *start, *end);
  Value one = arith::ConstantIndexOp::create(b, 1);
  auto tiles = scf::ForOp::create(b, *start, *end, one);
  b.setInsertionPointToStart(tiles.getBody());
  Value tile = tiles.getInductionVar();
  Value iteration = ringIterationOf(b, heads, head, count, tile, *start);
  mapping.map(loops.tiles.getInductionVar(), tile);
  if (failed(work(mapping, iteration)))
    return failure();
  // 32-bit counters: the walkers' 64-bit bounds and counters spilled at the
  // producer's 24 registers.
  narrowInductionVariable(tiles);
  if (heads)
    narrowInductionVariable(heads);
  return success();
}

/// Fills the rings of `streams` with the walker's tile (ring iteration
/// `iteration`), at the coordinates of the stream's copy in the query loop
/// with its tile index mapped to the walker's.
LogicalResult produceTile(ImplicitLocOpBuilder &b, scf::IfOp roles,
                          TileLoops loops,
                          ArrayRef<const RingedStream *> streams,
                          IRMapping &mapping, Value iteration, StringRef pass) {
  Value tile = mapping.lookup(loops.tiles.getInductionVar());
  for (const RingedStream *stream : streams) {
    Operation *copy = copyInLoop(*stream, loops.tiles);
    auto slot = copy ? copyEnds(copy)->second.getDefiningOp<memref::SubViewOp>()
                     : nullptr;
    Value copiedTile =
        slot ? slotTileIndex(slot, stream->ring.getType().getStages())
             : Value();
    if (!copiedTile)
      return emitPassError(loops.tiles, pass)
             << "expects the pipeline's copy of a later tile of "
             << stream->name << " in the query loop";
    // The copy's coordinates with its tile (j + 1) as the walker's tile.
    IRMapping tileMapping = mapping;
    tileMapping.map(copiedTile, tile);
    SmallVector<Value> coordinates;
    for (Value coordinate : copyCoordinates(copy)) {
      FailureOr<Value> value = producerValue(b, coordinate, tileMapping, roles);
      if (failed(value))
        return emitPassError(copy, pass) << "cannot compute the coordinates of "
                                         << stream->name << " in the producer";
      coordinates.push_back(*value);
    }
    if (stream->rows) {
      RingProduceRowsOp::create(b, stream->ring, iteration, stream->tensor,
                                coordinates[0], coordinates[1], coordinates[2]);
      continue;
    }
    coordinates.push_back(arith::ConstantIndexOp::create(b, 0));
    RingProduceOp::create(b, stream->ring, iteration, stream->map, coordinates);
  }
  return success();
}

/// Fills the rings of `streams` with each tile.
LogicalResult produceEveryTile(ImplicitLocOpBuilder &b, scf::IfOp roles,
                               TileLoops loops,
                               ArrayRef<const RingedStream *> streams,
                               StringRef pass) {
  return walkTiles(
      b, roles, loops, pass, [&](IRMapping &mapping, Value iteration) {
        return produceTile(b, roles, loops, streams, mapping, iteration, pass);
      });
}

/// A fused dQ's additions (fa-tile-attention-grad fuse-dq): in the query
/// loop, the block waits for its turn on the query tile, adds its dQ^T into
/// dq_accum, and passes the turn on. Warp-specialised, the computing
/// warpgroups only stage dQ^T in `staged` and go on; a writer warp of the
/// producer takes the turn and adds the staged tile by TMA.
struct DqHandoff {
  OrderedWaitOp wait;
  AccumulateTileOp accumulate;
  OrderedSignalOp signal;
  /// [block_n, head_dim] f32 in shared memory: dQ as rows (the transposed
  /// tile's), in 128-byte-swizzled panels (fa.stage_accumulator swizzled),
  /// which TMA reads through `map` without bank conflicts on either side.
  Value staged;
  /// dq_accum's tensor map (parameter dq_accum_tma), one panel a box.
  Value map;
};

/// The one op of type OpT in `body`, or null.
template <typename OpT> OpT onlyOp(Block *body) {
  auto ops = body->getOps<OpT>();
  return llvm::hasSingleElement(ops) ? *ops.begin() : OpT();
}

/// The kernel's fused-dQ additions, if it has a dq_accum: one wait, add and
/// signal, in that order, in the query loop's body.
FailureOr<std::optional<DqHandoff>> findDqHandoff(gpu::GPUFuncOp kernel,
                                                  KernelAttr entry,
                                                  TileLoops loops,
                                                  StringRef pass) {
  if (!paramNamed(kernel, entry, kDqAccumParam))
    return std::optional<DqHandoff>();
  Block *body = loops.tiles.getBody();
  auto wait = onlyOp<OrderedWaitOp>(body);
  auto accumulate = onlyOp<AccumulateTileOp>(body);
  auto signal = onlyOp<OrderedSignalOp>(body);
  if (!wait || !accumulate || !signal || !accumulate.getTransposed() ||
      !wait->isBeforeInBlock(accumulate) ||
      !accumulate->isBeforeInBlock(signal))
    return emitPassError(loops.tiles, pass)
           << "expects a fused dQ's one fa.ordered_wait, transposed "
              "fa.accumulate_tile and fa.ordered_signal, in that order, in "
              "the query loop";
  VectorType dqT = accumulate.getValue().getType();
  auto stagedType = MemRefType::get(
      {dqT.getDimSize(1), dqT.getDimSize(0)},
      Float32Type::get(kernel.getContext()), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(kernel.getContext(),
                                 gpu::AddressSpace::Workgroup));
  Value staged = kernel.addWorkgroupAttribution(stagedType, kernel.getLoc());
  kernel.setWorkgroupAttributionAttr(
      kernel.getNumWorkgroupAttributions() - 1, "llvm.align",
      IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                       kSwizzledAlignment));
  return std::optional<DqHandoff>(
      DqHandoff{wait, accumulate, signal, staged, /*map=*/Value()});
}

/// The named barriers' arrivals: the computing threads and one writer warp.
Value handoffThreads(ImplicitLocOpBuilder &b, int64_t computeThreads) {
  return arith::ConstantIntOp::create(b, computeThreads + kThreadsPerWarp, 32);
}

void syncOn(ImplicitLocOpBuilder &b, Value barrier, Value threads) {
  NVVM::BarrierOp::create(b, TypeRange{}, barrier, threads,
                          NVVM::BarrierReductionAttr(), Value());
}

/// The named barriers of writer `writer` (an i32): its tiles are staged
/// (kDqStagedBarrierId + 2 w) and written (kDqWrittenBarrierId + 2 w). A
/// writer's own, of a constant `writer`, fold to constants.
Value writerBarrier(ImplicitLocOpBuilder &b, int32_t first, Value writer) {
  return b.createOrFold<arith::AddIOp>(
      arith::ConstantIntOp::create(b, first, 32),
      b.createOrFold<arith::MulIOp>(writer,
                                    arith::ConstantIntOp::create(b, 2, 32)));
}

Value stagedBarrier(ImplicitLocOpBuilder &b, Value writer) {
  return writerBarrier(b, kDqStagedBarrierId, writer);
}

Value writtenBarrier(ImplicitLocOpBuilder &b, Value writer) {
  return writerBarrier(b, kDqWrittenBarrierId, writer);
}

/// The writer of ring iteration `iteration`, as an i32.
Value writerOf(ImplicitLocOpBuilder &b, Value iteration) {
  return arith::IndexCastUIOp::create(
      b, b.getI32Type(),
      arith::RemUIOp::create(b, iteration,
                             arith::ConstantIndexOp::create(b, kDqWriters)));
}

/// Writer warp `writer` of kDqWriters, which take the tiles in turn (ring
/// iteration i is writer i mod kDqWriters's): per tile of its own it waits
/// for the staged dQ and for the block's turn, adds the tile (TMA), frees
/// the buffer once the TMA has read it, and passes the turn on once the
/// adds are done. Taking turns, a writer has kDqWriters tiles' time for
/// that path, whose release (fence.acq_rel.gpu, a MEMBAR.ALL.GPU in SASS)
/// alone outlasted a tile's products. The last writer frees the buffer for
/// the first tile.
LogicalResult writeDqTiles(ImplicitLocOpBuilder &b, scf::IfOp roles,
                           TileLoops loops, const DqHandoff &handoff,
                           int64_t computeThreads, int64_t writer,
                           StringRef pass) {
  Value threads = handoffThreads(b, computeThreads);
  Value writerIndex = arith::ConstantIntOp::create(b, writer, 32);
  if (writer == kDqWriters - 1)
    NVVM::BarrierArriveOp::create(b, writtenBarrier(b, writerIndex), threads);
  return walkTiles(
      b, roles, loops, pass,
      [&](IRMapping &mapping, Value iteration) -> LogicalResult {
        Value isMine = arith::CmpIOp::create(
            b, arith::CmpIPredicate::eq, writerOf(b, iteration),
            arith::ConstantIntOp::create(b, writer, 32));
        auto ifMine = scf::IfOp::create(b, isMine, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifMine.thenBlock());
        auto mapped = [&](Value value) -> Value {
          if (!value)
            return value;
          FailureOr<Value> result = producerValue(b, value, mapping, roles);
          return succeeded(result) ? *result : Value();
        };
        OrderedWaitOp wait = handoff.wait;
        AccumulateTileOp add = handoff.accumulate;
        Value batch = mapped(wait.getBatch()), head = mapped(wait.getHead()),
              tile = mapped(wait.getTile()),
              expected = mapped(wait.getExpected()), row = mapped(add.getRow()),
              first = mapped(add.getFirst()), addBatch = mapped(add.getBatch()),
              addHead = mapped(add.getHead());
        if (!batch || !head || !tile || !expected || !row || !addBatch ||
            !addHead || (add.getFirst() && !first))
          return emitPassError(wait, pass)
                 << "cannot compute the fused dQ's turn and rows in the writer";
        syncOn(b, stagedBarrier(b, writerIndex), threads);
        OrderedWaitOp::create(b, wait.getCounters(), batch, head, tile,
                              expected,
                              /*warp=*/true);
        AccumulateBoxesAsyncOp::create(b, handoff.staged, handoff.map, addBatch,
                                       addHead, row, first);
        // The buffer is read: the computing side may stage the next tile while
        // the TMA's adds complete.
        NVVM::BarrierArriveOp::create(b, writtenBarrier(b, writerIndex),
                                      threads);
        WaitBulkAsyncOp::create(b);
        OrderedSignalOp::create(b, wait.getCounters(), batch, head, tile,
                                /*warp=*/true);
        return success();
      });
}

/// The computing side's part of the hand-over, in place of the additions,
/// at ring iteration `iteration`: wait until the previous tile's writer has
/// freed the buffer, stage dQ^T there (fenced for the TMA's reads), tell
/// this tile's writer and go on.
void stageDqTiles(DqHandoff handoff, Value iteration, int64_t computeThreads) {
  AccumulateTileOp add = handoff.accumulate;
  ImplicitLocOpBuilder b(add.getLoc(), add);
  Value threads = handoffThreads(b, computeThreads);
  Value writer = writerOf(b, iteration);
  Value previous = writerOf(
      b, arith::AddIOp::create(
             b, iteration, arith::ConstantIndexOp::create(b, kDqWriters - 1)));
  syncOn(b, writtenBarrier(b, previous), threads);
  StageAccumulatorOp::create(b, add.getValue(), handoff.staged,
                             /*transposed=*/true, /*swizzled=*/true);
  MLIRContext *context = b.getContext();
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(context, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
  NVVM::BarrierArriveOp::create(b, stagedBarrier(b, writer), threads);
  handoff.signal.erase();
  add.erase();
  handoff.wait.erase();
}

/// The producer warpgroup: warp w walks the tiles for the streams of
/// `walkers[w]`, its first lane for tiles (TMA), all its lanes for rows
/// (cp.async); with a fused dQ the last warp is its writer. Each walker
/// then holds few streams' indices and barriers: one thread walking for all
/// four spilled at the producer's 24 registers (24 bytes, head_dim 128; two
/// walkers, tiles and rows, 64). One switch on the warp picks the walker, so
/// no walker keeps the warp index live (a chain of ifs kept it in two
/// registers across the walkers and spilled them).
LogicalResult
buildProducer(ImplicitLocOpBuilder &b, scf::IfOp roles, int64_t computeThreads,
              TileLoops loops,
              ArrayRef<SmallVector<const RingedStream *>> walkerStreams,
              const std::optional<DqHandoff> &handoff, StringRef pass) {
  Value producerThread =
      arith::SubIOp::create(b, gpu::ThreadIdOp::create(b, gpu::Dimension::x),
                            arith::ConstantIndexOp::create(b, computeThreads));
  Value warp = arith::DivUIOp::create(
      b, producerThread, arith::ConstantIndexOp::create(b, kThreadsPerWarp));
  int64_t roleCount = walkerStreams.size() + (handoff ? kDqWriters : 0);
  auto walkers = scf::IndexSwitchOp::create(
      b, TypeRange(), warp, llvm::to_vector(llvm::seq<int64_t>(0, roleCount)),
      roleCount);
  auto emptyBlock = [&](Region &region) {
    b.setInsertionPointToEnd(&region.emplaceBlock());
    b.setInsertionPoint(scf::YieldOp::create(b));
  };
  OpBuilder::InsertionGuard guard(b);
  emptyBlock(walkers.getDefaultRegion());
  for (auto [streams, region] :
       llvm::zip_first(walkerStreams, walkers.getCaseRegions())) {
    emptyBlock(region);
    if (!streams.front()->rows) {
      Value lane = gpu::LaneIdOp::create(b, /*upperBound=*/nullptr);
      Value isFirstLane =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                arith::ConstantIndexOp::create(b, 0));
      auto firstLane =
          scf::IfOp::create(b, isFirstLane, /*withElseRegion=*/false);
      b.setInsertionPointToStart(firstLane.thenBlock());
    }
    if (failed(produceEveryTile(b, roles, loops, streams, pass)))
      return failure();
  }
  if (!handoff)
    return success();
  for (int64_t writer = 0; writer < kDqWriters; ++writer) {
    emptyBlock(walkers.getCaseRegions()[walkerStreams.size() + writer]);
    if (failed(writeDqTiles(b, roles, loops, *handoff, computeThreads, writer,
                            pass)))
      return failure();
  }
  return success();
}

/// Rewrites the index divisions before `split` (head counts and block
/// indices, all below 2^32) as 32-bit ones. A 64-bit division is ptxas's
/// 64-bit slow path, a subroutine whose registers and quotients stayed live
/// across setmaxnreg: the producer's 24 registers spilled them.
void narrowDivisionsBefore(Operation *split) {
  IRRewriter rewriter(split->getContext());
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
           split->getBlock()->begin(), split->getIterator()))) {
    if (!isa<arith::DivUIOp, arith::RemUIOp>(op) ||
        !op.getResult(0).getType().isIndex())
      continue;
    rewriter.setInsertionPoint(&op);
    Location loc = op.getLoc();
    OperationState state(loc, op.getName(),
                         {toI32(rewriter, loc, op.getOperand(0)),
                          toI32(rewriter, loc, op.getOperand(1))},
                         {rewriter.getI32Type()});
    Value narrowed = rewriter.create(state)->getResult(0);
    rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(
        &op, rewriter.getIndexType(), narrowed);
  }
}
} // namespace

LogicalResult mlir::fa::warp_specialize::warpSpecializeKeyBlocks(
    gpu::GPUFuncOp kernel, KernelAttr entry, TileAttr config,
    int64_t computeThreads, StringRef pass) {
  if (failed(checkSplittable(kernel, entry, config, pass)))
    return failure();
  int64_t stages = config.getStageCount();

  // A producer warp each (buildProducer), or with a fused dQ one for lse
  // and delta and one for the writer.
  SmallVector<RingedStream> streams = {
      {"q", false}, {"lse", true}, {"dout", false}, {"delta", true}};
  static_assert(kProducerThreads == 4 * kThreadsPerWarp,
                "a producer warp per stream");
  for (RingedStream &stream : streams)
    if (failed(collectSlotCopies(kernel, entry, stream.name, stream.tensor,
                                 stream.buffer, stream.copies, pass)))
      return failure();
  FailureOr<TileLoops> loops = findTileLoops(kernel, streams, stages, pass);
  if (failed(loops))
    return failure();
  FailureOr<std::optional<DqHandoff>> handoff =
      findDqHandoff(kernel, entry, *loops, pass);
  if (failed(handoff))
    return failure();
  SmallVector<SmallVector<const RingedStream *>> walkerStreams;
  for (const RingedStream &stream : streams)
    walkerStreams.push_back({&stream});
  if (*handoff) {
    // Q and dO on one walker (TMA), lse and delta on another: the other two
    // warps write dQ.
    walkerStreams = {{&streams[0], &streams[2]}, {&streams[1], &streams[3]}};
  }

  // The split: at the first copy of K, before which the kernel only
  // computes indices; the copies of K and V stay the computing side's.
  BlockArgument keys = paramNamed(kernel, entry, "k");
  BlockArgument values = paramNamed(kernel, entry, "v");
  Block &body = kernel.getBody().front();
  Operation *split = nullptr, *lastKeyCopy = nullptr;
  for (Operation &op : body) {
    auto copy = dyn_cast<CopyTileAsyncOp>(op);
    if (copy && (copy.getSource() == keys || copy.getSource() == values)) {
      split = split ? split : copy.getOperation();
      lastKeyCopy = copy;
      continue;
    }
    if (!split && (!isMemoryEffectFree(&op) || op.getNumRegions() != 0))
      return emitPassError(&op, pass)
             << "expects only index computations before the key tile's "
                "copy, where the producer splits off";
  }
  if (!split)
    return emitPassError(kernel, pass)
           << "expects the key and value tiles' fa.copy_tile_async in the "
              "kernel's entry block";

  narrowDivisionsBefore(split);

  // The tensor maps of Q and dO, in the manifest as <name>_tma.
  MLIRContext *context = kernel.getContext();
  SmallVector<KernelParamAttr> params(entry.getParams());
  for (RingedStream &stream : streams) {
    if (stream.rows)
      continue;
    auto buffer = cast<MemRefType>(stream.buffer.getType());
    auto type = tensorMapType(cast<MemRefType>(stream.tensor.getType()),
                              buffer.getDimSize(1));
    unsigned index = kernel.getNumArguments();
    if (failed(kernel.insertArgument(index, type, {}, kernel.getLoc())))
      return emitPassError(kernel, pass)
             << "cannot add the tensor map of '" << stream.name << "'";
    std::string name = (stream.name + kTensorMapParamSuffix).str();
    params.push_back(KernelParamAttr::get(context, name, type));
    stream.map = kernel.getArgument(index);
  }
  // With a fused dQ, dq_accum's: the writers add the staged tile through it.
  if (*handoff) {
    DqHandoff &dq = **handoff;
    auto accum = cast<MemRefType>(dq.accumulate.getAccum().getType());
    auto type = tensorMapType(
        accum, cast<MemRefType>(dq.staged.getType()).getDimSize(0));
    unsigned index = kernel.getNumArguments();
    if (failed(kernel.insertArgument(index, type, {}, kernel.getLoc())))
      return emitPassError(kernel, pass)
             << "cannot add the tensor map of 'dq_accum'";
    params.push_back(KernelParamAttr::get(
        context, (kDqAccumParam + kTensorMapParamSuffix).str(), type));
    dq.map = kernel.getArgument(index);
  }

  // Rings over the existing buffers, before the split (every thread).
  ImplicitLocOpBuilder b(kernel.getLoc(), split);
  for (RingedStream &stream : streams) {
    auto buffer = cast<MemRefType>(stream.buffer.getType());
    auto tile =
        MemRefType::get(buffer.getShape().drop_front(), buffer.getElementType(),
                        MemRefLayoutAttrInterface(), buffer.getMemorySpace());
    stream.ring =
        RingCreateOp::create(b, RingType::get(context, stages, tile),
                             stream.buffer, computeThreads / kThreadsPerWarp)
            .getRing();
  }

  // The computing side: reads the rings, one wait (for K and V).
  Value iteration = consumeFromRings(b, *loops, streams);
  kernel.walk([](WaitTilesOp wait) { wait.erase(); });
  b.setInsertionPointAfter(lastKeyCopy);
  WaitTilesOp::create(b);

  // The split: producer threads after the computing ones, which take all
  // the registers setmaxnreg can give (240: 128 keys x 64 queries at
  // head_dim 128 spilled 12 bytes at 232). The walkers fit in 24 with their
  // row positions (AsyncRing.cpp), the divisions above and the loops
  // 32-bit. A dQ writer needs more (kDqWriterRegisters).
  scf::IfOp roles = splitByRole(b, split, computeThreads,
                                *handoff ? kDqWriterRegisters : kRegisters);
  b.setInsertionPoint(roles.thenBlock()->getTerminator());
  if (failed(buildProducer(b, roles, computeThreads, *loops, walkerStreams,
                           *handoff, pass)))
    return failure();
  if (*handoff)
    stageDqTiles(**handoff, iteration, computeThreads);
  // The producer has taken the copies' coordinates: they go.
  for (RingedStream &stream : streams) {
    for (Operation *copy : stream.copies) {
      auto slot = copyEnds(copy)->second.getDefiningOp<memref::SubViewOp>();
      copy->erase();
      if (slot && slot.use_empty())
        slot.erase();
    }
  }

  // The computing side's loops on 32-bit counters too (after the producer
  // has cloned their bounds).
  narrowInductionVariable(loops->tiles);
  if (loops->heads)
    narrowInductionVariable(loops->heads);

  int64_t threads = computeThreads + kProducerThreads;
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  kernel->setAttr(kProducerThreadsAttr, b.getI64IntegerAttr(kProducerThreads));
  setKernelEntry(kernel,
                 KernelAttr::get(context, entry.getOp(), entry.getDtype(),
                                 entry.getHeadDim(), entry.getCausal(),
                                 entry.getScale(), entry.getConfig(),
                                 {threads, 1, 1}, entry.getGrid(), params,
                                 entry.getDeltaKernel(), entry.getDkdvKernel(),
                                 entry.getParamsKernel(),
                                 entry.getDsinksKernel(), entry.getVariant()));
  return success();
}
