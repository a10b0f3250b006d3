//===- AttentionBackwardGpuTest.cpp - The backward on the fixture kernels -===//
//
// Launches the *fixture* backward kernels
// (fixtures/AttentionBackwardFixture.cu, naive CUDA C++ with the compiler's
// ABI) through AttentionBackwardLaunch after the fixture forward, checks the
// fp64 GPU gradient reference against the CPU one, and runs `fa-run attention
// --grad` on .npy files and with --bench: these test the runtime, not the
// compiler's kernels.
// Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "../ErrorTesting.h"
#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Npy.h"
#include "fa/runtime/Reference.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace fa;
using namespace fa::gputest;

namespace {

constexpr std::uint8_t kNaNBytes = 0xFF;

double gradientTolerance(DType dtype) {
  return dtype == DType::BF16 ? 4e-2 : dtype == DType::F16 ? 1e-2 : 5e-3;
}

/// Random inputs of one backward problem on the host and the device.
struct GradProblem {
  AttentionShape shape;
  DType dtype;
  HostTensor q, k, v, dout;
  DeviceBuffer qDevice, kDevice, vDevice, doutDevice;

  GradProblem(const AttentionShape &shape, DType dtype)
      : shape(shape), dtype(dtype), q(randomTensor(shape.query(), dtype, 1)),
        k(randomTensor(shape.keyValue(), dtype, 2)),
        v(randomTensor(shape.keyValue(), dtype, 3)),
        dout(randomTensor(shape.query(), dtype, 4)),
        qDevice(upload("q", q, dtype)), kDevice(upload("k", k, dtype)),
        vDevice(upload("v", v, dtype)),
        doutDevice(upload("dout", dout, dtype)) {}
};

void expectNear(const std::vector<double> &gpu, const std::vector<double> &cpu,
                const char *what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(gpu[i], cpu[i], 1e-11 * (1 + std::fabs(cpu[i])))
        << what << "[" << i << "]";
}

TEST_F(GpuTest, GpuGradientReferenceMatchesCpuGradientReference) {
  // Grouped heads; fewer queries than keys (causal: keys nobody sees); more
  // queries than keys.
  for (AttentionShape shape : {AttentionShape{2, 4, 2, 37, 50, 64},
                               AttentionShape{1, 3, 1, 20, 45, 128},
                               AttentionShape{1, 2, 2, 300, 7, 64}})
    for (DType dtype : {DType::BF16, DType::F16, DType::F32})
      for (bool causal : {false, true}) {
        SCOPED_TRACE(shape.describe() + " " + dtypeName(dtype) +
                     (causal ? " causal" : ""));
        GradProblem problem(shape, dtype);
        AttentionGradReference cpu = referenceAttentionGradCpu(
            shape, problem.q.values, problem.k.values, problem.v.values,
            problem.dout.values, 0.3, causal);
        AttentionGradReference gpu = referenceAttentionGradGpu(
            shape, dtype, problem.qDevice.get(), problem.kDevice.get(),
            problem.vDevice.get(), problem.doutDevice.get(), 0.3, causal,
            *stream);
        expectNear(gpu.dq, cpu.dq, "dq");
        expectNear(gpu.dk, cpu.dk, "dk");
        expectNear(gpu.dv, cpu.dv, "dv");
      }
}

/// The fixture group of one dtype, head_dim and causal: its forward kernel
/// and the three backward kernels, loaded.
struct FixtureGroup {
  KernelLibrary library = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  std::unique_ptr<Kernel> forward, delta, dkdv, dq;

  FixtureGroup(DType dtype, std::int64_t headDim, bool causal,
               const DeviceInfo &device) {
    forward = std::make_unique<Kernel>(
        library.find({kAttentionForwardOp, dtype, headDim, causal}), device);
    AttentionBackwardKernels specs = attentionBackwardKernels(
        library, library.find({kAttentionBackwardOp, dtype, headDim, causal}));
    delta = std::make_unique<Kernel>(*specs.delta, device);
    dkdv = std::make_unique<Kernel>(*specs.dkdv, device);
    dq = std::make_unique<Kernel>(*specs.dq, device);
  }
};

/// One backward of `problem` on `group`'s kernels: the fixture forward has
/// written out and lse; `launch` computes dq, dk and dv.
struct FixtureBackward {
  DeviceBuffer out, lse, dq, dk, dv;
  AttentionBackwardLaunch launch;

