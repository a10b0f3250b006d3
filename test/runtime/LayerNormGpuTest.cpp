//===- LayerNormGpuTest.cpp - LayerNorm launches on the fixture kernels ---===//
//
// Launches the *fixture* LayerNorm kernels (fixtures/LayerNormFixture.cu,
// naive CUDA C++ with the compiler's ABI) through LayerNormForwardLaunch and
// LayerNormBackwardLaunch, and runs `fa-run layernorm` on .npy files: these
// test the runtime, not the compiler's kernels. The eps tests also run the
// compiler's kernels (the generated library, where the compiler is built):
// eps is their parameter. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Compare.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/LayerNormReference.h"
#include "fa/runtime/Npy.h"

#include <algorithm>

using namespace fa;
using namespace fa::gputest;

namespace {

constexpr double kEps = 1e-5;
constexpr std::uint8_t kNaNBytes = 0xFF;

double tolerance(DType dtype) {
  return dtype == DType::BF16 ? 1e-2 : dtype == DType::F16 ? 2e-3 : 1e-4;
}

struct DeviceTensors {
  DeviceBuffer x, weight, bias, dy;               // Inputs.
  DeviceBuffer y, mean, rstd, dx, dweight, dbias; // Outputs.
};

/// Random inputs on the host and the device, outputs poisoned.
struct LayerNormProblem {
  LayerNormShape shape;
  DType dtype;
  HostTensor x, weight, bias, dy;
  DeviceTensors device;

  LayerNormProblem(LayerNormShape shape, DType dtype, const Stream &stream)
      : shape(shape), dtype(dtype), x(randomTensor(shape.matrix(), dtype, 1)),
        weight(randomTensor(shape.row(), dtype, 2)),
        bias(randomTensor(shape.row(), dtype, 3)),
        dy(randomTensor(shape.matrix(), dtype, 4)),
        device{upload("x", x, dtype),
               upload("weight", weight, dtype),
               upload("bias", bias, dtype),
               upload("dy", dy, dtype),
               DeviceBuffer("y", x.values.size() * dtypeBytes(dtype)),
               DeviceBuffer("mean", shape.rows * sizeof(float)),
               DeviceBuffer("rstd", shape.rows * sizeof(float)),
               DeviceBuffer("dx", x.values.size() * dtypeBytes(dtype)),
               DeviceBuffer("dweight", shape.cols * sizeof(float)),
               DeviceBuffer("dbias", shape.cols * sizeof(float))} {
    for (DeviceBuffer *output : {&device.y, &device.mean, &device.rstd,
                                 &device.dx, &device.dweight, &device.dbias})
      output->fill(kNaNBytes, stream.get());
  }

  LayerNormForwardBuffers forward() const {
    return {device.x.get(), device.weight.get(), device.bias.get(),
            device.y.get(), device.mean.get(),   device.rstd.get()};
  }
  LayerNormBackwardBuffers backward() const {
    return {device.x.get(),       device.weight.get(), device.mean.get(),
            device.rstd.get(),    device.dy.get(),     device.dx.get(),
            device.dweight.get(), device.dbias.get()};
  }
};

ErrorStats errors(const DeviceBuffer &buffer, DType dtype,
                  const std::vector<double> &reference) {
  return compareWithReference(decode(buffer.download(), dtype), reference);
}

void expectClose(const ErrorStats &stats, double tolerance, const char *what) {
  EXPECT_EQ(stats.nanCount, 0) << what;
  EXPECT_LT(stats.relative, tolerance) << what;
}

class LayerNormGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!IsSkipped())
      library = std::make_unique<KernelLibrary>(
          KernelLibrary::load(FA_FIXTURE_KERNELS_DIR));
  }

  const KernelSpec &spec(const std::string &name) {
    const KernelSpec *found = library->named(name);
    if (!found)
      throw Error("the fixture library has no kernel " + name);
    return *found;
  }

  /// Runs the forward kernel `name` and checks y, mean and rstd.
  void runForward(const std::string &name, LayerNormProblem &problem) {
    Kernel kernel(spec(name), context->device());
    LayerNormForwardLaunch(kernel, problem.shape, problem.forward(), kEps)
        .enqueue(*stream);
    stream->synchronize();
    LayerNormForwardReference reference = referenceLayerNormForward(
        problem.shape, problem.x.values, problem.weight.values,
        problem.bias.values, kEps);
    expectClose(errors(problem.device.y, problem.dtype, reference.y),
                tolerance(problem.dtype), "y");
    expectClose(errors(problem.device.mean, DType::F32, reference.mean), 1e-4,
                "mean");
    expectClose(errors(problem.device.rstd, DType::F32, reference.rstd), 1e-4,
                "rstd");
  }

  std::unique_ptr<KernelLibrary> library;
};

