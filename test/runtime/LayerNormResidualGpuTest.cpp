//===- LayerNormResidualGpuTest.cpp - Residual LayerNorm on the GPU -------===//
//
// The compiler's residual LayerNorm kernels (the generated library's
// layernorm_{fwd,bwd}_*_residual) against an fp64 reference: the forward's
// sum = x + residual (as the kernel rounds it: added in f32, rounded to the
// dtype) and y, mean, rstd of that sum; the backward's dx = dresidual + the
// LayerNorm's dx, dweight and dbias, with the sum as its x. Outputs are
// poisoned (NaN) first. dresidual is dx itself (in place) in some cases and
// sum is x in others, as a transformer's residual stream uses them. Skipped
// without a GPU, and where the compiler (so the generated library) is not
// built.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Compare.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/LayerNormReference.h"

#include <algorithm>
#include <cmath>

using namespace fa;
using namespace fa::gputest;

namespace {

constexpr double kEps = 1e-5;
constexpr std::uint8_t kNaNBytes = 0xFF;

double tolerance(DType dtype) {
  return dtype == DType::BF16 ? 1e-2 : dtype == DType::F16 ? 2e-3 : 1e-4;
}

/// Relative (Frobenius) error below `tolerance`, no NaN (an element never
/// written), and no single element off by more than 8 x tolerance of the
/// largest reference value (which the norm could hide).
void expectClose(const std::vector<float> &actual,
                 const std::vector<double> &reference, double tolerance,
                 const std::string &what) {
  ErrorStats stats = compareWithReference(actual, reference);
  double largest = 0;
  for (double value : reference)
    largest = std::max(largest, std::abs(value));
  EXPECT_EQ(stats.nanCount, 0) << what;
  EXPECT_LT(stats.relative, tolerance) << what;
  EXPECT_LE(stats.maxAbs, 8 * tolerance * std::max(largest, 1.0)) << what;
}

struct ResidualCase {
  DType dtype;
  LayerNormShape shape;
  bool inPlace; // sum is x, and dresidual is dx.
};

void PrintTo(const ResidualCase &c, std::ostream *os) {
  *os << dtypeName(c.dtype) << " " << c.shape.describe()
      << (c.inPlace ? " in place" : "");
}

class LayerNormResidualGpuTest
    : public GpuTest,
      public ::testing::WithParamInterface<ResidualCase> {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
#ifdef FA_GENERATED_KERNELS_DIR
    library = std::make_unique<KernelLibrary>(
        KernelLibrary::load(FA_GENERATED_KERNELS_DIR));
#else
    GTEST_SKIP() << "the compiler is not built: no generated library";
#endif
  }

  std::unique_ptr<KernelLibrary> library;
};

