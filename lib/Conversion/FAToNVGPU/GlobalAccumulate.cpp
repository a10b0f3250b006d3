//===- GlobalAccumulate.cpp - Ordered accumulation into global memory -----===//
//
// fa.accumulate_tile adds each lane's share of a tile (TileLayout.h) into an
// f32 workspace in global memory; fa.ordered_wait and fa.ordered_signal make
// the blocks that add into one workspace tile take turns through an i32
// counter, so that every element's f32 sum is formed in the same order on
// every run. The protocol is CUTLASS's generic barrier (barrier.h:
// GenericBarrier::wait_eq and arrive_inc), which FlashAttention-3's
// deterministic backward uses for its dQ.
//
// Why the turn order carries over to the workspace (PTX ISA, memory
// consistency model). Block A adds (relaxed gpu-scope red/atom) or stores
// (weak st.global) its tile, then fa.ordered_signal:
//   1. bar.sync: every thread of A is done, and its accesses precede thread
//      0's next ones in causality order (the barrier synchronises the CTA);
//   2. thread 0: fence.acq_rel.gpu, then a relaxed gpu-scope atomic add of 1
//      to the counter: a release pattern, and cumulative, so it releases
//      everything ordered before it, the other threads' accesses included.
// Block B, whose turn is next, in fa.ordered_wait:
//   3. thread 0 reads the counter with ld.acquire.gpu until it sees A's
//      increment: A's release synchronises with this acquire;
//   4. bar.sync: B's other threads are ordered after thread 0's acquire.
// So A's accesses to the workspace precede B's, and B's adds apply to A's
// sums. The release is an explicit fence plus a relaxed atomic because
// LLVM 22's NVPTX backend prints `atomicrmw add ... release` as a plain
// (relaxed) atom.global.add, without the fence (checked with llc-22 for
// sm_90a); the fence is also CUTLASS's form of it (red_release).
//
// Atomics and the counter go through LLVM ops on a global pointer: the
// memref dialect's atomic_rmw is an acq_rel read-modify-write at system
// scope, and memref has no acquire load.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"

#include "fa/Target/Chips.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// NVPTX's global address space.
constexpr unsigned kGlobalAddressSpace = 1;
/// The synchronisation scope of every atomic here: the GPU (PTX .gpu), as
/// the blocks that share a workspace run on one device.
constexpr StringLiteral kDeviceScope = "device";
/// The first PTX ISA version and SM with red.global.add.v2.f32.
constexpr int64_t kVectorReductionPtx = 81;
constexpr int64_t kVectorReductionSm = 90;

/// A memref in global memory as LLVM addresses it: a global pointer to its
/// buffer, and its offset and strides (in elements).
struct GlobalView {
  Value base;
  Value offset;
  SmallVector<Value> strides;
  Type element;
};

GlobalView globalViewOf(ImplicitLocOpBuilder &b, Value memref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, memref);
  Value address = arith::IndexCastUIOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, memref));
  // The kernel's buffers are generic pointers to global memory: cvta.to.global
  // (an addrspacecast) makes the accesses .global.
  Value generic = LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext()), address);
  Value global = LLVM::AddrSpaceCastOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace),
      generic);
  return {global, metadata.getOffset(),
          SmallVector<Value>(metadata.getStrides()),
          cast<MemRefType>(memref.getType()).getElementType()};
}

/// The global address of `view[indices]`.
Value elementAddress(ImplicitLocOpBuilder &b, const GlobalView &view,
                     ValueRange indices) {
  Value linear = view.offset;
  for (auto [index, stride] : llvm::zip_equal(indices, view.strides))
    linear = arith::AddIOp::create(b, linear,
                                   arith::MulIOp::create(b, index, stride));
  Value linear64 = arith::IndexCastOp::create(b, b.getI64Type(), linear);
  return LLVM::GEPOp::create(b, view.base.getType(), view.element, view.base,
                             ValueRange{linear64});
}

