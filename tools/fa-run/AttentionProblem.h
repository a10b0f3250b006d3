//===- AttentionProblem.h - Running one attention problem -------*- C++ -*-===//
//
// What `fa-run attention` and `fa-run tune` share: random problems, their
// device tensors, one checked run of the forward (and of the backward) and
// benchmarks.
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
  HostTensor dout;    // Backward problems only; shaped like out.
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

/// The backward's own device tensors; it also reads the forward's q, k, v,
/// out and lse.
struct BackwardTensors {
  DeviceBuffer dout, dq, dk, dv;

  BackwardTensors(const AttentionShape &shape, DType dtype);

  AttentionBackwardBuffers pointers(const DeviceTensors &forward) const {
    return {forward.q.get(),   forward.k.get(),   forward.v.get(),
            forward.out.get(), forward.lse.get(), dout.get(),
            dq.get(),          dk.get(),          dv.get()};
  }
  /// Everything the backward touches but delta.
  std::size_t bytes(const DeviceTensors &forward) const {
    return forward.bytes() + dout.bytes() + dq.bytes() + dk.bytes() +
           dv.bytes();
  }
};

/// The backward's three kernels, loaded.
struct BackwardKernels {
  Kernel delta, dkdv, dq;

  BackwardKernels(const AttentionBackwardKernels &specs,
                  const DeviceInfo &device);
};

struct Outputs {
  HostTensor out, lse;
  HostTensor dq, dk, dv; // When the backward ran.
};

/// Random normal q, k, v and, for `backward`, dout, rounded to `dtype`
/// (q, k and v are the same either way).
Problem randomProblem(const AttentionShape &shape, DType dtype,
                      std::uint64_t seed, bool backward = false);

/// Runs `kernel` once on outputs poisoned with NaN and downloads them.
Outputs runOnce(const Kernel &kernel, const Problem &problem,
                DeviceTensors &tensors, const Stream &stream);

/// Runs the backward once, after the forward has written out and lse, on
/// gradients (and delta) poisoned with NaN; downloads dq, dk and dv into
/// `outputs`.
void runBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                 const DeviceTensors &forward, BackwardTensors &tensors,
                 const Stream &stream, Outputs &outputs);

/// Compares out and lse with the fp64 reference, on the CPU or the GPU.
CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance);

/// Compares dq, dk and dv with the fp64 reference, on the CPU or the GPU;
/// `spec` is the attention_bwd kernel.
GradientCheck checkGradients(const Problem &problem, const KernelSpec &spec,
                             const DeviceTensors &forward,
                             const BackwardTensors &tensors,
                             const Outputs &outputs, const Stream &stream,
                             bool onCpu, double relativeTolerance);

/// The median of `runs` timed launches after `warmup` untimed ones, inputs
/// rotated across copies of `inputs` spanning 2x L2.
BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs);

/// The same for the backward: each run launches its three kernels. Then
/// each kernel alone, with the same buffer sets, warmup and runs, into the
/// report's `kernels`.
BenchReport benchmarkBackward(const BackwardKernels &kernels,
                              const AttentionShape &shape,
                              const DeviceInfo &device,
                              const DeviceTensors &forward,
                              const BackwardTensors &inputs,
                              const Stream &stream, int warmup, int runs);

} // namespace fa

#endif // FA_RUN_ATTENTIONPROBLEM_H
