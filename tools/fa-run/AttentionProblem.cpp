//===- AttentionProblem.cpp -----------------------------------------------===//

#include "AttentionProblem.h"

#include "HostTensors.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Reference.h"

#include <random>
#include <vector>

namespace fa {
DeviceTensors::DeviceTensors(const AttentionShape &shape, DType dtype)
    : q("q", elementCount(shape.query()) * dtypeBytes(dtype)),
      k("k", elementCount(shape.keyValue()) * dtypeBytes(dtype)),
      v("v", elementCount(shape.keyValue()) * dtypeBytes(dtype)),
      out("out", elementCount(shape.query()) * dtypeBytes(dtype)),
      lse("lse", elementCount(shape.logSumExp()) * sizeof(float)) {}

void DeviceTensors::upload(const Problem &problem, DType dtype) {
  q.upload(encode(problem.q.values, dtype));
  k.upload(encode(problem.k.values, dtype));
  v.upload(encode(problem.v.values, dtype));
}

double defaultRelativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return 2e-2;
  case DType::F16:
    return 5e-3;
  case DType::F32:
    return 2e-3; // Allows kernels that use TF32 tensor cores.
  }
  return 0;
}

Problem randomProblem(const AttentionShape &shape, DType dtype,
                      std::uint64_t seed) {
  shape.validate();
  std::mt19937_64 rng(seed);
  Problem problem;
  problem.shape = shape;
  problem.q = randomTensor(shape.query(), dtype, rng);
  problem.k = randomTensor(shape.keyValue(), dtype, rng);
  problem.v = randomTensor(shape.keyValue(), dtype, rng);
  return problem;
}

Outputs runOnce(const Kernel &kernel, const Problem &problem,
                DeviceTensors &tensors, const Stream &stream) {
  // Poison the outputs so that anything the kernel leaves unwritten is NaN.
  tensors.out.fill(kNaNBytes, stream.get());
  tensors.lse.fill(kNaNBytes, stream.get());
  AttentionLaunch(kernel, problem.shape, tensors.pointers()).enqueue(stream);
  stream.synchronize();
  DType dtype = kernel.spec().dtype;
  return {
      {problem.shape.query(), decode(tensors.out.download(), dtype)},
      {problem.shape.logSumExp(), decode(tensors.lse.download(), DType::F32)}};
}

CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance) {
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

BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs) {
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
  BenchReport bench;
  bench.bufferSets = copies;
  bench.timing = timeOnStream(stream, warmup, runs, [&](int run) {
    launches[run % launches.size()].enqueue(stream);
  });
  bench.tflops =
      shape.flops(kernel.spec().causal) / (bench.timing.medianMs * 1e-3) / 1e12;
  return bench;
}

} // namespace fa
