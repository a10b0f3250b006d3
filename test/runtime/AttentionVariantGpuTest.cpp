//===- AttentionVariantGpuTest.cpp - Variants' fp64 references on a GPU ---===//
//
// The GPU fp64 references (AttentionReference.cu) of every named variant,
// a user's dense mask and fully masked rows, against the CPU ones: fa-run
// --check uses the GPU one for large problems. Then fa-run on the fixture's
// user variant (fixtures/AttentionFixture.cu, prefix_lm): its --param
// capture and --mask-file reference, and the FLOPs --bench counts for a
// variant; and every named-variant kernel of the generated library (where
// the compiler is built and the library has any) on odd shapes with
// --check (and --grad where it has the backward). Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Npy.h"
#include "fa/runtime/Reference.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>

using namespace fa;
using namespace fa::gputest;

namespace {

void expectSame(const std::vector<double> &gpu, const std::vector<double> &cpu,
                const char *what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (std::isinf(cpu[i])) { // lse of a row that keeps no key.
      ASSERT_EQ(gpu[i], cpu[i]) << what << "[" << i << "]";
      continue;
    }
    ASSERT_NEAR(gpu[i], cpu[i], 1e-11 * (1 + std::fabs(cpu[i])))
        << what << "[" << i << "]";
  }
}

struct VariantCase {
  const char *name;
  AttentionShape shape;
  std::function<void(AttentionVariant &, const AttentionShape &)> make;
};

std::vector<VariantCase> variantCases() {
  return {
      // More queries than keys: the first 30 rows keep nothing.
      {"bottom-right, softcap",
       {2, 4, 2, 37, 7, 64},
       [](AttentionVariant &v, const AttentionShape &) {
         v.causal = CausalAlignment::BottomRight;
         v.softcap = 2.0f;
       }},
      {"window, ALiBi, causal",
       {1, 4, 1, 45, 60, 64},
       [](AttentionVariant &v, const AttentionShape &s) {
         v.causal = CausalAlignment::TopLeft;
         v.window = AttentionWindow{9, 3};
         v.alibiSlopes = alibiSlopes(s.heads);
       }},
      {"documents, softcap, ALiBi",
       {2, 2, 2, 50, 50, 128},
       [](AttentionVariant &v, const AttentionShape &s) {
         v.docIds = documentIdsFromLengths({7, 20, 1}, s.batch, s.seqQ);
         v.softcap = 5.0f;
         v.alibiSlopes = alibiSlopes(s.heads);
       }},
      {"a user's per-head mask, one row empty",
       {1, 2, 1, 20, 33, 64},
       [](AttentionVariant &v, const AttentionShape &s) {
         v.customName = "prefix_lm";
         v.maskShape = {s.batch, s.heads, s.seqQ, s.seqKv};
         for (std::int64_t h = 0; h < s.heads; ++h)
           for (std::int64_t i = 0; i < s.seqQ; ++i)
             for (std::int64_t j = 0; j < s.seqKv; ++j)
               v.mask.push_back(i != 5 && (j < 4 + h || j <= i));
       }},
  };
}

TEST_F(GpuTest, GpuVariantReferenceMatchesCpuReference) {
  for (const VariantCase &variantCase : variantCases())
    for (DType dtype : {DType::BF16, DType::F32}) {
      SCOPED_TRACE(std::string(variantCase.name) + " " + dtypeName(dtype));
      const AttentionShape &shape = variantCase.shape;
      AttentionVariant variant;
      variantCase.make(variant, shape);
      HostTensor q = randomTensor(shape.query(), dtype, 1);
      HostTensor k = randomTensor(shape.keyValue(), dtype, 2);
      HostTensor v = randomTensor(shape.keyValue(), dtype, 3);
      HostTensor dout = randomTensor(shape.query(), dtype, 4);
      DeviceBuffer qDevice = upload("q", q, dtype),
                   kDevice = upload("k", k, dtype),
                   vDevice = upload("v", v, dtype),
                   doutDevice = upload("dout", dout, dtype);

      AttentionReference cpu = referenceAttentionCpu(shape, q.values, k.values,
                                                     v.values, 0.3, variant);
      AttentionReference gpu =
          referenceAttentionGpu(shape, dtype, qDevice.get(), kDevice.get(),
                                vDevice.get(), 0.3, variant, *stream);
      expectSame(gpu.out, cpu.out, "out");
      expectSame(gpu.lse, cpu.lse, "lse");

      AttentionGradReference cpuGrad = referenceAttentionGradCpu(
          shape, q.values, k.values, v.values, dout.values, 0.3, variant);
      AttentionGradReference gpuGrad = referenceAttentionGradGpu(
          shape, dtype, qDevice.get(), kDevice.get(), vDevice.get(),
          doutDevice.get(), 0.3, variant, *stream);
      expectSame(gpuGrad.dq, cpuGrad.dq, "dq");
      expectSame(gpuGrad.dk, cpuGrad.dk, "dk");
      expectSame(gpuGrad.dv, cpuGrad.dv, "dv");
    }
}

/// The prefix-LM mask [seq, seq] of the fixture's user variant.
IntegerTensor prefixMask(std::int64_t seq, std::int64_t prefix) {
  IntegerTensor mask{{seq, seq}, {}};
  for (std::int64_t i = 0; i < seq; ++i)
    for (std::int64_t j = 0; j < seq; ++j)
      mask.values.push_back(j < prefix || j <= i);
  return mask;
}