struct ForwardCase {
  const char *kernel;
  LayerNormShape shape;
};

void PrintTo(const ForwardCase &forwardCase, std::ostream *os) {
  *os << forwardCase.kernel << " " << forwardCase.shape.describe();
}

class LayerNormForwardTest : public LayerNormGpuTest,
                             public ::testing::WithParamInterface<ForwardCase> {
};

TEST_P(LayerNormForwardTest, MatchesTheReference) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    LayerNormProblem problem(GetParam().shape, dtype, *stream);
    runForward(std::string("fixture_layernorm_fwd_") + dtypeName(dtype) + "_" +
                   GetParam().kernel,
               problem);
  }
}

INSTANTIATE_TEST_SUITE_P(FixtureKernels, LayerNormForwardTest,
                         ::testing::Values(ForwardCase{"c128", {37, 1}},
                                           ForwardCase{"c128", {37, 128}},
                                           ForwardCase{"c1024", {5, 1000}},
                                           // More row tiles than blocks fit.
                                           ForwardCase{"c512_persistent",
                                                       {20001, 300}},
                                           ForwardCase{"any", {3, 5000}}),
                         [](const ::testing::TestParamInfo<ForwardCase> &info) {
                           return std::string(info.param.kernel) + "_rows" +
                                  std::to_string(info.param.shape.rows) +
                                  "_cols" +
                                  std::to_string(info.param.shape.cols);
                         });

TEST_F(LayerNormGpuTest, BackwardMatchesTheReference) {
  // The 1024-column resident kernel and the one for any row, each on rows
  // that end in a partial tile and on fewer rows than the GPU holds blocks.
  const struct {
    const char *forward, *backward;
    LayerNormShape shape;
  } testCases[] = {{"c1024", "c1024", {1001, 700}},
                   {"c1024", "c1024", {1, 1000}},
                   {"any", "any", {301, 3000}}};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (const auto &testCase : testCases) {
      std::string suffix = std::string(dtypeName(dtype)) + "_";
      LayerNormProblem problem(testCase.shape, dtype, *stream);
      runForward("fixture_layernorm_fwd_" + suffix + testCase.forward, problem);
      const KernelSpec &backwardSpec =
          spec("fixture_layernorm_bwd_" + suffix + testCase.backward);
      Kernel backward(backwardSpec, context->device());
      Kernel params(layerNormParamsKernel(*library, backwardSpec),
                    context->device());
      LayerNormBackwardLaunch launch(backward, params, problem.shape,
                                     problem.backward());
      EXPECT_EQ(launch.blocks(),
                std::min(layerNormRowTiles(backwardSpec, problem.shape),
                         backward.residentBlocks()));
      launch.fillPartials(kNaNBytes, *stream);
      launch.enqueue(*stream);
      stream->synchronize();

      LayerNormBackwardReference reference = referenceLayerNormBackward(
          problem.shape, problem.x.values, problem.weight.values,
          problem.dy.values, kEps);
      SCOPED_TRACE(backwardSpec.name + " " + problem.shape.describe());
      expectClose(errors(problem.device.dx, dtype, reference.dx),
                  tolerance(dtype), "dx");
      expectClose(errors(problem.device.dweight, DType::F32, reference.dweight),
                  1e-4, "dweight");
      expectClose(errors(problem.device.dbias, DType::F32, reference.dbias),
                  1e-4, "dbias");
    }
}

