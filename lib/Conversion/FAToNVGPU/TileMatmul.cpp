//===- TileMatmul.cpp - fa.tile_matmul onto tensor cores ------------------===//
//
// The dispatcher: each instruction family has a file of its own, like
// Triton's DotOpToLLVM.cpp over DotOpToLLVM/{MMAv2,WGMMA}.cpp.
//
//===----------------------------------------------------------------------===//

#include "TileMatmul.h"
#include "Patterns.h"

using namespace mlir;
using namespace mlir::fa;

LogicalResult
ConvertTileMatmul::matchAndRewrite(TileMatmulOp op, OpAdaptor adaptor,
                                   ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value result;
  if (getElementTypeOrSelf(op.getA().getType()).isF32())
    result = lowerSplitTF32Matmul(b, op, adaptor);
  else if (options.warpgroupMma)
    result = lowerWarpgroupMatmul(b, op, adaptor);
  else
    result = lowerMmaSyncMatmul(b, op, adaptor);
  rewriter.replaceOp(op, result);
  return success();
}