TEST_F(FaRunTest, UserVariantRunsWithItsCaptureAndIsCheckedAgainstItsMask) {
  std::string mask = path("mask.npy");
  writeNpy(mask, prefixMask(150, 40));
  std::string problem = "attention --batch 2 --heads 4 --kv-heads 2 --seq 150 "
                        "--dim 64 --dtype bf16 --variant prefix_lm --check "
                        "--json --mask-file " +
                        mask;
  ASSERT_EQ(faRun(problem + " --param prefix=40"), 0) << stderrText();
  nlohmann::json report = nlohmann::json::parse(stdoutText());
  EXPECT_EQ(report["kernel"], "fixture_attention_fwd_bf16_d64_prefix_lm");
  EXPECT_EQ(report["variant"], "prefix_lm");
  EXPECT_EQ(report["variant_values"]["params"]["prefix"], "40");
  // Per (b, h): rows < 40 keep 40 keys, row i >= 40 keeps i + 1.
  EXPECT_EQ(report["kept_pairs"], 8 * (40 * 40 + (41 + 150) * 110 / 2));
  EXPECT_TRUE(report["check"]["passed"]);
  // The capture reaches the kernel: another prefix fails the same mask.
  EXPECT_EQ(faRun(problem + " --param prefix=10"), 1) << stderrText();
}

TEST_F(FaRunTest, VariantBenchCountsKeptPairs) {
  ASSERT_EQ(faRun("attention --batch 1 --heads 4 --seq 256 --dim 64 --dtype "
                  "bf16 --causal --window 32,0 --softcap 20 --check --bench "
                  "--runs 3 --warmup 1 --json"),
            0)
      << stderrText();
  nlohmann::json report = nlohmann::json::parse(stdoutText());
  EXPECT_EQ(report["variant"], "window+softcap");
  EXPECT_EQ(report["causal"], true);
  // Rows 0..31 keep i + 1 keys, the other 224 keep 33; 4 heads.
  const double kept = 4.0 * (32 * 33 / 2 + 224 * 33);
  EXPECT_EQ(report["kept_pairs"], kept);
  EXPECT_EQ(report["bench"]["flops"], 4 * 64 * kept);
  EXPECT_EQ(report["bench"]["flops_formula"], "4 * D * kept (i, j) pairs");
}

#ifdef FA_GENERATED_KERNELS_DIR
/// fa-run's flags for the values of `group`'s named variant.
std::string variantFlags(const KernelQuery &group) {
  std::string flags = group.causal ? " --causal" : "";
  std::string variant = "+" + group.variant + "+";
  auto has = [&](const char *name) {
    return variant.find(std::string("+") + name + "+") != std::string::npos;
  };
  if (has("causal_bottom_right"))
    flags += " --causal=bottom-right";
  if (has("window"))
    flags += " --window 100,20";
  if (has("document"))
    flags += " --doc-lens 100,37,300";
  if (has("softcap"))
    flags += " --softcap 20";
  if (has("alibi"))
    flags += " --alibi";
  if (has("sinks"))
    flags += " --sinks";
  if (has("dropout"))
    flags += " --dropout 0.1";
  return flags;
}

TEST_F(FaRunTest, GeneratedVariantKernelsMatchTheReference) {
  KernelLibrary library = KernelLibrary::load(FA_GENERATED_KERNELS_DIR);
  std::vector<KernelQuery> groups;
  for (const KernelQuery &group : library.groups())
    if (group.op == kAttentionForwardOp && isNamedVariant(group.variant))
      groups.push_back(group);
  if (groups.empty())
    GTEST_SKIP() << "the generated library " << FA_GENERATED_KERNELS_DIR
                 << " has no named-variant kernels";
  for (const KernelQuery &group : groups) {
    KernelQuery backward = group;
    backward.op = kAttentionBackwardOp;
    bool hasBackward = !library.candidates(backward).empty();
    bool documents = group.variant.find("document") != std::string::npos;
    // Sequences off the tiles, one query, GQA; cross attention (both ways)
    // where the variant allows seq_q != seq_kv.
    // With one key and dropout the exact dq and dk are 0 (dS = P (Z dP -
    // delta) cancels); what is left is the rounding of the bf16/f16 output
    // in delta = rowsum(dO * O), about 1e-2, as in FlashAttention-2, which
    // no tolerance relative to a zero reference can judge. The dropout
    // groups (test/runtime/CMakeLists.txt) cover seq 17 and up.
    bool dropout = group.variant.find("dropout") != std::string::npos;
    std::vector<std::string> shapes = {"--seq 17", "--seq 1000"};
    if (!dropout)
      shapes.insert(shapes.begin(), "--seq 1");
    if (!documents)
      shapes.insert(shapes.end(),
                    {"--seq 300 --kv-seq 1000", "--seq 1000 --kv-seq 129"});
    for (const std::string &shape : shapes) {
      std::string command =
          "attention --batch 2 --heads 4 --kv-heads 2 --dim " +
          std::to_string(group.headDim) + " --dtype " + dtypeName(group.dtype) +
          " " + shape + variantFlags(group) + " --check" +
          (hasBackward ? " --grad" : "");
      SCOPED_TRACE("fa-run " + command);
      EXPECT_EQ(faRun(command, FA_GENERATED_KERNELS_DIR), 0)
          << stdoutText() << stderrText();
    }
  }
}
#endif // FA_GENERATED_KERNELS_DIR

} // namespace