TEST_F(LayerNormGpuTest, LaunchesRefuseRowsLongerThanAResidentKernelHolds) {
  LayerNormProblem problem({4, 129}, DType::BF16, *stream);
  Kernel forward(spec("fixture_layernorm_fwd_bf16_c128"), context->device());
  try {
    LayerNormForwardLaunch(forward, problem.shape, problem.forward(), kEps);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "kernel fixture_layernorm_fwd_bf16_c128 holds "
                               "rows of at most 128 elements, but the problem "
                               "has cols=129");
  }
  Kernel backward(spec("fixture_layernorm_bwd_bf16_any"), context->device());
  try {
    LayerNormBackwardLaunch(backward, forward, problem.shape,
                            problem.backward());
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(),
                 "kernel fixture_layernorm_bwd_bf16_any needs "
                 "fixture_layernorm_bwd_params_bf16_c128 for its parameter "
                 "gradients, not fixture_layernorm_fwd_bf16_c128");
  }
}

//===----------------------------------------------------------------------===//
// eps, a kernel parameter
//===----------------------------------------------------------------------===//

/// A problem whose even rows are constant (variance 0): their rstd is
/// 1 / sqrt(eps), so a kernel that adds another eps shows it, and their dx is
/// rstd (g - mean(g)). The constants are multiples of 3/8 and the rows
/// shorter than 2^16, so every partial row sum is exact in f32 and the mean
/// is the constant itself: x - mean is exactly 0 in the kernels as in the
/// reference. The constant rows' dy is scaled by 2^-10 so that their dx
/// (up to 1e6 times g for eps 1e-12) stays within f16's range.
LayerNormProblem constantRowsProblem(LayerNormShape shape, DType dtype,
                                     const Stream &stream) {
  LayerNormProblem problem(shape, dtype, stream);
  for (std::int64_t row = 0; row < shape.rows; row += 2) {
    const float constant = 0.375f * static_cast<float>(row % 7 - 3);
    for (std::int64_t col = 0; col < shape.cols; ++col) {
      const std::size_t at = static_cast<std::size_t>(row * shape.cols + col);
      problem.x.values[at] = constant;
      problem.dy.values[at] =
          roundToDType(problem.dy.values[at] / 1024.0f, dtype);
    }
  }
  problem.device.x.upload(encode(problem.x.values, dtype));
  problem.device.dy.upload(encode(problem.dy.values, dtype));
  return problem;
}

/// The rows of a [rows, cols] tensor (cols 1: per-row values) whose index
/// has the parity `odd`.
template <typename T>
std::vector<T> rowsOf(const std::vector<T> &values, std::int64_t cols,
                      bool odd) {
  std::vector<T> picked;
  for (std::size_t i = 0; i < values.size(); ++i)
    if ((i / static_cast<std::size_t>(cols)) % 2 == (odd ? 1u : 0u))
      picked.push_back(values[i]);
  return picked;
}

/// Compares the constant (even) and the other (odd) rows of `buffer` apart,
/// so that 1e6-sized values of the constant rows do not hide errors in the
/// others.
void expectRowsClose(const DeviceBuffer &buffer, DType dtype,
                     const std::vector<double> &reference, std::int64_t cols,
                     double tolerance, const std::string &what) {
  std::vector<float> actual = decode(buffer.download(), dtype);
  for (bool odd : {false, true})
    expectClose(compareWithReference(rowsOf(actual, cols, odd),
                                     rowsOf(reference, cols, odd)),
                tolerance,
                (what + (odd ? " (other rows)" : " (constant rows)")).c_str());
}