/// Where `id` (a thread or lane index) is 0, `body` runs; the others skip it.
void whereZero(ImplicitLocOpBuilder &b, Value id, function_ref<void()> body) {
  Value isFirst =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, id, index(b, 0));
  auto ifOp = scf::IfOp::create(b, isFirst, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

/// Where the turn's one thread runs `body`: thread 0 of the block, or with
/// `warp` lane 0 of the warp.
void onTurnThread(ImplicitLocOpBuilder &b, bool warp,
                  function_ref<void()> body) {
  whereZero(b,
            warp ? Value(gpu::LaneIdOp::create(b, /*upperBound=*/nullptr))
                 : Value(gpu::ThreadIdOp::create(b, gpu::Dimension::x)),
            body);
}

/// The turn's barrier: the block's, or with `warp` bar.warp.sync over the
/// whole warp, which orders the lanes' memory accesses as the block barrier
/// orders the block's.
void syncTurn(ImplicitLocOpBuilder &b, bool warp) {
  if (warp)
    NVVM::SyncWarpOp::create(b, arith::ConstantIntOp::create(b, -1, 32));
  else
    gpu::BarrierOp::create(b);
}

/// How fa.accumulate_tile writes the workspace: adds, or (the first
/// contributor of an `overwrite`) plain stores.
enum class TileUpdate { Add, Store };

/// `update(Store)` where `first` (an i1 the same for every thread) holds,
/// else `update(Add)`; always adds without `first`.
void storeFirstElseAdd(ImplicitLocOpBuilder &b, Value first,
                       function_ref<void(TileUpdate)> update) {
  if (!first)
    return update(TileUpdate::Add);
  auto ifOp = scf::IfOp::create(b, first, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  update(TileUpdate::Store);
  b.setInsertionPointToStart(ifOp.elseBlock());
  update(TileUpdate::Add);
}

/// One f32 added at `address`: an atomicrmw fadd whose result is unused,
/// relaxed at gpu scope (atom.global.add.f32, which ptxas turns into a
/// reduction since nothing reads the result).
void addScalar(ImplicitLocOpBuilder &b, Value address, Value value) {
  LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::fadd, address, value,
                            LLVM::AtomicOrdering::monotonic, kDeviceScope,
                            /*alignment=*/4);
}

/// Two adjacent f32 added at `address` (8-byte aligned) in one
/// red.global.add.v2.f32. Inline PTX: MLIR 22's NVVM dialect has no
/// reduction op, and LLVM 22 expands an atomicrmw fadd of <2 x float> into a
/// compare-and-swap loop.
void addPairAsVector(ImplicitLocOpBuilder &b, Value address, Value pair) {
  Value first = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0});
  Value second = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{1});
  LLVM::InlineAsmOp::create(
      b, /*res=*/Type(), ValueRange{address, first, second},
      "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f,~{memory}",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

/// The lowering of one fa.accumulate_tile on this lane's share.
class TileAccumulation {
public:
  TileAccumulation(ImplicitLocOpBuilder &b, AccumulateTileOp op,
                   AccumulateTileOp::Adaptor adaptor, bool vectorReductions)
      : b(b), adaptor(adaptor), vectorReductions(vectorReductions),
        share(adaptor.getValue()),
        columns(op.getValue().getType().getDimSize(1)),
        rowBlocks(rowBlocksOf(share.getType(), columns)),
        lane(laneOf(b, rowBlocks)), accum(globalViewOf(b, adaptor.getAccum())),
        seq(memref::DimOp::create(b, adaptor.getAccum(), 2)) {}

  /// value[i, j] into accum[batch, head, row + i, j]: the lane's two
  /// adjacent columns of a row are adjacent in memory, one 8-byte access.
  void rowsDown(TileUpdate update) {
    for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
      int64_t m = rowSlot / 2, h = rowSlot % 2;
      Value position = laneRow(b, lane, adaptor.getRow(), m, h);
      ifInside(position, [&] {
        for (int64_t n = 0; n < blocksPerRow(); ++n) {
          Value column = arith::AddIOp::create(b, lane.pairColumn,
                                               index(b, kColsPerBlock * n));
          Value address =
              elementAddress(b, accum,
                             ValueRange{adaptor.getBatch(), adaptor.getHead(),
                                        position, column});
          updatePair(update, address, pairOf(m, h, n));
        }
      });
    }
  }

  /// value[i, j] into accum[batch, head, row + j, i] (the tile is head_dim
  /// down, rows across): a lane's two adjacent columns are two rows of the
  /// workspace, so one access per element, and the bound is per column.
  void rowsAcross(TileUpdate update) {
    for (int64_t n = 0; n < blocksPerRow(); ++n) {
      for (int64_t e = 0; e < 2; ++e) {
        Value position = arith::AddIOp::create(
            b, adaptor.getRow(),
            arith::AddIOp::create(b, lane.pairColumn,
                                  index(b, kColsPerBlock * n + e)));
        ifInside(position, [&] {
          for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
            int64_t m = rowSlot / 2, h = rowSlot % 2;
            Value headColumn = laneRow(b, lane, index(b, 0), m, h);
            Value address =
                elementAddress(b, accum,
                               ValueRange{adaptor.getBatch(), adaptor.getHead(),
                                          position, headColumn});
            Value element = vector::ExtractOp::create(
                b, share, ArrayRef<int64_t>{m * blocksPerRow() + n, 2 * h + e});
            updateScalar(update, address, element);
          }
        });
      }
    }
  }

