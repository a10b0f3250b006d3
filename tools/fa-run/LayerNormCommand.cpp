//===- LayerNormCommand.cpp - `fa-run layernorm` --------------------------===//
//
// Runs the LayerNorm forward kernel from the library (and with --grad the
// backward after it) on random inputs of given sizes or on the user's .npy
// tensors; optionally checks every output against the fp64 reference and
// times the passes.
//
//===----------------------------------------------------------------------===//

#include "LayerNormCommand.h"

#include "HostTensors.h"
#include "LayerNormProblem.h"
#include "LayerNormReport.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/Npy.h"

#include <iostream>
#include <optional>

namespace fa {
namespace {

/// Inputs from files, or random ones the check's CPU reference reads.
bool hostInputs(const LayerNormOptions &options) {
  return !options.xPath.empty() || options.check;
}

/// Outputs for the check or for files.
bool downloadOutputs(const LayerNormOptions &options) {
  return options.check || !options.yPath.empty() || !options.meanPath.empty() ||
         !options.rstdPath.empty() || !options.dxPath.empty() ||
         !options.dweightPath.empty() || !options.dbiasPath.empty();
}

/// The device and host memory a LayerNorm run allocates, counted from its
/// sizes (overflow-checked) before anything is allocated. `benchSets`: the
/// buffer sets a benchmark rotates through (0 without one).
MemoryBudget layerNormBudget(const LayerNormShape &shape, DType dtype,
                             const LayerNormOptions &options, int benchSets) {
  shape.validate();
  const char *what = "counting the run's memory";
  auto bytes = [&](std::uint64_t count, std::int64_t elements,
                   std::uint64_t elementBytes) {
    return checkedMultiply(
        count, checkedMultiply<std::uint64_t>(elements, elementBytes, what),
        what);
  };
  const std::int64_t matrix = elementCount(shape.matrix());
  const std::uint64_t element = dtypeBytes(dtype);
  // x and y (with --grad also dy and dx) dominate; weight, bias, mean, rstd
  // and the backward's partial sums are rows or columns.
  const std::uint64_t matrices = options.grad ? 4 : 2;
  MemoryBudget budget;
  budget.addDevice(options.grad ? "x, y, dy and dx" : "x and y",
                   bytes(matrices, matrix, element));
  if (options.bench && benchSets > 1)
    budget.addDevice(
        std::to_string(benchSets - 1) + " more benchmark buffer sets",
        checkedMultiply<std::uint64_t>(
            benchSets - 1, layerNormWorkingSetBytes(shape, dtype, options.grad),
            what));
  // Inputs from files or for the check's CPU reference, and outputs for the
  // check or files, are held on the host as floats; the check's fp64
  // reference of y (and dx) too.
  const std::uint64_t inputs = options.grad ? 2 : 1; // x (and dy).
  if (hostInputs(options))
    budget.addHost(options.grad ? "host x and dy" : "host x",
                   bytes(inputs, matrix, 4));
  if (downloadOutputs(options))
    budget.addHost(options.grad ? "host y and dx" : "host y",
                   bytes(inputs, matrix, 4));
  if (hostInputs(options) || downloadOutputs(options))
    budget.addHost("transfer staging", bytes(1, matrix, element));
  if (options.check)
    budget.addHost("the fp64 reference", bytes(inputs, matrix, 8));
  return budget;
}

LayerNormProblem problemFromFiles(const LayerNormOptions &options,
                                  DType dtype) {
  LayerNormProblem problem;
  problem.x = readInput(options.xPath, dtype);
  problem.xShape = problem.x.shape;
  if (problem.xShape.empty() || elementCount(problem.xShape) == 0)
    throw Error(options.xPath + " has shape " + formatShape(problem.xShape) +
                "; x needs at least one dimension (the last is normalised) "
                "and no empty one");
  LayerNormShape &shape = problem.shape;
  shape = LayerNormShape::ofTensor(problem.xShape);
  problem.x.shape = shape.matrix();

  problem.weight = readInput(options.weightPath, dtype);
  expectNpyShape(options.weightPath, problem.weight, shape.row(),
                 "weight must be [cols], cols being x's last dimension");
  problem.bias = readInput(options.biasPath, dtype);
  expectNpyShape(options.biasPath, problem.bias, shape.row(),
                 "bias must be [cols], cols being x's last dimension");
  if (options.grad) {
    problem.dy = readInput(options.dyPath, dtype);
    expectNpyShape(options.dyPath, problem.dy, problem.xShape,
                   "dy must have x's shape");
    problem.dy.shape = shape.matrix();
  }
  return problem;
}

} // namespace

CLI::App *addLayerNormCommand(CLI::App &app, LayerNormOptions &o) {
  CLI::App *command = app.add_subcommand(
      "layernorm",
      "Run a LayerNorm forward kernel from the kernel library (and with "
      "--grad the backward), on random inputs of the given sizes or on .npy "
      "tensors; optionally check every output against an fp64 reference and "
      "time the passes. Each row of x (its last dimension) is normalised: "
      "y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(biased "
      "variance + eps).");
  const char *sizes = "Sizes (random normal x, weight, bias and dy)";
  CLI::Option *rows =
      command->add_option("--rows", o.rows, "Rows M of x [M, N]")->group(sizes);
  CLI::Option *cols =
      command->add_option("--cols", o.cols, "Columns N (normalised)")
          ->group(sizes);
  CLI::Option *seed =
      addSeedOption(command, o, "Seed of the random inputs", sizes);

  std::vector<CLI::Option *> backwardFiles = addTensorFileOptions(
      command, "Tensors from files (the shape comes from x)",
      {{"--x", o.xPath,
        "Input x, .npy of any rank: its last dimension is normalised, the "
        "others are rows ('<f2', '<f4' or '<f8'; rounded to --dtype)",
        TensorFileRole::ShapeSource},
       {"--weight", o.weightPath, "Weight, .npy [N]", TensorFileRole::Needed},
       {"--bias", o.biasPath, "Bias, .npy [N]", TensorFileRole::Needed},
       {"--dy", o.dyPath, "Gradient of y for --grad, .npy with x's shape",
        TensorFileRole::Backward},
       {"--y", o.yPath,
        "Where to write y, .npy with x's shape ('<f2' for f16 kernels, else "
        "'<f4')",
        TensorFileRole::Optional},
       {"--mean", o.meanPath,
        "Where to write the row means, .npy '<f4' with x's leading "
        "dimensions",
        TensorFileRole::Optional},
       {"--rstd", o.rstdPath,
        "Where to write the rows' 1 / sqrt(variance + eps), .npy '<f4' with "
        "x's leading dimensions",
        TensorFileRole::Optional},
       {"--dx", o.dxPath, "Where to write dx (--grad), .npy with x's shape",
        TensorFileRole::Backward},
       {"--dweight", o.dweightPath,
        "Where to write dweight (--grad), .npy '<f4' [N]",
        TensorFileRole::Backward},
       {"--dbias", o.dbiasPath, "Where to write dbias (--grad), .npy '<f4' [N]",
        TensorFileRole::Backward}},
      {rows, cols, seed});

  addDTypeOption(command, o, "Element type of x, weight, bias, y, dy and dx");
  command
      ->add_option("--eps", o.eps,
                   "Added to the variance: positive and finite in f32 (the "
                   "forward kernels take it as an f32 parameter, so any "
                   "such eps runs on the same kernels)")
      ->capture_default_str();
  command->add_option(
      "--kernel", o.kernelName,
      "Run this forward kernel (by name; it must have the dtype, and if "
      "resident hold the row) instead of the one the row length picks: "
      "for comparing configurations one at a time");
  CLI::Option *grad = command->add_flag(
      "--grad", o.grad,
      "Also run the backward: the forward first (for mean and rstd), then "
      "the backward kernel and its params kernel for dx, dweight and dbias");
  CLI::Option *backwardKernel = command->add_option(
      "--backward-kernel", o.backwardKernelName,
      "With --grad, run this backward kernel (by name; its params kernel "
      "follows) instead of the one the row length picks");
  backwardKernel->needs(grad);
  for (CLI::Option *option : backwardFiles)
    option->needs(grad);
  command->add_flag("--check", o.check,
                    "Compare every output (y, mean, rstd; with --grad also "
                    "dx, dweight, dbias) with an fp64 CPU reference; exit 1 "
                    "if a relative error exceeds its tolerance or an element "
                    "is unwritten (outputs and the backward's partial sums "
                    "are poisoned with NaN first)");
  command->add_option("--rtol", o.rtol,
                      "Relative error (Frobenius) --check accepts for every "
                      "output. Default: by the type the output is held in, "
                      "1e-2 bf16, 2e-3 f16, 1e-4 f32 (mean, rstd, dweight "
                      "and dbias are f32)");
  command->add_flag(
      "--bench", o.bench,
      "Time the forward (and with --grad the backward: its kernel and its "
      "params kernel) with CUDA events: median of --runs after --warmup, "
      "inputs rotated across buffer sets spanning 2x L2; prints ms and GB/s, "
      "counting 2*M*N*element-size bytes for the forward (x read, y written) "
      "and 3*M*N*element-size for the backward (x and dy read, dx written)");
  addTimingOptions(command, o, "Timed runs of each pass");
  addKernelsOption(command, o);
  addDeviceOptions(command, o);
  addJsonOption(command, o);

  command->callback([&o, rows, cols] {
    bool fromFiles = !o.xPath.empty();
    if (!fromFiles && (!rows->count() || !cols->count()))
      throw CLI::RequiredError("--rows and --cols (or --x, --weight and "
                               "--bias)");
    if (fromFiles && o.grad && o.dyPath.empty())
      throw CLI::RequiredError("--dy (--grad on tensors from files)");
  });
  return command;
}

namespace {

/// `fa-run layernorm`'s steps (OpCommand.h).
class LayerNormRun final : public OpRunOf<LayerNormOptions, LayerNormReport> {
public:
  using OpRunOf::OpRunOf;

private:
  LayerNormProblem problem;
  // On the device.
  std::optional<Kernel> forward, backward, params;
  std::optional<LayerNormForwardTensors> forwardTensors;
  std::optional<LayerNormBackwardTensors> backwardTensors;
  LayerNormOutputs outputs;

