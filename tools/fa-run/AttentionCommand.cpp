//===- AttentionCommand.cpp - `fa-run attention` --------------------------===//
//
// Runs one attention forward kernel from the library (and with --grad the
// backward's three kernels after it) on random inputs of given sizes or on
// the user's .npy tensors; optionally checks every output against the fp64
// reference and times the passes.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommand.h"

#include "AttentionProblem.h"
#include "AttentionReport.h"
#include "HostTensors.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/KernelChoice.h"
#include "fa/runtime/Npy.h"

#include <iostream>
#include <optional>
#include <random>
#include <vector>

namespace fa {
namespace {

// Beyond this many multiply-adds (B*H*N*M*D) the CPU reference takes more
// than a few seconds, so `--reference auto` uses the GPU one; with --grad it
// also computes the gradients, which cost about 3 times as much.
constexpr double kCpuReferenceMaxWork = double(1 << 28);
constexpr double kCpuGradReferenceMaxWork = double(1 << 26);

bool useCpuReference(const AttentionOptions &options,
                     const AttentionShape &shape) {
  if (options.reference != "auto")
    return options.reference == "cpu";
  double work = static_cast<double>(shape.batch) * shape.heads * shape.seqQ *
                shape.seqKv * shape.headDim;
  return work <
         (options.grad ? kCpuGradReferenceMaxWork : kCpuReferenceMaxWork);
}

/// A problem of the option's sizes; its inputs are drawn on the device.
Problem sizedProblem(const AttentionOptions &options) {
  AttentionShape shape;
  shape.batch = options.batch;
  shape.heads = options.heads;
  shape.kvHeads = options.kvHeads ? options.kvHeads : options.heads;
  shape.seqQ = options.seq;
  shape.seqKv = options.kvSeq ? options.kvSeq : options.seq;
  shape.headDim = options.dim;
  shape.validate();
  return {shape, {}, {}, {}, {}, {}};
}

/// dout for a problem from files: --dout, else random normal from --seed.
HostTensor gradientFromFile(const AttentionOptions &options,
                            const AttentionShape &shape, DType dtype) {
  if (options.doutPath.empty()) {
    std::mt19937_64 rng(options.seed);
    return randomTensor(shape.query(), dtype, rng);
  }
  HostTensor dout = readInput(options.doutPath, dtype);
  expectNpyShape(options.doutPath, dout, shape.query(),
                 "dout must have q's shape [batch, heads, seq_q, head_dim]");
  return dout;
}

/// What this run does with memory beyond its device tensors (its benchmark's
/// buffer sets are known once the device is).
AttentionRunNeeds runNeeds(const AttentionOptions &options,
                           const AttentionShape &shape) {
  AttentionRunNeeds needs;
  needs.backward = options.grad;
  needs.reference = !options.check                    ? ReferenceSite::None
                    : useCpuReference(options, shape) ? ReferenceSite::Cpu
                                                      : ReferenceSite::Gpu;
  needs.hostInputs =
      !options.qPath.empty() || needs.reference == ReferenceSite::Cpu;
  needs.downloadOutputs = options.check || !options.outPath.empty() ||
                          !options.lsePath.empty() || !options.dqPath.empty() ||
                          !options.dkPath.empty() || !options.dvPath.empty();
  return needs;
}

Problem problemFromFiles(const AttentionOptions &options, DType dtype) {
  Problem problem;
  problem.q = readInput(options.qPath, dtype);
  problem.k = readInput(options.kPath, dtype);
  problem.v = readInput(options.vPath, dtype);
  const Shape &q = problem.q.shape, &k = problem.k.shape;
  if (q.size() != 4)
    throw Error(options.qPath + " has shape " + formatShape(q) +
                ", expected 4 dimensions [batch, heads, seq_q, head_dim]");
  if (k.size() != 4)
    throw Error(options.kPath + " has shape " + formatShape(k) +
                ", expected 4 dimensions [batch, kv_heads, seq_kv, head_dim]");
  AttentionShape &shape = problem.shape;
  shape = {q[0], q[1], k[1], q[2], k[2], q[3]};
  expectNpyShape(options.kPath, problem.k, shape.keyValue(),
                 "k must be [batch, kv_heads, seq_kv, head_dim] with q's "
                 "batch and head_dim");
  expectNpyShape(options.vPath, problem.v, shape.keyValue(),
                 "v must have k's shape");
  shape.validate();
  if (options.grad)
    problem.dout = gradientFromFile(options, shape, dtype);
  return problem;
}

/// The tuning cache --tuning names, else the library's if it has one.
std::optional<TuningCache> tuningCache(const AttentionOptions &options,
                                       const std::string &kernelDir) {
  if (options.noTuning)
    return std::nullopt;
  if (options.tuningPath.empty())
    return TuningCache::loadIfPresent(defaultTuningCachePath(kernelDir));
  // A cache the user names must exist.
  return TuningCache::load(options.tuningPath);
}

/// chooseKernel, its warning (if any) on stderr.
KernelChoice chooseAndWarn(const KernelLibrary &library,
                           const KernelQuery &query, std::int64_t seqKv,
                           const std::optional<TuningCache> &cache,
                           const std::string &deviceName) {
  KernelChoice choice = chooseKernel(library, query, seqKv,
                                     cache ? &*cache : nullptr, deviceName);
  if (!choice.warning.empty())
    std::cerr << "fa-run: warning: " << choice.warning << "\n";
  return choice;
}

/// Throws unless a backward with sinks (`variant`'s) has the kernel that
/// computes their gradient: fa-run's --grad computes every gradient.
void requireDsinksKernel(const AttentionVariant &variant,
                         const AttentionBackwardKernels &kernels) {
  if (variant.sinks.empty() || kernels.dsinks)
    return;
  throw Error("--grad with sinks (--sinks or --sinks-file) computes dsinks, "
              "but kernel " +
              kernels.dq->name + " (" + kernels.dq->describe() +
              ") names no dsinks_kernel: it was compiled without the "
              "sinks' gradient. Drop --grad, or use a library whose sinks "
              "backward has one");
}

/// The backward's kernels for `choice`, after checking that they compute
/// the gradient of the forward kernel `forward` (the same softmax scale)
/// and, with sinks, dsinks.
BackwardKernelsReport backwardKernels(const KernelLibrary &library,
                                      const KernelChoice &choice,
                                      const KernelSpec &forward,
                                      const AttentionVariant &variant) {
  AttentionBackwardKernels kernels =
      attentionBackwardKernels(library, *choice.kernel);
  requireDsinksKernel(variant, kernels);
  if (kernels.dq->softmaxScale() != forward.softmaxScale())
    throw Error("kernel " + kernels.dq->name + " uses softmax scale " +
                std::to_string(kernels.dq->softmaxScale()) +
                ", but the forward kernel " + forward.name + " uses " +
                std::to_string(forward.softmaxScale()) +
                ": its gradients would not be the forward's");
  BackwardKernelsReport report{*kernels.delta, *kernels.dkdv, *kernels.dq,
                               choice, std::nullopt};
  if (kernels.dsinks)
    report.dsinks = *kernels.dsinks;
  return report;
}

/// The problem's options: its sizes and --seed, or its .npy files. Returns
/// the files of the backward.
std::vector<CLI::Option *> addProblemOptions(CLI::App *command,
                                             AttentionOptions &o) {
  const char *sizes = "Sizes (random normal inputs)";
  std::vector<CLI::Option *> sizeOptions = {
      command->add_option("--batch", o.batch, "Batch size B")->group(sizes),
      command->add_option("--heads", o.heads, "Query heads H")->group(sizes),
      command
          ->add_option("--kv-heads", o.kvHeads,
                       "Key/value heads Hk; H must be a multiple (grouped-"
                       "query attention). Default: H")
          ->group(sizes),
      command->add_option("--seq", o.seq, "Query sequence length N")
          ->group(sizes),
      command
          ->add_option("--kv-seq", o.kvSeq,
                       "Key/value sequence length M. Default: N")
          ->group(sizes),
      command->add_option("--dim", o.dim, "Head dimension D")->group(sizes)};
  addSeedOption(command, o,
                "Seed of the random inputs (with --q, of dout when --grad has "
                "no --dout); also of --sinks' logits, and --dropout's "
                "Philox key",
                sizes);
  return addTensorFileOptions(
      command, "Tensors from files (shapes come from the files)",
      {{"--q", o.qPath,
        "Queries, .npy [B, H, N, D] ('<f2', '<f4' or '<f8'; rounded to "
        "--dtype)",
        TensorFileRole::ShapeSource},
       {"--k", o.kPath, "Keys, .npy [B, Hk, M, D]", TensorFileRole::Needed},
       {"--v", o.vPath, "Values, .npy [B, Hk, M, D]", TensorFileRole::Needed},
       {"--out", o.outPath,
        "Where to write the output, .npy [B, H, N, D] ('<f2' for f16 "
        "kernels, else '<f4')",
        TensorFileRole::Needed},
       {"--lse", o.lsePath,
        "Where to write the log-sum-exp, .npy [B, H, N] '<f4' (natural log)",
        TensorFileRole::Optional},
       {"--dout", o.doutPath,
        "Gradient of out for --grad, .npy [B, H, N, D]. Default: random "
        "normal (--seed)",
        TensorFileRole::Backward},
       {"--dq", o.dqPath, "Where to write dq (--grad), .npy [B, H, N, D]",
        TensorFileRole::Backward},
       {"--dk", o.dkPath, "Where to write dk (--grad), .npy [B, Hk, M, D]",
        TensorFileRole::Backward},
       {"--dv", o.dvPath, "Where to write dv (--grad), .npy [B, Hk, M, D]",
        TensorFileRole::Backward}},
      sizeOptions);
}

/// --tuning, --no-tuning, --kernel and --backward-kernel (with --grad):
/// which kernels of their groups run.
void addKernelChoiceOptions(CLI::App *command, AttentionOptions &o,
                            CLI::Option *grad) {
  CLI::Option *tuning =
      command->add_option("--tuning", o.tuningPath,
                          "Tuning cache (from `fa-run tune`) that picks the "
                          "kernel of the group per seq_kv class. Default: "
                          "<kernel dir>/tuning.json when it exists");
  CLI::Option *noTuning = command->add_flag(
      "--no-tuning", o.noTuning,
      "Ignore any tuning cache: run the group's default kernel");
  noTuning->excludes(tuning);
  command
      ->add_option("--kernel", o.kernelName,
                   "Run this forward kernel of the library (by name; it must "
                   "compute the problem's dtype, head_dim and mask) instead "
                   "of the tuned or default one: for comparing "
                   "configurations one at a time")
      ->excludes(tuning)
      ->excludes(noTuning);
  command
      ->add_option("--backward-kernel", o.backwardKernelName,
                   "With --grad, run this attention_bwd kernel of the library "
                   "(by name, with its delta and dkdv kernels; it must compute "
                   "the problem's dtype, head_dim and mask) instead of the "
                   "tuned or default one")
      ->needs(grad)
      ->excludes(tuning)
      ->excludes(noTuning);
}

} // namespace

CLI::App *addAttentionCommand(CLI::App &app, AttentionOptions &o) {
  CLI::App *command = app.add_subcommand(
      "attention",
      "Run an attention forward kernel from the kernel library (and with "
      "--grad the backward's kernels), on random inputs of the given sizes "
      "or on .npy tensors; optionally check every output against an fp64 "
      "reference and time the passes.");
  std::vector<CLI::Option *> backwardFiles = addProblemOptions(command, o);
  addDTypeOption(command, o,
                 "Element type of q, k, v, out and, with --grad, dout, dq, "
                 "dk and dv");
  addVariantOptions(command, o.variant);
  CLI::Option *grad = command->add_flag(
      "--grad", o.grad,
      "Also run the backward: the forward first (for out and lse), then the "
      "library's attention_bwd kernels (delta, dkdv, dq) for dq, dk and dv, "
      "the gradients of sum(dout * out)");
  for (CLI::Option *option : backwardFiles)
    option->needs(grad);
  command->add_flag("--check", o.check,
                    "Compare out and lse (with --grad also dq, dk and dv, "
                    "and with sinks dsinks) "
                    "with an fp64 reference; exit 1 if a relative error "
                    "exceeds its tolerance or any element is unwritten "
                    "(outputs, and the backward's delta, are poisoned with "
                    "NaN first)");
  command
      ->add_option("--reference", o.reference,
                   "Where --check computes the reference: cpu, gpu, or "
                   "auto (cpu when B*H*N*M*D < 2^28, 2^26 with --grad)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  command->add_option("--rtol", o.rtol,
                      "Relative error (Frobenius) --check accepts for every "
                      "output. Default: out and lse 2e-2 bf16, 5e-3 f16, "
                      "2e-3 f32; dq, dk and dv 4e-2 bf16, 1e-2 f16, 5e-3 "
                      "f32");
  command->add_flag("--bench", o.bench,
                    "Time the forward (and with --grad the backward: its "
                    "three kernels) with CUDA events: median of --runs after "
                    "--warmup, inputs rotated across buffer sets spanning 2x "
                    "L2; prints ms and TFLOP/s counting 4*B*H*N*M*D FLOPs "
                    "for the forward and 2.5 times that for the backward, "
                    "half if causal; a variant counts 4*D per kept (i, j) "
                    "pair (FlexAttention's convention)");
  addTimingOptions(command, o, "Timed runs of each pass");
  addKernelsOption(command, o);
  addKernelChoiceOptions(command, o, grad);
  addDeviceOptions(command, o);
  addJsonOption(command, o);

  command->callback([&o] {
    bool fromFiles = !o.qPath.empty();
    if (!fromFiles && (!o.batch || !o.heads || !o.seq || !o.dim))
      throw CLI::RequiredError("--batch, --heads, --seq and --dim (or --q, "
                               "--k, --v and --out)");
  });
  return command;
}

namespace {

/// `fa-run attention`'s steps (OpCommand.h).
class AttentionRun final : public OpRunOf<AttentionOptions, AttentionReport> {
public:
  using OpRunOf::OpRunOf;

private:
  Problem problem;
  AttentionRunNeeds needs;
  // The variant's kernel parameters on the host, then on the device.
  VariantParams variantParams;
  std::optional<VariantArgs> variantArgs;
  VariantLaunch variantLaunch;
  KernelLibrary library;
  KernelQuery forwardQuery, backwardQuery;
  std::optional<TuningCache> cache;
  // On the device.
  std::optional<Kernel> forward;
  std::optional<BackwardKernels> backward;
  std::optional<DeviceTensors> tensors;
  std::optional<BackwardTensors> backwardTensors;
  Outputs outputs;

