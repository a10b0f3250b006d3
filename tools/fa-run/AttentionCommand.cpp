//===- AttentionCommand.cpp - `fa-run attention` --------------------------===//
//
// Runs one attention kernel from the library on random inputs of given sizes
// or on the user's .npy tensors; optionally checks it against the fp64
// reference and times it.
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

namespace fa {
namespace {

// Beyond this many multiply-adds (B*H*N*M*D) the CPU reference takes more
// than a few seconds, so `--reference auto` uses the GPU one.
constexpr double kCpuReferenceMaxWork = double(1 << 28);

Problem randomProblem(const AttentionOptions &options, DType dtype) {
  AttentionShape shape;
  shape.batch = options.batch;
  shape.heads = options.heads;
  shape.kvHeads = options.kvHeads ? options.kvHeads : options.heads;
  shape.seqQ = options.seq;
  shape.seqKv = options.kvSeq ? options.kvSeq : options.seq;
  shape.headDim = options.dim;
  return randomProblem(shape, dtype, options.seed);
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
  return problem;
}

std::vector<std::string> writeOutputs(const AttentionOptions &options,
                                      const Outputs &outputs, DType dtype) {
  std::vector<std::string> written;
  if (!options.outPath.empty()) {
    writeOutput(options.outPath, outputs.out, dtype);
    written.push_back(options.outPath);
  }
  if (!options.lsePath.empty()) {
    writeNpy(options.lsePath, outputs.lse, DType::F32);
    written.push_back(options.lsePath);
  }
  return written;
}

bool useCpuReference(const AttentionOptions &options,
                     const AttentionShape &shape) {
  if (options.reference != "auto")
    return options.reference == "cpu";
  double work = static_cast<double>(shape.batch) * shape.heads * shape.seqQ *
                shape.seqKv * shape.headDim;
  return work < kCpuReferenceMaxWork;
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

} // namespace

CLI::App *addAttentionCommand(CLI::App &app, AttentionOptions &o) {
  CLI::App *command = app.add_subcommand(
      "attention",
      "Run an attention forward kernel from the kernel library, on random "
      "inputs of the given sizes or on .npy tensors; optionally check it "
      "against an fp64 reference and time it.");
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
      command->add_option("--dim", o.dim, "Head dimension D")->group(sizes),
      command->add_option("--seed", o.seed, "Seed of the random inputs")
          ->capture_default_str()
          ->group(sizes)};

  const char *files = "Tensors from files (shapes come from the files)";
  CLI::Option *q =
      command
          ->add_option("--q", o.qPath,
                       "Queries, .npy [B, H, N, D] ('<f2', '<f4' or '<f8'; "
                       "rounded to --dtype)")
          ->group(files);
  CLI::Option *k =
      command->add_option("--k", o.kPath, "Keys, .npy [B, Hk, M, D]")
          ->group(files);
  CLI::Option *v =
      command->add_option("--v", o.vPath, "Values, .npy [B, Hk, M, D]")
          ->group(files);
  CLI::Option *out =
      command
          ->add_option("--out", o.outPath,
                       "Where to write the output, .npy [B, H, N, D] "
                       "('<f2' for f16 kernels, else '<f4')")
          ->group(files);
  CLI::Option *lse =
      command
          ->add_option("--lse", o.lsePath,
                       "Where to write the log-sum-exp, .npy [B, H, N] "
                       "'<f4' (natural log)")
          ->group(files);
  for (CLI::Option *option : {k, v, out})
    q->needs(option);
  for (CLI::Option *option : {k, v, out, lse})
    option->needs(q);
  for (CLI::Option *option : sizeOptions)
    option->excludes(q);

