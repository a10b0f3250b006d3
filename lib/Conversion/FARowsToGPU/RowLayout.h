//===- RowLayout.h - A thread's share of a block of rows -------*- C++ -*-===//
//
// The distribution of convert-fa-rows-to-gpu. With R rows per block and T
// threads, each row gets P = T / R consecutive threads; thread `p` of row `r`
// (thread id r P + p) owns the 8-column chunks `p, p + P, p + 2P, ...` of
// that row. Its share of an R x C block is a flat vector<K 8 x T> (K = C / 8P
// chunks) whose entry 8k + v is column 8(kP + p) + v. A per-column vector<C>
// has the same share (every row's threads hold the same columns); a per-row
// vector<R> becomes one scalar, the value of the thread's row.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FAROWSTOGPU_ROWLAYOUT_H
#define FA_LIB_CONVERSION_FAROWSTOGPU_ROWLAYOUT_H

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Alignment.h"

namespace mlir::fa {

/// Maps blocks, per-column and per-row vectors to a thread's share of them.
class RowsTypeConverter : public TypeConverter {
public:
  explicit RowsTypeConverter(const RowsLayout &layout);
};

/// Whether `type` holds one value per row of the block.
bool isPerRow(Type type, const RowsLayout &layout);

/// Where this thread sits in a block of rows.
struct RowThread {
  Value threadId, laneId, warpId;
  Value rowInBlock;  // t / P
  Value threadInRow; // t % P
  Value firstColumn; // 8 (t % P): the first column of the first chunk
};

/// This thread's place in a block of rows of `layout`.
RowThread rowThreadOf(ImplicitLocOpBuilder &b, const RowsLayout &layout);

/// The buffer row of this thread's row of the block whose first row is
/// `row0`.
Value threadRow(ImplicitLocOpBuilder &b, const RowThread &t, Value row0);

/// This thread's row's value of the per-row buffer `source` (1-D) for the
/// block from row `row0` on: zero past the last row (whose index is clamped
/// in bounds).
Value loadRowValue(ImplicitLocOpBuilder &b, const RowThread &t, Value source,
                   Value row0);

/// The first thread of each row writes its row's `value` into the per-row
/// buffer `dest` (1-D) for the block from row `row0` on, rows past the last
/// skipped.
void storeRowValue(ImplicitLocOpBuilder &b, const RowThread &t, Value value,
                   Value dest, Value row0);

/// Column of chunk `k` of a thread's share, relative to the block's first.
Value chunkColumn(ImplicitLocOpBuilder &b, const RowsLayout &layout,
                  const RowThread &t, int64_t k);

/// The vector of one chunk of `element`s.
VectorType chunkType(Type element);

/// Alignment of a whole chunk: its size in bytes (a multiple of 16).
llvm::Align chunkAlignment(Type element);

/// One chunk of a row of `buffer`: at `indices` (the last is the column),
/// `inside` when its row exists. Whole chunks of rows that start on a chunk
/// boundary take one aligned vector access, the rest a masked one.
struct ChunkAccess {
  Value buffer;
  SmallVector<Value> indices;
  Value rowInside; // i1, or null when the buffer has no rows (1-D)

  /// Valid columns of the chunk: clamp(cols - column, 0, 8), 0 outside.
  Value validColumns(ImplicitLocOpBuilder &b) const;

  /// True when the chunk can be accessed as one aligned vector.
  Value isWhole(ImplicitLocOpBuilder &b, Value valid) const;

  /// The chunk, zero in its invalid columns.
  Value load(ImplicitLocOpBuilder &b) const;

  /// Writes the valid columns of `chunk`.
  void store(ImplicitLocOpBuilder &b, Value chunk) const;
};

/// The chunks of a thread's share of the block at `indices` of `buffer`
/// (rank 2: [row0, col0], the thread's row added; rank 1: [col0]).
SmallVector<ChunkAccess> shareChunks(ImplicitLocOpBuilder &b,
                                     const RowsLayout &layout,
                                     const RowThread &t, Value buffer,
                                     ValueRange indices);

/// Chunk `k` of a thread's share.
Value extractChunk(ImplicitLocOpBuilder &b, Value share, int64_t k);

/// `share` with chunk `k` replaced by `chunk`.
Value insertChunk(ImplicitLocOpBuilder &b, Value chunk, Value share, int64_t k);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_FAROWSTOGPU_ROWLAYOUT_H
