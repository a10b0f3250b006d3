//===- GpuTest.cpp - The runtime on a GPU, with the fixture library -------===//
//
// Loads and launches the *fixture* kernels (fixtures/AttentionFixture.cu, a
// naive CUDA C++ stand-in with the compiler's ABI), so these tests check the
// runtime, not the compiler's kernels. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Npy.h"
#include "fa/runtime/RandomFill.h"
#include "fa/runtime/Reference.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace fa;
using namespace fa::gputest;

namespace {

TEST_F(GpuTest, InvalidPtxErrorCarriesTheJitLog) {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry broken() { bogus.instruction; }\n";
  try {
    Module module(ptx.c_str(), "kernel broken from broken.ptx");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind("loading kernel broken from broken.ptx: "
                            "CUDA_ERROR_INVALID_PTX",
                            0),
              0u)
        << message;
    EXPECT_NE(message.find("JIT error log:"), std::string::npos) << message;
  }
}

TEST_F(GpuTest, MissingEntryPointIsNamed) {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry present() { ret; }\n";
  Module module(ptx.c_str(), "test.ptx");
  EXPECT_NE(module.function("present"), nullptr);
  try {
    module.function("absent");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("finding entry point 'absent' in test.ptx: "
                         "CUDA_ERROR_NOT_FOUND",
                         0),
              0u)
        << error.what();
  }
}

TEST_F(GpuTest, DeviceBuffersCountTheirBytes) {
  const ByteHighWater &allocated = DeviceBuffer::allocated();
  std::size_t live = allocated.live();
  {
    DeviceBuffer buffer("counted", 3 << 20);
    EXPECT_EQ(allocated.live(), live + (3 << 20));
    EXPECT_GE(allocated.peak(), allocated.live());
    DeviceBuffer::sampleDeviceUsage();
    DeviceMemoryUsage usage = DeviceBuffer::deviceUsagePeak();
    EXPECT_GE(usage.usedBytes, allocated.live());
    EXPECT_GE(usage.totalBytes, usage.usedBytes);
  }
  EXPECT_EQ(allocated.live(), live);
}

TEST_F(GpuTest, PoisonedBuffersReadAsNaN) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    DeviceBuffer buffer("poisoned", 16 * dtypeBytes(dtype));
    buffer.fill(0xFF, stream->get());
    stream->synchronize();
    for (float value : decode(buffer.download(), dtype))
      EXPECT_TRUE(std::isnan(value)) << dtypeName(dtype);
  }
}

TEST_F(GpuTest, GpuReferenceMatchesCpuReference) {
  AttentionShape shape{2, 4, 2, 37, 50, 64};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (bool causal : {false, true}) {
      HostTensor q = randomTensor(shape.query(), dtype, 1);
      HostTensor k = randomTensor(shape.keyValue(), dtype, 2);
      HostTensor v = randomTensor(shape.keyValue(), dtype, 3);
      DeviceBuffer dq = upload("q", q, dtype), dk = upload("k", k, dtype),
                   dv = upload("v", v, dtype);
      AttentionReference cpu = referenceAttentionCpu(shape, q.values, k.values,
                                                     v.values, 0.3, causal);
      AttentionReference gpu = referenceAttentionGpu(
          shape, dtype, dq.get(), dk.get(), dv.get(), 0.3, causal, *stream);
      ASSERT_EQ(gpu.out.size(), cpu.out.size());
      for (std::size_t i = 0; i < cpu.out.size(); ++i)
        ASSERT_NEAR(gpu.out[i], cpu.out[i], 1e-12) << dtypeName(dtype);
      for (std::size_t i = 0; i < cpu.lse.size(); ++i)
        ASSERT_NEAR(gpu.lse[i], cpu.lse[i], 1e-12) << dtypeName(dtype);
    }
}

class FixtureKernelTest : public GpuTest,
                          public testing::WithParamInterface<std::string> {};

