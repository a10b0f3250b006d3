//===- attention_command.cpp - `fa-handwritten attention` -----------------===//
//
// Runs the hand-written attention forward (and with --grad the backward
// after it) once on random inputs with NaN-poisoned outputs, optionally
// checks out, lse, dq, dk and dv against the runtime's fp64 reference and
// times the passes: what `fa-run attention` does with the generated kernels,
// reported through fa-run's own AttentionReport so that the text and JSON
// read the same (and bench/compare_kernels.py reads both alike).
//
//===----------------------------------------------------------------------===//

#include "attention_command.h"

#include "attention.h"
#include "cuda_check.h"

#include "AttentionReport.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/Reference.h"
#include "fa/runtime/Stream.h"

#include <cmath>
#include <iostream>
#include <optional>
#include <vector>

namespace fa::handwritten {
namespace {

// Above this much work (B*H*N*M*D multiply-adds) `--reference auto` checks on
// the GPU: fa-run's thresholds (tools/fa-run/AttentionCommand.cpp).
constexpr double kCpuReferenceMaxWork = double(1 << 28);
constexpr double kCpuGradReferenceMaxWork = double(1 << 26);

void *pointer(const DeviceBuffer &buffer) {
  return reinterpret_cast<void *>(buffer.get());
}

struct Inputs {
  HostTensor q, k, v; // Rounded to the dtype.
  HostTensor dout;    // With --grad only.
};

/// q, k, v (and dout) drawn in fa-run's order, so a seed gives both tools
/// the same problem.
Inputs randomInputs(const AttentionShape &shape, DType dtype, bool backward,
                    std::uint64_t seed) {
  NvtxRange range{"random inputs"};
  std::mt19937_64 rng(seed);
  Inputs inputs;
  inputs.q = randomTensor(shape.query(), dtype, rng);
  inputs.k = randomTensor(shape.keyValue(), dtype, rng);
  inputs.v = randomTensor(shape.keyValue(), dtype, rng);
  if (backward)
    inputs.dout = randomTensor(shape.query(), dtype, rng);
  return inputs;
}

struct ForwardTensors {
  DeviceBuffer q, k, v, out, lse;

  ForwardTensors(const AttentionShape &shape, DType dtype)
      : q("q", tensorBytes(shape.query(), dtype)),
        k("k", tensorBytes(shape.keyValue(), dtype)),
        v("v", tensorBytes(shape.keyValue(), dtype)),
        out("out", tensorBytes(shape.query(), dtype)),
        lse("lse", tensorBytes(shape.logSumExp(), DType::F32)) {}

  std::size_t bytes() const {
    return q.bytes() + k.bytes() + v.bytes() + out.bytes() + lse.bytes();
  }
  void copyInputsFrom(const ForwardTensors &other) {
    q.copyFrom(other.q);
    k.copyFrom(other.k);
    v.copyFrom(other.v);
  }
};

struct BackwardTensors {
  DeviceBuffer dout, dq, dk, dv, workspace;

  BackwardTensors(const AttentionShape &shape, DType dtype,
                  const AttentionProblem &problem)
      : dout("dout", tensorBytes(shape.query(), dtype)),
        dq("dq", tensorBytes(shape.query(), dtype)),
        dk("dk", tensorBytes(shape.keyValue(), dtype)),
        dv("dv", tensorBytes(shape.keyValue(), dtype)),
        workspace("the backward's workspace (delta, f32 dq)",
                  attentionBackwardWorkspaceBytes(problem)) {}

  std::size_t bytes() const {
    return dout.bytes() + dq.bytes() + dk.bytes() + dv.bytes() +
           workspace.bytes();
  }
};

AttentionDType kernelDType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return AttentionDType::BF16;
  case DType::F16:
    return AttentionDType::F16;
  case DType::F32:
    return AttentionDType::F32;
  }
  return AttentionDType::F32;
}

void launchForward(DType dtype, const AttentionProblem &problem,
                   const ForwardTensors &t, const Stream &stream) {
  checkCuda(launchAttentionForward(kernelDType(dtype), problem, pointer(t.q),
                                   pointer(t.k), pointer(t.v), pointer(t.out),
                                   static_cast<float *>(pointer(t.lse)),
                                   stream.get()),
            "launching the hand-written attention forward");
}

