//===- FastExp2.cpp - f32 exp2 as one ex2.approx.ftz.f32 ------------------===//
//
// The softmax's exponentials as single MUFU.EX2 instructions: each f32
// math.exp2 that allows approximation (`afn`) becomes
// llvm.nvvm.ex2.approx.ftz.f32, a vector's element by element (the
// intrinsic is scalar). Passes.td says why libdevice's __nv_exp2f, which
// convert-gpu-to-nvvm would call, is slower.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAFASTEXP2
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
constexpr llvm::StringLiteral kEx2ApproxFtz = "llvm.nvvm.ex2.approx.ftz.f32";

Value ex2ApproxFtz(ImplicitLocOpBuilder &b, Value scalar) {
  return LLVM::CallIntrinsicOp::create(b, b.getF32Type(),
                                       b.getStringAttr(kEx2ApproxFtz),
                                       ValueRange{scalar})
      .getResult(0);
}

/// The exponential of each element, in the source's (scalar or n-D vector)
/// type.
Value lowerExp2(ImplicitLocOpBuilder &b, Value source) {
  auto vectorType = dyn_cast<VectorType>(source.getType());
  if (!vectorType)
    return ex2ApproxFtz(b, source);
  SmallVector<int64_t> strides = computeSuffixProduct(vectorType.getShape());
  SmallVector<Value> elements;
  for (int64_t i = 0, e = vectorType.getNumElements(); i < e; ++i) {
    Value element =
        vector::ExtractOp::create(b, source, delinearize(i, strides));
    elements.push_back(ex2ApproxFtz(b, element));
  }
  return vector::FromElementsOp::create(b, vectorType, elements);
}

struct FAFastExp2Pass : public mlir::fa::impl::FAFastExp2Base<FAFastExp2Pass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<math::Exp2Op> exponentials;
    getOperation()->walk([&](math::Exp2Op op) {
      if (isApproximable(op))
        exponentials.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (math::Exp2Op op : exponentials) {
      rewriter.setInsertionPoint(op);
      ImplicitLocOpBuilder b(op.getLoc(), rewriter);
      rewriter.replaceOp(op, lowerExp2(b, op.getOperand()));
    }
  }

  /// f32 (scalar or fixed-size vector) and marked `afn`.
  static bool isApproximable(math::Exp2Op op) {
    auto vectorType = dyn_cast<VectorType>(op.getType());
    return getElementTypeOrSelf(op.getType()).isF32() &&
           !(vectorType && vectorType.isScalable()) &&
           arith::bitEnumContainsAll(op.getFastmath(),
                                     arith::FastMathFlags::afn);
  }
};
} // namespace