TEST_P(FixtureKernelTest, MatchesTheReference) {
  KernelLibrary library = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  const KernelSpec *spec = nullptr;
  for (const KernelSpec &candidate : library.kernels())
    if (candidate.name == GetParam())
      spec = &candidate;
  ASSERT_NE(spec, nullptr);
  Kernel kernel(*spec, context->device());
  DType dtype = spec->dtype;
  // Grouped heads, a partial query tile and more queries than keys.
  AttentionShape shape{2, 4, 2, 130, 77, spec->headDim};
  HostTensor q = randomTensor(shape.query(), dtype, 4);
  HostTensor k = randomTensor(shape.keyValue(), dtype, 5);
  HostTensor v = randomTensor(shape.keyValue(), dtype, 6);
  DeviceBuffer dq = upload("q", q, dtype), dk = upload("k", k, dtype),
               dv = upload("v", v, dtype);
  DeviceBuffer out("out", elementCount(shape.query()) * dtypeBytes(dtype));
  DeviceBuffer lse("lse", elementCount(shape.logSumExp()) * sizeof(float));
  out.fill(0xFF, stream->get());
  lse.fill(0xFF, stream->get());
  AttentionLaunch(kernel, shape,
                  {dq.get(), dk.get(), dv.get(), out.get(), lse.get()})
      .enqueue(*stream);
  stream->synchronize();

  AttentionReference reference = referenceAttentionCpu(
      shape, q.values, k.values, v.values, spec->softmaxScale(), spec->causal);
  ErrorStats outErrors =
      compareWithReference(decode(out.download(), dtype), reference.out);
  ErrorStats lseErrors =
      compareWithReference(decode(lse.download(), DType::F32), reference.lse);
  double tolerance = dtype == DType::BF16  ? 2e-2
                     : dtype == DType::F16 ? 5e-3
                                           : 2e-3;
  EXPECT_EQ(outErrors.nanCount, 0);
  EXPECT_EQ(lseErrors.nanCount, 0);
  EXPECT_LT(outErrors.relative, tolerance);
  EXPECT_LT(lseErrors.relative, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    AllFixtureKernels, FixtureKernelTest,
    testing::Values("fixture_attention_fwd_bf16_d64",
                    "fixture_attention_fwd_bf16_d64_causal",
                    "fixture_attention_fwd_bf16_d128",
                    "fixture_attention_fwd_bf16_d128_causal",
                    "fixture_attention_fwd_f16_d64",
                    "fixture_attention_fwd_f16_d64_causal",
                    "fixture_attention_fwd_f16_d128",
                    "fixture_attention_fwd_f16_d128_causal",
                    "fixture_attention_fwd_f32_d64",
                    "fixture_attention_fwd_f32_d64_causal",
                    "fixture_attention_fwd_f32_d128",
                    "fixture_attention_fwd_f32_d128_causal"));

/// fa-run on .npy files: runs the binary the way a user would.
using FaRunNpyTest = FaRunTest;

TEST_F(FaRunNpyTest, WritesOutputsOfTheUsersTensors) {
  AttentionShape shape{1, 2, 1, 33, 45, 64};
  HostTensor q = randomTensor(shape.query(), DType::F32, 7);
  HostTensor k = randomTensor(shape.keyValue(), DType::F32, 8);
  HostTensor v = randomTensor(shape.keyValue(), DType::F32, 9);
  writeNpy(path("q.npy"), q, DType::F32);
  writeNpy(path("k.npy"), k, DType::F32);
  writeNpy(path("v.npy"), v, DType::F32);
  ASSERT_EQ(faRun("attention --dtype f16 --causal --q " + path("q.npy") +
                  " --k " + path("k.npy") + " --v " + path("v.npy") +
                  " --out " + path("out.npy") + " --lse " + path("lse.npy")),
            0)
      << stderrText();

  HostTensor out = readNpy(path("out.npy"));
  HostTensor lse = readNpy(path("lse.npy"));
  EXPECT_EQ(out.shape, shape.query());
  EXPECT_EQ(lse.shape, shape.logSumExp());
  // The kernel saw the inputs rounded to f16; so must the reference.
  for (HostTensor *input : {&q, &k, &v})
    roundToDType(input->values, DType::F16);
  AttentionReference reference = referenceAttentionCpu(
      shape, q.values, k.values, v.values, 1 / std::sqrt(64.0), true);
  EXPECT_LT(compareWithReference(out.values, reference.out).relative, 5e-3);
  EXPECT_LT(compareWithReference(lse.values, reference.lse).relative, 1e-5);
}

/// fa-run's `memory` report.
using FaRunMemoryTest = FaRunTest;

TEST_F(FaRunMemoryTest, AttentionPeakHoldsItsTensors) {
  AttentionShape shape{2, 4, 2, 100, 100, 64};
  std::size_t tensorBytes =
      2 * (elementCount(shape.query()) + elementCount(shape.keyValue())) *
      dtypeBytes(DType::BF16);
  for (const char *grad : {"", " --grad"}) {
    SCOPED_TRACE(grad);
    ASSERT_EQ(faRun(std::string("attention --batch 2 --heads 4 --kv-heads 2 "
                                "--seq 100 --dim 64 --dtype bf16 --json") +
                    grad),
              0)
        << stderrText();
    nlohmann::json memory = nlohmann::json::parse(stdoutText())["memory"];
    // q, k, v and out; the backward's dout, dq, dk and dv as much again.
    std::size_t held = *grad ? 2 * tensorBytes : tensorBytes;
    EXPECT_GE(memory["allocated_peak_bytes"].get<std::size_t>(), held);
    EXPECT_EQ(memory["tensor_bytes"].get<std::size_t>(), held);
    EXPECT_GE(memory["device_used_bytes"].get<std::size_t>(),
              memory["allocated_peak_bytes"].get<std::size_t>());
    EXPECT_GE(memory["device_total_bytes"].get<std::size_t>(),
              memory["device_used_bytes"].get<std::size_t>());
    EXPECT_EQ(memory["attention_matrix_elements"], 2 * 4 * 100 * 100);
  }
}

TEST_F(FaRunMemoryTest, LayerNormPeakHoldsItsTensors) {
  ASSERT_EQ(faRun("layernorm --rows 1000 --cols 1024 --dtype f32 --json"), 0)
      << stderrText();
  nlohmann::json memory = nlohmann::json::parse(stdoutText())["memory"];
  // x and y.
  EXPECT_GE(memory["allocated_peak_bytes"].get<std::size_t>(),
            std::size_t(2 * 1000 * 1024 * 4));
  EXPECT_GE(memory["device_used_bytes"].get<std::size_t>(),
            memory["allocated_peak_bytes"].get<std::size_t>());
}

TEST_F(FaRunNpyTest, MismatchedTensorsAreClearErrors) {
  writeNpy(path("q.npy"), randomTensor({1, 2, 8, 64}, DType::F32, 1),
           DType::F32);
  writeNpy(path("k.npy"), randomTensor({1, 2, 8, 64}, DType::F32, 2),
           DType::F32);
  writeNpy(path("v.npy"), randomTensor({1, 2, 9, 64}, DType::F32, 3),
           DType::F32);
  EXPECT_EQ(faRun("attention --dtype bf16 --q " + path("q.npy") + " --k " +
                  path("k.npy") + " --v " + path("v.npy") + " --out " +
                  path("out.npy")),
            1);
  EXPECT_NE(stderrText().find(path("v.npy") +
                              " has shape [1, 2, 9, 64], "
                              "expected [1, 2, 8, 64] (v must have k's shape)"),
            std::string::npos)
      << stderrText();
}

} // namespace

