//===- layernorm_command.cpp - `fa-handwritten layernorm` -----------------===//
//
// Runs the hand-written LayerNorm forward (and with --grad the backward after
// it) once on random inputs with NaN-poisoned outputs, optionally checks
// every output against the runtime's fp64 reference and times the passes:
// what `fa-run layernorm` does with the generated kernels, reported through
// fa-run's own LayerNormReport so that the text and JSON read the same.
//
//===----------------------------------------------------------------------===//

#include "layernorm_command.h"

#include "layernorm.h"

#include "LayerNormReport.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/LayerNormReference.h"
#include "fa/runtime/Nvtx.h"
#include "fa/runtime/Stream.h"

#include <iostream>
#include <optional>
#include <vector>

namespace fa::handwritten {
namespace {

struct LayerNormInputs {
  HostTensor x, weight, bias; // Rounded to the dtype.
  HostTensor dy;              // With --grad only.
};

/// Random normal x, weight, bias (and dy), drawn in fa-run's order, so a seed
/// gives both tools the same problem.
LayerNormInputs randomInputs(const LayerNormShape &shape, DType dtype,
                             bool backward, std::uint64_t seed) {
  NvtxRange range{"random inputs"};
  std::mt19937_64 rng(seed);
  LayerNormInputs inputs;
  inputs.x = randomTensor(shape.matrix(), dtype, rng);
  inputs.weight = randomTensor(shape.row(), dtype, rng);
  inputs.bias = randomTensor(shape.row(), dtype, rng);
  if (backward)
    inputs.dy = randomTensor(shape.matrix(), dtype, rng);
  return inputs;
}

struct ForwardTensors {
  DeviceBuffer x, weight, bias, y, mean, rstd;

  ForwardTensors(const LayerNormShape &shape, DType dtype)
      : x("x", tensorBytes(shape.matrix(), dtype)),
        weight("weight", tensorBytes(shape.row(), dtype)),
        bias("bias", tensorBytes(shape.row(), dtype)),
        y("y", tensorBytes(shape.matrix(), dtype)),
        mean("mean", tensorBytes(shape.perRow(), DType::F32)),
        rstd("rstd", tensorBytes(shape.perRow(), DType::F32)) {}

  LayerNormForwardBuffers buffers() const {
    return {x.get(), weight.get(), bias.get(), y.get(), mean.get(), rstd.get()};
  }
  std::size_t bytes() const {
    return x.bytes() + weight.bytes() + bias.bytes() + y.bytes() +
           mean.bytes() + rstd.bytes();
  }
};

/// The backward's own tensors; it also reads the forward's x, weight, mean
/// and rstd.
struct BackwardTensors {
  DeviceBuffer dy, dx, dweight, dbias;

  BackwardTensors(const LayerNormShape &shape, DType dtype)
      : dy("dy", tensorBytes(shape.matrix(), dtype)),
        dx("dx", tensorBytes(shape.matrix(), dtype)),
        dweight("dweight", tensorBytes(shape.row(), DType::F32)),
        dbias("dbias", tensorBytes(shape.row(), DType::F32)) {}