  void prepare() override {
    problem = options.qPath.empty() ? sizedProblem(options)
                                    : problemFromFiles(options, dtype);
    const AttentionShape &shape = report.shape = problem.shape;
    problem.variant = variantFromOptions(options.variant, shape, options.seed);
    const AttentionVariant &variant = problem.variant;
    if (options.check && variant.custom() && variant.mask.empty())
      throw Error("--check of the user's variant '" + variant.customName +
                  "' needs its mask as --mask-file M.npy: fa-run cannot "
                  "know what a user's region keeps");
    report.variant = variantReport(variant, shape);
    needs = runNeeds(options, shape);
    needs.variantReferenceBytes =
        (variant.alibiSlopes.size() + variant.docIds.size() +
         variant.sinks.size()) *
            4 +
        variant.mask.size();
    checkHostMemory(attentionBudget(shape, dtype, needs));
    std::string kernelDir = options.kernelDirectory();
    library = KernelLibrary::load(kernelDir);
    // find() throws, listing the library (or its variants), if it has no
    // kernel.
    bool topLeft = variant.causal == CausalAlignment::TopLeft;
    forwardQuery = {kAttentionForwardOp, dtype, shape.headDim, topLeft,
                    variant.name()};
    const KernelSpec *forwardKernel = &library.find(forwardQuery);
    if (!options.kernelName.empty())
      forwardKernel =
          chooseNamedKernel(library, forwardQuery, options.kernelName).kernel;
    backwardQuery = {kAttentionBackwardOp, dtype, shape.headDim, topLeft,
                     variant.name()};
    std::optional<AttentionBackwardKernels> backwardKernels;
    if (options.grad)
      backwardKernels = attentionBackwardKernels(
          library, options.backwardKernelName.empty()
                       ? library.find(backwardQuery)
                       : *chooseNamedKernel(library, backwardQuery,
                                            options.backwardKernelName)
                              .kernel);
    if (backwardKernels)
      requireDsinksKernel(variant, *backwardKernels);
    // The variant's parameters, checked against these kernels before a GPU
    // is touched (a tuned choice has the same parameters).
    variantParams = fa::variantParams(
        variant, shape, variantKernels(*forwardKernel, backwardKernels));
    for (const VariantParams::Tensor &tensor : variantParams.tensors)
      needs.variantBytes += tensor.bytes.size();
    if (backwardKernels && backwardKernels->dsinks)
      needs.variantBytes += shape.heads * sizeof(float); // dsinks.
    cache = tuningCache(options, kernelDir);
  }