private:
  int64_t blocksPerRow() const { return columns / kColsPerBlock; }

  /// The lane's pair (columns 8n + 2(l%4) + {0, 1}) of row block m, half h.
  Value pairOf(int64_t m, int64_t h, int64_t n) {
    return vector::ExtractStridedSliceOp::create(
        b,
        vector::ExtractOp::create(b, share,
                                  ArrayRef<int64_t>{m * blocksPerRow() + n}),
        ArrayRef<int64_t>{2 * h}, ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
  }

  /// `body` only where `position` is a row of the workspace.
  void ifInside(Value position, function_ref<void()> body) {
    Value inside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, seq);
    auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }

  void updateScalar(TileUpdate update, Value address, Value value) {
    if (update == TileUpdate::Store)
      LLVM::StoreOp::create(b, value, address, /*alignment=*/4);
    else
      addScalar(b, address, value);
  }

  void updatePair(TileUpdate update, Value address, Value pair) {
    if (update == TileUpdate::Store) {
      LLVM::StoreOp::create(b, pair, address, /*alignment=*/8);
      return;
    }
    if (vectorReductions) {
      addPairAsVector(b, address, pair);
      return;
    }
    // Without vector reductions (before sm_90 or PTX 8.1), one add each.
    Value next = LLVM::GEPOp::create(b, address.getType(), accum.element,
                                     address, ArrayRef<LLVM::GEPArg>{1});
    Value addresses[] = {address, next};
    for (int64_t e = 0; e < 2; ++e)
      addScalar(b, addresses[e],
                vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{e}));
  }

  ImplicitLocOpBuilder &b;
  AccumulateTileOp::Adaptor adaptor;
  bool vectorReductions;
  Value share;
  int64_t columns, rowBlocks;
  Lane lane;
  GlobalView accum;
  Value seq;
};

/// Per-element (or per-pair) atomic adds of the lane's share, stores where
/// `overwrite` says this block comes first; rows past the workspace's end
/// skipped.
struct ConvertAccumulateTile : KernelPattern<AccumulateTileOp> {
  using KernelPattern::KernelPattern;

