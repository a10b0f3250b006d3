//===- MemoryOps.cpp - Tile loads, stores and copies ----------------------===//
//
// Global memory to a lane's share and back, block-wide copies into swizzled
// shared tiles (synchronous or cp.async) and per-row statistics. Block-wide
// copies split a tile into 16-byte chunks, consecutive threads on consecutive
// chunks of a row, so that global accesses coalesce.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"
#include "WarpgroupMma.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// wgmma reads shared memory through the async proxy: this thread's writes
/// to shared tiles become visible to it (once everyone passed the barrier
/// that follows).
void fenceForAsyncProxy(ImplicitLocOpBuilder &b) {
  NVVM::FenceProxyOp::create(
      b,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// How the block splits a copy of a `rows x cols` shared tile into 16-byte
/// chunks: thread t copies chunks t, t + threads, ... (consecutive threads
/// take consecutive chunks of a row, so global reads coalesce).
struct ChunkedCopy {
  int64_t perChunk, chunksPerRow, chunksPerThread;
};

FailureOr<ChunkedCopy> chunkedCopy(Operation *op, MemRefType dest,
                                   int64_t numThreads) {
  int64_t perChunk = chunkElems(dest.getElementType());
  int64_t chunksPerRow = dest.getDimSize(1) / perChunk;
  int64_t chunks = dest.getDimSize(0) * chunksPerRow;
  if (chunks % numThreads != 0)
    return op->emitOpError()
           << "cannot split " << chunks << " 16-byte chunks evenly over "
           << numThreads << " threads";
  return ChunkedCopy{perChunk, chunksPerRow, chunks / numThreads};
}

/// The panels a shared-tile row is split into for wgmma, each one swizzle
/// run wide (wgmma's swizzle atoms are one run wide: 128 or 64 bytes): 1 for
/// the ldmatrix layout. head_dim 96 of f16/bf16 is three 64-byte panels:
/// wgmma reads an MN-major operand (V) through one descriptor, one swizzle
/// mode for all its columns, and 192 bytes are no whole number of 128-byte
/// atoms.
int64_t panelsOf(MemRefType tile, bool warpgroupMma) {
  if (!warpgroupMma)
    return 1;
  int64_t rowBytes = tile.getDimSize(1) * tile.getElementTypeBitWidth() / 8;
  return std::max<int64_t>(1,
                           rowBytes / (swizzleRunChunks(tile) * kChunkBytes));
}

/// (memref row, first column) of 16-byte chunk `chunk` of logical row `row`
/// of shared tile `tile`. With one panel: the same row, the chunk swizzled
/// (swizzledColumn). With P panels, the tile is stored panel after panel,
/// each rows x one run (R chunks) with the same swizzle inside: chunk c of
/// row r sits at panel row (c / R) x rows + r of the buffer, which the
/// [rows][cols] memref holds P to a row.
std::pair<Value, Value> sharedChunkPosition(ImplicitLocOpBuilder &b, Value row,
                                            Value chunk, MemRefType tile,
                                            int64_t panels) {
  if (panels == 1)
    return {row, swizzledColumn(b, row, chunk, tile)};
  int64_t rows = tile.getDimSize(0);
  int64_t run = swizzleRunChunks(tile);
  Type element = tile.getElementType();
  Value chunksPerPanel = index(b, run);
  Value swizzled =
      arith::XOrIOp::create(b, arith::RemUIOp::create(b, chunk, chunksPerPanel),
                            swizzlePhase(b, row, run));
  Value panelRow = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, arith::DivUIOp::create(b, chunk, chunksPerPanel),
                            index(b, rows)),
      row);
  Value memrefRow = arith::DivUIOp::create(b, panelRow, index(b, panels));
  Value memrefChunk = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b, arith::RemUIOp::create(b, panelRow, index(b, panels)),
          chunksPerPanel),
      swizzled);
  return {memrefRow,
          arith::MulIOp::create(b, memrefChunk, index(b, chunkElems(element)))};
}