  LayerNormBackwardBuffers buffers(const ForwardTensors &forward) const {
    return {forward.x.get(),    forward.weight.get(),
            forward.mean.get(), forward.rstd.get(),
            dy.get(),           dx.get(),
            dweight.get(),      dbias.get()};
  }
  /// Everything the backward touches but its workspace.
  std::size_t bytes(const ForwardTensors &forward) const {
    return forward.x.bytes() + forward.weight.bytes() + forward.mean.bytes() +
           forward.rstd.bytes() + dy.bytes() + dx.bytes() + dweight.bytes() +
           dbias.bytes();
  }
};

struct LayerNormOutputs {
  HostTensor y, mean, rstd;      // The forward's.
  HostTensor dx, dweight, dbias; // The backward's, when it ran.
};

/// A hand-written kernel as the report shows it. KernelSpec describes a
/// library kernel; these have no PTX file or manifest entry, only a name, an
/// op and a layout (in `config`).
KernelSpec kernelSpec(const std::string &name, const char *op, DType dtype,
                      const RowLayout &layout) {
  KernelSpec spec;
  spec.name = name;
  spec.op = op;
  spec.target = "sm_90a";
  spec.dtype = dtype;
  spec.resident = layout.resident;
  spec.rowsPerTile = layout.resident ? layout.rowsPerBlock() : 1;
  spec.blockCols = layout.capacity();
  spec.block = {static_cast<unsigned>(layout.blockThreads), 1, 1};
  spec.config = {{"vector", layout.vector},
                 {"group_threads", layout.groupThreads},
                 {"chunks", layout.chunks},
                 {"block_threads", layout.blockThreads},
                 {"rows", spec.rowsPerTile},
                 {"block_cols", spec.blockCols},
                 {"resident", layout.resident ? 1 : 0}};
  return spec;
}

/// The kernel adding up the backward's `partialRows` rows of partial sums,
/// 32 columns a block.
KernelSpec paramsKernelSpec(const std::string &name, DType dtype,
                            std::int64_t partialRows) {
  KernelSpec spec;
  spec.name = name;
  spec.op = kLayerNormParamsOp;
  spec.target = "sm_90a";
  spec.dtype = dtype;
  spec.blockCols = 32;
  spec.block = {1024, 1, 1};
  spec.config = {{"block_cols", spec.blockCols}, {"partial_rows", partialRows}};
  return spec;
}

class LayerNormCommand : public Subcommand {
public:
  explicit LayerNormCommand(CLI::App &app);
  int run() override;

private:
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::string dtypeName;
  double eps = 1e-5;
  bool grad = false;
  bool check = false;
  double rtol = 0; // 0: each output's default.
  bool bench = false;

