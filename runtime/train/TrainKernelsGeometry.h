//===- TrainKernelsGeometry.h - TrainKernels block sizes, grids -*- C++ -*-===//
//
// What TrainKernels.cu's kernels are written for (block sizes, the shared
// memory they size by them, the adamW parameter block) and the grids
// TrainKernels.cpp launches them with. Plain integer arithmetic and no CUDA,
// so nvcc and the host compiler both include it and the unit tests check the
// grids without a GPU.
//
// Reductions split their input into a number of blocks that depends only on
// the problem's size (never on the GPU), so the order of every addition, and
// thus every bit of the result, is fixed by the sizes alone.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_TRAINKERNELSGEOMETRY_H
#define FA_TRAIN_TRAINKERNELSGEOMETRY_H

#include <cstdint>

namespace fa::train::geometry {

constexpr int kWarpThreads = 32;
/// Threads per block of every kernel (biasGradient's first stage arranges
/// its 256 as kBiasColumns x kBiasRowLanes).
constexpr int kBlockThreads = 256;

/// grid.x may reach 2^31 - 1 blocks; grid.y and grid.z 65535.
constexpr std::int64_t kMaxGridX = 2147483647;
constexpr std::int64_t kMaxGridY = 65535;

constexpr std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
constexpr std::int64_t clampTo(std::int64_t value, std::int64_t low,
                               std::int64_t high) {
  return value < low ? low : value > high ? high : value;
}

/// Elementwise kernels loop with a grid stride over at most this many blocks
/// (a few per SM on any GPU is plenty for a memory-bound loop).
constexpr std::int64_t kMaxElementwiseBlocks = 8192;
constexpr std::int64_t elementwiseBlocks(std::int64_t n) {
  return clampTo(ceilDiv(n, kBlockThreads), 1, kMaxElementwiseBlocks);
}

/// Row kernels (embedding, heads) run one block per row in grid.x and, where
/// a thread owns one channel, a chunk of kBlockThreads channels per grid.y.
constexpr std::int64_t channelChunks(std::int64_t channels) {
  return ceilDiv(channels, kBlockThreads);
}

/// crossEntropy: one block per row (a warp per row left the loads of a
/// GPT-2-sized row, 50304 logits, one at a time: 18 ms of an 85M step).
constexpr std::int64_t crossEntropyBlocks(std::int64_t rows) { return rows; }

/// biasGradient, first stage: block (x, y) sums kBiasColumns columns over
/// the y-th span of biasRowSpan() rows into partials[y][column], each of its
/// kBiasRowLanes row lanes every kBiasRowLanes-th row of the span. Second
/// stage: each column's partials summed in y order. TrainKernels keeps
/// kBiasPartialFloats floats for the partials, so biasRowBlocks * cols fits.
constexpr int kBiasColumns = 32;
constexpr int kBiasRowLanes = kBlockThreads / kBiasColumns;
constexpr std::int64_t kBiasMinRowsPerBlock = 64;
constexpr std::int64_t kBiasMaxRowBlocks = 128;
constexpr std::int64_t kBiasPartialFloats = std::int64_t{1} << 20;
/// Number of row spans (grid.y); needs 1 <= cols <= kBiasPartialFloats.
constexpr std::int64_t biasRowBlocks(std::int64_t rows, std::int64_t cols) {
  const std::int64_t fit = kBiasPartialFloats / cols;
  return clampTo(ceilDiv(rows, kBiasMinRowsPerBlock), 1,
                 fit < kBiasMaxRowBlocks ? fit : kBiasMaxRowBlocks);
}
constexpr std::int64_t biasRowSpan(std::int64_t rows, std::int64_t cols) {
  return ceilDiv(rows, biasRowBlocks(rows, cols));
}

/// sum and sumOfSquares: reductionBlocks(n) blocks, the b-th summing
/// elements [b * span, (b + 1) * span) of span = reductionSpan(n) into
/// workspace[b]; then one block sums the workspace in order.
constexpr std::int64_t kReductionElementsPerBlock = 4096;
constexpr std::int64_t kMaxReductionBlocks = 1024;
constexpr std::int64_t reductionBlocks(std::int64_t n) {
  return clampTo(ceilDiv(n, kReductionElementsPerBlock), 1,
                 kMaxReductionBlocks);
}
constexpr std::int64_t reductionSpan(std::int64_t n) {
  return ceilDiv(n, reductionBlocks(n));
}

/// adamW's scalars, passed by value (AdamWStep with its bias corrections
/// 1 - beta^step worked out on the host in double).
struct AdamWParams {
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weightDecay;
  float maxNorm;
  float biasCorrection1;
  float biasCorrection2;
};

/// An activation dropout mask (Dropout.h), passed by value: the Philox key's
/// seed and counter words, and p's threshold and scale (Philox.h).
struct DropoutMask {
  unsigned long long seed;
  unsigned site;
  unsigned step;
  unsigned threshold;
  float scale;
};

} // namespace fa::train::geometry

#endif // FA_TRAIN_TRAINKERNELSGEOMETRY_H