/// Calls `copyChunk(view, viewRow, viewCol, sourceRow, sourceCol)` for each
/// chunk this thread copies: the chunk sits at (viewRow, viewCol) of `view`,
/// `tile` or a view of some of its rows, `viewCol` already swizzled; the
/// tile stored in `panels` panels (see sharedChunkPosition).
template <typename Adaptor>
void forEachChunk(
    ImplicitLocOpBuilder &b, const ChunkedCopy &copy, int64_t numThreads,
    Value tile, int64_t panels, Adaptor adaptor,
    function_ref<void(Value, Value, Value, Value, Value)> copyChunk) {
  auto tileType = cast<MemRefType>(tile.getType());
  int64_t rows = tileType.getDimSize(0);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // When the block covers whole rows per step, thread t's chunks share one
  // column and sit a constant number of rows apart: two lane values and
  // constant offsets (immediates), instead of a row and a column per chunk,
  // which stayed live wherever copies of the same shape were CSE'd.
  int64_t rowsPerStep = numThreads / copy.chunksPerRow;
  bool wholeRows = numThreads % copy.chunksPerRow == 0;
  Value firstRow = arith::DivUIOp::create(b, tid, index(b, copy.chunksPerRow));
  Value firstCol = arith::RemUIOp::create(b, tid, index(b, copy.chunksPerRow));
  // When the step is also a multiple of the swizzle period, every chunk has
  // the first one's swizzle phase: chunk i is (firstRow, one swizzled column)
  // of a view starting i steps down, whose constant offset becomes the
  // instruction's immediate. Indexing the tile at firstRow + i x step instead
  // left LLVM one 64-bit shared address per chunk, live across the loop.
  // With panels, chunk i sits step / panels memref rows further down.
  if (wholeRows && rowsPerStep % kSwizzleRows == 0 &&
      rowsPerStep % panels == 0) {
    auto [viewRow, viewCol] =
        sharedChunkPosition(b, firstRow, firstCol, tileType, panels);
    for (int64_t i = 0; i < copy.chunksPerThread; ++i) {
      int64_t rowOffset = i * rowsPerStep;
      int64_t viewOffset = rowOffset / panels;
      int64_t viewRows = panels == 1 ? rowsPerStep : rows - viewOffset;
      Value view = memref::SubViewOp::create(
          b, tile, ArrayRef<int64_t>{viewOffset, 0},
          ArrayRef<int64_t>{viewRows, tileType.getDimSize(1)},
          ArrayRef<int64_t>{1, 1});
      Value tileRow = arith::AddIOp::create(b, firstRow, index(b, rowOffset));
      copyChunk(view, viewRow, viewCol,
                arith::AddIOp::create(b, adaptor.getRow(), tileRow),
                arith::MulIOp::create(b, firstCol, index(b, copy.perChunk)));
    }
    return;
  }
  for (int64_t i = 0; i < copy.chunksPerThread; ++i) {
    Value row, chunkCol;
    if (wholeRows) {
      row = arith::AddIOp::create(b, firstRow, index(b, i * rowsPerStep));
      chunkCol = firstCol;
    } else {
      Value chunk = arith::AddIOp::create(b, tid, index(b, i * numThreads));
      row = arith::DivUIOp::create(b, chunk, index(b, copy.chunksPerRow));
      chunkCol = arith::RemUIOp::create(b, chunk, index(b, copy.chunksPerRow));
    }
    auto [tileRow, tileCol] =
        sharedChunkPosition(b, row, chunkCol, tileType, panels);
    copyChunk(tile, tileRow, tileCol,
              arith::AddIOp::create(b, adaptor.getRow(), row),
              arith::MulIOp::create(b, chunkCol, index(b, copy.perChunk)));
  }
}

/// (memref row, column) of element (`row`, `col`) of shared tile `tile`,
/// stored as fa.stage_tile stores it (see sharedChunkPosition).
std::pair<Value, Value> sharedElementPosition(ImplicitLocOpBuilder &b,
                                              Value row, Value col,
                                              MemRefType tile, int64_t panels) {
  Value perChunk = index(b, chunkElems(tile.getElementType()));
  auto [memrefRow, chunkStart] = sharedChunkPosition(
      b, row, arith::DivUIOp::create(b, col, perChunk), tile, panels);
  return {memrefRow,
          arith::AddIOp::create(b, chunkStart,
                                arith::RemUIOp::create(b, col, perChunk))};
}

