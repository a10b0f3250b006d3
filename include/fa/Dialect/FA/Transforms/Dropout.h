//===- Dropout.h - Attention dropout in the tiled kernels -------*- C++ -*-===//
//
// The values every tile of one kernel needs to draw the dropout mask of
// runtime/include/fa/runtime/Philox.h (fa.apply_dropout), made once per
// kernel from the op's dropout(p, seed, offset) operands and its block's
// (batch, head).
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_DROPOUT_H
#define FA_DIALECT_FA_TRANSFORMS_DROPOUT_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

struct DropoutParams {
  /// The probability (f32), the Philox key (the seed's low and high 32 bits),
  /// the offset and the (batch, head) pair batch * heads + head, all i32.
  Value p, seedLo, seedHi, offset, batchHead;

  /// The values of a kernel whose op has dropout(p, seed (i64), offset
  /// (i32)), for the block of (`batch`, `head`) of `heads` query heads.
  static DropoutParams build(ImplicitLocOpBuilder &b, Value p, Value seed,
                             Value offset, Value batch, Value head,
                             Value heads);

  /// `tile` (f32, rows from `row0`, columns from `col0`; transposed: rows
  /// are keys, columns queries) with the dropped elements 0 and the kept
  /// ones scaled by 1 / (1 - p).
  Value apply(ImplicitLocOpBuilder &b, Value tile, Value row0, Value col0,
              bool transposed = false) const;

  /// The dropout's factor on each element of a tile of `type` placed as
  /// apply's: 0 where the mask drops it, 1 / (1 - p) where it keeps it.
  Value factors(ImplicitLocOpBuilder &b, VectorType type, Value row0,
                Value col0, bool transposed = false) const;

  explicit operator bool() const { return static_cast<bool>(p); }
};

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_DROPOUT_H