  void prepare() override {
    layerNormEps(options.eps); // Checked before anything is read or allocated.
    if (options.xPath.empty()) {
      problem = sizedLayerNormProblem({options.rows, options.cols});
      report.shape = problem.shape;
      checkHostMemory(layerNormBudget(problem.shape, dtype, options, 0));
    } else {
      problem = problemFromFiles(options, dtype);
      report.shape = problem.shape;
    }
    const LayerNormShape &shape = problem.shape;
    report.dtype = dtype;
    report.eps = options.eps;
    report.xShape = problem.xShape;
    KernelLibrary library = KernelLibrary::load(options.kernelDirectory());
    // The kernel the user named, else the one the row length picks.
    auto kernelFor = [&](auto op, const std::string &name) {
      return name.empty()
                 ? chooseLayerNormKernel(library, op, dtype, shape.cols)
                 : namedLayerNormKernel(library, op, dtype, shape.cols, name);
    };
    report.forward = kernelFor(kLayerNormForwardOp, options.kernelName);
    if (!options.grad)
      return;
    report.backward =
        kernelFor(kLayerNormBackwardOp, options.backwardKernelName);
    report.params = layerNormParamsKernel(library, *report.backward);
  }

  void chooseKernels(const DeviceInfo &device) override {
    report.device = device;
  }

