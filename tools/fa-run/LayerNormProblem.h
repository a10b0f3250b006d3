//===- LayerNormProblem.h - Running one LayerNorm problem -------*- C++ -*-===//
//
// What `fa-run layernorm` does with a problem: random inputs, device tensors,
// one run of the forward (and backward) on poisoned outputs, the comparison
// with the fp64 reference, and benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_LAYERNORMPROBLEM_H
#define FA_RUN_LAYERNORMPROBLEM_H

#include "HostTensors.h"
#include "LayerNormReport.h"

#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace fa {

struct LayerNormProblem {
  LayerNormShape shape;
  /// x's shape as given; y and dx are written with it, mean and rstd with its
  /// leading dimensions.
  Shape xShape;
  HostTensor x, weight, bias; // Rounded to the kernel's dtype.
  HostTensor dy;              // Backward problems only.
};

/// A problem of these sizes whose inputs are drawn on the device
/// (drawRandomInputs); its host tensors stay empty until downloadInputs.
LayerNormProblem sizedLayerNormProblem(const LayerNormShape &shape);

/// The forward pass's device tensors.
struct LayerNormForwardTensors {
  DeviceBuffer x, weight, bias, y, mean, rstd;

  LayerNormForwardTensors(const LayerNormShape &shape, DType dtype);
  LayerNormForwardBuffers buffers() const {
    return {x.get(), weight.get(), bias.get(), y.get(), mean.get(), rstd.get()};
  }
};

/// The backward pass's own device tensors; it also reads the forward's x,
/// weight, mean and rstd.
struct LayerNormBackwardTensors {
  DeviceBuffer dy, dx, dweight, dbias;

  LayerNormBackwardTensors(const LayerNormShape &shape, DType dtype);
  LayerNormBackwardBuffers
  buffers(const LayerNormForwardTensors &forward) const {
    return {forward.x.get(),    forward.weight.get(),
            forward.mean.get(), forward.rstd.get(),
            dy.get(),           dx.get(),
            dweight.get(),      dbias.get()};
  }
};

/// The bytes of the device tensors the forward works on (x, weight, bias, y,
/// mean, rstd) or, with `backward`, the backward (x, weight, mean, rstd, dy,
/// dx, dweight, dbias; the partial sums aside): one buffer set of its
/// benchmark, known before allocating.
std::size_t layerNormWorkingSetBytes(const LayerNormShape &shape, DType dtype,
                                     bool backward);

/// The buffer sets benchmarkForward() (with `backward`, benchmarkBackward())
/// rotates through on `device`.
int layerNormBenchmarkSets(const LayerNormShape &shape, DType dtype,
                           bool backward, const DeviceInfo &device);

/// x [rows, cols], weight and bias (with `backward`, dy too) as the run's
/// inputs, in the order of their random tensors (HostTensors.h).
std::vector<RunInput> layerNormInputs(LayerNormProblem &problem,
                                      LayerNormForwardTensors &forward,
                                      LayerNormBackwardTensors *backward);

struct LayerNormOutputs {
  HostTensor y, mean, rstd;      // The forward's.
  HostTensor dx, dweight, dbias; // The backward's, when it ran.
  std::int64_t backwardBlocks = 0;
};

/// Runs the forward kernel once with `eps` on poisoned outputs; downloads y,
/// mean and rstd into `outputs` when `download` (a check or output files).
void runForward(const Kernel &kernel, const LayerNormShape &shape, double eps,
                LayerNormForwardTensors &tensors, const Stream &stream,
                LayerNormOutputs &outputs, bool download = true);

/// Runs the backward kernels once on poisoned outputs (and partial sums),
/// after the forward has filled mean and rstd; downloads dx, dweight and
/// dbias into `outputs` when `download`.
void runBackward(const Kernel &backward, const Kernel &params,
                 const LayerNormShape &shape,
                 const LayerNormForwardTensors &forward,
                 LayerNormBackwardTensors &tensors, const Stream &stream,
                 LayerNormOutputs &outputs, bool download = true);

/// Compares every output that ran with the fp64 reference on the CPU.
/// `relativeTolerance` 0 takes each output's default.
LayerNormCheck checkLayerNorm(const LayerNormProblem &problem,
                              const LayerNormOutputs &outputs, DType dtype,
                              double eps, bool backward,
                              double relativeTolerance);

/// The median of `runs` timed forward launches after `warmup` untimed ones,
/// inputs rotated across copies spanning 2x L2.
LayerNormBench benchmarkForward(const Kernel &kernel,
                                const LayerNormShape &shape, double eps,
                                const DeviceInfo &device,
                                const LayerNormForwardTensors &inputs,
                                const Stream &stream, int warmup, int runs);

/// The same for the backward: each run launches the backward kernel and its
/// params kernel.
LayerNormBench benchmarkBackward(const Kernel &backward, const Kernel &params,
                                 const LayerNormShape &shape,
                                 const DeviceInfo &device,
                                 const LayerNormForwardTensors &forward,
                                 const LayerNormBackwardTensors &inputs,
                                 const Stream &stream, int warmup, int runs);

} // namespace fa

#endif // FA_RUN_LAYERNORMPROBLEM_H