  LogicalResult
  matchAndRewrite(AccumulateTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A tile whose rows are not the kernel's keeps its type: it has no
    // lane distribution to add from.
    if (adaptor.getValue().getType() == op.getValue().getType())
      return op.emitOpError()
             << "expects value rows (" << op.getValue().getType().getDimSize(0)
             << ") to be the kernel's block rows (the accumulator layout)";
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileAccumulation accumulation(b, op, adaptor, options.vectorReductions);
    auto accumulate = [&](TileUpdate update) {
      if (op.getTransposed())
        accumulation.rowsAcross(update);
      else
        accumulation.rowsDown(update);
    };
    // %first is uniform over the block: the branch does not diverge.
    storeFirstElseAdd(b, adaptor.getFirst(), accumulate);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The address of counters[batch, head, tile] of an ordered wait or signal.
template <typename Adaptor>
Value counterAddress(ImplicitLocOpBuilder &b, Adaptor adaptor) {
  GlobalView counters = globalViewOf(b, adaptor.getCounters());
  return elementAddress(
      b, counters,
      ValueRange{adaptor.getBatch(), adaptor.getHead(), adaptor.getTile()});
}

/// Thread 0 spins on an acquire load of the counter, then the block barrier.
struct ConvertOrderedWait : OpConversionPattern<OrderedWaitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OrderedWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value expected = adaptor.getExpected();
    if (expected.getType().isIndex())
      expected = arith::IndexCastOp::create(b, b.getI32Type(), expected);
    onTurnThread(b, op.getWarp(), [&] {
      Value address = counterAddress(b, adaptor);
      auto spin = scf::WhileOp::create(b, TypeRange{}, ValueRange{});
      OpBuilder::InsertionGuard guard(b);
      b.createBlock(&spin.getBefore());
      Value seen = LLVM::LoadOp::create(
          b, b.getI32Type(), address, /*alignment=*/4, /*isVolatile=*/false,
          /*isNonTemporal=*/false, /*isInvariant=*/false,
          /*isInvariantGroup=*/false, LLVM::AtomicOrdering::acquire,
          kDeviceScope);
      Value notYet =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ne, seen, expected);
      scf::ConditionOp::create(b, notYet, ValueRange{});
      b.createBlock(&spin.getAfter());
      scf::YieldOp::create(b);
    });
    syncTurn(b, op.getWarp());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The block barrier, then thread 0's release increment of the counter
/// (with `warp`: the warp's, then lane 0's).
struct ConvertOrderedSignal : OpConversionPattern<OrderedSignalOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OrderedSignalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    syncTurn(b, op.getWarp());
    onTurnThread(b, op.getWarp(), [&] {
      Value address = counterAddress(b, adaptor);
      // fence.acq_rel.gpu: releases the block's accesses (see the top).
      LLVM::FenceOp::create(b, LLVM::AtomicOrdering::release, kDeviceScope);
      LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, address,
                                arith::ConstantIntOp::create(b, 1, 32),
                                LLVM::AtomicOrdering::monotonic, kDeviceScope,
                                /*alignment=*/4);
    });
    rewriter.eraseOp(op);
    return success();
  }
};