void launchBackward(DType dtype, const AttentionProblem &problem,
                    const ForwardTensors &f, const BackwardTensors &b,
                    const Stream &stream) {
  checkCuda(launchAttentionBackward(kernelDType(dtype), problem, pointer(f.q),
                                    pointer(f.k), pointer(f.v), pointer(f.out),
                                    pointer(b.dout),
                                    static_cast<const float *>(pointer(f.lse)),
                                    pointer(b.dq), pointer(b.dk), pointer(b.dv),
                                    pointer(b.workspace), stream.get()),
            "launching the hand-written attention backward");
}

/// A hand-written kernel as the report shows it: KernelSpec describes a
/// library kernel, these have only a name, an op and their tiles.
KernelSpec kernelSpec(const std::string &name, const char *op, DType dtype,
                      const AttentionShape &shape, bool causal) {
  KernelSpec spec;
  spec.name = name;
  spec.op = op;
  spec.target = "sm_90a";
  spec.dtype = dtype;
  spec.headDim = shape.headDim;
  spec.causal = causal;
  return spec;
}

std::string kernelName(const char *pass, DType dtype,
                       const AttentionShape &shape, bool causal) {
  return std::string("handwritten_attention_") + pass + "_" + dtypeName(dtype) +
         "_d" + std::to_string(shape.headDim) + (causal ? "_causal" : "");
}

class AttentionCommand : public Subcommand {
public:
  explicit AttentionCommand(CLI::App &app);
  int run() override;

private:
  std::int64_t batch = 0, heads = 0, kvHeads = 0, seq = 0, kvSeq = 0, dim = 0;
  std::string dtypeName;
  bool causal = false;
  bool grad = false;
  bool check = false;
  std::string reference = "auto";
  double rtol = 0; // 0: the dtype's default.
  bool bench = false;

  AttentionShape shape() const {
    return {batch,
            heads,
            kvHeads > 0 ? kvHeads : heads,
            seq,
            kvSeq > 0 ? kvSeq : seq,
            dim};
  }
  bool onCpu(const AttentionShape &s) const;
  CheckReport checkOutputs(const AttentionShape &s, DType dtype,
                           const Inputs &inputs, const ForwardTensors &forward,
                           const BackwardTensors *backward,
                           const Stream &stream) const;
};

AttentionCommand::AttentionCommand(CLI::App &app)
    : Subcommand(app, "attention",
                 "Run the hand-written FlashAttention-2-style attention "
                 "forward (and with --grad the backward) on random inputs of "
                 "the given sizes; optionally check against an fp64 "
                 "reference and time the passes, as `fa-run attention` does "
                 "the generated kernels. bf16 and f16, head_dim 64 and 128.") {
  command->add_option("--batch", batch, "Batch size B")->required();
  command->add_option("--heads", heads, "Query heads H")->required();
  command->add_option("--kv-heads", kvHeads,
                      "Key/value heads (grouped-query attention; H must be "
                      "a multiple). Default: H");
  command->add_option("--seq", seq, "Query sequence length N")->required();
  command->add_option("--kv-seq", kvSeq,
                      "Key/value sequence length. "
                      "Default: N");
  command->add_option("--dim", dim, "Head dimension D (64 or 128)")->required();
  command->add_option("--dtype", dtypeName, "Element type")
      ->required()
      ->check(CLI::IsMember({"bf16", "f16"}));
  command->add_flag("--causal", causal,
                    "Causal mask, top-left aligned: query i sees keys j <= i");
  command->add_flag("--grad", grad,
                    "Also run the backward (dq, dk, dv of sum(dout * out), "
                    "dout random normal) after the forward");
  command->add_flag("--check", check,
                    "Compare out and lse (and with --grad dq, dk, dv) with "
                    "fp64; exit 1 if a relative error exceeds its tolerance "
                    "or an element is unwritten (outputs are poisoned with "
                    "NaN first)");
  command
      ->add_option("--reference", reference,
                   "Where --check computes the reference: cpu, gpu, or auto "
                   "(the CPU for small problems), as fa-run's")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  command
      ->add_option("--rtol", rtol,
                   "Relative error (Frobenius) --check accepts. Default: "
                   "fa-run's for the dtype (gradients twice the forward's)")
      ->check(atLeast(0));
  command->add_flag("--bench", bench,
                    "Time the forward (and with --grad the backward) with "
                    "CUDA events: median of --runs after --warmup, inputs "
                    "rotated across buffer sets spanning 2x L2; prints ms and "
                    "TFLOP/s counting 4*B*H*N*M*D FLOPs forward, 2.5 times "
                    "that backward (half if causal)");
  addRunOptions("Timed runs of each pass");
}

