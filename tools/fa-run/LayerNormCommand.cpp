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
#include "fa/runtime/DeviceBuffer.h"
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
  return options.check || !options.yPath.empty() ||
         !options.meanPath.empty() || !options.rstdPath.empty() ||
         !options.dxPath.empty() || !options.dweightPath.empty() ||
         !options.dbiasPath.empty();
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
        count,
        checkedMultiply<std::uint64_t>(elements, elementBytes, what), what);
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
            benchSets - 1,
            layerNormWorkingSetBytes(shape, dtype, options.grad), what));
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

std::string describeRun(const LayerNormShape &shape, DType dtype, bool grad) {
  return std::string("fa-run layernorm ") + shape.describe() + " " +
         dtypeName(dtype) + (grad ? " forward and backward" : " forward");
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

std::vector<std::string> writeOutputs(const LayerNormOptions &options,
                                      const LayerNormProblem &problem,
                                      const LayerNormOutputs &outputs,
                                      DType dtype) {
  std::vector<std::string> written;
  auto write = [&](const std::string &path, const HostTensor &output,
                   const Shape &shape, DType heldIn) {
    if (path.empty())
      return;
    writeOutput(path, {shape, output.values}, heldIn);
    written.push_back(path);
  };
  const Shape &x = problem.xShape;
  Shape leading(x.begin(), x.end() - 1);
  write(options.yPath, outputs.y, x, dtype);
  write(options.meanPath, outputs.mean, leading, DType::F32);
  write(options.rstdPath, outputs.rstd, leading, DType::F32);
  write(options.dxPath, outputs.dx, x, dtype);
  write(options.dweightPath, outputs.dweight, problem.shape.row(), DType::F32);
  write(options.dbiasPath, outputs.dbias, problem.shape.row(), DType::F32);
  return written;
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
      command->add_option("--seed", o.seed, "Seed of the random inputs")
          ->capture_default_str()
          ->group(sizes);

  const char *files = "Tensors from files (the shape comes from x)";
  auto file = [&](const char *name, std::string &path, const char *help) {
    return command->add_option(name, path, help)->group(files);
  };
  CLI::Option *x = file("--x", o.xPath,
                        "Input x, .npy of any rank: its last dimension is "
                        "normalised, the others are rows ('<f2', '<f4' or "
                        "'<f8'; rounded to --dtype)");
  CLI::Option *weight = file("--weight", o.weightPath, "Weight, .npy [N]");
  CLI::Option *bias = file("--bias", o.biasPath, "Bias, .npy [N]");
  CLI::Option *dy =
      file("--dy", o.dyPath, "Gradient of y for --grad, .npy with x's shape");
  CLI::Option *y = file("--y", o.yPath,
                        "Where to write y, .npy with x's shape ('<f2' for "
                        "f16 kernels, else '<f4')");
  CLI::Option *mean = file("--mean", o.meanPath,
                           "Where to write the row means, .npy '<f4' with "
                           "x's leading dimensions");
  CLI::Option *rstd = file("--rstd", o.rstdPath,
                           "Where to write the rows' 1 / sqrt(variance + "
                           "eps), .npy '<f4' with x's leading dimensions");
  CLI::Option *dx =
      file("--dx", o.dxPath, "Where to write dx (--grad), .npy with x's shape");
  CLI::Option *dweight = file("--dweight", o.dweightPath,
                              "Where to write dweight (--grad), .npy '<f4' "
                              "[N]");
  CLI::Option *dbias = file("--dbias", o.dbiasPath,
                            "Where to write dbias (--grad), .npy '<f4' [N]");
  for (CLI::Option *option : {weight, bias})
    x->needs(option);
  for (CLI::Option *option :
       {weight, bias, dy, y, mean, rstd, dx, dweight, dbias})
    option->needs(x);
  for (CLI::Option *option : {rows, cols, seed})
    option->excludes(x);

  command
      ->add_option("--dtype", o.dtype,
                   "Element type of x, weight, bias, "
                   "y, dy and dx")
      ->required()
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
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
  for (CLI::Option *option : {dy, dx, dweight, dbias, backwardKernel})
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

int runLayerNorm(const LayerNormOptions &options) {
  DType dtype = parseDType(options.dtype);
  layerNormEps(options.eps); // Checked before anything is read or allocated.
  // Everything that can fail without a GPU is done before touching one, and
  // nothing sized by the problem is allocated before its memory is counted.
  if (options.xPath.empty()) {
    LayerNormShape shape{options.rows, options.cols};
    layerNormBudget(shape, dtype, options, 0)
        .checkHost(describeRun(shape, dtype, options.grad),
                   availableHostMemory());
  }
  LayerNormProblem problem =
      options.xPath.empty()
          ? sizedLayerNormProblem({options.rows, options.cols})
          : problemFromFiles(options, dtype);
  const LayerNormShape &shape = problem.shape;
  KernelLibrary library = KernelLibrary::load(options.kernelDirectory());
  const KernelSpec &forwardSpec =
      options.kernelName.empty()
          ? chooseLayerNormKernel(library, kLayerNormForwardOp, dtype,
                                  shape.cols)
          : namedLayerNormKernel(library, kLayerNormForwardOp, dtype,
                                 shape.cols, options.kernelName);
  LayerNormReport report;
  report.dtype = dtype;
  report.eps = options.eps;
  report.shape = shape;
  report.xShape = problem.xShape;
  report.forward = forwardSpec;
  if (options.grad) {
    report.backward =
        options.backwardKernelName.empty()
            ? chooseLayerNormKernel(library, kLayerNormBackwardOp, dtype,
                                    shape.cols)
            : namedLayerNormKernel(library, kLayerNormBackwardOp, dtype,
                                   shape.cols, options.backwardKernelName);
    report.params = layerNormParamsKernel(library, *report.backward);
  }

  Context context(options.device);
  report.device = context.device();
  layerNormBudget(shape, dtype, options,
                  layerNormBenchmarkSets(shape, dtype, options.grad,
                                         report.device))
      .checkDevice(describeRun(shape, dtype, options.grad),
                   freeDeviceMemory());
  Stream stream;
  Kernel forward(forwardSpec, context.device());
  LayerNormForwardTensors forwardTensors(shape, dtype);
  std::optional<LayerNormBackwardTensors> backwardTensors;
  if (options.grad)
    backwardTensors.emplace(shape, dtype);
  if (options.xPath.empty()) {
    fillRandomInputs(options.seed, forwardTensors,
                     backwardTensors ? &*backwardTensors : nullptr, dtype,
                     stream);
    if (hostInputs(options))
      downloadInputs(problem, forwardTensors,
                     backwardTensors ? &*backwardTensors : nullptr, dtype);
  } else {
    forwardTensors.upload(problem, dtype);
    if (backwardTensors)
      backwardTensors->dy.upload(encode(problem.dy.values, dtype));
  }
  LayerNormOutputs outputs;
  runForward(forward, shape, options.eps, forwardTensors, stream, outputs,
             downloadOutputs(options));

  std::optional<Kernel> backward, params;
  if (options.grad) {
    backward.emplace(*report.backward, context.device());
    params.emplace(*report.params, context.device());
    runBackward(*backward, *params, shape, forwardTensors, *backwardTensors,
                stream, outputs, downloadOutputs(options));
    report.backwardBlocks = outputs.backwardBlocks;
  }
  // Allocations sample the GPU's used memory as they raise fa-run's peak;
  // these samples add what the driver reserved for the launches.
  DeviceBuffer::sampleDeviceUsage();

  report.filesWritten = writeOutputs(options, problem, outputs, dtype);
  if (options.check)
    report.check = checkLayerNorm(problem, outputs, dtype, report.eps,
                                  options.grad, options.rtol);
  if (options.bench) {
    report.forwardBench =
        benchmarkForward(forward, shape, options.eps, context.device(),
                         forwardTensors, stream, options.warmup, options.runs);
    if (options.grad)
      report.backwardBench = benchmarkBackward(
          *backward, *params, shape, context.device(), forwardTensors,
          *backwardTensors, stream, options.warmup, options.runs);
  }
  DeviceBuffer::sampleDeviceUsage();
  report.memory = processMemoryReport();

  if (options.json)
    std::cout << toJson(report).dump(2) << "\n";
  else
    printText(report, std::cout);
  if (report.check && !report.check->passed()) {
    std::cerr << "fa-run: check failed: an output's error is above its rtol "
                 "or has unwritten elements\n";
    return 1;
  }
  return 0;
}

} // namespace fa
