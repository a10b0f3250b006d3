//===- FAToNVGPU.h - Tile ops onto warps and tensor cores -------*- C++ -*-===//
//
// The patterns of convert-fa-to-nvgpu, for passes and pipelines that lower
// tile-level fa ops inside a kernel of their own.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_FATONVGPU_FATONVGPU_H
#define FA_CONVERSION_FATONVGPU_FATONVGPU_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa {

/// Maps tile types to a lane's share of them: a `blockRows` x C tile to
/// vector<(rowBlocks C/8) x 4 x T>, a per-row vector of `blockRows` values
/// to vector<2 rowBlocks x T> (lib/Conversion/FAToNVGPU/TileLayout.h
/// describes the distribution). Other types stay as they are.
class TileTypeConverter : public TypeConverter {
public:
  TileTypeConverter(int64_t blockRows, int64_t rowBlocks);
};

/// What the patterns need to know of the kernel they convert.
struct FAToNVGPUPatternOptions {
  /// Threads per block (32 x warps): block-wide copies are split over them.
  int64_t numThreads = 0;
  /// Products as Hopper warpgroup MMAs (sm_90a only); shared tiles are then
  /// stored in wgmma's 128-byte panels and fenced for the async proxy.
  bool warpgroupMma = false;
  /// Skip the online softmax's accumulator rescale in warps whose row maxima
  /// did not move (fa.tile skip_unit_rescale).
  bool skipUnitRescale = true;
  /// fa.accumulate_tile adds a lane's two adjacent columns with one
  /// red.global.add.v2.f32 (sm_90 and PTX 8.1 on), else one add each.
  bool vectorReductions = false;
};

/// Adds the patterns that lower tile-level fa ops (and the arith/vector ops
/// on tiles) of one kernel to a lane's share: nvvm/nvgpu tensor-core
/// products, ldmatrix, cp.async, shuffles. `converter` is the kernel's
/// TileTypeConverter.
void populateFAToNVGPUConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    const FAToNVGPUPatternOptions &options);

} // namespace mlir::fa

#endif // FA_CONVERSION_FATONVGPU_FATONVGPU_H
