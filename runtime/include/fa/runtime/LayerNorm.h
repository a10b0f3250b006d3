//===- LayerNorm.h - Choosing and launching LayerNorm kernels ---*- C++ -*-===//
//
// The kernel library holds three LayerNorm ops per dtype (the element type of
// x; shapes as LayerNormShape.h says):
//
//   layernorm_fwd         per row: mean, rstd = 1 / sqrt(biased variance + eps)
//                         (eps an f32 parameter: one kernel serves every
//                         eps), and y = (x - mean) * rstd * weight + bias.
//                         Grid: row_tiles, config.rows rows per block; or,
//                         for a persistent forward, persistent_row_tiles as
//                         below.
//   layernorm_bwd         dx, and per block the sums of dy * xhat and of dy
//                         over the rows it handled, one row of partial sums
//                         per row of a tile: partial_dweight and
//                         partial_dbias are [G * config.rows, cols] f32, and
//                         the kernel writes every element (no memset).
//                         Persistent: G blocks loop over the row tiles with
//                         stride G, so any G >= 1 is correct; the runtime
//                         launches as many as the GPU runs at once, at most
//                         one per row tile.
//   layernorm_bwd_params  dweight and dbias: the column sums of the partials
//                         of the layernorm_bwd kernel that just ran (its
//                         "params_kernel"). Grid: column_tiles.
//
// A kernel with config resident = 1 keeps a row on chip and handles rows of
// at most config.block_cols elements; one with resident = 0 handles any.
//
// Residual kernels (fa.layernorm residual/sum, fa.layernorm_grad dresidual;
// the library's names end in _residual) fuse a transformer's residual add:
//
//   layernorm_fwd  with parameters `residual` and `sum` (x's shape and dtype):
//                  sum = x + residual (added in f32, stored rounded to the
//                  dtype), then the forward above on sum as stored, so that
//                  the backward, given sum as its x, sees what was
//                  normalised. sum may be x or residual.
//   layernorm_bwd  with parameter `dresidual` (x's shape and dtype):
//                  dx = dresidual + the backward's dx (added in f32, rounded
//                  once). dresidual may be dx: each element is read, then
//                  written, by the same thread.
//
// A kernel is residual or plain by those parameters; chooseLayerNormKernel
// picks among the kind asked for, and the launches check that the buffers
// given (residual/sum, dresidual: all 0 for a plain kernel, set for a
// residual one) match the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LAYERNORM_H
#define FA_RUNTIME_LAYERNORM_H

#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/LayerNormShape.h"
#include "fa/runtime/Stream.h"

#include <cstdint>