/// This lane's pair of `share` in row block `m`, half `h`, 8-column block
/// `n`: entries [m blocks + n][2h, 2h + 1] (see TileLayout.h).
Value lanePair(ImplicitLocOpBuilder &b, Value share, int64_t blocks, int64_t m,
               int64_t h, int64_t n) {
  return vector::ExtractStridedSliceOp::create(
      b, vector::ExtractOp::create(b, share, ArrayRef<int64_t>{m * blocks + n}),
      ArrayRef<int64_t>{2 * h}, ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
}

/// Stores this lane's `pair` of row block `m`, half `h`, 8-column block `n`
/// (tile row rowInTile + 16m + 8h, columns 8n + pairColumn + {0, 1}) into
/// shared tile `tile` (of the register tile's shape) where fa.stage_tile
/// puts those elements, the tile stored in `panels` panels. A pair never
/// straddles a 16-byte chunk: its first column is even.
void storePairShared(ImplicitLocOpBuilder &b, Value pair, const Lane &lane,
                     int64_t m, int64_t h, int64_t n, Value tile,
                     int64_t panels) {
  auto tileType = cast<MemRefType>(tile.getType());
  int64_t rowConst = kMmaRows * m + 8 * h;
  if (panels > 1) {
    auto [row, col] = sharedElementPosition(
        b, arith::AddIOp::create(b, lane.rowInTile, index(b, rowConst)),
        arith::AddIOp::create(b, lane.pairColumn, index(b, kColsPerBlock * n)),
        tileType, panels);
    alignedStore(b, pair, tile, ValueRange{row, col});
    return;
  }
  // Lane part + constant, as for ldmatrix: 8 address registers instead of
  // one per pair. An 8-column block is one chunk of f16/bf16 but two of
  // f32, the lane's pair in the second one when pairColumn >= 4.
  int64_t perChunk = chunkElems(tileType.getElementType());
  int64_t chunksPerBlock = kColsPerBlock / perChunk;
  Value chunkLane, inChunk = lane.pairColumn;
  if (chunksPerBlock > 1) {
    chunkLane = arith::DivUIOp::create(b, lane.pairColumn, index(b, perChunk));
    inChunk = arith::RemUIOp::create(b, lane.pairColumn, index(b, perChunk));
  }
  auto [row, chunkStart] = splitSwizzledAddress(
      b, lane.rowInTile, rowConst, chunkLane, chunksPerBlock * n, tileType);
  alignedStore(b, pair, tile,
               ValueRange{row, arith::AddIOp::create(b, chunkStart, inChunk)});
}

/// Stores this lane's elements transposed into shared tile `dest` (C x R
/// for an R x C register tile): element (i, j) to row j, column i, where
/// fa.stage_tile puts them. One element per store: the two elements of a
/// lane's pair, (i, j) and (i, j + 1), land in two different rows. For
/// f32; 16-bit tiles take stmatrix (storeTransposedMatrices).
void storeTransposedElements(ImplicitLocOpBuilder &b, Value share,
                             const Lane &lane, int64_t rowBlocks,
                             int64_t blocks, Value dest, int64_t panels) {
  auto destType = cast<MemRefType>(dest.getType());
  for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
    int64_t m = rowSlot / 2, h = rowSlot % 2;
    Value tileRow = laneRow(b, lane, index(b, 0), m, h);
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t e = 0; e < 2; ++e) {
        Value tileCol = arith::AddIOp::create(b, lane.pairColumn,
                                              index(b, kColsPerBlock * n + e));
        auto [row, col] =
            sharedElementPosition(b, tileCol, tileRow, destType, panels);
        Value element = vector::ExtractOp::create(
            b, share, ArrayRef<int64_t>{m * blocks + n, 2 * h + e});
        memref::StoreOp::create(b, element, dest, ValueRange{row, col});
      }
  }
}

