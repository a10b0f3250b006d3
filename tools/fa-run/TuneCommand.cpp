//===- TuneCommand.cpp - `fa-run tune` ------------------------------------===//
//
// For each kernel-library group and sequence class (TuningCache.h), times
// every kernel of the group on one representative problem and records the
// fastest in the tuning cache, which `fa-run attention`, the C API and
// `fa-run train` then follow. Forward groups time their kernels; backward
// groups (attention_bwd) time each candidate's whole backward (its delta,
// dK/dV and dQ kernels, on out and lse from the group's default forward).
// Each candidate is first checked against the fp64 reference on a small
// problem (a backward's dq, dk and dv too); one that fails is reported and
// never timed.
//
//===----------------------------------------------------------------------===//

#include "TuneCommand.h"

#include "AttentionProblem.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/TuningCache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace fa {
namespace {

// The benchmark convention of the FlashAttention papers for 16-bit types:
// batch * seq = 16384 tokens and heads * head_dim = 2048.
constexpr std::int64_t kTuningTokens = 16384;
constexpr std::int64_t kTuningModelWidth = 2048;
// Off the tile sizes, so that the check covers partial tiles.
constexpr AttentionShape kCheckShape{2, 2, 2, 257, 257, 0};
constexpr std::uint64_t kSeed = 0;

/// One candidate of one group: loaded, and checked once. A forward group's
/// candidate is one kernel, a backward group's the kernels its attention_bwd
/// kernel names.
struct Candidate {
  const KernelSpec *spec = nullptr;
  // Null when loading or the check failed.
  std::unique_ptr<Kernel> forward;
  std::unique_ptr<BackwardKernels> backward;
  std::string failure;

  bool usable() const { return forward || backward; }
};

/// The tensors a group's candidates run on: the forward's, and for a
/// backward group dout, dq, dk and dv too.
struct GroupTensors {
  Problem problem;
  DeviceTensors forward;
  std::optional<BackwardTensors> backward;

