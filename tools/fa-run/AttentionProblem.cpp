//===- AttentionProblem.cpp -----------------------------------------------===//

#include "AttentionProblem.h"

#include "HostTensors.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/Reference.h"

#include <random>
#include <tuple>
#include <vector>

namespace fa {
namespace {

/// Times `launches[run % size]`: each run on the next buffer set.
template <typename Launch>
Timing timeRotating(std::vector<Launch> &launches, const Stream &stream,
                    int warmup, int runs) {
  return timeOnStream(stream, warmup, runs, [&](int run) {
    launches[run % launches.size()].enqueue(stream);
  });
}

/// Times `launches` as timeRotating does and counts `flops` per run.
template <typename Launch>
BenchReport timeLaunches(std::vector<Launch> &launches, double flops,
                         const Stream &stream, int warmup, int runs) {
  BenchReport bench;
  bench.bufferSets = static_cast<int>(launches.size());
  bench.timing = timeRotating(launches, stream, warmup, runs);
  bench.flops = flops;
  bench.tflops = flops / (bench.timing.medianMs * 1e-3) / 1e12;
  return bench;
}

/// One kernel of a backward launch, launched alone.
struct BackwardStageLaunch {
  AttentionBackwardLaunch *launch;
  AttentionBackwardStage stage;

  void enqueue(const Stream &stream) { launch->enqueue(stage, stream); }
};

} // namespace

DeviceTensors::DeviceTensors(const AttentionShape &shape, DType dtype)
    : q("q", tensorBytes(shape.query(), dtype)),
      k("k", tensorBytes(shape.keyValue(), dtype)),
      v("v", tensorBytes(shape.keyValue(), dtype)),
      out("out", tensorBytes(shape.query(), dtype)),
      lse("lse", tensorBytes(shape.logSumExp(), DType::F32)) {}

void DeviceTensors::upload(const Problem &problem, DType dtype) {
  NvtxRange range{"upload inputs"};
  q.upload(encode(problem.q.values, dtype));
  k.upload(encode(problem.k.values, dtype));
  v.upload(encode(problem.v.values, dtype));
}

BackwardTensors::BackwardTensors(const AttentionShape &shape, DType dtype)
    : dout("dout", tensorBytes(shape.query(), dtype)),
      dq("dq", tensorBytes(shape.query(), dtype)),
      dk("dk", tensorBytes(shape.keyValue(), dtype)),
      dv("dv", tensorBytes(shape.keyValue(), dtype)) {}

BackwardKernels::BackwardKernels(const AttentionBackwardKernels &specs,
                                 const DeviceInfo &device)
    : delta(*specs.delta, device), dkdv(*specs.dkdv, device),
      dq(*specs.dq, device) {}

Problem randomProblem(const AttentionShape &shape, DType dtype,
                      std::uint64_t seed, bool backward) {
  NvtxRange range{"random inputs"};
  shape.validate();
  std::mt19937_64 rng(seed);
  Problem problem;
  problem.shape = shape;
  problem.q = randomTensor(shape.query(), dtype, rng);
  problem.k = randomTensor(shape.keyValue(), dtype, rng);
  problem.v = randomTensor(shape.keyValue(), dtype, rng);
  if (backward)
    problem.dout = randomTensor(shape.query(), dtype, rng);
  return problem;
}

Outputs runOnce(const Kernel &kernel, const Problem &problem,
                DeviceTensors &tensors, const Stream &stream) {
  NvtxRange range{"attention forward"};
  // Poison the outputs so that anything the kernel leaves unwritten is NaN.
  tensors.out.fill(kNaNBytes, stream.get());
  tensors.lse.fill(kNaNBytes, stream.get());
  AttentionLaunch(kernel, problem.shape, tensors.pointers()).enqueue(stream);
  stream.synchronize();
  Outputs outputs;
  outputs.out =
      download(tensors.out, problem.shape.query(), kernel.spec().dtype);
  outputs.lse = download(tensors.lse, problem.shape.logSumExp(), DType::F32);
  return outputs;
}

void runBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                 const DeviceTensors &forward, BackwardTensors &tensors,
                 const Stream &stream, Outputs &outputs) {
  NvtxRange range{"attention backward"};
  AttentionBackwardLaunch launch(kernels.delta, kernels.dkdv, kernels.dq, shape,
                                 tensors.pointers(forward));
  for (DeviceBuffer *gradient : {&tensors.dq, &tensors.dk, &tensors.dv})
    gradient->fill(kNaNBytes, stream.get());
  launch.fillDelta(kNaNBytes, stream);
  launch.enqueue(stream);
  stream.synchronize();
  DType dtype = kernels.dq.spec().dtype;
  outputs.dq = download(tensors.dq, shape.query(), dtype);
  outputs.dk = download(tensors.dk, shape.keyValue(), dtype);
  outputs.dv = download(tensors.dv, shape.keyValue(), dtype);
}

CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance) {
  NvtxRange range{"check forward"};
  CheckReport check;
  check.reference = onCpu ? "cpu" : "gpu";
  AttentionReference reference =
      onCpu ? referenceAttentionCpu(problem.shape, problem.q.values,
                                    problem.k.values, problem.v.values,
                                    spec.softmaxScale(), spec.causal)
            : referenceAttentionGpu(problem.shape, spec.dtype, tensors.q.get(),
                                    tensors.k.get(), tensors.v.get(),
                                    spec.softmaxScale(), spec.causal, stream);
  check.relativeTolerance = relativeTolerance;
  check.out = compareWithReference(outputs.out.values, reference.out);
  check.lse = compareWithReference(outputs.lse.values, reference.lse);
  return check;
}

GradientCheck checkGradients(const Problem &problem, const KernelSpec &spec,
                             const DeviceTensors &forward,
                             const BackwardTensors &tensors,
                             const Outputs &outputs, const Stream &stream,
                             bool onCpu, double relativeTolerance) {
  NvtxRange range{"check gradients"};
  AttentionGradReference reference =
      onCpu
          ? referenceAttentionGradCpu(problem.shape, problem.q.values,
                                      problem.k.values, problem.v.values,
                                      problem.dout.values, spec.softmaxScale(),
                                      spec.causal)
          : referenceAttentionGradGpu(problem.shape, spec.dtype,
                                      forward.q.get(), forward.k.get(),
                                      forward.v.get(), tensors.dout.get(),
                                      spec.softmaxScale(), spec.causal, stream);
  return {relativeTolerance,
          compareWithReference(outputs.dq.values, reference.dq),
          compareWithReference(outputs.dk.values, reference.dk),
          compareWithReference(outputs.dv.values, reference.dv)};
}

BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs) {
  NvtxRange range{"benchmark forward"};
  // Rotate through copies of the tensors so each run reads its inputs from
  // memory rather than from an L2 warmed by the previous run.
  int copies =
      rotationCopies(inputs.bytes(), device.l2CacheBytes, kMaxBufferSets);
  std::vector<DeviceTensors> extraSets;
  std::vector<AttentionLaunch> launches;
  launches.emplace_back(kernel, shape, inputs.pointers());
  for (int copy = 1; copy < copies; ++copy) {
    DeviceTensors &set = extraSets.emplace_back(shape, kernel.spec().dtype);
    set.q.copyFrom(inputs.q);
    set.k.copyFrom(inputs.k);
    set.v.copyFrom(inputs.v);
    launches.emplace_back(kernel, shape, set.pointers());
  }
  return timeLaunches(launches, shape.flops(kernel.spec().causal), stream,
                      warmup, runs);
}

BenchReport benchmarkBackward(const BackwardKernels &kernels,
                              const AttentionShape &shape,
                              const DeviceInfo &device,
                              const DeviceTensors &forward,
                              const BackwardTensors &inputs,
                              const Stream &stream, int warmup, int runs) {
  NvtxRange range{"benchmark backward"};
  const KernelSpec &spec = kernels.dq.spec();
  int copies = rotationCopies(inputs.bytes(forward), device.l2CacheBytes,
                              kMaxBufferSets);
  std::vector<DeviceTensors> extraForwardSets;
  std::vector<BackwardTensors> extraSets;
  std::vector<AttentionBackwardLaunch> launches;
  launches.emplace_back(kernels.delta, kernels.dkdv, kernels.dq, shape,
                        inputs.pointers(forward));
  for (int copy = 1; copy < copies; ++copy) {
    DeviceTensors &forwardSet =
        extraForwardSets.emplace_back(shape, spec.dtype);
    BackwardTensors &set = extraSets.emplace_back(shape, spec.dtype);
    forwardSet.q.copyFrom(forward.q);
    forwardSet.k.copyFrom(forward.k);
    forwardSet.v.copyFrom(forward.v);
    forwardSet.out.copyFrom(forward.out);
    forwardSet.lse.copyFrom(forward.lse);
    set.dout.copyFrom(inputs.dout);
    launches.emplace_back(kernels.delta, kernels.dkdv, kernels.dq, shape,
                          set.pointers(forwardSet));
  }
  BenchReport bench = timeLaunches(launches, shape.backwardFlops(spec.causal),
                                   stream, warmup, runs);

  // Then each kernel alone. dkdv and dq read whatever delta the runs before
  // left in their set; their work does not depend on its values.
  for (auto [stage, name, kernel] :
       {std::tuple{AttentionBackwardStage::Delta, "delta", &kernels.delta},
        std::tuple{AttentionBackwardStage::DkDv, "dkdv", &kernels.dkdv},
        std::tuple{AttentionBackwardStage::Dq, "dq", &kernels.dq}}) {
    std::vector<BackwardStageLaunch> stageLaunches;
    for (AttentionBackwardLaunch &launch : launches)
      stageLaunches.push_back({&launch, stage});
    bench.kernels.push_back(
        {name, kernel->spec().name,
         timeRotating(stageLaunches, stream, warmup, runs)});
  }
  return bench;
}

} // namespace fa