/// The shared-window address of element (`row`, `col`) of memref `tile`
/// (a buffer or a slot of one), as stmatrix takes it.
Value sharedElementAddress(ImplicitLocOpBuilder &b, Value tile, Value row,
                           Value col) {
  auto type = cast<MemRefType>(tile.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tile);
  Value element = arith::AddIOp::create(
      b, metadata.getOffset(),
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, row, metadata.getStrides()[0]), col));
  Value address = arith::AddIOp::create(
      b, memref::ExtractAlignedPointerAsIndexOp::create(b, tile),
      arith::MulIOp::create(b, element,
                            index(b, type.getElementTypeBitWidth() / 8)));
  Value address64 = arith::IndexCastUIOp::create(b, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b,
      LLVM::LLVMPointerType::get(
          b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared)),
      address64);
}

/// The 16-bit elements of a lane's pair as the one 32-bit register of a
/// matrix fragment.
Value pairRegister(ImplicitLocOpBuilder &b, Value pair) {
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, int64_t{0});
}

/// Stores a 16-bit tile transposed into shared tile `dest` (C x R for an
/// R x C register tile) with stmatrix .trans: a lane's pairs of row block
/// m, half h, 8-column block n are exactly the fragment of the warp's 8 x 8
/// block (rows 16m + 8h + [0, 8) of its rows, columns 8n + [0, 8)), and
/// .trans writes row r of the stored matrix as column r of the block,
/// 16 bytes: tile rows 16m + 8h + [0, 8) are one chunk of dest row 8n + r.
/// Each x4 stores the blocks (h, n) = (0, n0), (1, n0), (0, n0 + 1),
/// (1, n0 + 1); lane l gives the address of row l % 8 of block l / 8, its
/// chunk placed (swizzle, panels) as fa.stage_tile places it.
void storeTransposedMatrices(ImplicitLocOpBuilder &b, Value share,
                             const Lane &lane, int64_t rowBlocks,
                             int64_t blocks, Value dest, int64_t panels) {
  auto destType = cast<MemRefType>(dest.getType());
  Value matrix = arith::DivUIOp::create(b, lane.laneId, index(b, 8));
  Value matrixRow = arith::RemUIOp::create(b, lane.laneId, index(b, 8));
  // Block l / 8 is half (l / 8) % 2 of column block n0 + l / 16.
  Value laneHalf = arith::RemUIOp::create(b, matrix, index(b, 2));
  Value laneDestRow = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, arith::DivUIOp::create(b, matrix, index(b, 2)),
                            index(b, 8)),
      matrixRow);
  // The lane's chunk of dest: its block's first tile row / 8.
  Value laneChunk = arith::AddIOp::create(
      b, arith::DivUIOp::create(b, lane.warpRow0, index(b, 8)), laneHalf);
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (int64_t n0 = 0; n0 < blocks; n0 += 2) {
      auto [row, col] = sharedChunkPosition(
          b,
          arith::AddIOp::create(b, laneDestRow, index(b, kColsPerBlock * n0)),
          arith::AddIOp::create(b, laneChunk, index(b, 2 * m)), destType,
          panels);
      SmallVector<Value, 4> fragments;
      for (int64_t k = 0; k < 4; ++k)
        fragments.push_back(
            pairRegister(b, lanePair(b, share, blocks, m, k % 2, n0 + k / 2)));
      NVVM::StMatrixOp::create(
          b, sharedElementAddress(b, dest, row, col), fragments,
          NVVM::MMALayoutAttr::get(b.getContext(), NVVM::MMALayout::col),
          NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
          NVVM::LdStMatrixEltTypeAttr::get(b.getContext(),
                                           NVVM::LdStMatrixEltType::B16));
    }
}