  GroupTensors(const AttentionShape &shape, DType dtype, bool withBackward,
               const Stream &stream)
      : problem{shape, {}, {}, {}, {}, {}}, forward(shape, dtype) {
    if (withBackward)
      backward.emplace(shape, dtype);
    drawRandomInputs(
        kSeed,
        attentionInputs(problem, forward, backward ? &*backward : nullptr),
        dtype, stream);
  }
};

/// One line of the table: a candidate's time for one class.
struct TuneRow {
  KernelQuery group;
  std::string seqClass;
  std::string kernel;
  std::optional<double> tflops; // None when the candidate failed.
  std::string failure;
  bool chosen = false;
};

bool selected(const KernelQuery &group, const TuneOptions &options) {
  auto allows = [](const auto &list, const auto &value) {
    return list.empty() ||
           std::find(list.begin(), list.end(), value) != list.end();
  };
  // Attention forward and backward kernels are tuned; LayerNorm kernels are
  // chosen by row length (LayerNorm.h). Variant kernels need their variant's
  // values (window sizes, doc ids, ...), which tuning does not choose.
  // Views twins are one kernel per group (the default tile, strided).
  bool forward = group.op == kAttentionForwardOp;
  bool backward = group.op == kAttentionBackwardOp;
  return (forward || backward) &&
         allows(options.directions,
                std::string(forward ? "forward" : "backward")) &&
         group.variant.empty() && !group.views &&
         allows(options.dtypes, dtypeName(group.dtype)) &&
         allows(options.dims, group.headDim) &&
         allows(options.causalModes,
                std::string(group.causal ? "causal" : "non-causal"));
}

/// A backward group is tuned only where it has a choice: its one kernel's
/// time (three kernels' launches on three problems) would choose nothing. A
/// forward group's one kernel is timed, so that the cache records its speed.
bool worthTuning(const KernelQuery &group, const KernelLibrary &library) {
  return group.op != kAttentionBackwardOp ||
         library.candidates(group).size() > 1;
}

AttentionShape tuningShape(const SeqClass &seqClass, std::int64_t headDim) {
  std::int64_t heads = std::max<std::int64_t>(1, kTuningModelWidth / headDim);
  std::int64_t batch =
      std::max<std::int64_t>(1, kTuningTokens / seqClass.tuningSeq);
  return {batch, heads, heads, seqClass.tuningSeq, seqClass.tuningSeq, headDim};
}

std::string describeError(const char *name, const ErrorStats &error) {
  return std::string(" ") + name + " rel=" + std::to_string(error.relative) +
         " NaN=" + std::to_string(error.nanCount);
}

std::string describeCheck(const CheckReport &check) {
  std::string text = "check failed:" + describeError("out", check.out) +
                     describeError("lse", check.lse);
  if (check.gradients)
    text += describeError("dq", check.gradients->dq) +
            describeError("dk", check.gradients->dk) +
            describeError("dv", check.gradients->dv);
  return text + " (rtol " + std::to_string(check.relativeTolerance) + ")";
}

/// The group's default forward: a backward's candidates run on its out and
/// lse.
const KernelSpec &defaultForward(const KernelLibrary &library,
                                 const KernelQuery &backwardGroup) {
  KernelQuery forward = backwardGroup;
  forward.op = kAttentionForwardOp;
  return library.find(forward);
}

/// Loads the candidate and checks it on a small problem: a forward kernel's
/// out and lse, a backward's dq, dk and dv (after `forward`, the group's
/// default forward, loaded).
Candidate checkCandidate(const KernelSpec &spec, const KernelLibrary &library,
                         const Kernel *forward, const DeviceInfo &device,
                         const Stream &stream) {
  Candidate candidate{&spec, nullptr, nullptr, ""};
  try {
    AttentionShape shape = kCheckShape;
    shape.headDim = spec.headDim;
    bool isBackward = spec.op == kAttentionBackwardOp;
    GroupTensors tensors(shape, spec.dtype, isBackward, stream);
    std::unique_ptr<Kernel> kernel;
    if (!isBackward)
      kernel = std::make_unique<Kernel>(spec, device);
    const Kernel &forwardKernel = isBackward ? *forward : *kernel;
    Outputs outputs = runOnce(forwardKernel, shape, tensors.forward, stream);
    CheckReport check = checkOutputs(
        tensors.problem, forwardKernel.spec(), tensors.forward, outputs, stream,
        /*onCpu=*/false, defaultRelativeTolerance(spec.dtype));
    std::unique_ptr<BackwardKernels> backward;
    if (isBackward) {
      backward = std::make_unique<BackwardKernels>(
          attentionBackwardKernels(library, spec), device);
      runBackward(*backward, shape, tensors.forward, *tensors.backward, stream,
                  outputs);
      check.gradients = checkGradients(
          tensors.problem, spec, tensors.forward, *tensors.backward, outputs,
          stream, /*onCpu=*/false, defaultGradientTolerance(spec.dtype));
    }
    if (!check.passed())
      candidate.failure = describeCheck(check);
    else if (isBackward)
      candidate.backward = std::move(backward);
    else
      candidate.forward = std::move(kernel);
  } catch (const NoDeviceError &) {
    throw;
  } catch (const Error &error) {
    candidate.failure = error.what();
  }
  return candidate;
}

/// The candidate's TFLOP/s on `shape` (a backward's counted as
/// AttentionShape::backwardFlops), `tensors` viewed with that shape (a
/// backward's holding the forward's out and lse of it).
double timeCandidate(const Candidate &candidate, const AttentionShape &shape,
                     const TuneOptions &options, const DeviceInfo &device,
                     GroupTensors &tensors, const Stream &stream) {
  if (candidate.forward)
    return benchmark(*candidate.forward, shape, device, tensors.forward, stream,
                     options.warmup, options.runs)
        .tflops;
  return benchmarkBackward(*candidate.backward, shape, device, tensors.forward,
                           *tensors.backward, stream, options.warmup,
                           options.runs, BackwardTimes::WholeOnly)
      .tflops;
}

/// Times the group's checked candidates on each class; records the fastest.
void tuneGroup(const KernelQuery &group, const KernelLibrary &library,
               const TuneOptions &options, const DeviceInfo &device,
               const Stream &stream, TuningCache &cache,
               std::vector<TuneRow> &rows) {
  bool isBackward = group.op == kAttentionBackwardOp;
  std::unique_ptr<Kernel> forward;
  if (isBackward)
    forward = std::make_unique<Kernel>(defaultForward(library, group), device);
  std::vector<Candidate> candidates;
  for (const KernelSpec *spec : library.candidates(group))
    candidates.push_back(
        checkCandidate(*spec, library, forward.get(), device, stream));

  // Every class's problem has kTuningTokens tokens of the same heads, so one
  // set of tensors, viewed with each class's shape, serves them all.
  GroupTensors tensors(tuningShape(kSeqClasses.front(), group.headDim),
                       group.dtype, isBackward, stream);

  for (const SeqClass &seqClass : kSeqClasses) {
    NvtxRange range{"tune " + group.describe() + ", " + seqClass.name};
    AttentionShape shape = tuningShape(seqClass, group.headDim);
    TuningEntry entry{group, seqClass.name, "", 0, {}};
    std::size_t firstRow = rows.size();
    // A backward group's candidates all read the default forward's out and
    // lse of this class's shape.
    if (forward)
      runOnce(*forward, shape, tensors.forward, stream, /*download=*/false);
    for (const Candidate &candidate : candidates) {
      TuneRow &row = rows.emplace_back(TuneRow{
          group, seqClass.name, candidate.spec->name, {}, candidate.failure});
      if (!candidate.usable())
        continue;
      row.tflops =
          timeCandidate(candidate, shape, options, device, tensors, stream);
      entry.candidates[row.kernel] = *row.tflops;
      if (*row.tflops > entry.tflops) {
        entry.kernel = row.kernel;
        entry.tflops = *row.tflops;
      }
    }
    if (entry.kernel.empty())
      continue; // Every candidate failed: the default stays in charge.
    for (std::size_t i = firstRow; i < rows.size(); ++i)
      rows[i].chosen = rows[i].kernel == entry.kernel;
    cache.record(std::move(entry));
  }
}

/// The cache to add to: the existing one if it was tuned on this GPU.
TuningCache startingCache(const std::string &path, const DeviceInfo &device) {
  std::optional<TuningCache> existing = TuningCache::loadIfPresent(path);
  if (existing && existing->device == device.name)
    return *existing;
  TuningCache cache;
  cache.device = device.name;
  return cache;
}

void printTable(const std::vector<TuneRow> &rows, const std::string &path,
                const DeviceInfo &device, const TuneOptions &options) {
  std::printf("tuned on %s, median of %d runs each; cache %s\n",
              device.name.c_str(), options.runs, path.c_str());
  std::printf("%-40s %-7s %-44s %8s  %s\n", "group", "class", "candidate",
              "TFLOP/s", "chosen");
  for (const TuneRow &row : rows) {
    std::string tflops = "-";
    if (row.tflops) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.1f", *row.tflops);
      tflops = text;
    }
    std::printf("%-40s %-7s %-44s %8s  %s\n", row.group.describe().c_str(),
                row.seqClass.c_str(), row.kernel.c_str(), tflops.c_str(),
                row.chosen ? "*" : row.failure.c_str());
  }
}