namespace {

std::vector<float> randomOnDevice(std::uint64_t seed, std::uint64_t index,
                                  std::int64_t count, DType dtype,
                                  const Stream &stream) {
  DeviceBuffer buffer("random", count * dtypeBytes(dtype));
  buffer.fill(kNaNBytes, stream.get());
  DeviceRandom(seed).fillNormal(buffer, dtype, index, stream);
  stream.synchronize();
  return decode(buffer.download(), dtype);
}

TEST_F(GpuTest, DeviceRandomInputsAreStandardNormalAndDeterministic) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    std::vector<float> a = randomOnDevice(7, 0, 1 << 20, dtype, *stream);
    double sum = 0, squares = 0;
    for (float value : a) {
      ASSERT_TRUE(std::isfinite(value)); // Every element written.
      EXPECT_EQ(value, roundToDType(value, dtype));
      sum += value;
      squares += double(value) * value;
    }
    double mean = sum / a.size(), variance = squares / a.size() - mean * mean;
    EXPECT_NEAR(mean, 0.0, 5e-3) << dtypeName(dtype);
    EXPECT_NEAR(variance, 1.0, 1e-2) << dtypeName(dtype);
    // The same seed and index give the same tensor, whatever its length;
    // another index or seed another one.
    std::vector<float> prefix = randomOnDevice(7, 0, 1000, dtype, *stream);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));
    EXPECT_NE(randomOnDevice(7, 1, 1000, dtype, *stream), prefix);
    EXPECT_NE(randomOnDevice(8, 0, 1000, dtype, *stream), prefix);
  }
}

} // namespace