/// Stores each lane's pairs: into rows of the global slice (bounds-checked)
/// or into the swizzled staging tile (tile-relative rows, all of them).
void storePairs(ImplicitLocOpBuilder &b, StoreTileOp op,
                StoreTileOp::Adaptor adaptor, Value target, bool toStaging) {
  Value value = adaptor.getValue();
  int64_t rowBlocks =
      rowBlocksOf(value.getType(), op.getValue().getType().getDimSize(1));
  int64_t blocks = cast<VectorType>(value.getType()).getDimSize(0) / rowBlocks;
  Lane lane = laneOf(b, rowBlocks);
  Value seq = toStaging ? Value() : memref::DimOp::create(b, target, 2);
  Value firstRow = toStaging ? index(b, 0) : adaptor.getRow();
  for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
    int64_t m = rowSlot / 2, h = rowSlot % 2;
    Value row = laneRow(b, lane, firstRow, m, h);
    OpBuilder::InsertionGuard guard(b);
    if (!toStaging) {
      Value inside =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seq);
      auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
    }
    for (int64_t n = 0; n < blocks; ++n) {
      Value pair = lanePair(b, value, blocks, m, h, n);
      if (toStaging) {
        storePairShared(b, pair, lane, m, h, n, target, /*panels=*/1);
        continue;
      }
      Value col = arith::AddIOp::create(b, lane.pairColumn,
                                        index(b, kColsPerBlock * n));
      alignedStore(b, pair, target,
                   ValueRange{adaptor.getBatch(), adaptor.getHead(), row, col});
    }
  }
}

/// f32 `source[batch, head, index]`, or 0 when `index` >= seq (the index is
/// clamped so the load stays inside the buffer).
Value loadStat(ImplicitLocOpBuilder &b, Value source, Value batch, Value head,
               Value position) {
  Value seq = memref::DimOp::create(b, source, 2);
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, seq);
  Value last = arith::SubIOp::create(b, seq, index(b, 1));
  Value value = memref::LoadOp::create(
      b, source,
      ValueRange{batch, head, arith::MinUIOp::create(b, position, last)});
  return arith::SelectOp::create(
      b, inside, value, arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f)));
}

/// Calls `copyValue(i)` for each value `i` of a copy of `count` per-row
/// values this thread makes: thread t copies t, t + threads, ...
void forEachRowValue(ImplicitLocOpBuilder &b, int64_t count, int64_t numThreads,
                     function_ref<void(Value)> copyValue) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  for (int64_t first = 0; first < count; first += numThreads) {
    Value i = arith::AddIOp::create(b, tid, index(b, first));
    if (first + numThreads <= count) {
      copyValue(i);
      continue;
    }
    // The last step: only the threads with a value left.
    Value has =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, index(b, count));
    auto ifOp = scf::IfOp::create(b, has, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    copyValue(i);
  }
}

/// A tile whose every row holds the same values, as this lane's entries,
/// from the lane's column pair of each 8-column block (`pairs`, in block
/// order): entries 2h + e of a block are the pair, for rows l/4 and l/4 + 8,
/// in every one of the `rowBlocks` row blocks.
Value broadcastColumnPairs(ImplicitLocOpBuilder &b, VectorType type,
                           int64_t rowBlocks,
                           ArrayRef<std::pair<Value, Value>> pairs) {
  SmallVector<Value> values;
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (auto [first, second] : pairs)
      llvm::append_range(values, ArrayRef<Value>{first, second, first, second});
  return vector::FromElementsOp::create(b, type, values);
}
} // namespace

LogicalResult
ConvertLoadTile::matchAndRewrite(LoadTileOp op, OpAdaptor adaptor,
                                 ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  auto type = cast<VectorType>(
      getTypeConverter()->convertType(op.getResult().getType()));
  int64_t rowBlocks = rowBlocksOf(type, op.getResult().getType().getDimSize(1));
  int64_t blocks = type.getDimSize(0) / rowBlocks;
  Lane lane = laneOf(b, rowBlocks);
  Value result = splatConstant(b, type, 0.0);
  for (int64_t m = 0; m < rowBlocks; ++m) {
    Value rows[2] = {laneRow(b, lane, adaptor.getRow(), m, 0),
                     laneRow(b, lane, adaptor.getRow(), m, 1)};
    for (int64_t n = 0; n < blocks; ++n) {
      Value col = arith::AddIOp::create(b, lane.pairColumn,
                                        index(b, kColsPerBlock * n));
      Value pairs[2];
      for (int h = 0; h < 2; ++h)
        pairs[h] = loadRowSegment(b, adaptor.getSource(), adaptor.getBatch(),
                                  adaptor.getHead(), rows[h], col, 2);
      Value block = vector::ShuffleOp::create(b, pairs[0], pairs[1],
                                              ArrayRef<int64_t>{0, 1, 2, 3});
      result = vector::InsertOp::create(b, block, result,
                                        ArrayRef<int64_t>{m * blocks + n});
    }
  }
  rewriter.replaceOp(op, result);
  return success();
}