namespace fa {

/// Whether `spec` is a residual LayerNorm kernel: a layernorm_fwd kernel
/// taking `residual` and `sum`, or a layernorm_bwd kernel taking
/// `dresidual`. Throws for a layernorm_fwd kernel with only one of residual
/// and sum.
bool isResidualLayerNormKernel(const KernelSpec &spec);

/// The kernel of `op` (layernorm_fwd or layernorm_bwd) for rows of `cols`
/// elements of `dtype`, among the residual kernels when `residual` is set,
/// else among the plain ones: of the resident kernels, the one with the
/// smallest block_cols >= cols (the first in manifest order on ties); if
/// none holds such rows, the first non-resident kernel. eps plays no part:
/// it is a parameter of the forward kernels. Throws, saying what the library
/// has, when no kernel fits (a library built before residual kernels existed
/// has none: rebuild it).
const KernelSpec &chooseLayerNormKernel(const KernelLibrary &library,
                                        const std::string &op, DType dtype,
                                        std::int64_t cols,
                                        bool residual = false);

/// The kernel called `name` (a user's `--kernel`), checked as
/// chooseLayerNormKernel would choose it: op, dtype, and for a resident
/// kernel rows of at most block_cols. Throws, naming the kernels that would
/// do, otherwise.
const KernelSpec &namedLayerNormKernel(const KernelLibrary &library,
                                       const std::string &op, DType dtype,
                                       std::int64_t cols,
                                       const std::string &name);

/// `eps` as the forward kernels take it, in f32. Throws unless it is
/// positive and finite and stays so once rounded to f32 (1e-50 would be 0,
/// 1e39 infinity).
float layerNormEps(double eps);

/// The layernorm_bwd_params kernel that `backward` names.
const KernelSpec &layerNormParamsKernel(const KernelLibrary &library,
                                        const KernelSpec &backward);

/// ceil(rows / config.rows): the row tiles of a forward or backward kernel.
std::int64_t layerNormRowTiles(const KernelSpec &spec,
                               const LayerNormShape &shape);

/// G, the blocks of a persistent kernel (grid persistent_row_tiles): its row
/// tiles, but no more than the `residentBlocks` the GPU runs at once. Throws
/// when not even one block of the kernel fits on the GPU.
std::int64_t persistentBlocks(const KernelSpec &kernel,
                              const LayerNormShape &shape,
                              std::int64_t residentBlocks);

/// The forward's grid: row_tiles, or persistent_row_tiles when `kernel` is
/// persistent (which asks the GPU how many of its blocks fit). Throws unless
/// `kernel` is a layernorm_fwd kernel that handles the problem's rows.
Dim3 layerNormForwardGrid(const Kernel &kernel, const LayerNormShape &shape);

/// G for `backward`, after checking that it is a layernorm_bwd kernel that
/// handles the problem's rows.
std::int64_t layerNormBackwardBlocks(const Kernel &backward,
                                     const LayerNormShape &shape);

/// The params kernel's grid (column_tiles), after checking that `params` is
/// the kernel `backward` names.
Dim3 layerNormParamsGrid(const Kernel &params, const KernelSpec &backward,
                         const LayerNormShape &shape);

/// Bytes of one [G * config.rows, cols] f32 partial-sum array of `backward`
/// run as `blocks` blocks.
std::size_t layerNormPartialBytes(const KernelSpec &backward,
                                  std::int64_t blocks,
                                  const LayerNormShape &shape);

/// Device tensors of a forward pass. `residual` and `sum` (both or neither;
/// 0 = none) are for a residual kernel: sum = x + residual is what is
/// normalised (and what the backward takes as x). sum may equal x or
/// residual.
struct LayerNormForwardBuffers {
  CUdeviceptr x = 0;
  CUdeviceptr weight = 0;
  CUdeviceptr bias = 0;
  CUdeviceptr y = 0;
  CUdeviceptr mean = 0;
  CUdeviceptr rstd = 0;
  CUdeviceptr residual = 0;
  CUdeviceptr sum = 0;
};

/// Device tensors of a backward pass: the forward's x (its sum for a
/// residual forward), weight, mean and rstd, the incoming gradient dy, and
/// the gradients it computes. `dresidual` (0 = none) is for a residual
/// kernel: added to dx; it may equal dx.
struct LayerNormBackwardBuffers {
  CUdeviceptr x = 0;
  CUdeviceptr weight = 0;
  CUdeviceptr mean = 0;
  CUdeviceptr rstd = 0;
  CUdeviceptr dy = 0;
  CUdeviceptr dx = 0;
  CUdeviceptr dweight = 0;
  CUdeviceptr dbias = 0;
  CUdeviceptr dresidual = 0;
};

/// Throws unless the buffers suit `kernel`: residual and sum both set for a
/// residual forward kernel, both 0 for a plain one (one without the other is
/// an error either way); dresidual set for a residual backward kernel, 0 for
/// a plain one. The messages say which kernel to choose instead.
void checkLayerNormBuffers(const KernelSpec &kernel,
                           const LayerNormForwardBuffers &buffers);
void checkLayerNormBuffers(const KernelSpec &kernel,
                           const LayerNormBackwardBuffers &buffers);

/// The backward's f32 workspaces, both [rows, cols].
struct LayerNormPartials {
  CUdeviceptr dweight = 0;
  CUdeviceptr dbias = 0;
  std::int64_t rows = 0; // G * config.rows of the backward kernel.
};

/// The kernel arguments by parameter name: x, weight, bias, y, and residual
/// and sum when set (`dtype`), mean, rstd (f32 tensors) and eps (an f32
/// value).
ArgBindings layerNormForwardBindings(DType dtype, const LayerNormShape &shape,
                                     const LayerNormForwardBuffers &buffers,
                                     float eps);
/// x, weight, dy, dx, and dresidual when set (`dtype`), mean, rstd,
/// partial_dweight, partial_dbias (f32).
ArgBindings layerNormBackwardBindings(DType dtype, const LayerNormShape &shape,
                                      const LayerNormBackwardBuffers &buffers,
                                      const LayerNormPartials &partials);
/// partial_dweight, partial_dbias, dweight, dbias (all f32).
ArgBindings layerNormParamsBindings(const LayerNormShape &shape,
                                    const LayerNormBackwardBuffers &buffers,
                                    const LayerNormPartials &partials);

/// A layernorm_fwd kernel bound to one problem and one set of buffers.
/// Packing happens once, so repeated launches (benchmarks) cost only the
/// launch.
class LayerNormForwardLaunch {
public:
  /// Throws unless `kernel` is a layernorm_fwd kernel that handles the
  /// problem's rows, checkLayerNormBuffers accepts the buffers and
  /// layerNormEps accepts `eps`.
  LayerNormForwardLaunch(const Kernel &kernel, const LayerNormShape &shape,
                         const LayerNormForwardBuffers &buffers, double eps);

  void enqueue(const Stream &stream);

private:
  const Kernel &kernel;
  Dim3 grid;
  KernelArgs args;
};

/// A layernorm_bwd kernel and its params kernel bound to one problem and one
/// set of buffers; owns the partial sums between them. enqueue() launches
/// both, in order, on one stream.
class LayerNormBackwardLaunch {
public:
  /// Throws unless `backward` is a layernorm_bwd kernel that handles the
  /// problem's rows, checkLayerNormBuffers accepts the buffers and `params`
  /// is the kernel it names as params_kernel.
  LayerNormBackwardLaunch(const Kernel &backward, const Kernel &params,
                          const LayerNormShape &shape,
                          const LayerNormBackwardBuffers &buffers);

  void enqueue(const Stream &stream);

  /// Sets every byte of the partial sums to `value`: with 0xFF (NaN), any
  /// element the backward kernel fails to write reaches dweight or dbias.
  void fillPartials(std::uint8_t value, const Stream &stream);

  /// G, the blocks of the backward kernel.
  std::int64_t blocks() const { return blockCount; }

private:
  const Kernel &backward;
  const Kernel &params;
  std::int64_t blockCount;
  Dim3 backwardGrid;
  Dim3 paramsGrid;
  DeviceBuffer partialDweight;
  DeviceBuffer partialDbias;
  KernelArgs backwardArgs;
  KernelArgs paramsArgs;
};

} // namespace fa

#endif // FA_RUNTIME_LAYERNORM_H
