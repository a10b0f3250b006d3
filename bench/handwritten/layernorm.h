//===- layernorm.h - Hand-written LayerNorm kernels -------------*- C++ -*-===//
//
// Hand-written CUDA C++ LayerNorm, forward and backward, for the H100
// (sm_90a): the baseline the generated kernels are benchmarked against. They
// compute what the kernel library's do (fa/runtime/LayerNorm.h) and what
// fa/runtime/LayerNormReference.h checks, over the rows of x [rows, cols]
// (shapes and dtypes as fa/runtime/LayerNormShape.h has them), in f32:
//
//   forward   mean_i  = sum_j x_ij / N
//             rstd_i  = 1 / sqrt(sum_j (x_ij - mean_i)^2 / N + eps)
//             y_ij    = (x_ij - mean_i) * rstd_i * weight_j + bias_j
//             y in x's dtype; mean and rstd saved, f32 [rows].
//   backward  from the saved mean and rstd and the incoming gradient dy:
//             xhat_ij = (x_ij - mean_i) * rstd_i,  g_ij = dy_ij * weight_j
//             dx_ij   = rstd_i * (g_ij - mean_j(g_ij) - xhat_ij *
//                       mean_j(g_ij * xhat_ij))                 x's dtype
//             dweight_j = sum_i dy_ij * xhat_ij, dbias_j = sum_i dy_ij   f32
//
// How rows map to threads (RowLayout): a row is read with 16-byte accesses
// when its length allows (N a multiple of 8 for bf16/f16, of 4 for f32), else
// element by element. Rows that fit stay in registers ("resident"): a group
// of 4..32 threads of one warp per row for short rows (reductions by xor
// shuffles), a whole block of 64..1024 threads per row for long ones
// (shuffles, then shared memory); the forward reads x once, the backward x
// and dy once. Longer rows are looped over by a block and read twice (from
// L2 where they fit there).
//
// The backward writes dx in the same pass that reduces the row and keeps its
// threads' column sums of dy * xhat and dy in registers across the rows it
// handles; each block writes one row of partial sums, which a second kernel
// adds up (no atomics). Resident backward grids are persistent: as many
// blocks as the GPU runs at once, looping over the rows. For rows too long
// to keep, a first kernel reduces each row to sum(g) and sum(g * xhat) and a
// second one, over column tiles and groups of rows, writes dx and the
// partial sums.
//
// Launches are asynchronous on the given stream, in the current context (the
// runtime's primary context, Context.h); a launch that fails throws fa::Error
// naming the kernel and its grid, an execution error shows at the next
// synchronisation.
//
//===----------------------------------------------------------------------===//

#ifndef FA_BENCH_HANDWRITTEN_LAYERNORM_H
#define FA_BENCH_HANDWRITTEN_LAYERNORM_H

#include "fa/runtime/Context.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/LayerNormShape.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fa::handwritten {

/// How a kernel spreads the rows of x over threads.
struct RowLayout {
  /// Elements per access: 16 bytes' worth when every row starts 16-byte
  /// aligned (cols a multiple of it), else 1.
  int vector = 1;
  /// Threads sharing one row: part of a warp (<= 32) or a whole block.
  int groupThreads = 32;
  /// Vectors each thread holds in registers (resident layouts).
  int chunks = 1;
  int blockThreads = 256;
  /// The row stays in registers, so at most capacity() elements; otherwise
  /// the kernel loops over rows of any length.
  bool resident = true;

  int rowsPerBlock() const { return blockThreads / groupThreads; }
  std::int64_t capacity() const {
    return static_cast<std::int64_t>(groupThreads) * chunks * vector;
  }
  /// "group32_chunks4_vector8", or "loop_vector8".
  std::string name() const;
};

/// The layout the forward (backward) kernel uses for rows of `cols`
/// elements: the resident one of smallest capacity that holds the row, else
/// a loop.
RowLayout forwardLayout(DType dtype, std::int64_t cols);
RowLayout backwardLayout(DType dtype, std::int64_t cols);

/// The forward kernel bound to one problem and its buffers (x, weight, bias
/// in, y, mean, rstd out), chosen once, so that repeated launches cost only
/// the launch.
class LayerNormForward {
public:
  /// Throws for shapes the kernels cannot index (cols >= 2^30).
  LayerNormForward(DType dtype, const LayerNormShape &shape, double eps,
                   const LayerNormForwardBuffers &buffers);

  void enqueue(cudaStream_t stream) const { launch(stream); }

  const RowLayout &layout() const { return rowLayout; }
  /// "handwritten_layernorm_fwd_bf16_group32_chunks4_vector8".
  const std::string &kernelName() const { return name; }

private:
  RowLayout rowLayout;
  std::string name;
  /// Launches the kernel on the bound buffers; throws, naming the kernel
  /// and its grid, when the launch fails.
  std::function<void(cudaStream_t)> launch;
};

/// The backward kernels bound to one problem and its buffers (x, weight,
/// mean, rstd, dy in; dx, dweight, dbias out); owns the partial sums (and for
/// non-resident rows the row sums) between them.
class LayerNormBackward {
public:
  /// Sizes the grid from the kernel's occupancy on `device`, which must be
  /// the current context's GPU. Throws for shapes the kernels cannot index.
  LayerNormBackward(DType dtype, const LayerNormShape &shape,
                    const LayerNormBackwardBuffers &buffers,
                    const DeviceInfo &device);

  /// Launches the kernels in order on `stream`.
  void enqueue(cudaStream_t stream) const { launch(stream); }

  /// Sets every byte of the workspace to `value` (0xFF: NaN), so that any
  /// partial sum the backward kernel fails to write reaches dweight or dbias.
  void fillWorkspace(std::uint8_t value, cudaStream_t stream);

  const RowLayout &layout() const { return plan.layout; }
  /// The kernel that writes dx and the partial sums.
  const std::string &kernelName() const { return plan.name; }
  const std::string &paramsKernelName() const { return plan.paramsName; }
  /// Blocks of the kernel that writes dx and the partial sums.
  std::int64_t blocks() const {
    return static_cast<std::int64_t>(plan.grid.x) * plan.grid.y;
  }
  /// Rows of partial sums the params kernel adds up.
  std::int64_t partialRows() const { return plan.partialRows; }

  /// The kernels and grids for one problem, chosen before any allocation.
  struct Plan {
    RowLayout layout;
    std::string name, paramsName;
    dim3 grid;
    std::int64_t partialRows = 0;
    std::int64_t rowsPerGroup = 0; // Non-resident: rows per block of rows.
  };

private:
  Plan plan;
  DeviceBuffer partialDweight, partialDbias;
  std::optional<DeviceBuffer> rowSums; // Non-resident only.
  std::function<void(cudaStream_t)> launch;
};

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_LAYERNORM_H
