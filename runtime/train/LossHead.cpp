//===- LossHead.cpp - LM head and cross-entropy, a chunk of rows at a time ===//

#include "fa/train/LossHead.h"

#include "fa/runtime/Error.h"
#include "fa/train/Matmul.h"
#include "fa/train/StepProfile.h"
#include "fa/train/TrainKernels.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace fa::train {
namespace {

/// Matmul's operand alignment (Matmul.h: every pointer 16-byte aligned).
constexpr std::int64_t kMatmulAlignment = 16;

std::string shapeText(std::int64_t rows, std::int64_t vocab,
                      std::int64_t channels, DType dtype) {
  return "rows " + std::to_string(rows) + ", vocab " + std::to_string(vocab) +
         ", channels " + std::to_string(channels) + ", " + dtypeName(dtype);
}

/// The checks every entry makes of the sizes and the dtype; `what` names the
/// call in errors.
void checkSizes(const std::string &what, std::int64_t rows, std::int64_t vocab,
                std::int64_t channels, DType dtype) {
  if (rows < 1 || vocab < 1 || channels < 1)
    throw Error(what + ": rows, vocab and channels must be at least 1");
  if (dtype != DType::BF16 && dtype != DType::F32)
    throw Error(what + ": activations must be bf16 or f32, not " +
                dtypeName(dtype));
}

/// "LM head loss (rows 2000, vocab 301, channels 128, bf16, chunks of 7
/// rows)".
std::string headText(std::int64_t rows, std::int64_t vocab,
                     std::int64_t channels, DType dtype,
                     std::int64_t chunkRows) {
  return "LM head loss (" + shapeText(rows, vocab, channels, dtype) +
         ", chunks of " + std::to_string(chunkRows) + " rows)";
}

void checkPointer(const std::string &what, const char *name,
                  CUdeviceptr pointer, std::int64_t alignment) {
  if (pointer == 0)
    throw Error(what + ": " + name + " is null");
  if (pointer % static_cast<CUdeviceptr>(alignment) != 0) {
    std::ostringstream address;
    address << std::hex << pointer;
    throw Error(what + ": " + name + " (0x" + address.str() + ") is not " +
                std::to_string(alignment) + "-byte aligned");
  }
}

} // namespace

std::int64_t LossHead::rowAlignment(std::int64_t channels, DType dtype) {
  const std::int64_t rowBytes =
      channels * static_cast<std::int64_t>(dtypeBytes(dtype));
  return kMatmulAlignment / std::gcd(kMatmulAlignment, rowBytes);
}

std::size_t LossHead::workspaceBytes(std::int64_t vocab, DType dtype,
                                     std::int64_t chunkRows) {
  return static_cast<std::size_t>(chunkRows) * static_cast<std::size_t>(vocab) *
         (sizeof(float) + dtypeBytes(dtype));
}

std::int64_t LossHead::chooseChunkRows(std::int64_t rows, std::int64_t vocab,
                                       std::int64_t channels, DType dtype,
                                       std::size_t budgetBytes) {
  const std::string what = "choosing the LM head loss's chunk (" +
                           shapeText(rows, vocab, channels, dtype) +
                           ", budget " + std::to_string(budgetBytes) +
                           " bytes)";
  checkSizes(what, rows, vocab, channels, dtype);
  if (budgetBytes == 0)
    throw Error(what + ": the budget must be at least 1 byte");
  const std::size_t rowBytes = workspaceBytes(vocab, dtype, 1);
  const std::size_t fitting = budgetBytes / rowBytes;
  if (fitting >= static_cast<std::size_t>(rows))
    return rows;
  const std::int64_t alignment = rowAlignment(channels, dtype);
  const std::int64_t aligned =
      static_cast<std::int64_t>(fitting) / alignment * alignment;
  return std::min(rows, std::max(aligned, alignment));
}