bool AttentionCommand::onCpu(const AttentionShape &s) const {
  if (reference != "auto")
    return reference == "cpu";
  double work =
      static_cast<double>(s.batch) * s.heads * s.seqQ * s.seqKv * s.headDim;
  return work < (grad ? kCpuGradReferenceMaxWork : kCpuReferenceMaxWork);
}

CheckReport AttentionCommand::checkOutputs(const AttentionShape &s, DType dtype,
                                           const Inputs &inputs,
                                           const ForwardTensors &forward,
                                           const BackwardTensors *backward,
                                           const Stream &stream) const {
  NvtxRange range{"check attention"};
  const double softmaxScale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
  const bool cpu = onCpu(s);
  CheckReport report;
  report.reference = cpu ? "cpu" : "gpu";
  report.relativeTolerance = rtol > 0 ? rtol : defaultRelativeTolerance(dtype);
  AttentionReference expected =
      cpu ? referenceAttentionCpu(s, inputs.q.values, inputs.k.values,
                                  inputs.v.values, softmaxScale, causal)
          : referenceAttentionGpu(s, dtype, forward.q.get(), forward.k.get(),
                                  forward.v.get(), softmaxScale, causal,
                                  stream);
  report.out = compareWithReference(
      download(forward.out, s.query(), dtype).values, expected.out);
  report.lse = compareWithReference(
      download(forward.lse, s.logSumExp(), DType::F32).values, expected.lse);
  if (!backward)
    return report;
  AttentionGradReference gradients =
      cpu ? referenceAttentionGradCpu(s, inputs.q.values, inputs.k.values,
                                      inputs.v.values, inputs.dout.values,
                                      softmaxScale, causal)
          : referenceAttentionGradGpu(
                s, dtype, forward.q.get(), forward.k.get(), forward.v.get(),
                backward->dout.get(), softmaxScale, causal, stream);
  GradientCheck gradientCheck;
  gradientCheck.relativeTolerance =
      rtol > 0 ? rtol : defaultGradientTolerance(dtype);
  gradientCheck.dq = compareWithReference(
      download(backward->dq, s.query(), dtype).values, gradients.dq);
  gradientCheck.dk = compareWithReference(
      download(backward->dk, s.keyValue(), dtype).values, gradients.dk);
  gradientCheck.dv = compareWithReference(
      download(backward->dv, s.keyValue(), dtype).values, gradients.dv);
  report.gradients = gradientCheck;
  return report;
}

BenchReport benchReport(const Timing &timing, int bufferSets, double flops) {
  return {
      timing, bufferSets, flops, flops / (timing.medianMs * 1e-3) / 1e12, {}};
}

