//===- AttentionProblem.h - Running one attention problem -------*- C++ -*-===//
//
// What `fa-run attention` and `fa-run tune` share: random problems, their
// device tensors, one checked run and a benchmark.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_ATTENTIONPROBLEM_H
#define FA_RUN_ATTENTIONPROBLEM_H

#include "AttentionReport.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace fa {

struct Problem {
  AttentionShape shape;
  HostTensor q, k, v; // Rounded to the kernel's dtype.
};

/// One set of device tensors for a problem.
struct DeviceTensors {
  DeviceBuffer q, k, v, out, lse;

  DeviceTensors(const AttentionShape &shape, DType dtype);

  AttentionBuffers pointers() const {
    return {q.get(), k.get(), v.get(), out.get(), lse.get()};
  }
  std::size_t bytes() const {
    return q.bytes() + k.bytes() + v.bytes() + out.bytes() + lse.bytes();
  }
  /// Uploads the problem's q, k and v.
  void upload(const Problem &problem, DType dtype);
};

struct Outputs {
  HostTensor out, lse;
};

/// The relative error --check accepts by default for a kernel dtype.
double defaultRelativeTolerance(DType dtype);

/// Random normal q, k and v, rounded to `dtype`.
Problem randomProblem(const AttentionShape &shape, DType dtype,
                      std::uint64_t seed);

/// Runs `kernel` once on outputs poisoned with NaN and downloads them.
Outputs runOnce(const Kernel &kernel, const Problem &problem,
                DeviceTensors &tensors, const Stream &stream);

/// Compares `outputs` with the fp64 reference, on the CPU or the GPU.
CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance);

/// The median of `runs` timed launches after `warmup` untimed ones, inputs
/// rotated across copies of `inputs` spanning 2x L2.
BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs);

} // namespace fa

#endif // FA_RUN_ATTENTIONPROBLEM_H
