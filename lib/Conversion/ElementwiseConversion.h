//===- ElementwiseConversion.h - Elementwise ops on shares ---*- C++ -*-===//
//
// Both distributions (tensor-core tiles, rows of blocks) map a block-level
// vector to the part one thread holds, element for element in the same
// order, so elementwise arith/math ops apply to the shares unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H
#define FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa {

/// Any op with elementwise-mappable traits (but constants, whose values
/// need converting too) is rebuilt on the converted operand types.
struct ConvertElementwise : ConversionPattern {
  ConvertElementwise(const TypeConverter &converter, MLIRContext *context)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1,
                          context) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!OpTrait::hasElementwiseMappableTraits(op) ||
        isa<arith::ConstantOp>(op))
      return failure();
    FailureOr<Operation *> converted =
        convertOpResultTypes(op, operands, *getTypeConverter(), rewriter);
    if (failed(converted))
      return failure();
    rewriter.replaceOp(op, (*converted)->getResults());
    return success();
  }
};

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H
