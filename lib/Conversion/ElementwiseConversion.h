//===- ElementwiseConversion.h - Elementwise ops on shares ---*- C++ -*-===//
//
// Both distributions (tensor-core tiles, rows of blocks) map a block-level
// vector to the part one thread holds, element for element in the same
// order, so elementwise arith/math ops apply to the shares unchanged, and a
// splat constant becomes a splat of the share.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H
#define FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

/// Splat constants become splats of the share (a scalar where the share of
/// a vector is one value, as a per-row vector's is in the rows lowering).
struct ConvertSplatConstant : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<SplatElementsAttr>(op.getValue());
    Type type = getTypeConverter()->convertType(op.getType());
    if (!value || !type)
      return rewriter.notifyMatchFailure(op, "only splat constants");
    auto element = value.getSplatValue<TypedAttr>();
    if (auto vector = dyn_cast<VectorType>(type))
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, vector, DenseElementsAttr::get(vector, element));
    else
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, element);
    return success();
  }
};

/// A broadcast of a scalar (a kernel parameter, a value loaded once) becomes
/// the same broadcast into the share.
struct ConvertScalarBroadcast : OpConversionPattern<vector::BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(vector::BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    Value source = adaptor.getSource();
    if (!type || isa<VectorType>(source.getType()))
      return rewriter.notifyMatchFailure(op, "only broadcasts of scalars");
    if (isa<VectorType>(type))
      rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, source);
    else
      rewriter.replaceOp(op, source);
    return success();
  }
};

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_ELEMENTWISECONVERSION_H