  MemoryBudget deviceBudget(const DeviceInfo &device) override {
    return layerNormBudget(
        problem.shape, dtype, options,
        layerNormBenchmarkSets(problem.shape, dtype, options.grad, device));
  }

  void runPasses(const DeviceInfo &device, const Stream &stream) override {
    const LayerNormShape &shape = problem.shape;
    forward.emplace(report.forward, device);
    forwardTensors.emplace(shape, dtype);
    if (options.grad)
      backwardTensors.emplace(shape, dtype);
    loadInputs(layerNormInputs(problem, *forwardTensors,
                               backwardTensors ? &*backwardTensors : nullptr),
               /*fromFiles=*/!options.xPath.empty(), hostInputs(options),
               stream);
    runForward(*forward, shape, options.eps, *forwardTensors, stream, outputs,
               downloadOutputs(options));
    if (!options.grad)
      return;
    backward.emplace(*report.backward, device);
    params.emplace(*report.params, device);
    runBackward(*backward, *params, shape, *forwardTensors, *backwardTensors,
                stream, outputs, downloadOutputs(options));
    report.backwardBlocks = outputs.backwardBlocks;
  }

  void writeOutputs() override {
    // The kernels see x as a matrix [rows, cols]; the files have x's shape
    // as given (y and dx) or its leading dimensions (mean and rstd).
    const Shape &x = problem.xShape;
    outputs.y.shape = outputs.dx.shape = x;
    outputs.mean.shape = outputs.rstd.shape = Shape(x.begin(), x.end() - 1);
    report.filesWritten =
        writeOutputFiles({{options.yPath, outputs.y, dtype},
                          {options.meanPath, outputs.mean, DType::F32},
                          {options.rstdPath, outputs.rstd, DType::F32},
                          {options.dxPath, outputs.dx, dtype},
                          {options.dweightPath, outputs.dweight, DType::F32},
                          {options.dbiasPath, outputs.dbias, DType::F32}});
  }

  void checkAgainstReference(const Stream &) override {
    report.check = checkLayerNorm(problem, outputs, dtype, options.eps,
                                  options.grad, options.rtol);
  }

  void benchmarkPasses(const DeviceInfo &device, const Stream &stream,
                       int warmup, int runs) override {
    const LayerNormShape &shape = problem.shape;
    report.forwardBench =
        benchmarkForward(*forward, shape, options.eps, device, *forwardTensors,
                         stream, warmup, runs);
    if (options.grad)
      report.backwardBench =
          benchmarkBackward(*backward, *params, shape, device, *forwardTensors,
                            *backwardTensors, stream, warmup, runs);
  }
};

} // namespace

int runLayerNorm(const LayerNormOptions &options) {
  return LayerNormRun("layernorm", options).run();
}

} // namespace fa