LogicalResult
ConvertStageTile::matchAndRewrite(StageTileOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  MemRefType dest = op.getDest().getType();
  FailureOr<ChunkedCopy> copy = chunkedCopy(op, dest, options.numThreads);
  if (failed(copy))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  gpu::BarrierOp::create(b);
  forEachChunk(
      b, *copy, options.numThreads, adaptor.getDest(),
      panelsOf(dest, options.warpgroupMma), adaptor,
      [&](Value view, Value row, Value col, Value srcRow, Value srcCol) {
        Value data =
            loadRowSegment(b, adaptor.getSource(), adaptor.getBatch(),
                           adaptor.getHead(), srcRow, srcCol, copy->perChunk);
        vector::StoreOp::create(b, data, view, ValueRange{row, col});
      });
  if (options.warpgroupMma)
    fenceForAsyncProxy(b);
  gpu::BarrierOp::create(b);
  rewriter.eraseOp(op);
  return success();
}

LogicalResult ConvertCopyTileAsync::matchAndRewrite(
    CopyTileAsyncOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  MemRefType dest = op.getDest().getType();
  FailureOr<ChunkedCopy> copy = chunkedCopy(op, dest, options.numThreads);
  if (failed(copy))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value source = adaptor.getSource();
  Value seq = memref::DimOp::create(b, source, 2);
  Value lastRow = arith::SubIOp::create(b, seq, index(b, 1));
  Value full = index(b, copy->perChunk), none = index(b, 0);
  forEachChunk(
      b, *copy, options.numThreads, adaptor.getDest(),
      panelsOf(dest, options.warpgroupMma), adaptor,
      [&](Value view, Value row, Value col, Value srcRow, Value srcCol) {
        Value valid =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, srcRow, seq);
        nvgpu::DeviceAsyncCopyOp::create(
            b, view, ValueRange{row, col}, source,
            ValueRange{adaptor.getBatch(), adaptor.getHead(),
                       arith::MinUIOp::create(b, srcRow, lastRow), srcCol},
            b.getIndexAttr(copy->perChunk),
            arith::SelectOp::create(b, valid, full, none), b.getUnitAttr());
      });
  NVVM::CpAsyncCommitGroupOp::create(b);
  rewriter.eraseOp(op);
  return success();
}

LogicalResult
ConvertStageRows::matchAndRewrite(StageRowsOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  gpu::BarrierOp::create(b);
  forEachRowValue(b, op.getDest().getType().getDimSize(0), options.numThreads,
                  [&](Value i) {
                    Value value =
                        loadStat(b, adaptor.getSource(), adaptor.getBatch(),
                                 adaptor.getHead(),
                                 arith::AddIOp::create(b, adaptor.getRow(), i));
                    memref::StoreOp::create(b, value, adaptor.getDest(), i);
                  });
  gpu::BarrierOp::create(b);
  rewriter.eraseOp(op);
  return success();
}

LogicalResult ConvertCopyRowsAsync::matchAndRewrite(
    CopyRowsAsyncOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value source = adaptor.getSource();
  Value seq = memref::DimOp::create(b, source, 2);
  Value last = arith::SubIOp::create(b, seq, index(b, 1));
  Value full = index(b, 1), none = index(b, 0);
  forEachRowValue(
      b, op.getDest().getType().getDimSize(0), options.numThreads,
      [&](Value i) {
        Value position = arith::AddIOp::create(b, adaptor.getRow(), i);
        Value valid =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, seq);
        // 4 bytes: cp.async.ca (only 16-byte copies may bypass L1).
        nvgpu::DeviceAsyncCopyOp::create(
            b, adaptor.getDest(), ValueRange{i}, source,
            ValueRange{adaptor.getBatch(), adaptor.getHead(),
                       arith::MinUIOp::create(b, position, last)},
            b.getIndexAttr(1), arith::SelectOp::create(b, valid, full, none),
            /*bypassL1=*/UnitAttr());
      });
  NVVM::CpAsyncCommitGroupOp::create(b);
  rewriter.eraseOp(op);
  return success();
}

