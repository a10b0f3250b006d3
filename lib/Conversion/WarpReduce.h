//===- WarpReduce.h - Reductions across the lanes of a warp -----*- C++ -*-===//
//
// Both lowerings combine per-lane values over groups of lanes with xor
// shuffles (a butterfly): after shuffles by the offsets s, 2s, ..., n/2
// (in any order), every lane holds the combination of the lanes whose ids
// differ from its own only in those bits. The tensor-core layout combines
// the four lanes of a row (1, 2); the row layout the threads of a row
// (descending from half their number) or the rows of a warp (P, 2P, ...).
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_WARPREDUCE_H
#define FA_LIB_CONVERSION_WARPREDUCE_H

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// Combines, by `kind`, each of `values` with the same value of the lane
/// whose id differs by `offset` (a gpu.shuffle xor over the whole warp), for
/// each offset of `xorOffsets` in turn: every value's shuffle for one offset
/// before any for the next.
void warpXorReduce(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                   MutableArrayRef<Value> values, ArrayRef<int32_t> xorOffsets);

/// The same for one value: the combination across the lanes.
Value warpXorReduce(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                    Value value, ArrayRef<int32_t> xorOffsets);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_WARPREDUCE_H