  /// The kernels of a run, forward first, that take the variant's values.
  static std::vector<const KernelSpec *>
  variantKernels(const KernelSpec &forward,
                 const std::optional<AttentionBackwardKernels> &backward) {
    std::vector<const KernelSpec *> kernels = {&forward};
    if (backward)
      kernels.insert(kernels.end(),
                     {backward->delta, backward->dkdv, backward->dq});
    if (backward && backward->dsinks)
      kernels.push_back(backward->dsinks);
    return kernels;
  }

  void chooseKernels(const DeviceInfo &device) override {
    const AttentionShape &shape = problem.shape;
    // The cache applies only to the GPU it was tuned on, so the choice waits
    // for the device's name.
    report.choice =
        options.kernelName.empty()
            ? chooseAndWarn(library, forwardQuery, shape.seqKv, cache,
                            device.name)
            : chooseNamedKernel(library, forwardQuery, options.kernelName);
    report.kernel = *report.choice.kernel;
    report.device = device;
    if (options.grad)
      report.backward =
          backwardKernels(library,
                          options.backwardKernelName.empty()
                              ? chooseAndWarn(library, backwardQuery,
                                              shape.seqKv, cache, device.name)
                              : chooseNamedKernel(library, backwardQuery,
                                                  options.backwardKernelName),
                          report.kernel, problem.variant);
    std::optional<AttentionBackwardKernels> chosenBackward;
    if (report.backward)
      chosenBackward = backwardSpecs();
    variantParams = fa::variantParams(
        problem.variant, shape, variantKernels(report.kernel, chosenBackward));
    // Grids over the launch limits fail here, before any allocation.
    attentionGrid(report.kernel, shape);
    if (report.backward)
      for (const KernelSpec *kernel :
           {chosenBackward->delta, chosenBackward->dkdv, chosenBackward->dq,
            chosenBackward->dsinks})
        if (kernel)
          attentionGrid(*kernel, shape);
  }