LogicalResult
ConvertWaitTiles::matchAndRewrite(WaitTilesOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  if (options.warpgroupMma)
    fenceForAsyncProxy(b);
  rewriter.replaceOpWithNewOp<gpu::BarrierOp>(op);
  return success();
}

LogicalResult
ConvertStoreTile::matchAndRewrite(StoreTileOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value staging = adaptor.getStaging();
  if (!staging) {
    storePairs(b, op, adaptor, adaptor.getDest(), /*toStaging=*/false);
    rewriter.eraseOp(op);
    return success();
  }
  auto stagingType = cast<MemRefType>(staging.getType());
  FailureOr<ChunkedCopy> copy =
      chunkedCopy(op, stagingType, options.numThreads);
  if (failed(copy))
    return failure();
  // Every warp is done with the staging tile's previous contents (the
  // query tile) before any lane overwrites it, and every pair has landed
  // before the chunks are read.
  gpu::BarrierOp::create(b);
  storePairs(b, op, adaptor, staging, /*toStaging=*/true);
  gpu::BarrierOp::create(b);
  Value dest = adaptor.getDest();
  Value seq = memref::DimOp::create(b, dest, 2);
  auto chunkType =
      VectorType::get({copy->perChunk}, stagingType.getElementType());
  forEachChunk(
      b, *copy, options.numThreads, staging, /*panels=*/1, adaptor,
      [&](Value view, Value row, Value col, Value destRow, Value destCol) {
        Value chunk = alignedLoad(b, chunkType, view, ValueRange{row, col});
        Value inside =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, destRow, seq);
        auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        alignedStore(b, chunk, dest,
                     ValueRange{adaptor.getBatch(), adaptor.getHead(), destRow,
                                destCol});
      });
  rewriter.eraseOp(op);
  return success();
}

LogicalResult ConvertStoreTileShared::matchAndRewrite(
    StoreTileSharedOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  VectorType tileType = op.getTile().getType();
  Value share = adaptor.getTile();
  // Only tiles of the kernel's block rows are distributed over its warps.
  if (share.getType() == tileType)
    return op.emitOpError()
           << "expects a tile of the kernel's block rows, got " << tileType;
  int64_t rowBlocks = rowBlocksOf(share.getType(), tileType.getDimSize(1));
  int64_t blocks = cast<VectorType>(share.getType()).getDimSize(0) / rowBlocks;
  Value dest = adaptor.getDest();
  int64_t panels = panelsOf(op.getDest().getType(), options.warpgroupMma);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  // No warp still reads dest's previous contents (a wgmma reading it was
  // waited for before its result was used), unless the op says so itself.
  if (!op.getNoLeadingBarrier())
    gpu::BarrierOp::create(b);
  Lane lane = laneOf(b, rowBlocks);
  if (op.getTransposed()) {
    if (tileType.getElementTypeBitWidth() == 16)
      storeTransposedMatrices(b, share, lane, rowBlocks, blocks, dest, panels);
    else
      storeTransposedElements(b, share, lane, rowBlocks, blocks, dest, panels);
  } else {
    for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot)
      for (int64_t n = 0; n < blocks; ++n)
        storePairShared(b,
                        lanePair(b, share, blocks, rowSlot / 2, rowSlot % 2, n),
                        lane, rowSlot / 2, rowSlot % 2, n, dest, panels);
  }
  // Every lane's values are visible to every warp's products, wgmma's
  // async-proxy reads included.
  if (options.warpgroupMma)
    fenceForAsyncProxy(b);
  gpu::BarrierOp::create(b);
  rewriter.eraseOp(op);
  return success();
}

LogicalResult
ConvertStoreRows::matchAndRewrite(StoreRowsOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value dest = adaptor.getDest();
  Value seq = memref::DimOp::create(b, dest, 2);
  int64_t rowBlocks = rowBlocksOfRows(adaptor.getValue().getType());
  Lane lane = laneOf(b, rowBlocks);
  for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
    Value row = laneRow(b, lane, adaptor.getRow(), rowSlot / 2, rowSlot % 2);
    Value inside = arith::AndIOp::create(
        b, lane.isFirstOfRow,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seq));
    auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(
        b,
        vector::ExtractOp::create(b, adaptor.getValue(),
                                  ArrayRef<int64_t>{rowSlot}),
        dest, ValueRange{adaptor.getBatch(), adaptor.getHead(), row});
  }
  rewriter.eraseOp(op);
  return success();
}