int AttentionCommand::run() {
  const DType dtype = parseDType(dtypeName);
  const AttentionShape s = shape();
  s.validate();
  AttentionProblem problem{static_cast<int>(s.batch),
                           static_cast<int>(s.heads),
                           static_cast<int>(s.kvHeads),
                           static_cast<int>(s.seqQ),
                           static_cast<int>(s.seqKv),
                           static_cast<int>(s.headDim),
                           causal,
                           0.0f};
  if (const char *why = attentionUnsupportedReason(kernelDType(dtype), problem))
    throw Error("the hand-written attention kernels cannot run " +
                s.describe() + " " + dtypeName + ": " + why);
  // Everything that can fail without a GPU is done before touching one.
  const Inputs inputs = randomInputs(s, dtype, grad, options.seed);

  Context context(options.device);
  const DeviceInfo &device = context.device();
  requireSm90(device);
  Stream stream;

  AttentionReport report;
  report.kernel = kernelSpec(kernelName("fwd", dtype, s, causal),
                             kAttentionForwardOp, dtype, s, causal);
  report.choice = {nullptr, KernelSource::Named,
                   "hand-written (bench/handwritten/attention_forward.cu)", ""};
  report.device = device;
  report.shape = s;

  ForwardTensors forward(s, dtype);
  {
    NvtxRange range{"attention forward"};
    forward.q.upload(encode(inputs.q.values, dtype));
    forward.k.upload(encode(inputs.k.values, dtype));
    forward.v.upload(encode(inputs.v.values, dtype));
    forward.out.fill(kNaNBytes, stream.get());
    forward.lse.fill(kNaNBytes, stream.get());
    launchForward(dtype, problem, forward, stream);
    stream.synchronize();
  }

  std::optional<BackwardTensors> backward;
  if (grad) {
    NvtxRange range{"attention backward"};
    backward.emplace(s, dtype, problem);
    backward->dout.upload(encode(inputs.dout.values, dtype));
    for (DeviceBuffer *output :
         {&backward->dq, &backward->dk, &backward->dv, &backward->workspace})
      output->fill(kNaNBytes, stream.get());
    launchBackward(dtype, problem, forward, *backward, stream);
    stream.synchronize();
    const char *op = kAttentionBackwardOp;
    report.backward = BackwardKernelsReport{
        kernelSpec(kernelName("bwd_prepare", dtype, s, causal),
                   kAttentionDeltaOp, dtype, s, causal),
        kernelSpec(kernelName("bwd_main", dtype, s, causal), kAttentionDkDvOp,
                   dtype, s, causal),
        kernelSpec(kernelName("bwd_convert_dq", dtype, s, causal), op, dtype, s,
                   causal),
        {nullptr, KernelSource::Named,
         "hand-written (bench/handwritten/attention_backward.cu)", ""}};
  }
  DeviceBuffer::sampleDeviceUsage();

  if (check)
    report.check = checkOutputs(s, dtype, inputs, forward,
                                backward ? &*backward : nullptr, stream);

  if (bench) {
    // Rotate through copies of the tensors so each run reads its inputs
    // from memory rather than from an L2 warmed by the previous run.
    NvtxRange range{"benchmark"};
    const int sets =
        rotationCopies(forward.bytes() + (backward ? backward->bytes() : 0),
                       device.l2CacheBytes, kMaxBufferSets);
    std::vector<ForwardTensors> forwards;
    std::vector<BackwardTensors> backwards;
    forwards.reserve(sets);
    backwards.reserve(sets);
    for (int set = 1; set < sets; ++set) {
      forwards.emplace_back(s, dtype).copyInputsFrom(forward);
      launchForward(dtype, problem, forwards.back(), stream);
      if (backward)
        backwards.emplace_back(s, dtype, problem).dout.copyFrom(backward->dout);
    }
    auto forwardSet = [&](int run) -> const ForwardTensors & {
      int set = run % sets;
      return set == 0 ? forward : forwards[set - 1];
    };
    Timing timing =
        timeOnStream(stream, options.warmup, options.runs, [&](int run) {
          launchForward(dtype, problem, forwardSet(run), stream);
        });
    report.bench = benchReport(timing, sets, s.flops(causal));
    if (backward) {
      timing = timeOnStream(stream, options.warmup, options.runs, [&](int run) {
        int set = run % sets;
        launchBackward(dtype, problem, forwardSet(run),
                       set == 0 ? *backward : backwards[set - 1], stream);
      });
      report.backwardBench = benchReport(timing, sets, s.backwardFlops(causal));
    }
    stream.synchronize();
  }

  DeviceBuffer::sampleDeviceUsage();
  report.memory = processMemoryReport();

  return printReport(report, options);
}

} // namespace

std::unique_ptr<Subcommand> makeAttentionCommand(CLI::App &app) {
  return std::make_unique<AttentionCommand>(app);
}

} // namespace fa::handwritten