  /// The chosen backward's kernels (report.backward's).
  AttentionBackwardKernels backwardSpecs() const {
    const BackwardKernelsReport &chosen = *report.backward;
    return {&chosen.delta, &chosen.dkdv, &chosen.dq,
            chosen.dsinks ? &*chosen.dsinks : nullptr};
  }

  MemoryBudget deviceBudget(const DeviceInfo &device) override {
    if (options.bench)
      needs.benchSets =
          benchmarkSets(problem.shape, dtype, options.grad, device);
    if (report.backward) {
      // The chosen backward's own scratch, when its dkdv sums dQ.
      AttentionBackwardKernels chosen = backwardSpecs();
      AttentionBackwardWorkspace scratch =
          attentionBackwardWorkspace(*chosen.dkdv, *chosen.dq, problem.shape);
      needs.fusedDqBytes = scratch.dqAccumBytes + scratch.dqSemaphoreBytes;
    }
    return attentionBudget(problem.shape, dtype, needs);
  }

  void runPasses(const DeviceInfo &device, const Stream &stream) override {
    const AttentionShape &shape = problem.shape;
    forward.emplace(report.kernel, device);
    tensors.emplace(shape, dtype);
    variantArgs.emplace(variantParams);
    variantLaunch.bindings = variantArgs->bindings();
    if (!report.variant.name.empty())
      variantLaunch.forwardFlops = problem.variant.flops(shape);
    if (options.grad)
      backwardTensors.emplace(
          shape, dtype,
          /*withDsinks=*/report.backward->dsinks.has_value());
    loadInputs(attentionInputs(problem, *tensors,
                               backwardTensors ? &*backwardTensors : nullptr),
               /*fromFiles=*/!options.qPath.empty(), needs.hostInputs, stream);
    outputs = runOnce(*forward, shape, *tensors, stream, needs.downloadOutputs,
                      variantLaunch);
    if (!options.grad)
      return;
    backward.emplace(backwardSpecs(), device);
    runBackward(*backward, shape, *tensors, *backwardTensors, stream, outputs,
                needs.downloadOutputs, variantLaunch);
  }