  LayerNormCheck checkOutputs(const LayerNormShape &shape, DType dtype,
                              const LayerNormInputs &inputs,
                              const LayerNormOutputs &outputs) const;
};

LayerNormCommand::LayerNormCommand(CLI::App &app)
    : Subcommand(app, "layernorm",
                 "Run the hand-written LayerNorm forward kernel (and with "
                 "--grad the backward) on random inputs of the given sizes; "
                 "optionally check every output against an fp64 reference "
                 "and time the passes, as `fa-run layernorm` does the "
                 "generated kernels. Each row of x is normalised: y = (x - "
                 "mean) * rstd * weight + bias, rstd = 1 / sqrt(biased "
                 "variance + eps).") {
  command->add_option("--rows", rows, "Rows M of x [M, N]")->required();
  command->add_option("--cols", cols, "Columns N (normalised)")->required();
  command
      ->add_option("--dtype", dtypeName,
                   "Element type of x, weight, bias, y, dy and dx")
      ->required()
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  command->add_option("--eps", eps, "Added to the variance")
      ->capture_default_str()
      ->check(atLeast(0));
  command->add_flag("--grad", grad,
                    "Also run the backward: the forward first (for mean and "
                    "rstd), then the kernels for dx and the partial column "
                    "sums, and the one adding those up into dweight and "
                    "dbias");
  command->add_flag("--check", check,
                    "Compare every output (y, mean, rstd; with --grad also "
                    "dx, dweight, dbias) with an fp64 CPU reference; exit 1 "
                    "if a relative error exceeds its tolerance or an element "
                    "is unwritten (outputs and the backward's workspace are "
                    "poisoned with NaN first)");
  command
      ->add_option("--rtol", rtol,
                   "Relative error (Frobenius) --check accepts for every "
                   "output. Default: by the type the output is held in, "
                   "1e-2 bf16, 2e-3 f16, 1e-4 f32 (mean, rstd, dweight "
                   "and dbias are f32), as fa-run's")
      ->check(atLeast(0));
  command->add_flag(
      "--bench", bench,
      "Time the forward (and with --grad the backward: all its kernels) "
      "with CUDA events: median of --runs after --warmup, inputs rotated "
      "across buffer sets spanning 2x L2; prints ms and GB/s, counting "
      "2*M*N*element-size bytes for the forward (x read, y written) and "
      "3*M*N*element-size for the backward (x and dy read, dx written)");
  addRunOptions("Timed runs of each pass");
}

LayerNormCheck
LayerNormCommand::checkOutputs(const LayerNormShape &shape, DType dtype,
                               const LayerNormInputs &inputs,
                               const LayerNormOutputs &outputs) const {
  NvtxRange range{"check layernorm"};
  LayerNormForwardReference forward = referenceLayerNormForward(
      shape, inputs.x.values, inputs.weight.values, inputs.bias.values, eps);
  LayerNormCheck result;
  result.outputs = {
      compareLayerNormOutput("y", outputs.y, forward.y, dtype, rtol),
      compareLayerNormOutput("mean", outputs.mean, forward.mean, DType::F32,
                             rtol),
      compareLayerNormOutput("rstd", outputs.rstd, forward.rstd, DType::F32,
                             rtol)};
  if (!grad)
    return result;
  LayerNormBackwardReference gradients = referenceLayerNormBackward(
      shape, inputs.x.values, inputs.weight.values, inputs.dy.values, eps);
  result.outputs.push_back(
      compareLayerNormOutput("dx", outputs.dx, gradients.dx, dtype, rtol));
  result.outputs.push_back(compareLayerNormOutput(
      "dweight", outputs.dweight, gradients.dweight, DType::F32, rtol));
  result.outputs.push_back(compareLayerNormOutput(
      "dbias", outputs.dbias, gradients.dbias, DType::F32, rtol));
  return result;
}

LayerNormBench benchReport(const Timing &timing, int bufferSets, double bytes) {
  return {timing, bufferSets, bytes, bytes / (timing.medianMs * 1e-3) / 1e9};
}

/// The median of timed forward launches, inputs rotated across copies
/// spanning 2x L2, so that each run reads them from memory rather than from
/// an L2 warmed by the previous one.
LayerNormBench benchmarkForward(DType dtype, const LayerNormShape &shape,
                                double eps, const DeviceInfo &device,
                                const ForwardTensors &inputs,
                                const Stream &stream,
                                const RunOptions &options) {
  NvtxRange range{"benchmark forward"};
  const int sets =
      rotationCopies(inputs.bytes(), device.l2CacheBytes, kMaxBufferSets);
  std::vector<ForwardTensors> copies;
  std::vector<LayerNormForward> launches;
  launches.emplace_back(dtype, shape, eps, inputs.buffers());
  for (int set = 1; set < sets; ++set) {
    ForwardTensors &copy = copies.emplace_back(shape, dtype);
    copy.x.copyFrom(inputs.x);
    copy.weight.copyFrom(inputs.weight);
    copy.bias.copyFrom(inputs.bias);
    launches.emplace_back(dtype, shape, eps, copy.buffers());
  }
  Timing timing =
      timeOnStream(stream, options.warmup, options.runs, [&](int run) {
        launches[run % launches.size()].enqueue(stream.get());
      });
  return benchReport(timing, sets, shape.forwardBytes(dtype));
}

/// The same for the backward: each run launches all its kernels.
LayerNormBench benchmarkBackward(DType dtype, const LayerNormShape &shape,
                                 const DeviceInfo &device,
                                 const ForwardTensors &forward,
                                 const BackwardTensors &inputs,
                                 const Stream &stream,
                                 const RunOptions &options) {
  NvtxRange range{"benchmark backward"};
  const int sets = rotationCopies(inputs.bytes(forward), device.l2CacheBytes,
                                  kMaxBufferSets);
  std::vector<ForwardTensors> savedCopies;
  std::vector<BackwardTensors> copies;
  std::vector<LayerNormBackward> launches;
  launches.emplace_back(dtype, shape, inputs.buffers(forward), device);
  for (int set = 1; set < sets; ++set) {
    ForwardTensors &saved = savedCopies.emplace_back(shape, dtype);
    BackwardTensors &copy = copies.emplace_back(shape, dtype);
    saved.x.copyFrom(forward.x);
    saved.weight.copyFrom(forward.weight);
    saved.mean.copyFrom(forward.mean);
    saved.rstd.copyFrom(forward.rstd);
    copy.dy.copyFrom(inputs.dy);
    launches.emplace_back(dtype, shape, copy.buffers(saved), device);
  }
  Timing timing =
      timeOnStream(stream, options.warmup, options.runs, [&](int run) {
        launches[run % launches.size()].enqueue(stream.get());
      });
  return benchReport(timing, sets, shape.backwardBytes(dtype));
}

int LayerNormCommand::run() {
  const DType dtype = parseDType(dtypeName);
  const LayerNormShape shape{rows, cols};
  shape.validate();
  // Everything that can fail without a GPU is done before touching one.
  const LayerNormInputs inputs = randomInputs(shape, dtype, grad, options.seed);

  Context context(options.device);
  const DeviceInfo &device = context.device();
  requireSm90(device);
  Stream stream;

  ForwardTensors forwardTensors(shape, dtype);
  {
    NvtxRange range{"upload inputs"};
    forwardTensors.x.upload(encode(inputs.x.values, dtype));
    forwardTensors.weight.upload(encode(inputs.weight.values, dtype));
    forwardTensors.bias.upload(encode(inputs.bias.values, dtype));
  }
  LayerNormForward forward(dtype, shape, eps, forwardTensors.buffers());
  LayerNormReport report;
  report.dtype = dtype;
  report.eps = eps;
  report.shape = shape;
  report.xShape = shape.matrix();
  report.device = device;
  report.forward = kernelSpec(forward.kernelName(), kLayerNormForwardOp, dtype,
                              forward.layout());

  LayerNormOutputs outputs;
  {
    NvtxRange range{"layernorm forward"};
    for (DeviceBuffer *output :
         {&forwardTensors.y, &forwardTensors.mean, &forwardTensors.rstd})
      output->fill(kNaNBytes, stream.get());
    forward.enqueue(stream.get());
    stream.synchronize();
    outputs.y = download(forwardTensors.y, shape.matrix(), dtype);
    outputs.mean = download(forwardTensors.mean, shape.perRow(), DType::F32);
    outputs.rstd = download(forwardTensors.rstd, shape.perRow(), DType::F32);
  }

  std::optional<BackwardTensors> backwardTensors;
  std::optional<LayerNormBackward> backward;
  if (grad) {
    NvtxRange range{"layernorm backward"};
    backwardTensors.emplace(shape, dtype);
    backwardTensors->dy.upload(encode(inputs.dy.values, dtype));
    backward.emplace(dtype, shape, backwardTensors->buffers(forwardTensors),
                     device);
    report.backward = kernelSpec(backward->kernelName(), kLayerNormBackwardOp,
                                 dtype, backward->layout());
    report.backward->paramsKernel = backward->paramsKernelName();
    report.backward->config["partial_rows"] = backward->partialRows();
    report.params = paramsKernelSpec(backward->paramsKernelName(), dtype,
                                     backward->partialRows());
    report.backwardBlocks = backward->blocks();

    for (DeviceBuffer *output :
         {&backwardTensors->dx, &backwardTensors->dweight,
          &backwardTensors->dbias})
      output->fill(kNaNBytes, stream.get());
    backward->fillWorkspace(kNaNBytes, stream.get());
    backward->enqueue(stream.get());
    stream.synchronize();
    outputs.dx = download(backwardTensors->dx, shape.matrix(), dtype);
    outputs.dweight =
        download(backwardTensors->dweight, shape.row(), DType::F32);
    outputs.dbias = download(backwardTensors->dbias, shape.row(), DType::F32);
  }

  // Allocations sample the GPU's used memory as they raise the peak; these
  // samples add what the driver reserved for the launches.
  DeviceBuffer::sampleDeviceUsage();

  if (check)
    report.check = checkOutputs(shape, dtype, inputs, outputs);

  if (bench) {
    report.forwardBench = benchmarkForward(dtype, shape, eps, device,
                                           forwardTensors, stream, options);
    if (grad)
      report.backwardBench =
          benchmarkBackward(dtype, shape, device, forwardTensors,
                            *backwardTensors, stream, options);
  }

  DeviceBuffer::sampleDeviceUsage();
  report.memory = processMemoryReport();

  return printReport(report, options);
}

} // namespace

std::unique_ptr<Subcommand> makeLayerNormCommand(CLI::App &app) {
  return std::make_unique<LayerNormCommand>(app);
}

} // namespace fa::handwritten
