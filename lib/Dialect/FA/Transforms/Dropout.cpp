//===- Dropout.cpp - Attention dropout in the tiled kernels ---------------===//

#include "fa/Dialect/FA/Transforms/Dropout.h"

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Support/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::fa;

DropoutParams DropoutParams::build(ImplicitLocOpBuilder &b, Value p, Value seed,
                                   Value offset, Value batch, Value head,
                                   Value heads) {
  Type i32 = b.getI32Type();
  Value seedHigh = arith::ShRUIOp::create(
      b, seed, arith::ConstantIntOp::create(b, seed.getType(), 32));
  Value batchHead =
      arith::AddIOp::create(b, arith::MulIOp::create(b, batch, heads), head);
  return {p, arith::TruncIOp::create(b, i32, seed),
          arith::TruncIOp::create(b, i32, seedHigh), offset,
          arith::IndexCastUIOp::create(b, i32, batchHead)};
}

Value DropoutParams::apply(ImplicitLocOpBuilder &b, Value tile, Value row0,
                           Value col0, bool transposed) const {
  return ApplyDropoutOp::create(b, tile.getType(), tile, row0, col0, batchHead,
                                seedLo, seedHi, offset, p, transposed);
}

Value DropoutParams::factors(ImplicitLocOpBuilder &b, VectorType type,
                             Value row0, Value col0, bool transposed) const {
  return apply(b, splatConstant(b, type, 1.0), row0, col0, transposed);
}