  command->add_option("--dtype", o.dtype, "Element type of q, k, v and out")
      ->required()
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  command->add_flag("--causal", o.causal,
                    "Causal mask, top-left aligned like PyTorch's is_causal: "
                    "query i sees keys j <= i");
  command->add_flag("--check", o.check,
                    "Compare out and lse with an fp64 reference; exit 1 if "
                    "either's relative error exceeds --rtol or any element "
                    "is unwritten (outputs are poisoned with NaN first)");
  command
      ->add_option("--reference", o.reference,
                   "Where --check computes the reference: cpu, gpu, or "
                   "auto (cpu when B*H*N*M*D < 2^28)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  command->add_option("--rtol", o.rtol,
                      "Relative error (Frobenius) --check accepts. Default: "
                      "2e-2 bf16, 5e-3 f16, 2e-3 f32");
  command->add_flag("--bench", o.bench,
                    "Time the kernel with CUDA events: median of --runs "
                    "after --warmup, inputs rotated across buffer sets "
                    "spanning 2x L2; prints ms and TFLOP/s (4*B*H*N*M*D, "
                    "half if causal)");
  addTimingOptions(command, o, "Timed runs");
  addKernelsOption(command, o);
  CLI::Option *tuning =
      command->add_option("--tuning", o.tuningPath,
                          "Tuning cache (from `fa-run tune`) that picks the "
                          "kernel of the group per seq_kv class. Default: "
                          "<kernel dir>/tuning.json when it exists");
  command
      ->add_flag("--no-tuning", o.noTuning,
                 "Ignore any tuning cache: run the group's default kernel")
      ->excludes(tuning);
  addDeviceOptions(command, o);

  command->callback([&o] {
    bool fromFiles = !o.qPath.empty();
    if (!fromFiles && (!o.batch || !o.heads || !o.seq || !o.dim))
      throw CLI::RequiredError("--batch, --heads, --seq and --dim (or --q, "
                               "--k, --v and --out)");
  });
  return command;
}

int runAttention(const AttentionOptions &options) {
  DType dtype = parseDType(options.dtype);
  // Everything that can fail without a GPU is done before touching one.
  Problem problem = options.qPath.empty() ? randomProblem(options, dtype)
                                          : problemFromFiles(options, dtype);
  std::string kernelDir = options.kernelDirectory();
  KernelLibrary library = KernelLibrary::load(kernelDir);
  KernelQuery query{"attention_fwd", dtype, problem.shape.headDim,
                    options.causal};
  library.find(query); // Throws, listing the library, if it has no kernel.
  std::optional<TuningCache> cache = tuningCache(options, kernelDir);

  Context context(options.device);
  // The cache applies only to the GPU it was tuned on, so the choice waits
  // for the device's name.
  KernelChoice choice =
      chooseKernel(library, query, problem.shape.seqKv,
                   cache ? &*cache : nullptr, context.device().name);
  if (!choice.warning.empty())
    std::cerr << "fa-run: warning: " << choice.warning << "\n";
  const KernelSpec &spec = *choice.kernel;
  Stream stream;
  Kernel kernel(spec, context.device());
  DeviceTensors tensors(problem.shape, dtype);
  tensors.upload(problem, dtype);

  AttentionReport report{spec, choice, context.device(), problem.shape, {},
                         {},   {}};
  Outputs outputs = runOnce(kernel, problem, tensors, stream);
  report.filesWritten = writeOutputs(options, outputs, dtype);
  if (options.check)
    report.check = checkOutputs(
        problem, spec, tensors, outputs, stream,
        useCpuReference(options, problem.shape),
        options.rtol > 0 ? options.rtol : defaultRelativeTolerance(dtype));
  if (options.bench)
    report.bench = benchmark(kernel, problem.shape, context.device(), tensors,
                             stream, options.warmup, options.runs);

  if (options.json)
    std::cout << toJson(report).dump(2) << "\n";
  else
    printText(report, std::cout);
  if (report.check && !report.check->passed()) {
    std::cerr << "fa-run: check failed: error above rtol "
              << report.check->relativeTolerance
              << " or unwritten output elements\n";
    return 1;
  }
  return 0;
}

} // namespace fa