  FixtureBackward(const FixtureGroup &group, const GradProblem &problem,
                  const Stream &stream)
      : out("out", tensorBytes(problem.q, problem.dtype)),
        lse("lse", elementCount(problem.shape.logSumExp()) * sizeof(float)),
        dq("dq", tensorBytes(problem.q, problem.dtype)),
        dk("dk", tensorBytes(problem.k, problem.dtype)),
        dv("dv", tensorBytes(problem.v, problem.dtype)),
        launch(*group.delta, *group.dkdv, *group.dq, problem.shape,
               {problem.qDevice.get(), problem.kDevice.get(),
                problem.vDevice.get(), out.get(), lse.get(),
                problem.doutDevice.get(), dq.get(), dk.get(), dv.get()}) {
    AttentionLaunch(*group.forward, problem.shape,
                    {problem.qDevice.get(), problem.kDevice.get(),
                     problem.vDevice.get(), out.get(), lse.get()})
        .enqueue(stream);
  }

  /// Fills the gradients and delta with NaN, so that whatever the kernels
  /// leave unwritten shows.
  void poison(const Stream &stream) {
    for (DeviceBuffer *gradient : {&dq, &dk, &dv})
      gradient->fill(kNaNBytes, stream.get());
    launch.fillDelta(kNaNBytes, stream);
  }

private:
  static std::size_t tensorBytes(const HostTensor &tensor, DType dtype) {
    return tensor.values.size() * dtypeBytes(dtype);
  }
};

struct FixtureCase {
  DType dtype;
  std::int64_t headDim;
  bool causal;
};

class FixtureBackwardTest : public GpuTest,
                            public testing::WithParamInterface<FixtureCase> {};

TEST_P(FixtureBackwardTest, MatchesTheReference) {
  const auto [dtype, headDim, causal] = GetParam();
  FixtureGroup group(dtype, headDim, causal, context->device());
  // Grouped heads, partial tiles, more queries than keys; then fewer.
  for (AttentionShape shape : {AttentionShape{2, 4, 2, 130, 77, headDim},
                               AttentionShape{1, 2, 1, 33, 150, headDim}}) {
    SCOPED_TRACE(shape.describe());
    GradProblem problem(shape, dtype);
    FixtureBackward backward(group, problem, *stream);
    backward.poison(*stream);
    backward.launch.enqueue(*stream);
    stream->synchronize();

    AttentionGradReference reference = referenceAttentionGradCpu(
        shape, problem.q.values, problem.k.values, problem.v.values,
        problem.dout.values, group.dq->spec().softmaxScale(), causal);
    for (auto [buffer, expected, what] :
         {std::tuple{&backward.dq, &reference.dq, "dq"},
          std::tuple{&backward.dk, &reference.dk, "dk"},
          std::tuple{&backward.dv, &reference.dv, "dv"}}) {
      ErrorStats errors =
          compareWithReference(decode(buffer->download(), dtype), *expected);
      EXPECT_EQ(errors.nanCount, 0) << what;
      EXPECT_LT(errors.relative, gradientTolerance(dtype)) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFixtureGroups, FixtureBackwardTest,
                         testing::Values(FixtureCase{DType::BF16, 64, false},
                                         FixtureCase{DType::BF16, 64, true},
                                         FixtureCase{DType::BF16, 128, false},
                                         FixtureCase{DType::BF16, 128, true},
                                         FixtureCase{DType::F16, 64, false},
                                         FixtureCase{DType::F16, 64, true},
                                         FixtureCase{DType::F16, 128, false},
                                         FixtureCase{DType::F16, 128, true},
                                         FixtureCase{DType::F32, 64, false},
                                         FixtureCase{DType::F32, 64, true},
                                         FixtureCase{DType::F32, 128, false},
                                         FixtureCase{DType::F32, 128, true}),
                         [](const testing::TestParamInfo<FixtureCase> &info) {
                           return std::string(dtypeName(info.param.dtype)) +
                                  "_d" + std::to_string(info.param.headDim) +
                                  (info.param.causal ? "_causal" : "");
                         });

TEST_F(GpuTest, BackwardStagesLaunchedAloneComputeTheWholeBackward) {
  FixtureGroup group(DType::BF16, 64, true, context->device());
  GradProblem problem({2, 4, 2, 130, 77, 64}, DType::BF16);
  FixtureBackward backward(group, problem, *stream);
  backward.launch.enqueue(*stream);
  stream->synchronize();
  Bytes wholeDq = backward.dq.download(), wholeDk = backward.dk.download(),
        wholeDv = backward.dv.download();

  backward.poison(*stream);
  backward.launch.enqueue(AttentionBackwardStage::Delta, *stream);
  backward.launch.enqueue(AttentionBackwardStage::DkDv, *stream);
  stream->synchronize();
  EXPECT_EQ(backward.dk.download(), wholeDk);
  EXPECT_EQ(backward.dv.download(), wholeDv);
  EXPECT_EQ(backward.dq.download(), Bytes(wholeDq.size(), kNaNBytes))
      << "dq written before its stage";
  backward.launch.enqueue(AttentionBackwardStage::Dq, *stream);
  stream->synchronize();
  EXPECT_EQ(backward.dq.download(), wholeDq);
}

using fa::errortest::errorOf;

TEST_F(GpuTest, BackwardLaunchChecksItsKernels) {
  FixtureGroup group(DType::BF16, 64, false, context->device());
  FixtureGroup causal(DType::BF16, 64, true, context->device());
  AttentionShape shape{1, 2, 1, 16, 16, 64};
  AttentionBackwardBuffers buffers{};
  EXPECT_EQ(errorOf([&] {
              AttentionBackwardLaunch(*causal.delta, *group.dkdv, *group.dq,
                                      shape, buffers);
            }),
            "kernel fixture_attention_bwd_bf16_d64 needs "
            "fixture_attention_bwd_bf16_d64_delta as its delta_kernel, not "
            "fixture_attention_bwd_bf16_d64_causal_delta");
  EXPECT_EQ(errorOf([&] {
              AttentionBackwardLaunch(*group.dkdv, *group.dkdv, *group.dq,
                                      shape, buffers);
            }),
            "kernel fixture_attention_bwd_bf16_d64_dkdv computes "
            "attention_bwd_dkdv, not attention_bwd_delta");
  EXPECT_EQ(errorOf([&] {
              AttentionBackwardLaunch(*group.delta, *group.dkdv, *group.forward,
                                      shape, buffers);
            }),
            "kernel fixture_attention_fwd_bf16_d64 computes attention_fwd, "
            "not attention_bwd");
  shape.headDim = 128;
  EXPECT_EQ(errorOf([&] {
              AttentionBackwardLaunch(*group.delta, *group.dkdv, *group.dq,
                                      shape, buffers);
            }),
            "kernel fixture_attention_bwd_bf16_d64 is compiled for head_dim "
            "64, but the problem has 128");
}

/// fa-run --grad on .npy files: runs the binary the way a user would.
using FaRunGradTest = FaRunTest;

TEST_F(FaRunGradTest, WritesTheGradientsOfTheUsersTensors) {
  AttentionShape shape{1, 4, 2, 33, 45, 64};
  HostTensor q = randomTensor(shape.query(), DType::F32, 7);
  HostTensor k = randomTensor(shape.keyValue(), DType::F32, 8);
  HostTensor v = randomTensor(shape.keyValue(), DType::F32, 9);
  HostTensor dout = randomTensor(shape.query(), DType::F32, 10);
  for (auto [name, tensor] :
       {std::pair{"q.npy", &q}, std::pair{"k.npy", &k}, std::pair{"v.npy", &v},
        std::pair{"dout.npy", &dout}})
    writeNpy(path(name), *tensor, DType::F32);
  ASSERT_EQ(faRun("attention --dtype f16 --causal --grad --q " + path("q.npy") +
                  " --k " + path("k.npy") + " --v " + path("v.npy") +
                  " --out " + path("out.npy") + " --dout " + path("dout.npy") +
                  " --dq " + path("dq.npy") + " --dk " + path("dk.npy") +
                  " --dv " + path("dv.npy")),
            0)
      << stderrText();

  HostTensor dq = readNpy(path("dq.npy"));
  HostTensor dk = readNpy(path("dk.npy"));
  HostTensor dv = readNpy(path("dv.npy"));
  EXPECT_EQ(dq.shape, shape.query());
  EXPECT_EQ(dk.shape, shape.keyValue());
  EXPECT_EQ(dv.shape, shape.keyValue());
  // The kernels saw the inputs rounded to f16; so must the reference.
  for (HostTensor *input : {&q, &k, &v, &dout})
    roundToDType(input->values, DType::F16);
  AttentionGradReference reference =
      referenceAttentionGradCpu(shape, q.values, k.values, v.values,
                                dout.values, 1 / std::sqrt(64.0), true);
  EXPECT_LT(compareWithReference(dq.values, reference.dq).relative, 1e-2);
  EXPECT_LT(compareWithReference(dk.values, reference.dk).relative, 1e-2);
  EXPECT_LT(compareWithReference(dv.values, reference.dv).relative, 1e-2);
}

TEST_F(FaRunGradTest, BenchReportsEachBackwardKernelAlone) {
  ASSERT_EQ(faRun("attention --batch 1 --heads 2 --seq 100 --dim 64 --dtype "
                  "bf16 --causal --grad --bench --warmup 1 --runs 3 --json"),
            0)
      << stderrText();
  nlohmann::json bench = nlohmann::json::parse(stdoutText())["bench_backward"];
  EXPECT_GT(bench["median_ms"].get<double>(), 0);
  for (auto [stage, kernel] :
       {std::pair{"delta", "fixture_attention_bwd_bf16_d64_causal_delta"},
        std::pair{"dkdv", "fixture_attention_bwd_bf16_d64_causal_dkdv"},
        std::pair{"dq", "fixture_attention_bwd_bf16_d64_causal"}}) {
    SCOPED_TRACE(stage);
    EXPECT_EQ(bench["kernels"][stage]["name"], kernel);
    EXPECT_GT(bench["kernels"][stage]["median_ms"].get<double>(), 0);
  }
}

TEST_F(FaRunGradTest, DoutOfAnotherShapeIsAClearError) {
  writeNpy(path("q.npy"), randomTensor({1, 2, 8, 64}, DType::F32, 1),
           DType::F32);
  writeNpy(path("k.npy"), randomTensor({1, 2, 8, 64}, DType::F32, 2),
           DType::F32);
  writeNpy(path("v.npy"), randomTensor({1, 2, 8, 64}, DType::F32, 3),
           DType::F32);
  writeNpy(path("dout.npy"), randomTensor({1, 2, 9, 64}, DType::F32, 4),
           DType::F32);
  EXPECT_EQ(faRun("attention --dtype bf16 --grad --q " + path("q.npy") +
                  " --k " + path("k.npy") + " --v " + path("v.npy") +
                  " --out " + path("out.npy") + " --dout " + path("dout.npy")),
            1);
  EXPECT_NE(stderrText().find(path("dout.npy") +
                              " has shape [1, 2, 9, 64], expected [1, 2, 8, "
                              "64] (dout must have q's shape [batch, heads, "
                              "seq_q, head_dim])"),
            std::string::npos)
      << stderrText();
}

TEST_F(FaRunGradTest, RandomDoutWithoutDoutFile) {
  writeNpy(path("q.npy"), randomTensor({1, 2, 20, 128}, DType::F32, 1),
           DType::F32);
  writeNpy(path("k.npy"), randomTensor({1, 1, 30, 128}, DType::F32, 2),
           DType::F32);
  writeNpy(path("v.npy"), randomTensor({1, 1, 30, 128}, DType::F32, 3),
           DType::F32);
  EXPECT_EQ(faRun("attention --dtype bf16 --grad --check --seed 5 --q " +
                  path("q.npy") + " --k " + path("k.npy") + " --v " +
                  path("v.npy") + " --out " + path("out.npy") + " --dk " +
                  path("dk.npy")),
            0)
      << stderrText();
  EXPECT_EQ(readNpy(path("dk.npy")).shape, (Shape{1, 1, 30, 128}));
}

} // namespace