LLVM::LLVMPointerType sharedPointerType(MLIRContext *context) {
  return LLVM::LLVMPointerType::get(
      context, static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
}

/// The i64 shared address `bytes` past the start of workgroup buffer
/// `buffer`.
Value sharedAddress(ImplicitLocOpBuilder &b, Value buffer, Value bytes) {
  Value address = arith::AddIOp::create(
      b, memref::ExtractAlignedPointerAsIndexOp::create(b, buffer), bytes);
  return arith::IndexCastUIOp::create(b, b.getI64Type(), address);
}

/// The shared-memory pointer `bytes` past the start of workgroup buffer
/// `buffer` (the NVVM bulk-tensor ops' source operand).
Value sharedPointer(ImplicitLocOpBuilder &b, Value buffer, int64_t bytes) {
  return LLVM::IntToPtrOp::create(b, sharedPointerType(b.getContext()),
                                  sharedAddress(b, buffer, index(b, bytes)));
}

/// Stores into a staging buffer at (row, column), each given as a lane part
/// (the same value for all of a lane's stores) plus a constant. Padded:
/// memref.store at the sums. Swizzled (panels of 128-byte rows, see the
/// op): at the shared address of the lane parts' element changed by the
/// constants: rows add (32 values a row), whole panels add, and a
/// constant's bits in the row's phase (row mod 8) and in the chunk
/// ((column mod 32) / 4) flip the swizzled chunk's, an XOR of the address's
/// bits 4 to 6 (the buffer 1024-byte aligned, as TMA's swizzle needs it).
/// That holds where lane part and constant add without carries in those
/// fields, as the accumulator layout's do: rows are the warp's first row (a
/// multiple of 16 or 32) plus l/4, with constants 8 h + 16 m; columns 2 (l
/// mod 4), with constants 8 n (+ 1 for a transposed tile's second value).
/// So a lane's 32 stores are one address, three XORs of it and immediates;
/// a position computed per distinct constant kept four to 32 addresses
/// live, and the computing warpgroups spilled.
class StagedBuffer {
public:
  StagedBuffer(ImplicitLocOpBuilder &b, Value buffer, MemRefType type,
               bool swizzled)
      : b(b), buffer(buffer), type(type), swizzled(swizzled) {}

  void store(Value value, Value rowLane, int64_t rowConst, Value colLane,
             int64_t colConst) {
    if (!swizzled) {
      Value row = arith::AddIOp::create(b, rowLane, index(b, rowConst));
      Value column = arith::AddIOp::create(b, colLane, index(b, colConst));
      storeAt(value, buffer, ValueRange{row, column});
      return;
    }
    if (!laneAddress)
      laneAddress = sharedAddressOf(swizzledOffset(rowLane, colLane));
    int64_t perChunk = chunkElems(type.getElementType());
    int64_t phase = rowConst % kSwizzleRows;
    int64_t panelColumn = colConst % kF32PerWidestSwizzle;
    int64_t chunkFlip = (panelColumn / perChunk) ^ phase;
    int64_t added = rowConst * kF32PerWidestSwizzle +
                    colConst / kF32PerWidestSwizzle * type.getDimSize(0) *
                        kF32PerWidestSwizzle +
                    panelColumn % perChunk;
    Value address = laneAddress;
    if (chunkFlip != 0)
      address = opaqueXor(address, chunkFlip * kChunkBytes);
    auto shared = sharedPointerType(b.getContext());
    Value pointer =
        LLVM::GEPOp::create(b, shared, type.getElementType(),
                            LLVM::IntToPtrOp::create(b, shared, address),
                            ArrayRef<LLVM::GEPArg>{added});
    auto vector = dyn_cast<VectorType>(value.getType());
    LLVM::StoreOp::create(b, value, pointer,
                          vector ? naturalAlignment(vector).value()
                                 : type.getElementTypeBitWidth() / 8);
  }

private:
  void storeAt(Value value, Value memref, ValueRange indices) {
    if (isa<VectorType>(value.getType()))
      vector::StoreOp::create(b, value, memref, indices);
    else
      memref::StoreOp::create(b, value, memref, indices);
  }

  /// The i64 shared address of flattened element `offset`.
  Value sharedAddressOf(Value offset) {
    return sharedAddress(
        b, buffer,
        arith::MulIOp::create(b, offset,
                              index(b, type.getElementTypeBitWidth() / 8)));
  }

  /// `address ^ bits`, opaque to LLVM (inline PTX): folded into the offset
  /// (the buffer's alignment lets it), each flipped address kept its own
  /// chain from the lane's offset, and ptxas spilled the computing
  /// warpgroups; as an XOR of the one address, it does not.
  Value opaqueXor(Value address, int64_t bits) {
    return LLVM::InlineAsmOp::create(
               b, b.getI64Type(), ValueRange{address},
               ("xor.b64 $0, $1, " + std::to_string(bits) + ";"), "=l,l",
               /*has_side_effects=*/false, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr::get(b.getContext(),
                                         LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }

  /// Element (row, column)'s offset: its panel's start, its row's in the
  /// panel, its 16-byte chunk swizzled by the row's phase, its place in the
  /// chunk.
  Value swizzledOffset(Value row, Value column) {
    int64_t perChunk = chunkElems(type.getElementType());
    auto mul = [&](Value x, int64_t c) {
      return arith::MulIOp::create(b, x, index(b, c));
    };
    auto div = [&](Value x, int64_t c) {
      return arith::DivUIOp::create(b, x, index(b, c));
    };
    auto rem = [&](Value x, int64_t c) {
      return arith::RemUIOp::create(b, x, index(b, c));
    };
    Value panelStart = mul(div(column, kF32PerWidestSwizzle),
                           type.getDimSize(0) * kF32PerWidestSwizzle);
    Value chunk = arith::XOrIOp::create(
        b, div(rem(column, kF32PerWidestSwizzle), perChunk),
        rem(row, kSwizzleRows));
    Value inPanel = arith::AddIOp::create(
        b, mul(row, kF32PerWidestSwizzle),
        arith::AddIOp::create(b, mul(chunk, perChunk), rem(column, perChunk)));
    return arith::AddIOp::create(b, panelStart, inPanel);
  }

  ImplicitLocOpBuilder &b;
  Value buffer, laneAddress;
  MemRefType type;
  bool swizzled;
};

/// Each lane's elements of the tile into the shared buffer, at [i, j] (or
/// [j, i] transposed); the buffer's rows may be padded, or swizzled.
struct ConvertStageAccumulator : KernelPattern<StageAccumulatorOp> {
  using KernelPattern::KernelPattern;

  LogicalResult
  matchAndRewrite(StageAccumulatorOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getValue().getType() == op.getValue().getType())
      return op.emitOpError()
             << "expects value rows (" << op.getValue().getType().getDimSize(0)
             << ") to be the kernel's block rows (the accumulator layout)";
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value share = adaptor.getValue();
    int64_t columns = op.getValue().getType().getDimSize(1);
    int64_t blocksPerRow = columns / kColsPerBlock;
    int64_t rowBlocks = rowBlocksOf(share.getType(), columns);
    Lane lane = laneOf(b, rowBlocks);
    StagedBuffer staged(b, adaptor.getBuffer(), op.getBuffer().getType(),
                        op.getSwizzled());
    for (int64_t m = 0; m < rowBlocks; ++m) {
      for (int64_t h = 0; h < 2; ++h) {
        // The lane's row (laneRow's), as lane part plus constant.
        int64_t row = kMmaRows * m + 8 * h;
        for (int64_t n = 0; n < blocksPerRow; ++n) {
          int64_t column = kColsPerBlock * n;
          Value block = vector::ExtractOp::create(
              b, share, ArrayRef<int64_t>{m * blocksPerRow + n});
          if (!op.getTransposed()) {
            Value pair = vector::ExtractStridedSliceOp::create(
                b, block, ArrayRef<int64_t>{2 * h}, ArrayRef<int64_t>{2},
                ArrayRef<int64_t>{1});
            staged.store(pair, lane.rowInTile, row, lane.pairColumn, column);
            continue;
          }
          // Transposed, a lane's two columns are two rows of the buffer.
          for (int64_t e = 0; e < 2; ++e) {
            Value element = vector::ExtractOp::create(
                b, block, ArrayRef<int64_t>{2 * h + e});
            staged.store(element, lane.pairColumn, column + e, lane.rowInTile,
                         row);
          }
        }
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// Before bulk transfers from a staging buffer to global memory: the
/// threads' stores to the buffer become visible to the async proxy (TMA),
/// and the TMA's global accesses come after the turn's acquire.
void fenceForBulkTransfers(ImplicitLocOpBuilder &b) {
  MLIRContext *context = b.getContext();
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(context, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKindAttr::get(context, NVVM::ProxyKind::async_global),
      NVVM::SharedSpaceAttr());
}

/// Lane 0 adds (or, first, stores) the swizzled staging buffer panel by
/// panel through the tensor map, then waits until TMA has read it. NVVM
/// ops, not nvgpu's: nvgpu has tma.async.store but no reduction, and one
/// descriptor pointer serves both here.
struct ConvertAccumulateBoxesAsync
    : OpConversionPattern<AccumulateBoxesAsyncOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AccumulateBoxesAsyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *context = b.getContext();
    fenceForBulkTransfers(b);
    MemRefType buffer = op.getBuffer().getType();
    int64_t rows = buffer.getDimSize(0);
    MemRefType box = op.getMap().getType().getTensor();
    int64_t panelColumns = box.getDimSize(3);
    int64_t panels = buffer.getDimSize(1) / panelColumns;
    // The kernel's tensor-map parameter is a pointer cast to the descriptor
    // (lowerTensorMapParams); this cast folds with that one.
    Value map = UnrealizedConversionCastOp::create(
                    b, LLVM::LLVMPointerType::get(context), adaptor.getMap())
                    .getResult(0);
    auto i32 = [&](Value value) -> Value {
      return arith::IndexCastUIOp::create(b, b.getI32Type(), value);
    };
    Value row = i32(adaptor.getRow()), head = i32(adaptor.getHead()),
          batch = i32(adaptor.getBatch());
    whereZero(b, gpu::LaneIdOp::create(b, /*upperBound=*/nullptr), [&] {
      storeFirstElseAdd(b, adaptor.getFirst(), [&](TileUpdate update) {
        for (int64_t panel = 0; panel < panels; ++panel) {
          Value source = sharedPointer(b, adaptor.getBuffer(),
                                       panel * rows * panelColumns *
                                           buffer.getElementTypeBitWidth() / 8);
          // TMA's coordinates, innermost first.
          SmallVector<Value> coordinates = {
              arith::ConstantIntOp::create(b, panel * panelColumns, 32), row,
              head, batch};
          if (update == TileUpdate::Store)
            NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
                b, map, source, coordinates, /*l2CacheHint=*/Value(),
                NVVM::TMAStoreMode::TILE, /*predicate=*/Value());
          else
            NVVM::CpAsyncBulkTensorReduceOp::create(
                b, map, source, NVVM::TMAReduxKind::ADD,
                NVVM::TMAStoreMode::TILE, coordinates,
                /*l2CacheHint=*/Value());
        }
      });
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
      NVVM::CpAsyncBulkWaitGroupOp::create(b, /*group=*/0, b.getUnitAttr());
    });
    // The other lanes go on once lane 0 has seen the buffer read.
    syncTurn(b, /*warp=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The lane's bulk groups complete, then the async-to-generic proxy fence.
struct ConvertWaitBulkAsync : OpConversionPattern<WaitBulkAsyncOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WaitBulkAsyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NVVM::CpAsyncBulkWaitGroupOp::create(b, /*group=*/0, /*read=*/nullptr);
    NVVM::FenceProxyOp::create(
        b,
        NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_global),
        NVVM::SharedSpaceAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The number after `prefix` at the start of `text` (0 if none).
int64_t numberAfter(StringRef text, StringRef prefix) {
  int64_t number = 0;
  if (text.consume_front(prefix))
    (void)text.consumeInteger(10, number);
  return number;
}
} // namespace

bool mlir::fa::hasVectorReductions(const ChipInfo &chip) {
  return numberAfter(chip.name, "sm_") >= kVectorReductionSm &&
         numberAfter(chip.ptxFeature, "+ptx") >= kVectorReductionPtx;
}

void mlir::fa::populateGlobalAccumulatePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    const FAToNVGPUPatternOptions &options) {
  MLIRContext *context = patterns.getContext();
  patterns.add<ConvertAccumulateTile, ConvertStageAccumulator>(
      converter, context, options);
  patterns.add<ConvertOrderedWait, ConvertOrderedSignal, ConvertWaitBulkAsync,
               ConvertAccumulateBoxesAsync>(converter, context);
}