TEST_P(LayerNormResidualGpuTest, ForwardAndBackwardMatchTheReference) {
  const auto [dtype, shape, inPlace] = GetParam();
  const std::size_t bytes =
      static_cast<std::size_t>(shape.rows * shape.cols) * dtypeBytes(dtype);
  HostTensor x = randomTensor(shape.matrix(), dtype, 11);
  HostTensor residual = randomTensor(shape.matrix(), dtype, 12);
  HostTensor weight = randomTensor(shape.row(), dtype, 13);
  HostTensor bias = randomTensor(shape.row(), dtype, 14);
  HostTensor dy = randomTensor(shape.matrix(), dtype, 15);
  HostTensor dresidual = randomTensor(shape.matrix(), dtype, 16);

  DeviceBuffer xBuffer = upload("x", x, dtype);
  DeviceBuffer residualBuffer = upload("residual", residual, dtype);
  DeviceBuffer weightBuffer = upload("weight", weight, dtype);
  DeviceBuffer biasBuffer = upload("bias", bias, dtype);
  DeviceBuffer dyBuffer = upload("dy", dy, dtype);
  // In place, dx starts as dresidual; otherwise dx is poisoned.
  DeviceBuffer dresidualBuffer = upload("dresidual", dresidual, dtype);
  DeviceBuffer dxBuffer("dx", bytes);
  DeviceBuffer sumBuffer("sum", bytes);
  DeviceBuffer yBuffer("y", bytes);
  DeviceBuffer mean("mean", shape.rows * sizeof(float));
  DeviceBuffer rstd("rstd", shape.rows * sizeof(float));
  DeviceBuffer dweight("dweight", shape.cols * sizeof(float));
  DeviceBuffer dbias("dbias", shape.cols * sizeof(float));
  for (DeviceBuffer *output :
       {&sumBuffer, &yBuffer, &mean, &rstd, &dweight, &dbias, &dxBuffer})
    output->fill(kNaNBytes, stream->get());
  if (inPlace)
    dxBuffer.upload(encode(dresidual.values, dtype));

  const KernelSpec &forwardSpec = chooseLayerNormKernel(
      *library, kLayerNormForwardOp, dtype, shape.cols, /*residual=*/true);
  const KernelSpec &backwardSpec = chooseLayerNormKernel(
      *library, kLayerNormBackwardOp, dtype, shape.cols, /*residual=*/true);
  SCOPED_TRACE(forwardSpec.name + " and " + backwardSpec.name);
  ASSERT_TRUE(isResidualLayerNormKernel(forwardSpec));
  ASSERT_TRUE(isResidualLayerNormKernel(backwardSpec));
  Kernel forward(forwardSpec, context->device());
  Kernel backward(backwardSpec, context->device());
  Kernel params(layerNormParamsKernel(*library, backwardSpec),
                context->device());

  LayerNormForwardBuffers forwardBuffers;
  forwardBuffers.x = xBuffer.get();
  forwardBuffers.weight = weightBuffer.get();
  forwardBuffers.bias = biasBuffer.get();
  forwardBuffers.y = yBuffer.get();
  forwardBuffers.mean = mean.get();
  forwardBuffers.rstd = rstd.get();
  forwardBuffers.residual = residualBuffer.get();
  forwardBuffers.sum = inPlace ? xBuffer.get() : sumBuffer.get();
  const DeviceBuffer &sum = inPlace ? xBuffer : sumBuffer;
  LayerNormForwardLaunch(forward, shape, forwardBuffers, kEps).enqueue(*stream);

  LayerNormBackwardBuffers backwardBuffers;
  backwardBuffers.x = forwardBuffers.sum;
  backwardBuffers.weight = weightBuffer.get();
  backwardBuffers.mean = mean.get();
  backwardBuffers.rstd = rstd.get();
  backwardBuffers.dy = dyBuffer.get();
  backwardBuffers.dx = dxBuffer.get();
  backwardBuffers.dweight = dweight.get();
  backwardBuffers.dbias = dbias.get();
  backwardBuffers.dresidual = inPlace ? dxBuffer.get() : dresidualBuffer.get();
  // The forward's outputs now: in place, the backward then overwrites dx
  // (which it reads as dresidual) but none of these.
  stream->synchronize();
  std::vector<float> sumValues = decode(sum.download(), dtype);
  std::vector<float> meanValues = decode(mean.download(), DType::F32);
  std::vector<float> rstdValues = decode(rstd.download(), DType::F32);
  std::vector<float> yValues = decode(yBuffer.download(), dtype);

  LayerNormBackwardLaunch launch(backward, params, shape, backwardBuffers);
  launch.fillPartials(kNaNBytes, *stream);
  launch.enqueue(*stream);
  stream->synchronize();

  // The sum as the kernel forms it: x + r in f32, rounded to the dtype. It
  // must match exactly (up to the sign of a zero).
  std::vector<float> expectedSum(x.values.size());
  for (std::size_t i = 0; i < expectedSum.size(); ++i)
    expectedSum[i] = roundToDType(x.values[i] + residual.values[i], dtype);
  std::int64_t sumMismatches = 0;
  for (std::size_t i = 0; i < expectedSum.size(); ++i)
    sumMismatches += sumValues[i] != expectedSum[i];
  EXPECT_EQ(sumMismatches, 0) << "sum";

  LayerNormForwardReference reference = referenceLayerNormForward(
      shape, expectedSum, weight.values, bias.values, kEps);
  expectClose(yValues, reference.y, tolerance(dtype), "y");
  expectClose(meanValues, reference.mean, 1e-4, "mean");
  expectClose(rstdValues, reference.rstd, 1e-4, "rstd");

  LayerNormBackwardReference gradients = referenceLayerNormBackward(
      shape, expectedSum, weight.values, dy.values, kEps);
  std::vector<double> expectedDx(gradients.dx.size());
  for (std::size_t i = 0; i < expectedDx.size(); ++i)
    expectedDx[i] = gradients.dx[i] + dresidual.values[i];
  expectClose(decode(dxBuffer.download(), dtype), expectedDx, tolerance(dtype),
              "dx");
  expectClose(decode(dweight.download(), DType::F32), gradients.dweight, 1e-4,
              "dweight");
  expectClose(decode(dbias.download(), DType::F32), gradients.dbias, 1e-4,
              "dbias");
  // The inputs the kernels only read are untouched.
  EXPECT_EQ(decode(residualBuffer.download(), dtype), residual.values);
  EXPECT_EQ(decode(dyBuffer.download(), dtype), dy.values);
  if (!inPlace) {
    EXPECT_EQ(decode(xBuffer.download(), dtype), x.values);
    EXPECT_EQ(decode(dresidualBuffer.download(), dtype), dresidual.values);
  }
}

std::vector<ResidualCase> residualCases() {
  std::vector<ResidualCase> cases;
  // 384 and 768 (the GPT widths), 1000 (not a multiple of a resident
  // kernel's block), 300 (nor of the 8-element chunk), 5000 (past every
  // residual backward's resident kernels: the looped one).
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (std::int64_t rows : {1, 17, 1000})
      for (std::int64_t cols : {384, 768, 1000, 300, 5000})
        cases.push_back({dtype, {rows, cols}, rows == 17});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GeneratedKernels, LayerNormResidualGpuTest,
                         ::testing::ValuesIn(residualCases()));

TEST_F(GpuTest, ResidualKernelsRefuseMismatchedBuffers) {
#ifndef FA_GENERATED_KERNELS_DIR
  GTEST_SKIP() << "the compiler is not built: no generated library";
#else
  KernelLibrary library = KernelLibrary::load(FA_GENERATED_KERNELS_DIR);
  LayerNormShape shape{4, 768};
  Kernel forward(chooseLayerNormKernel(library, kLayerNormForwardOp,
                                       DType::BF16, shape.cols, true),
                 context->device());
  LayerNormForwardBuffers plain{1, 2, 3, 4, 5, 6};
  EXPECT_THROW(LayerNormForwardLaunch(forward, shape, plain, kEps), Error);
#endif
}

} // namespace