  void writeOutputs() override {
    report.filesWritten =
        writeOutputFiles({{options.outPath, outputs.out, dtype},
                          {options.lsePath, outputs.lse, DType::F32},
                          {options.dqPath, outputs.dq, dtype},
                          {options.dkPath, outputs.dk, dtype},
                          {options.dvPath, outputs.dv, dtype}});
  }

  void checkAgainstReference(const Stream &stream) override {
    bool onCpu = needs.reference == ReferenceSite::Cpu;
    report.check =
        checkOutputs(problem, report.kernel, *tensors, outputs, stream, onCpu,
                     tolerance(defaultRelativeTolerance(dtype)));
    if (options.grad)
      report.check->gradients = checkGradients(
          problem, report.backward->dq, *tensors, *backwardTensors, outputs,
          stream, onCpu, tolerance(defaultGradientTolerance(dtype)));
  }

  void benchmarkPasses(const DeviceInfo &device, const Stream &stream,
                       int warmup, int runs) override {
    const AttentionShape &shape = problem.shape;
    report.bench = benchmark(*forward, shape, device, *tensors, stream, warmup,
                             runs, variantLaunch);
    if (options.grad)
      report.backwardBench = benchmarkBackward(
          *backward, shape, device, *tensors, *backwardTensors, stream, warmup,
          runs, BackwardTimes::WholeAndEachKernel, variantLaunch);
  }

  /// --rtol, else `byDefault`.
  double tolerance(double byDefault) const {
    return options.rtol > 0 ? options.rtol : byDefault;
  }
};

} // namespace

int runAttention(const AttentionOptions &options) {
  return AttentionRun("attention", options).run();
}

} // namespace fa
