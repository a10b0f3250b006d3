//===- WarpReduce.cpp - Reductions across the lanes of a warp -------------===//
//
// See WarpReduce.h.
//
//===----------------------------------------------------------------------===//

#include "WarpReduce.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fa {

void warpXorReduce(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                   MutableArrayRef<Value> values,
                   ArrayRef<int32_t> xorOffsets) {
  for (int32_t offset : xorOffsets)
    for (Value &value : values) {
      auto shuffle = gpu::ShuffleOp::create(b, value, offset, kThreadsPerWarp,
                                            gpu::ShuffleMode::XOR);
      value = vector::makeArithReduction(b, b.getLoc(), kind, value,
                                         shuffle.getShuffleResult());
    }
}

Value warpXorReduce(ImplicitLocOpBuilder &b, vector::CombiningKind kind,
                    Value value, ArrayRef<int32_t> xorOffsets) {
  warpXorReduce(b, kind, MutableArrayRef<Value>(value), xorOffsets);
  return value;
}

} // namespace mlir::fa