LogicalResult
ConvertLoadRows::matchAndRewrite(LoadRowsOp op, OpAdaptor adaptor,
                                 ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
  int64_t rowBlocks = rowBlocksOfRows(type);
  Lane lane = laneOf(b, rowBlocks);
  SmallVector<Value> rows;
  for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot)
    rows.push_back(
        loadStat(b, adaptor.getSource(), adaptor.getBatch(), adaptor.getHead(),
                 laneRow(b, lane, adaptor.getRow(), rowSlot / 2, rowSlot % 2)));
  rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, rows);
  return success();
}

LogicalResult ConvertColumnBroadcast::matchAndRewrite(
    ColumnBroadcastOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
  int64_t cols = op.getType().getDimSize(1);
  int64_t rowBlocks = rowBlocksOf(type, cols);
  int64_t blocks = cols / kColsPerBlock;
  Lane lane = laneOf(b, rowBlocks);
  Value first = arith::AddIOp::create(b, adaptor.getCol(), lane.pairColumn);
  // The lane's columns: a pair per 8-column block. Loads of a tile that
  // lies inside the sequence (all but the last) need no clamping, which
  // leaves one address plus immediates; the last tile clamps each.
  auto loadColumns = [&](bool clamp) {
    SmallVector<Value> columns;
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t e = 0; e < 2; ++e) {
        Value position =
            arith::AddIOp::create(b, first, index(b, kColsPerBlock * n + e));
        columns.push_back(
            clamp ? loadStat(b, adaptor.getSource(), adaptor.getBatch(),
                             adaptor.getHead(), position)
                  : memref::LoadOp::create(b, adaptor.getSource(),
                                           ValueRange{adaptor.getBatch(),
                                                      adaptor.getHead(),
                                                      position}));
      }
    scf::YieldOp::create(b, columns);
  };
  Value seq = memref::DimOp::create(b, adaptor.getSource(), 2);
  Value whole = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ule,
      arith::AddIOp::create(b, adaptor.getCol(), index(b, cols)), seq);
  SmallVector<Type> columnTypes(2 * blocks, b.getF32Type());
  auto columns = scf::IfOp::create(b, columnTypes, whole,
                                   /*addThenBlock=*/true,
                                   /*addElseBlock=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(columns.thenBlock());
    loadColumns(/*clamp=*/false);
    b.setInsertionPointToStart(columns.elseBlock());
    loadColumns(/*clamp=*/true);
  }
  SmallVector<std::pair<Value, Value>> pairs;
  for (int64_t n = 0; n < blocks; ++n)
    pairs.push_back({columns.getResult(2 * n), columns.getResult(2 * n + 1)});
  rewriter.replaceOp(op, broadcastColumnPairs(b, type, rowBlocks, pairs));
  return success();
}

LogicalResult ConvertColumnBroadcastShared::matchAndRewrite(
    ColumnBroadcastSharedOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
  int64_t cols = op.getType().getDimSize(1);
  int64_t rowBlocks = rowBlocksOf(type, cols);
  int64_t blocks = cols / kColsPerBlock;
  Lane lane = laneOf(b, rowBlocks);
  // No bounds: fa.stage_rows wrote zeros past the sequence end.
  auto pairType = VectorType::get({2}, b.getF32Type());
  SmallVector<std::pair<Value, Value>> pairs;
  for (int64_t n = 0; n < blocks; ++n) {
    Value col =
        arith::AddIOp::create(b, lane.pairColumn, index(b, kColsPerBlock * n));
    Value pair = alignedLoad(b, pairType, adaptor.getRows(), col);
    pairs.push_back({vector::ExtractOp::create(b, pair, int64_t{0}),
                     vector::ExtractOp::create(b, pair, int64_t{1})});
  }
  rewriter.replaceOp(op, broadcastColumnPairs(b, type, rowBlocks, pairs));
  return success();
}
