//===- LossHead.h - LM head and cross-entropy, a chunk of rows at a time -===//
//
// The GPT's last step, logits = lnf head^T and the mean cross-entropy of
// them, without f32 logits for the whole batch: with GPT-2's vocabulary
// (V = 50257) and M = 16384 rows those are 3.3 GB, and their bf16 gradient
// 1.6 GB more. LossHead holds a chunk of `chunkRows` rows of each (f32
// logits, `dtype` dlogits) and walks the batch a chunk at a time:
//
//   for each chunk [r0, r1) of the M rows:
//     logits[r0:r1]  = lnf[r0:r1] head^T                 (Matmul::forward, f32)
//     losses[r0:r1], dlogits[r0:r1] = crossEntropy(...)  (scaled by 1/M)
//     with forBackward:
//       dlnf[r0:r1]  = dlogits[r0:r1] head               (backwardInput)
//       dhead        = / += dlogits[r0:r1]^T lnf[r0:r1]  (backwardWeight)
//
// So the head's backward is done by the time forward() returns: the
// model's backward starts from dlnf. dhead (f32 [V, C]) is overwritten by the
// first chunk and accumulated into by the others: a tied head's gradient is
// wte's, which the embedding's backward then adds to, as without chunks.
//
// What chunking changes, and what it does not:
//   - losses: each row's loss is the same cross-entropy kernel on that row's
//     logits (one warp per row, nothing shared between rows), so a row's
//     loss is bitwise the unchunked one whenever its logits are. Those come
//     from a product of chunkRows rows instead of M, for which Matmul plans
//     anew: the same bits as long as cuBLASLt's algorithm for that row count
//     sums each logit's C products in the same order (no split-K, the same
//     instruction), which cublasLt.h does not promise, and which does not
//     hold on an H100 for chunks of 7 rows (15% to 33% of the losses of a
//     2000-row batch differ from the one-chunk run's, by up to 1.9e-6,
//     about 2 ulps; chunks of 1000 rows repeat its bits). LossHeadGpuTest
//     allows 8 ulps.
//   - dlnf: rows of products of chunkRows rows, with the same caveat.
//   - dhead: the sum over rows is cut at chunk boundaries, one f32 rounding
//     per chunk (cuBLASLt's D += A B), so its bits depend on chunkRows.
//     For a given chunkRows every step runs the same plans in the same
//     order: deterministic, and a resumed run repeats it.
// With chunkRows = M (the batch fits the budget) the work is exactly the
// unchunked path's: one product, one cross-entropy, one of each backward.
// What chunks cost: the same products and bytes of logits, plus each chunk
// after the first reads dhead and writes it back (at V = 50257, C = 768:
// 154 MB each way, so 256 MiB chunks of a 16384-row batch move about 5.5 GB
// more per step than one chunk); a larger budget means fewer chunks.
//
// Chunks start at row multiples of chunkRows, so lnf's and dlnf's row
// offsets must keep the 16-byte alignment Matmul requires: chunkRows is M
// or a multiple of rowAlignment(channels, dtype) (1 whenever a row is a
// multiple of 16 bytes, as for every d_model that is a multiple of 8).
//
// Errors name the head's shape; Matmul's and TrainKernels' pass through.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_LOSSHEAD_H
#define FA_TRAIN_LOSSHEAD_H

#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Stream.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fa::train {

class Matmul;
class StepProfiler;
class TrainKernels;

class LossHead {
public:
  /// The default budget of a chunk's workspace (f32 logits and `dtype`
  /// dlogits together): 256 MiB, a chunk of 890 rows at V = 50257 in bf16.
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{256} << 20;

  /// The least row count whose lnf/dlnf rows (channels of `dtype`) span a
  /// multiple of 16 bytes: 16 / gcd(16, channels * bytes of dtype).
  static std::int64_t rowAlignment(std::int64_t channels, DType dtype);
  /// The workspace a chunk of chunkRows rows holds: chunkRows * vocab *
  /// (4 + bytes of dtype).
  static std::size_t workspaceBytes(std::int64_t vocab, DType dtype,
                                    std::int64_t chunkRows);
  /// The chunk for a budget: all M rows when their workspace fits in
  /// budgetBytes, else the most rows that fit, rounded down to a multiple of
  /// rowAlignment; never fewer than rowAlignment (nor more than M), so a
  /// budget below one row's workspace still gives a chunk. Throws fa::Error
  /// on a size below 1, an f16 dtype or a zero budget.
  static std::int64_t
  chooseChunkRows(std::int64_t rows, std::int64_t vocab, std::int64_t channels,
                  DType dtype, std::size_t budgetBytes = kDefaultChunkBytes);
  /// Throws fa::Error, naming the shape, unless rows, vocab and channels are
  /// at least 1, dtype is bf16 or f32, and chunkRows is in [1, rows] and
  /// either rows or a multiple of rowAlignment(channels, dtype). The
  /// constructor's checks, before it allocates anything.
  static void checkShape(std::int64_t rows, std::int64_t vocab,
                         std::int64_t channels, DType dtype,
                         std::int64_t chunkRows);

  /// Allocates the chunk's f32 logits and `dtype` dlogits, [chunkRows, V]
  /// each. matmul and kernels must outlive this object; forward() uses
  /// matmul's workspace, so it must not run beside matmul's other products.
  LossHead(std::int64_t rows, std::int64_t vocab, std::int64_t channels,
           DType dtype, std::int64_t chunkRows, Matmul &matmul,
           const TrainKernels &kernels);

  /// The loss of each of the M rows of lnf (`dtype` [M, C]) against head
  /// (`dtype` [V, C]) and targets (int32 [M], each in [0, V); one outside
  /// gives that row a NaN loss): losses (f32 [M]) = logsumexp(logits) -
  /// logits[target]. With forBackward, also the gradients of the mean loss:
  /// dlnf (`dtype` [M, C], overwritten) and dhead (f32 [V, C], overwritten).
  /// Without it dlnf and dhead are neither read nor written (pass 0).
  /// lnf, head, dlnf and dhead must be 16-byte aligned, targets and losses
  /// 4-byte aligned. Enqueued on `stream`, no synchronisation. A profiler
  /// that records this step times the products as Phase::Matmul and the
  /// cross-entropy as Phase::Loss, chunk by chunk.
  void forward(CUdeviceptr lnf, CUdeviceptr head, CUdeviceptr targets,
               CUdeviceptr losses, bool forBackward, CUdeviceptr dlnf,
               CUdeviceptr dhead, const Stream &stream,
               StepProfiler *profiler = nullptr);

  std::int64_t chunkRows() const { return chunk; }
  /// ceil(M / chunkRows).
  std::int64_t chunks() const { return (rows + chunk - 1) / chunk; }
  /// "LM head loss (rows 2000, vocab 301, channels 128, bf16, chunks of 7
  /// rows)": how errors name this head.
  std::string describe() const;

private:
  std::int64_t rows, vocab, channels;
  DType dtype;
  std::int64_t chunk;
  Matmul &matmul;
  const TrainKernels &kernels;
  DeviceBuffer logits;  // f32 [chunk, V]
  DeviceBuffer dlogits; // dtype [chunk, V]
};

} // namespace fa::train

#endif // FA_TRAIN_LOSSHEAD_H
