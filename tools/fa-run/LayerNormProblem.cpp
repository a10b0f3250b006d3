//===- LayerNormProblem.cpp -----------------------------------------------===//

#include "LayerNormProblem.h"

#include "HostTensors.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/LayerNormReference.h"
#include "fa/runtime/Nvtx.h"

#include <random>
#include <vector>

namespace fa {
namespace {

std::size_t matrixBytes(const LayerNormShape &shape, DType dtype) {
  return static_cast<std::size_t>(elementCount(shape.matrix())) *
         dtypeBytes(dtype);
}

std::size_t rowBytes(const LayerNormShape &shape, DType dtype) {
  return static_cast<std::size_t>(shape.cols) * dtypeBytes(dtype);
}

std::size_t perRowBytes(const LayerNormShape &shape) {
  return static_cast<std::size_t>(shape.rows) * sizeof(float);
}

LayerNormBench benchReport(const Timing &timing, int bufferSets, double bytes) {
  return {timing, bufferSets, bytes, bytes / (timing.medianMs * 1e-3) / 1e9};
}

} // namespace

LayerNormProblem sizedLayerNormProblem(const LayerNormShape &shape) {
  shape.validate();
  LayerNormProblem problem;
  problem.shape = shape;
  problem.xShape = shape.matrix();
  return problem;
}

std::vector<RunInput> layerNormInputs(LayerNormProblem &problem,
                                      LayerNormForwardTensors &forward,
                                      LayerNormBackwardTensors *backward) {
  const LayerNormShape &shape = problem.shape;
  std::vector<RunInput> inputs = {{forward.x, problem.x, shape.matrix()},
                                  {forward.weight, problem.weight, shape.row()},
                                  {forward.bias, problem.bias, shape.row()}};
  if (backward)
    inputs.push_back({backward->dy, problem.dy, shape.matrix()});
  return inputs;
}

LayerNormForwardTensors::LayerNormForwardTensors(const LayerNormShape &shape,
                                                 DType dtype)
    : x("x", matrixBytes(shape, dtype)),
      weight("weight", rowBytes(shape, dtype)),
      bias("bias", rowBytes(shape, dtype)), y("y", matrixBytes(shape, dtype)),
      mean("mean", perRowBytes(shape)), rstd("rstd", perRowBytes(shape)) {}

LayerNormBackwardTensors::LayerNormBackwardTensors(const LayerNormShape &shape,
                                                   DType dtype)
    : dy("dy", matrixBytes(shape, dtype)), dx("dx", matrixBytes(shape, dtype)),
      dweight("dweight", rowBytes(shape, DType::F32)),
      dbias("dbias", rowBytes(shape, DType::F32)) {}

std::size_t layerNormWorkingSetBytes(const LayerNormShape &shape, DType dtype,
                                     bool backward) {
  // x and y (dy and dx), weight and bias (weight, and f32 dweight and
  // dbias), mean and rstd.
  std::size_t rows =
      backward ? rowBytes(shape, dtype) + 2 * rowBytes(shape, DType::F32)
               : 2 * rowBytes(shape, dtype);
  return 2 * matrixBytes(shape, dtype) + rows + 2 * perRowBytes(shape);
}

int layerNormBenchmarkSets(const LayerNormShape &shape, DType dtype,
                           bool backward, const DeviceInfo &device) {
  return rotationCopies(layerNormWorkingSetBytes(shape, dtype, backward),
                        device.l2CacheBytes, kMaxBufferSets);
}

void runForward(const Kernel &kernel, const LayerNormShape &shape, double eps,
                LayerNormForwardTensors &tensors, const Stream &stream,
                LayerNormOutputs &outputs, bool download) {
  NvtxRange range{"layernorm forward"};
  for (DeviceBuffer *output : {&tensors.y, &tensors.mean, &tensors.rstd})
    output->fill(kNaNBytes, stream.get());
  LayerNormForwardLaunch(kernel, shape, tensors.buffers(), eps).enqueue(stream);
  stream.synchronize();
  if (!download)
    return;
  DType dtype = kernel.spec().dtype;
  outputs.y = fa::download(tensors.y, shape.matrix(), dtype);
  outputs.mean = fa::download(tensors.mean, shape.perRow(), DType::F32);
  outputs.rstd = fa::download(tensors.rstd, shape.perRow(), DType::F32);
}

void runBackward(const Kernel &backward, const Kernel &params,
                 const LayerNormShape &shape,
                 const LayerNormForwardTensors &forward,
                 LayerNormBackwardTensors &tensors, const Stream &stream,
                 LayerNormOutputs &outputs, bool download) {
  NvtxRange range{"layernorm backward"};
  LayerNormBackwardLaunch launch(backward, params, shape,
                                 tensors.buffers(forward));
  for (DeviceBuffer *output : {&tensors.dx, &tensors.dweight, &tensors.dbias})
    output->fill(kNaNBytes, stream.get());
  launch.fillPartials(kNaNBytes, stream);
  launch.enqueue(stream);
  stream.synchronize();
  outputs.backwardBlocks = launch.blocks();
  if (!download)
    return;
  outputs.dx = fa::download(tensors.dx, shape.matrix(), backward.spec().dtype);
  outputs.dweight = fa::download(tensors.dweight, shape.row(), DType::F32);
  outputs.dbias = fa::download(tensors.dbias, shape.row(), DType::F32);
}

LayerNormCheck checkLayerNorm(const LayerNormProblem &problem,
                              const LayerNormOutputs &outputs, DType dtype,
                              double eps, bool backward,
                              double relativeTolerance) {
  NvtxRange range{"check layernorm"};
  const LayerNormShape &shape = problem.shape;
  LayerNormForwardReference forward = referenceLayerNormForward(
      shape, problem.x.values, problem.weight.values, problem.bias.values, eps);
  LayerNormCheck check;
  check.outputs = {compareLayerNormOutput("y", outputs.y, forward.y, dtype,
                                          relativeTolerance),
                   compareLayerNormOutput("mean", outputs.mean, forward.mean,
                                          DType::F32, relativeTolerance),
                   compareLayerNormOutput("rstd", outputs.rstd, forward.rstd,
                                          DType::F32, relativeTolerance)};
  if (!backward)
    return check;
  LayerNormBackwardReference gradients = referenceLayerNormBackward(
      shape, problem.x.values, problem.weight.values, problem.dy.values, eps);
  check.outputs.push_back(compareLayerNormOutput("dx", outputs.dx, gradients.dx,
                                                 dtype, relativeTolerance));
  check.outputs.push_back(compareLayerNormOutput("dweight", outputs.dweight,
                                                 gradients.dweight, DType::F32,
                                                 relativeTolerance));
  check.outputs.push_back(compareLayerNormOutput(
      "dbias", outputs.dbias, gradients.dbias, DType::F32, relativeTolerance));
  return check;
}

LayerNormBench benchmarkForward(const Kernel &kernel,
                                const LayerNormShape &shape, double eps,
                                const DeviceInfo &device,
                                const LayerNormForwardTensors &inputs,
                                const Stream &stream, int warmup, int runs) {
  NvtxRange range{"benchmark forward"};
  // Rotate through copies of the tensors so each run reads its inputs from
  // memory rather than from an L2 warmed by the previous run.
  DType dtype = kernel.spec().dtype;
  int copies = layerNormBenchmarkSets(shape, dtype, /*backward=*/false, device);
  std::vector<LayerNormForwardTensors> extraSets;
  std::vector<LayerNormForwardLaunch> launches;
  launches.emplace_back(kernel, shape, inputs.buffers(), eps);
  for (int copy = 1; copy < copies; ++copy) {
    LayerNormForwardTensors &set = extraSets.emplace_back(shape, dtype);
    set.x.copyFrom(inputs.x);
    set.weight.copyFrom(inputs.weight);
    set.bias.copyFrom(inputs.bias);
    launches.emplace_back(kernel, shape, set.buffers(), eps);
  }
  return benchReport(timeRotating(launches, stream, warmup, runs), copies,
                     shape.forwardBytes(dtype));
}

LayerNormBench benchmarkBackward(const Kernel &backward, const Kernel &params,
                                 const LayerNormShape &shape,
                                 const DeviceInfo &device,
                                 const LayerNormForwardTensors &forward,
                                 const LayerNormBackwardTensors &inputs,
                                 const Stream &stream, int warmup, int runs) {
  NvtxRange range{"benchmark backward"};
  DType dtype = backward.spec().dtype;
  int copies = layerNormBenchmarkSets(shape, dtype, /*backward=*/true, device);
  std::vector<LayerNormForwardTensors> extraForwardSets;
  std::vector<LayerNormBackwardTensors> extraSets;
  std::vector<LayerNormBackwardLaunch> launches;
  launches.emplace_back(backward, params, shape, inputs.buffers(forward));
  for (int copy = 1; copy < copies; ++copy) {
    LayerNormForwardTensors &forwardSet =
        extraForwardSets.emplace_back(shape, dtype);
    LayerNormBackwardTensors &set = extraSets.emplace_back(shape, dtype);
    forwardSet.x.copyFrom(forward.x);
    forwardSet.weight.copyFrom(forward.weight);
    forwardSet.mean.copyFrom(forward.mean);
    forwardSet.rstd.copyFrom(forward.rstd);
    set.dy.copyFrom(inputs.dy);
    launches.emplace_back(backward, params, shape, set.buffers(forwardSet));
  }
  return benchReport(timeRotating(launches, stream, warmup, runs), copies,
                     shape.backwardBytes(dtype));
}

} // namespace fa
