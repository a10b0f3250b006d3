//===- TileLayout.h - A lane's share of a tile ------------------*- C++ -*-===//
//
// One distribution serves every tile: the layout of the m16n8k16
// accumulator, repeated over the M 16-row blocks a warp owns
// (M = block_m / (16 x warps), 1 or 2). Warp w owns rows [16Mw, 16M(w + 1))
// of a tile; in row block m, lane l holds, in 8-column block n, the columns
// 8n + 2(l%4) + {0, 1} of rows 16m + l/4 and 16m + l/4 + 8. A lane's share of
// an R x C tile is therefore a vector<(M C/8) x 4 x T> whose entry
// [m C/8 + n][2h + e] is element (16Mw + 16m + l/4 + 8h, 8n + 2(l%4) + e).
// The f16/bf16 A operand of m16n8k16 has exactly this layout over two
// adjacent column blocks, which is why probabilities feed the P @ V product
// straight from registers. A per-row vector (R values) becomes
// vector<2M x T>: entry 2m + h is row 16Mw + 16m + l/4 + 8h.
//
// Two row blocks per warp halve the shared-memory traffic per product: each
// K or V fragment read with ldmatrix feeds M tensor-core instructions.
//
// Shared-memory tiles keep their logical shape; the 16-byte chunk c of row r
// is stored at chunk c ^ (r % 8), so that the 8 row addresses of every
// ldmatrix hit 8 different bank groups.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVGPU_TILELAYOUT_H
#define FA_LIB_CONVERSION_FATONVGPU_TILELAYOUT_H

#include "fa/Conversion/FAToNVGPU/FAToNVGPU.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/IR/Swizzle.h"
#include "fa/Support/Builders.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/Alignment.h"

namespace mlir::fa {

constexpr int64_t kColsPerBlock = 8; // columns of one n8 accumulator block
constexpr int64_t kValuesPerBlock = 4;
/// The leading byte offset wgmma ignores for swizzled K-major operands (and,
/// with one 64-column atom, for MN-major ones): one 16-byte unit.
constexpr int64_t kDescriptorUnitBytes = 16;

/// The row blocks per warp (M) of a lane's share of a tile with `cols`
/// columns.
int64_t rowBlocksOf(Type share, int64_t cols);

/// The row blocks per warp (M) of a lane's share of a per-row vector.
int64_t rowBlocksOfRows(Type share);

/// Where this lane sits in the accumulator layout.
struct Lane {
  Value threadId;   // in the block
  Value warpRow0;   // 16 * M * warp: the warp's first row
  Value rowInTile;  // warpRow0 + lane / 4: the lane's first row
  Value pairColumn; // 2 * (lane % 4): the lane's first column in a block
  Value laneId;
  Value isFirstOfRow; // lane % 4 == 0
};

/// This lane's place in a layout of `rowBlocks` row blocks per warp.
Lane laneOf(ImplicitLocOpBuilder &b, int64_t rowBlocks);

/// The row of the tile starting at `row0` this lane holds in row block `m`,
/// half `h` (0, 1).
Value laneRow(ImplicitLocOpBuilder &b, const Lane &lane, Value row0, int64_t m,
              int64_t h);

/// Elements of `type` in one 16-byte chunk.
int64_t chunkElems(Type type);

/// A vector's natural alignment: its size in bytes. Without it a
/// vector<2xbf16> access is assumed 2-byte aligned and split into scalar
/// accesses. Every buffer the runtime passes is 16-byte aligned (cp.async
/// relies on it too), rows hold a multiple of 8 elements, and every access
/// here starts at a multiple of its own length.
llvm::Align naturalAlignment(VectorType type);

/// vector.load / vector.store with the vector's natural alignment.
Value alignedLoad(ImplicitLocOpBuilder &b, VectorType type, Value base,
                  ValueRange indices);
void alignedStore(ImplicitLocOpBuilder &b, Value value, Value base,
                  ValueRange indices);

/// Shared tiles are swizzled in runs of 16-byte chunks: chunk c of row r
/// sits at chunk c ^ phase(r) of its run. Rows of a multiple of 128 bytes
/// take runs of 8 chunks, phase r % 8 (wgmma's 128-byte swizzle); rows of a
/// multiple of only 64 bytes (f16/bf16 head_dim 32 and 96) runs of 4,
/// phase (r / 2) % 4 (wgmma's 64-byte swizzle), since an 8-chunk XOR would
/// move their chunks past the row's end. Either way the 8 rows an ldmatrix
/// or a wgmma core matrix reads fall in distinct banks, and the phase
/// repeats every 8 rows.
int64_t swizzleRunChunks(MemRefType tile);

/// The swizzle phase of shared-tile row `row` for runs of `runChunks`.
Value swizzlePhase(ImplicitLocOpBuilder &b, Value row, int64_t runChunks);

/// Physical column of 16-byte chunk `chunk` of row `row` of `tile`.
Value swizzledColumn(ImplicitLocOpBuilder &b, Value row, Value chunk,
                     MemRefType tile);

/// (row, first column) in swizzled shared tile `tile` of logical row
/// `rowLane + rowConst` and 16-byte chunk `chunkConst + chunkLane`, where only
/// `rowLane` and `chunkLane` (0 or 1; null for 0) depend on the lane,
/// `rowConst` is a multiple of 8 (so the swizzle phase is `rowLane`'s) and
/// `chunkConst` is even when there is a `chunkLane`. Since, for runs of R
/// chunks, (c + l) ^ p = (c & ~(R-1)) + ((c & (R-1)) ^ (l ^ p)) then, the
/// lane-dependent part takes one of four values and everything else folds
/// into the instruction's immediate offset: without this, each of the
/// dozens of ldmatrix of a key tile (or of the output's staging stores) kept
/// its own address register.
std::pair<Value, Value>
splitSwizzledAddress(ImplicitLocOpBuilder &b, Value rowLane, int64_t rowConst,
                     Value chunkLane, int64_t chunkConst, MemRefType tile);

/// Physical column of logical column `col` of row `row` of `tile`.
Value swizzledElementColumn(ImplicitLocOpBuilder &b, Value row, Value col,
                            MemRefType tile);

/// Loads `width` elements at (batch, head, row, col) of a 4-D buffer, as zero
/// when row >= seq (the address is clamped to stay inside the buffer).
Value loadRowSegment(ImplicitLocOpBuilder &b, Value buffer, Value batch,
                     Value head, Value row, Value col, int64_t width);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_FATONVGPU_TILELAYOUT_H
