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

namespace {
/// Why `op` has no lowering in a kernel with `options`, or success. Only the
/// wgmma lowering reads a shared A transposed (an MN-major descriptor); the
/// mma.sync and split-TF32 lowerings read A as [M][K]. wgmma's m64 gives
/// each warpgroup 64 rows of the product (of A, or columns of a transposed
/// A), so M must be 64 per warpgroup.
LogicalResult checkLowerable(TileMatmulOp op,
                             const FAToNVGPUPatternOptions &options) {
  bool warpgroupMma = options.warpgroupMma &&
                      !getElementTypeOrSelf(op.getA().getType()).isF32();
  if (op.getTransposeA() && !warpgroupMma)
    return op.emitOpError()
           << "with transpose_a is lowered only onto wgmma: it needs f16 or "
              "bf16 operands and a kernel with #fa.tile<wgmma = true>";
  int64_t m = op.getAcc().getType().getDimSize(0);
  if (warpgroupMma &&
      (options.numThreads % kThreadsPerWarpgroup != 0 ||
       m != options.numThreads / kThreadsPerWarpgroup * kWarpgroupRows))
    return op.emitOpError()
           << "expects M (" << m << ") to be " << kWarpgroupRows
           << " per warpgroup of the kernel's " << options.numThreads
           << " computing threads (wgmma m64)";
  return success();
}
} // namespace

LogicalResult
ConvertTileMatmul::matchAndRewrite(TileMatmulOp op, OpAdaptor adaptor,
                                   ConversionPatternRewriter &rewriter) const {
  if (failed(checkLowerable(op, options)))
    return failure();
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