nlohmann::json tableJson(const std::vector<TuneRow> &rows,
                         const std::string &path, const DeviceInfo &device) {
  nlohmann::json results = nlohmann::json::array();
  for (const TuneRow &row : rows) {
    nlohmann::json result = {{"op", row.group.op},
                             {"dtype", dtypeName(row.group.dtype)},
                             {"head_dim", row.group.headDim},
                             {"causal", row.group.causal},
                             {"seq_class", row.seqClass},
                             {"kernel", row.kernel},
                             {"tflops", nullptr},
                             {"chosen", row.chosen}};
    if (row.tflops)
      result["tflops"] = *row.tflops;
    else
      result["failure"] = row.failure;
    results.push_back(result);
  }
  return {{"device", device.name}, {"cache", path}, {"results", results}};
}

} // namespace

CLI::App *addTuneCommand(CLI::App &app, TuneOptions &o) {
  CLI::App *command = app.add_subcommand(
      "tune",
      "Time every kernel of each attention group of the kernel library per "
      "key/value sequence class (<=1024, <=4096, >4096) on this GPU and write "
      "the fastest to a tuning cache, which `fa-run attention`, `fa-run "
      "train` and the C API then use. Forward groups time each kernel; "
      "backward groups with more than one candidate time each candidate's "
      "whole backward. Each candidate is first checked against the fp64 "
      "reference; failures are reported and left out.");
  addKernelsOption(command, o);
  command->add_option("--out", o.outPath,
                      "Tuning cache to write (entries for other groups, "
                      "tuned on the same GPU, are kept). Default: "
                      "<kernel dir>/tuning.json");
  command
      ->add_option("--direction", o.directions,
                   "Only these directions: forward, backward")
      ->delimiter(',')
      ->check(CLI::IsMember({"forward", "backward"}));
  command->add_option("--dtype", o.dtypes, "Only these element types")
      ->delimiter(',')
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  command->add_option("--dim", o.dims, "Only these head dimensions")
      ->delimiter(',');
  command
      ->add_option("--causal-modes", o.causalModes,
                   "Only these masks: causal, non-causal")
      ->delimiter(',')
      ->check(CLI::IsMember({"causal", "non-causal"}));
  addTimingOptions(command, o, "Timed runs per candidate and class");
  addDeviceOptions(command, o);
  addJsonOption(command, o);
  return command;
}

int runTune(const TuneOptions &options) {
  std::string kernelDir = options.kernelDirectory();
  KernelLibrary library = KernelLibrary::load(kernelDir);
  std::vector<KernelQuery> groups;
  for (const KernelQuery &group : library.groups())
    if (selected(group, options) && worthTuning(group, library))
      groups.push_back(group);
  if (groups.empty())
    throw Error("tuning: no kernel group in " + kernelDir +
                " matches --direction, --dtype, --dim and --causal-modes");
  std::string path = options.outPath.empty() ? defaultTuningCachePath(kernelDir)
                                             : options.outPath;

  Context context(options.device);
  Stream stream;
  TuningCache cache = startingCache(path, context.device());
  std::vector<TuneRow> rows;
  for (const KernelQuery &group : groups)
    tuneGroup(group, library, options, context.device(), stream, cache, rows);
  cache.save(path);

  if (options.json)
    std::cout << tableJson(rows, path, context.device()).dump(2) << "\n";
  else
    printTable(rows, path, context.device(), options);
  bool anyFailed =
      std::any_of(rows.begin(), rows.end(),
                  [](const TuneRow &row) { return !row.failure.empty(); });
  if (anyFailed) {
    std::cerr << "fa-run: some candidates failed their check or did not load; "
                 "they were left out of the cache\n";
    return 1;
  }
  return 0;
}

} // namespace fa