void LossHead::checkShape(std::int64_t rows, std::int64_t vocab,
                          std::int64_t channels, DType dtype,
                          std::int64_t chunkRows) {
  const std::string what = headText(rows, vocab, channels, dtype, chunkRows);
  checkSizes(what, rows, vocab, channels, dtype);
  if (chunkRows < 1 || chunkRows > rows)
    throw Error(what + ": the chunk must hold 1 to " + std::to_string(rows) +
                " rows");
  const std::int64_t alignment = rowAlignment(channels, dtype);
  if (chunkRows != rows && chunkRows % alignment != 0)
    throw Error(what +
                ": a chunk of fewer than all rows must be a multiple "
                "of " +
                std::to_string(alignment) + " rows, so that every chunk's " +
                std::to_string(channels) + "-channel " + dtypeName(dtype) +
                " rows start 16-byte aligned (Matmul's operands must)");
}

namespace {
/// chunkRows, once checkShape accepts the shape: the constructor checks
/// before it allocates.
std::int64_t checkedChunk(std::int64_t rows, std::int64_t vocab,
                          std::int64_t channels, DType dtype,
                          std::int64_t chunkRows) {
  LossHead::checkShape(rows, vocab, channels, dtype, chunkRows);
  return chunkRows;
}
} // namespace

LossHead::LossHead(std::int64_t rows, std::int64_t vocab, std::int64_t channels,
                   DType dtype, std::int64_t chunkRows, Matmul &matmul,
                   const TrainKernels &kernels)
    : rows(rows), vocab(vocab), channels(channels), dtype(dtype),
      chunk(checkedChunk(rows, vocab, channels, dtype, chunkRows)),
      matmul(matmul), kernels(kernels),
      logits("LM head loss: f32 logits of a chunk",
             static_cast<std::size_t>(chunk * vocab) * sizeof(float)),
      dlogits("LM head loss: dlogits of a chunk",
              static_cast<std::size_t>(chunk * vocab) * dtypeBytes(dtype)) {}

std::string LossHead::describe() const {
  return headText(rows, vocab, channels, dtype, chunk);
}

void LossHead::forward(CUdeviceptr lnf, CUdeviceptr head, CUdeviceptr targets,
                       CUdeviceptr losses, bool forBackward, CUdeviceptr dlnf,
                       CUdeviceptr dhead, const Stream &stream,
                       StepProfiler *profiler) {
  const std::string what = describe();
  checkPointer(what, "lnf", lnf, kMatmulAlignment);
  checkPointer(what, "head weight", head, kMatmulAlignment);
  checkPointer(what, "targets", targets, sizeof(std::int32_t));
  checkPointer(what, "losses", losses, sizeof(float));
  if (forBackward) {
    checkPointer(what, "dlnf", dlnf, kMatmulAlignment);
    checkPointer(what, "dhead", dhead, kMatmulAlignment);
  }
  const float gradScale = 1.0f / static_cast<float>(rows);
  const std::int64_t rowBytes =
      channels * static_cast<std::int64_t>(dtypeBytes(dtype));
  for (std::int64_t first = 0; first < rows; first += chunk) {
    const std::int64_t count = std::min(chunk, rows - first);
    const LinearShape shape{count, channels, vocab};
    const CUdeviceptr lnfRows = lnf + first * rowBytes;
    {
      PhaseScope scope(profiler, Phase::Matmul, stream);
      matmul.forward(dtype, DType::F32, shape, lnfRows, head, 0, logits.get(),
                     stream);
    }
    {
      PhaseScope scope(profiler, Phase::Loss, stream);
      kernels.crossEntropy(
          dtype, logits.get(), targets + first * sizeof(std::int32_t),
          losses + first * sizeof(float), forBackward ? dlogits.get() : 0,
          count, vocab, gradScale, stream);
    }
    if (!forBackward)
      continue;
    PhaseScope scope(profiler, Phase::Matmul, stream);
    matmul.backwardInput(dtype, shape, dlogits.get(), head,
                         dlnf + first * rowBytes, false, stream);
    matmul.backwardWeight(dtype, shape, dlogits.get(), lnfRows, dhead,
                          first > 0, stream);
  }
}

} // namespace fa::train
