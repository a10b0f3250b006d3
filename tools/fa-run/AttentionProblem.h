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
#include "HostTensors.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fa {

/// A problem's sizes and, where the run needs them on the host (inputs read
/// from files, or a CPU reference), its inputs, rounded to the kernel's
/// dtype. Random inputs are drawn on the device (drawRandomInputs) and
/// downloaded only for a CPU reference.
struct Problem {
  AttentionShape shape;
  HostTensor q, k, v;
  HostTensor dout; // Backward problems only; shaped like out.
  /// The mask and score beyond the kernel's top-left "causal" flag (which
  /// the reference adds from the kernel's spec): plain by default.
  AttentionVariant variant = {};
};

/// A variant's part of the launches: its kernels' extra bindings
/// (VariantArgs::bindings) and the forward's FLOPs, 4 * D * kept pairs
/// (AttentionVariant::flops). Plain runs leave both empty and count
/// AttentionShape::flops.
struct VariantLaunch {
  ArgBindings bindings;
  std::optional<double> forwardFlops;
};

/// Where --check computes its fp64 reference.
enum class ReferenceSite { None, Cpu, Gpu };

/// What a run does beyond the forward on one set of device tensors: what it
/// then needs in memory.
struct AttentionRunNeeds {
  bool backward = false;
  /// Host copies of q, k, v (and dout): read from files, or downloaded for
  /// a CPU reference.
  bool hostInputs = false;
  /// out and lse (with the backward, dq, dk and dv) come back to the host:
  /// for a check or output files.
  bool downloadOutputs = false;
  ReferenceSite reference = ReferenceSite::None;
  /// Buffer sets the benchmark rotates through (0 or 1: no extra sets).
  int benchSets = 0;
  /// The variant's tensors on the device: for its kernels (slopes, doc ids,
  /// a user's tensors), and for a GPU reference (slopes, doc ids, mask).
  std::uint64_t variantBytes = 0;
  std::uint64_t variantReferenceBytes = 0;
  /// A backward whose dkdv kernel sums dQ (fusesDqIntoDkDv): the
  /// dq_accum and dq_semaphores each backward launch (one per buffer set)
  /// owns beside delta; 0 otherwise.
  std::uint64_t fusedDqBytes = 0;
};

/// The device and host memory a run of `shape` will allocate, counted from
/// its sizes alone (overflow-checked), so that it can be checked against
/// what is free before anything is allocated.
MemoryBudget attentionBudget(const AttentionShape &shape, DType dtype,
                             const AttentionRunNeeds &needs);

/// One set of device tensors for a problem.
struct DeviceTensors {
  DeviceBuffer q, k, v, out, lse;

  DeviceTensors(const AttentionShape &shape, DType dtype);

  AttentionBuffers pointers() const {
    return {q.get(), k.get(), v.get(), out.get(), lse.get()};
  }
};

/// The backward's own device tensors; it also reads the forward's q, k, v,
/// out and lse. dsinks (f32 [heads]) with `withDsinks`, for a sinks
/// backward.
struct BackwardTensors {
  DeviceBuffer dout, dq, dk, dv;
  std::optional<DeviceBuffer> dsinks;

  BackwardTensors(const AttentionShape &shape, DType dtype,
                  bool withDsinks = false);

  AttentionBackwardBuffers pointers(const DeviceTensors &forward) const {
    return {forward.q.get(),   forward.k.get(),
            forward.v.get(),   forward.out.get(),
            forward.lse.get(), dout.get(),
            dq.get(),          dk.get(),
            dv.get(),          dsinks ? dsinks->get() : CUdeviceptr{0}};
  }
};

/// The bytes of the device tensors the forward works on (q, k, v, out and
/// lse) or, with `backward`, the backward (those and dout, dq, dk and dv;
/// delta aside): one buffer set of its benchmark, known before allocating.
std::size_t workingSetBytes(const AttentionShape &shape, DType dtype,
                            bool backward);

/// The buffer sets benchmark() (with `backward`, benchmarkBackward())
/// rotates through on `device`.
int benchmarkSets(const AttentionShape &shape, DType dtype, bool backward,
                  const DeviceInfo &device);

/// The backward's kernels, loaded: three, and the dsinks kernel where the
/// specs have one.
struct BackwardKernels {
  Kernel delta, dkdv, dq;
  std::optional<Kernel> dsinks;

  BackwardKernels(const AttentionBackwardKernels &specs,
                  const DeviceInfo &device);

  const Kernel *dsinksKernel() const { return dsinks ? &*dsinks : nullptr; }
};

struct Outputs {
  HostTensor out, lse;
  HostTensor dq, dk, dv; // When the backward ran.
  HostTensor dsinks;     // When it ran with a dsinks kernel: [heads].
};

/// q, k and v (with `backward`, dout too) as the run's inputs, in the order
/// of their random tensors (HostTensors.h).
std::vector<RunInput> attentionInputs(Problem &problem, DeviceTensors &forward,
                                      BackwardTensors *backward);

/// Runs `kernel` once on outputs poisoned with NaN; downloads them when
/// `download` (a check or output files need them).
Outputs runOnce(const Kernel &kernel, const AttentionShape &shape,
                DeviceTensors &tensors, const Stream &stream,
                bool download = true, const VariantLaunch &variant = {});

/// Runs the backward once, after the forward has written out and lse, on
/// gradients (and delta) poisoned with NaN; downloads dq, dk and dv (and
/// dsinks) into `outputs` when `download`. With a dsinks kernel, `tensors`
/// must have dsinks.
void runBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                 const DeviceTensors &forward, BackwardTensors &tensors,
                 const Stream &stream, Outputs &outputs, bool download = true,
                 const VariantLaunch &variant = {});

/// Compares out and lse with the fp64 reference, on the CPU or the GPU, for
/// the problem's variant (with top-left causal when `spec` is causal).
CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance);

/// Compares dq, dk and dv (and dsinks, when outputs has it) with the fp64
/// reference, on the CPU or the GPU; `spec` is the attention_bwd kernel.
GradientCheck checkGradients(const Problem &problem, const KernelSpec &spec,
                             const DeviceTensors &forward,
                             const BackwardTensors &tensors,
                             const Outputs &outputs, const Stream &stream,
                             bool onCpu, double relativeTolerance);

/// The median of `runs` timed launches after `warmup` untimed ones, inputs
/// rotated across copies of `inputs` spanning 2x L2.
BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs,
                      const VariantLaunch &variant = {});

/// What benchmarkBackward times: the whole backward, and then each of its
/// kernels alone (fa-run attention --grad's report), or only the whole
/// (the tuner's comparison).
enum class BackwardTimes { WholeAndEachKernel, WholeOnly };

/// The same for the backward: each run launches its kernels (three, and
/// dsinks). Then, with BackwardTimes::WholeAndEachKernel, each kernel alone,
/// with the same buffer sets, warmup and runs, into the report's `kernels`.
BenchReport
benchmarkBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                  const DeviceInfo &device, const DeviceTensors &forward,
                  const BackwardTensors &inputs, const Stream &stream,
                  int warmup, int runs, BackwardTimes times,
                  const VariantLaunch &variant = {});

} // namespace fa

#endif // FA_RUN_ATTENTIONPROBLEM_H
