//===- AttentionProblem.cpp -----------------------------------------------===//

#include "AttentionProblem.h"

#include "HostTensors.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/Reference.h"

#include <random>
#include <tuple>
#include <vector>

namespace fa {
namespace {

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

/// The variant the reference computes: the problem's, with top-left causal
/// when the kernel is causal (plain problems, such as tuning's, carry none).
const AttentionVariant &referenceVariant(const Problem &problem,
                                         const KernelSpec &spec,
                                         AttentionVariant &storage) {
  if (!spec.causal || problem.variant.causal == CausalAlignment::TopLeft)
    return problem.variant;
  storage = problem.variant;
  storage.causal = CausalAlignment::TopLeft;
  return storage;
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

BackwardTensors::BackwardTensors(const AttentionShape &shape, DType dtype,
                                 bool withDsinks)
    : dout("dout", tensorBytes(shape.query(), dtype)),
      dq("dq", tensorBytes(shape.query(), dtype)),
      dk("dk", tensorBytes(shape.keyValue(), dtype)),
      dv("dv", tensorBytes(shape.keyValue(), dtype)) {
  if (withDsinks)
    dsinks.emplace("dsinks", tensorBytes({shape.heads}, DType::F32));
}

BackwardKernels::BackwardKernels(const AttentionBackwardKernels &specs,
                                 const DeviceInfo &device)
    : delta(*specs.delta, device), dkdv(*specs.dkdv, device),
      dq(*specs.dq, device) {
  if (specs.dsinks)
    dsinks.emplace(*specs.dsinks, device);
}

MemoryBudget attentionBudget(const AttentionShape &shape, DType dtype,
                             const AttentionRunNeeds &needs) {
  shape.validate();
  // sum({{count, tensor, bytes per element}, ...}), overflow-checked: an
  // absurd shape is an error here, not a wrapped-around count.
  struct Term {
    std::uint64_t count;
    Shape tensor;
    std::uint64_t elementBytes;
  };
  auto sum = [](std::initializer_list<Term> terms) {
    const char *what = "counting the run's memory";
    std::uint64_t total = 0;
    for (const Term &term : terms)
      total = checkedAdd(total,
                         checkedMultiply(term.count,
                                         checkedMultiply<std::uint64_t>(
                                             elementCount(term.tensor),
                                             term.elementBytes, what),
                                         what),
                         what);
    return total;
  };
  const Shape query = shape.query(), keyValue = shape.keyValue(),
              rows = shape.logSumExp();
  const std::uint64_t element = dtypeBytes(dtype), f32 = 4, f64 = 8;
  const int sets = needs.backward ? 2 : 1;

  MemoryBudget budget;
  // One buffer set: the working set and the backward's delta (and a fused
  // dQ's scratch). The benchmark rotates through copies of it.
  std::uint64_t set = checkedAdd<std::uint64_t>(
      workingSetBytes(shape, dtype, needs.backward),
      needs.backward
          ? checkedAdd<std::uint64_t>(sum({{1, rows, f32}}), needs.fusedDqBytes,
                                      "counting the run's memory")
          : 0,
      "counting the run's memory");
  budget.addDevice(!needs.backward ? "q, k, v, out and lse"
                   : needs.fusedDqBytes
                       ? "q, k, v, out, lse, dout, dq, dk, dv, delta, "
                         "dq_accum and dq_semaphores"
                       : "q, k, v, out, lse, dout, dq, dk, dv and delta",
                   set);
  if (needs.benchSets > 1)
    budget.addDevice(
        std::to_string(needs.benchSets - 1) + " more benchmark buffer sets",
        checkedMultiply<std::uint64_t>(needs.benchSets - 1, set,
                                       "counting the run's memory"));
  // The fp64 references, on the device (GPU reference) and on the host: the
  // forward's out and lse, then (the forward's freed) the backward's dq, dk,
  // dv, lse and delta.
  std::uint64_t reference =
      needs.backward
          ? sum({{1, query, f64}, {2, keyValue, f64}, {2, rows, f64}})
          : sum({{1, query, f64}, {1, rows, f64}});
  if (needs.variantBytes)
    budget.addDevice("the variant's tensors", needs.variantBytes);
  if (needs.reference == ReferenceSite::Gpu)
    budget.addDevice("the fp64 reference", reference);
  if (needs.reference == ReferenceSite::Gpu && needs.variantReferenceBytes)
    budget.addDevice("the reference's variant tensors",
                     needs.variantReferenceBytes);
  if (needs.reference != ReferenceSite::None)
    budget.addHost("the fp64 reference", reference);

  // Host tensors hold floats; transfers stage one tensor's bytes at a time.
  if (needs.hostInputs)
    budget.addHost("host copies of the inputs",
                   sum({{static_cast<std::uint64_t>(sets), query, f32},
                        {2, keyValue, f32}}));
  if (needs.downloadOutputs)
    budget.addHost(
        "the outputs",
        needs.backward
            ? sum({{2, query, f32}, {2, keyValue, f32}, {1, rows, f32}})
            : sum({{1, query, f32}, {1, rows, f32}}));
  if (needs.hostInputs || needs.downloadOutputs)
    budget.addHost("transfer staging", std::max(sum({{1, query, element}}),
                                                sum({{1, keyValue, element}})));
  return budget;
}

std::vector<RunInput> attentionInputs(Problem &problem, DeviceTensors &forward,
                                      BackwardTensors *backward) {
  const AttentionShape &shape = problem.shape;
  std::vector<RunInput> inputs = {{forward.q, problem.q, shape.query()},
                                  {forward.k, problem.k, shape.keyValue()},
                                  {forward.v, problem.v, shape.keyValue()}};
  if (backward)
    inputs.push_back({backward->dout, problem.dout, shape.query()});
  return inputs;
}

Outputs runOnce(const Kernel &kernel, const AttentionShape &shape,
                DeviceTensors &tensors, const Stream &stream, bool download,
                const VariantLaunch &variant) {
  NvtxRange range{"attention forward"};
  // Poison the outputs so that anything the kernel leaves unwritten is NaN.
  tensors.out.fill(kNaNBytes, stream.get());
  tensors.lse.fill(kNaNBytes, stream.get());
  AttentionLaunch(kernel, shape, tensors.pointers(), variant.bindings)
      .enqueue(stream);
  stream.synchronize();
  Outputs outputs;
  if (!download)
    return outputs;
  outputs.out = fa::download(tensors.out, shape.query(), kernel.spec().dtype);
  outputs.lse = fa::download(tensors.lse, shape.logSumExp(), DType::F32);
  return outputs;
}

void runBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                 const DeviceTensors &forward, BackwardTensors &tensors,
                 const Stream &stream, Outputs &outputs, bool download,
                 const VariantLaunch &variant) {
  NvtxRange range{"attention backward"};
  AttentionBackwardLaunch launch(kernels.delta, kernels.dkdv, kernels.dq, shape,
                                 tensors.pointers(forward), variant.bindings,
                                 kernels.dsinksKernel());
  for (DeviceBuffer *gradient : {&tensors.dq, &tensors.dk, &tensors.dv})
    gradient->fill(kNaNBytes, stream.get());
  if (tensors.dsinks)
    tensors.dsinks->fill(kNaNBytes, stream.get());
  launch.fillDelta(kNaNBytes, stream);
  launch.enqueue(stream);
  stream.synchronize();
  if (!download)
    return;
  DType dtype = kernels.dq.spec().dtype;
  outputs.dq = fa::download(tensors.dq, shape.query(), dtype);
  outputs.dk = fa::download(tensors.dk, shape.keyValue(), dtype);
  outputs.dv = fa::download(tensors.dv, shape.keyValue(), dtype);
  if (tensors.dsinks)
    outputs.dsinks = fa::download(*tensors.dsinks, {shape.heads}, DType::F32);
}

CheckReport checkOutputs(const Problem &problem, const KernelSpec &spec,
                         const DeviceTensors &tensors, const Outputs &outputs,
                         const Stream &stream, bool onCpu,
                         double relativeTolerance) {
  NvtxRange range{"check forward"};
  CheckReport check;
  check.reference = onCpu ? "cpu" : "gpu";
  AttentionVariant storage;
  const AttentionVariant &variant = referenceVariant(problem, spec, storage);
  AttentionReference reference =
      onCpu ? referenceAttentionCpu(problem.shape, problem.q.values,
                                    problem.k.values, problem.v.values,
                                    spec.softmaxScale(), variant)
            : referenceAttentionGpu(problem.shape, spec.dtype, tensors.q.get(),
                                    tensors.k.get(), tensors.v.get(),
                                    spec.softmaxScale(), variant, stream);
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
  AttentionVariant storage;
  const AttentionVariant &variant = referenceVariant(problem, spec, storage);
  AttentionGradReference reference =
      onCpu ? referenceAttentionGradCpu(problem.shape, problem.q.values,
                                        problem.k.values, problem.v.values,
                                        problem.dout.values,
                                        spec.softmaxScale(), variant)
            : referenceAttentionGradGpu(problem.shape, spec.dtype,
                                        forward.q.get(), forward.k.get(),
                                        forward.v.get(), tensors.dout.get(),
                                        spec.softmaxScale(), variant, stream);
  GradientCheck check{
      relativeTolerance, compareWithReference(outputs.dq.values, reference.dq),
      compareWithReference(outputs.dk.values, reference.dk),
      compareWithReference(outputs.dv.values, reference.dv), std::nullopt};
  if (!outputs.dsinks.values.empty())
    check.dsinks =
        compareWithReference(outputs.dsinks.values, reference.dsinks);
  return check;
}

std::size_t workingSetBytes(const AttentionShape &shape, DType dtype,
                            bool backward) {
  const char *what = "counting the attention tensors' bytes";
  // q and out, k and v (the backward's dout and dq, dk and dv as large).
  std::size_t tensors = checkedAdd(
      checkedMultiply<std::size_t>(2, tensorBytes(shape.query(), dtype), what),
      checkedMultiply<std::size_t>(2, tensorBytes(shape.keyValue(), dtype),
                                   what),
      what);
  return checkedAdd(
      checkedMultiply<std::size_t>(backward ? 2 : 1, tensors, what),
      tensorBytes(shape.logSumExp(), DType::F32), what);
}

int benchmarkSets(const AttentionShape &shape, DType dtype, bool backward,
                  const DeviceInfo &device) {
  return rotationCopies(workingSetBytes(shape, dtype, backward),
                        device.l2CacheBytes, kMaxBufferSets);
}

BenchReport benchmark(const Kernel &kernel, const AttentionShape &shape,
                      const DeviceInfo &device, const DeviceTensors &inputs,
                      const Stream &stream, int warmup, int runs,
                      const VariantLaunch &variant) {
  NvtxRange range{"benchmark forward"};
  // Rotate through copies of the tensors so each run reads its inputs from
  // memory rather than from an L2 warmed by the previous run.
  int copies =
      benchmarkSets(shape, kernel.spec().dtype, /*backward=*/false, device);
  std::vector<DeviceTensors> extraSets;
  std::vector<AttentionLaunch> launches;
  launches.emplace_back(kernel, shape, inputs.pointers(), variant.bindings);
  for (int copy = 1; copy < copies; ++copy) {
    DeviceTensors &set = extraSets.emplace_back(shape, kernel.spec().dtype);
    set.q.copyFrom(inputs.q);
    set.k.copyFrom(inputs.k);
    set.v.copyFrom(inputs.v);
    launches.emplace_back(kernel, shape, set.pointers(), variant.bindings);
  }
  return timeLaunches(
      launches,
      variant.forwardFlops.value_or(shape.flops(kernel.spec().causal)), stream,
      warmup, runs);
}

BenchReport
benchmarkBackward(const BackwardKernels &kernels, const AttentionShape &shape,
                  const DeviceInfo &device, const DeviceTensors &forward,
                  const BackwardTensors &inputs, const Stream &stream,
                  int warmup, int runs, BackwardTimes times,
                  const VariantLaunch &variant) {
  NvtxRange range{"benchmark backward"};
  const KernelSpec &spec = kernels.dq.spec();
  int copies = benchmarkSets(shape, spec.dtype, /*backward=*/true, device);
  std::vector<DeviceTensors> extraForwardSets;
  std::vector<BackwardTensors> extraSets;
  std::vector<AttentionBackwardLaunch> launches;
  launches.emplace_back(kernels.delta, kernels.dkdv, kernels.dq, shape,
                        inputs.pointers(forward), variant.bindings,
                        kernels.dsinksKernel());
  for (int copy = 1; copy < copies; ++copy) {
    DeviceTensors &forwardSet =
        extraForwardSets.emplace_back(shape, spec.dtype);
    BackwardTensors &set = extraSets.emplace_back(
        shape, spec.dtype, /*withDsinks=*/kernels.dsinks.has_value());
    forwardSet.q.copyFrom(forward.q);
    forwardSet.k.copyFrom(forward.k);
    forwardSet.v.copyFrom(forward.v);
    forwardSet.out.copyFrom(forward.out);
    forwardSet.lse.copyFrom(forward.lse);
    set.dout.copyFrom(inputs.dout);
    launches.emplace_back(kernels.delta, kernels.dkdv, kernels.dq, shape,
                          set.pointers(forwardSet), variant.bindings,
                          kernels.dsinksKernel());
  }
  // The backward's five products to the forward's two.
  BenchReport bench =
      timeLaunches(launches,
                   variant.forwardFlops ? 2.5 * *variant.forwardFlops
                                        : shape.backwardFlops(spec.causal),
                   stream, warmup, runs);
  if (times == BackwardTimes::WholeOnly)
    return bench;

  // Then each kernel alone. dkdv, dq and dsinks read whatever delta (and dq
  // whatever dq_accum) the runs before left in their set; their work does
  // not depend on its values. A fused dkdv alone still zeroes its
  // dq_semaphores first (AttentionBackwardLaunch::enqueue(stage)), a memset
  // its time includes, as the whole backward's does.
  std::vector<std::tuple<AttentionBackwardStage, const char *, const Kernel *>>
      stages = {{AttentionBackwardStage::Delta, "delta", &kernels.delta},
                {AttentionBackwardStage::DkDv, "dkdv", &kernels.dkdv},
                {AttentionBackwardStage::Dq, "dq", &kernels.dq}};
  if (kernels.dsinks)
    stages.emplace_back(AttentionBackwardStage::Dsinks, "dsinks",
                        &*kernels.dsinks);
  for (auto [stage, name, kernel] : stages) {
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