struct EpsCase {
  const char *library; // "fixture" or "generated"
  double eps;
};

void PrintTo(const EpsCase &epsCase, std::ostream *os) {
  *os << epsCase.library << " eps=" << formatEps(epsCase.eps);
}

class LayerNormEpsTest : public GpuTest,
                         public ::testing::WithParamInterface<EpsCase> {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    std::string directory = FA_FIXTURE_KERNELS_DIR;
    if (std::string(GetParam().library) == "generated") {
#ifdef FA_GENERATED_KERNELS_DIR
      directory = FA_GENERATED_KERNELS_DIR;
#else
      GTEST_SKIP() << "the compiler is not built: no generated library";
#endif
    }
    library = std::make_unique<KernelLibrary>(KernelLibrary::load(directory));
  }

  /// The forward with the test's eps, then the backward, on the kernels the
  /// row length picks; every output against the fp64 reference.
  void runAndCheck(LayerNormProblem &problem) {
    const double eps = GetParam().eps;
    const LayerNormShape &shape = problem.shape;
    const DType dtype = problem.dtype;
    Kernel forward(
        chooseLayerNormKernel(*library, kLayerNormForwardOp, dtype, shape.cols),
        context->device());
    const KernelSpec &backwardSpec = chooseLayerNormKernel(
        *library, kLayerNormBackwardOp, dtype, shape.cols);
    Kernel backward(backwardSpec, context->device());
    Kernel params(layerNormParamsKernel(*library, backwardSpec),
                  context->device());
    SCOPED_TRACE(forward.spec().name + " and " + backwardSpec.name + " " +
                 shape.describe());
    LayerNormForwardLaunch(forward, shape, problem.forward(), eps)
        .enqueue(*stream);
    LayerNormBackwardLaunch launch(backward, params, shape, problem.backward());
    launch.fillPartials(kNaNBytes, *stream);
    launch.enqueue(*stream);
    stream->synchronize();

    LayerNormForwardReference reference = referenceLayerNormForward(
        shape, problem.x.values, problem.weight.values, problem.bias.values,
        eps);
    LayerNormBackwardReference gradients = referenceLayerNormBackward(
        shape, problem.x.values, problem.weight.values, problem.dy.values, eps);
    expectRowsClose(problem.device.y, dtype, reference.y, shape.cols,
                    tolerance(dtype), "y");
    expectClose(errors(problem.device.mean, DType::F32, reference.mean), 1e-4,
                "mean");
    expectRowsClose(problem.device.rstd, DType::F32, reference.rstd, 1, 1e-4,
                    "rstd");
    expectRowsClose(problem.device.dx, dtype, gradients.dx, shape.cols,
                    tolerance(dtype), "dx");
    expectClose(errors(problem.device.dweight, DType::F32, gradients.dweight),
                1e-4, "dweight");
    expectClose(errors(problem.device.dbias, DType::F32, gradients.dbias), 1e-4,
                "dbias");
  }

  std::unique_ptr<KernelLibrary> library;
};

TEST_P(LayerNormEpsTest, ForwardAndBackwardMatchTheReference) {
  // Rows a resident kernel holds and longer ones (the fixture's "any"
  // kernels from 1025 columns, the generated library's looped ones past
  // 8192), 37 of them: partial tiles of every kernel.
  const std::int64_t longRows =
      std::string(GetParam().library) == "generated" ? 16384 : 3000;
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (std::int64_t cols : {std::int64_t{1000}, longRows}) {
      LayerNormProblem problem =
          constantRowsProblem({37, cols}, dtype, *stream);
      runAndCheck(problem);
    }
}

