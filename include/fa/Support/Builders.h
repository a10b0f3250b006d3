//===- Builders.h - Constants the passes and conversions build --*- C++ -*-===//
//
// The few constants every tiling pass and lowering builds over and over:
// index constants (tile offsets, lane arithmetic) and splat vector constants
// (zeros, -inf, scales). One definition each, for the tiling passes and the
// lowerings alike.
//
//===----------------------------------------------------------------------===//

#ifndef FA_SUPPORT_BUILDERS_H
#define FA_SUPPORT_BUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// The index constant `value`.
inline Value index(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

/// A vector constant of `type` whose every element is `element`.
inline Value splatConstant(ImplicitLocOpBuilder &b, VectorType type,
                           TypedAttr element) {
  return arith::ConstantOp::create(b, type,
                                   DenseElementsAttr::get(type, element));
}

/// A vector constant of float `type` whose every element is `value` (in the
/// element type).
inline Value splatConstant(ImplicitLocOpBuilder &b, VectorType type,
                           double value) {
  return splatConstant(b, type, b.getFloatAttr(type.getElementType(), value));
}

} // namespace mlir::fa

#endif // FA_SUPPORT_BUILDERS_H