INSTANTIATE_TEST_SUITE_P(
    ModelEps, LayerNormEpsTest,
    ::testing::Values(EpsCase{"fixture", 1e-5}, EpsCase{"fixture", 1e-6},
                      EpsCase{"fixture", 1e-12}, EpsCase{"generated", 1e-5},
                      EpsCase{"generated", 1e-6}, EpsCase{"generated", 1e-12}),
    [](const ::testing::TestParamInfo<EpsCase> &info) {
      std::string eps = formatEps(info.param.eps);
      eps.erase(std::remove(eps.begin(), eps.end(), '-'), eps.end());
      return std::string(info.param.library) + "_eps" + eps;
    });

using FaRunLayerNormTest = FaRunTest;

TEST_F(FaRunLayerNormTest, WritesOutputsOfTheUsersTensors) {
  // x of rank 3 is normalised over its last dimension.
  Shape xShape = {2, 3, 50};
  HostTensor x = randomTensor(xShape, DType::F32, 7);
  HostTensor weight = randomTensor({50}, DType::F32, 8);
  HostTensor bias = randomTensor({50}, DType::F32, 9);
  HostTensor dy = randomTensor(xShape, DType::F32, 10);
  for (const auto &[name, tensor] :
       {std::pair{"x", &x}, {"weight", &weight}, {"bias", &bias}, {"dy", &dy}})
    writeNpy(path(std::string(name) + ".npy"), *tensor, DType::F32);
  std::string outputs;
  for (const char *name : {"y", "mean", "rstd", "dx", "dweight", "dbias"})
    outputs +=
        std::string(" --") + name + " " + path(std::string(name) + ".npy");
  ASSERT_EQ(faRun("layernorm --dtype f16 --grad --x " + path("x.npy") +
                  " --weight " + path("weight.npy") + " --bias " +
                  path("bias.npy") + " --dy " + path("dy.npy") + outputs),
            0)
      << stderrText();

  HostTensor y = readNpy(path("y.npy")), mean = readNpy(path("mean.npy"));
  HostTensor dx = readNpy(path("dx.npy"));
  HostTensor dweight = readNpy(path("dweight.npy"));
  EXPECT_EQ(y.shape, xShape);
  EXPECT_EQ(mean.shape, (Shape{2, 3}));
  EXPECT_EQ(readNpy(path("rstd.npy")).shape, (Shape{2, 3}));
  EXPECT_EQ(dx.shape, xShape);
  EXPECT_EQ(dweight.shape, (Shape{50}));
  // The kernels saw the inputs rounded to f16; so must the reference.
  for (HostTensor *input : {&x, &weight, &bias, &dy})
    roundToDType(input->values, DType::F16);
  LayerNormShape shape{6, 50};
  LayerNormForwardReference forward = referenceLayerNormForward(
      shape, x.values, weight.values, bias.values, kEps);
  LayerNormBackwardReference backward = referenceLayerNormBackward(
      shape, x.values, weight.values, dy.values, kEps);
  EXPECT_LT(compareWithReference(y.values, forward.y).relative, 2e-3);
  EXPECT_LT(compareWithReference(mean.values, forward.mean).relative, 1e-4);
  EXPECT_LT(compareWithReference(dx.values, backward.dx).relative, 2e-3);
  EXPECT_LT(compareWithReference(dweight.values, backward.dweight).relative,
            1e-4);
}

TEST_F(FaRunLayerNormTest, MismatchedTensorsAreClearErrors) {
  writeNpy(path("x.npy"), randomTensor({4, 8}, DType::F32, 1), DType::F32);
  writeNpy(path("weight.npy"), randomTensor({8}, DType::F32, 2), DType::F32);
  writeNpy(path("bias.npy"), randomTensor({9}, DType::F32, 3), DType::F32);
  EXPECT_EQ(faRun("layernorm --dtype bf16 --x " + path("x.npy") + " --weight " +
                  path("weight.npy") + " --bias " + path("bias.npy")),
            1);
  EXPECT_NE(stderrText().find(path("bias.npy") +
                              " has shape [9], expected [8] (bias must be "
                              "[cols], cols being x's last dimension)"),
            std::string::npos)
      << stderrText();
}

} // namespace
