//===- AttentionReportTest.cpp - What `fa-run attention` prints -----------===//
//
// The text and JSON reports of `fa-run attention --grad --bench`, from a
// report filled in by hand: no GPU needed.
//
//===----------------------------------------------------------------------===//

#include "AttentionReport.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace fa;

namespace {

KernelSpec attentionKernel(const std::string &name, const std::string &op) {
  KernelSpec spec;
  spec.name = name;
  spec.op = op;
  spec.headDim = 128;
  return spec;
}

Timing timing(double medianMs) { return {medianMs, medianMs, medianMs, 5}; }

/// A --grad --bench report of bf16 head_dim 128, timed by hand.
AttentionReport gradBenchReport() {
  AttentionReport report;
  report.kernel = attentionKernel("fwd", kAttentionForwardOp);
  report.device.name = "Test GPU";
  report.shape = {1, 4, 4, 256, 256, 128};
  report.backward =
      BackwardKernelsReport{attentionKernel("bwd_delta", kAttentionDeltaOp),
                            attentionKernel("bwd_dkdv", kAttentionDkDvOp),
                            attentionKernel("bwd", kAttentionBackwardOp),
                            {}};
  report.bench = BenchReport{timing(0.5), 3, 1e9, 2};
  report.backwardBench = BenchReport{timing(2.25), 3, 2.5e9, 1.1};
  report.backwardBench->kernels = {{"delta", "bwd_delta", timing(0.0125)},
                                   {"dkdv", "bwd_dkdv", timing(1.5)},
                                   {"dq", "bwd", timing(0.75)}};
  return report;
}

TEST(AttentionReportTest, JsonHasTheMedianOfEachBackwardKernel) {
  nlohmann::json json = toJson(gradBenchReport());
  EXPECT_EQ(json["bench_backward"]["kernels"], nlohmann::json::parse(R"({
    "delta": {"name": "bwd_delta", "median_ms": 0.0125},
    "dkdv": {"name": "bwd_dkdv", "median_ms": 1.5},
    "dq": {"name": "bwd", "median_ms": 0.75}
  })"));
  // The whole backward's keys stay as they were, beside the new one.
  std::vector<std::string> keys;
  for (const auto &item : json["bench_backward"].items())
    keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "buffer_sets", "flops", "flops_formula", "kernels",
                      "max_ms", "median_ms", "min_ms", "runs", "tflops"}));
  EXPECT_EQ(json["bench_backward"]["median_ms"], 2.25);
  EXPECT_FALSE(json["bench"].contains("kernels"));
}

TEST(AttentionReportTest, TextHasTheMedianOfEachBackwardKernel) {
  std::ostringstream text;
  printText(gradBenchReport(), text);
  EXPECT_NE(text.str().find("\nbench   backward 2.2500 ms (median of 5"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("\nbench   backward kernels: delta 0.0125 ms, "
                            "dkdv 1.5000 ms, dq 0.7500 ms (median of each "
                            "alone)\n"),
            std::string::npos)
      << text.str();
}

TEST(AttentionReportTest, JsonKeepsItsKeysBesideMemory) {
  AttentionReport report = gradBenchReport();
  report.backward.reset();
  report.backwardBench.reset();
  nlohmann::json json = toJson(report);
  std::vector<std::string> keys;
  for (const auto &item : json.items())
    keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "batch", "bench", "causal", "config", "device", "dtype",
                      "files_written", "grad", "head_dim", "heads", "kernel",
                      "kernel_source", "kernel_source_reason", "kv_heads",
                      "memory", "op", "seq_kv", "seq_q", "variant"}));
  EXPECT_EQ(json["variant"], "");
}

TEST(AttentionReportTest, VariantsShowTheirValuesAndCountKeptPairs) {
  AttentionReport report = gradBenchReport();
  AttentionVariant variant;
  variant.window = AttentionWindow{16, 0};
  variant.softcap = 30.0f;
  variant.causal = CausalAlignment::TopLeft;
  report.variant = variantReport(variant, report.shape);
  // Per head: rows 0..15 keep i + 1 keys, the other 240 rows 17.
  const std::int64_t kept = 4 * (16 * 17 / 2 + 240 * 17);
  EXPECT_EQ(report.variant.keptPairs, kept);
  std::ostringstream text;
  printText(report, text);
  EXPECT_NE(text.str().find("\nvariant window+softcap (causal=top-left "
                            "window=(16, 0) softcap=30): " +
                            std::to_string(kept) + " kept (i, j) pairs\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("TFLOP/s counting 2.5 * 4 * D * kept (i, j) "
                            "pairs\n"),
            std::string::npos)
      << text.str();
  nlohmann::json json = toJson(report);
  EXPECT_EQ(json["variant"], "window+softcap");
  EXPECT_EQ(json["kept_pairs"], kept);
  EXPECT_EQ(json["variant_values"], nlohmann::json::parse(R"({
    "causal": "top-left", "window_left": 16, "window_right": 0,
    "softcap": 30.0})"));
  EXPECT_EQ(json["bench"]["flops_formula"], "4 * D * kept (i, j) pairs");
  EXPECT_EQ(json["bench_backward"]["flops_formula"],
            "2.5 * 4 * D * kept (i, j) pairs");
}

TEST(AttentionReportTest, SinksReportDsinksBesideTheOtherGradients) {
  AttentionReport report = gradBenchReport();
  AttentionVariant variant;
  variant.sinks = {0.5f, 1.0f, -1.0f, 2.0f};
  variant.sinksSource = "random, seed 0";
  variant.dropout = AttentionDropout{0.25f, 7, 3};
  report.variant = variantReport(variant, report.shape);
  report.backward->dsinks = attentionKernel("bwd_dsinks", kAttentionDsinksOp);
  ErrorStats small{1e-3, 1e-3, 0, 4};
  ErrorStats large{0.5, 0.5, 0, 4};
  report.check = CheckReport{"cpu", 2e-2, small, small, std::nullopt};
  report.check->gradients =
      GradientCheck{4e-2, small, small, small, std::nullopt};
  EXPECT_TRUE(report.check->passed());
  report.check->gradients->dsinks = large;
  // dsinks's error fails the check as dq's would.
  EXPECT_FALSE(report.check->passed());

  std::ostringstream text;
  printText(report, text);
  EXPECT_NE(text.str().find("\ngrad    bwd (attention_bwd bf16 head_dim=128 "
                            "non-causal) after bwd_delta and bwd_dkdv, then "
                            "bwd_dsinks\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("  dsinks: max_abs=5.000e-01 rel=5.000e-01  "
                            "rtol=4.000e-02  FAIL\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("\nvariant sinks+dropout (sinks=random, seed 0 "
                            "dropout=(p 0.25, seed 7, offset 3)): "),
            std::string::npos)
      << text.str();
  nlohmann::json json = toJson(report);
  EXPECT_EQ(json["backward"]["dsinks_kernel"], "bwd_dsinks");
  EXPECT_EQ(json["check"]["gradients"]["dsinks"]["rel"], 0.5);
  EXPECT_EQ(json["check"]["gradients"]["passed"], false);
  EXPECT_EQ(json["variant_values"]["sinks"].size(), 4u);
  EXPECT_EQ(json["variant_values"]["dropout"],
            nlohmann::json::parse(R"({"p": 0.25, "seed": 7, "offset": 3})"));
}

/// gradBenchReport's shape (B=1, H=4, N=M=256, D=128, bf16), forward only,
/// with fa-run's memory filled in by hand.
AttentionReport forwardMemoryReport() {
  AttentionReport report = gradBenchReport();
  report.kernel.dtype = DType::BF16;
  report.backward.reset();
  report.backwardBench.reset();
  report.memory = {1u << 20, 3u << 29, 80ull << 30};
  return report;
}

TEST(AttentionReportTest, JsonHasTheMemoryNotMaterialised) {
  nlohmann::json memory = toJson(forwardMemoryReport())["memory"];
  // 4 heads of 256 x 256 scores against q, k, v and out, 4 x 4*256*128 bf16
  // elements, and lse, 4*256 floats.
  EXPECT_DOUBLE_EQ(memory["saved_vs_tensors_ratio"].get<double>(),
                   (4 * 256 * 256 * 4 - 4 * 256 * 4) /
                       double(4 * 4 * 256 * 128 * 2));
  memory.erase("saved_vs_tensors_ratio");
  EXPECT_EQ(memory, nlohmann::json::parse(R"({
    "allocated_peak_bytes": 1048576,
    "device_used_bytes": 1610612736,
    "device_total_bytes": 85899345920,
    "attention_matrices": 1,
    "attention_matrix_elements": 262144,
    "attention_matrix_bytes_f32": 1048576,
    "attention_matrix_bytes_element": 524288,
    "kept_bytes": 4096,
    "tensor_bytes": 1048576
  })"));
}

TEST(AttentionReportTest, TextNamesWhichMemoryIsWhich) {
  std::ostringstream text;
  printText(forwardMemoryReport(), text);
  EXPECT_NE(
      text.str().find("\nmemory  allocated by fa-run 1.0 MiB at peak (its "
                      "buffers); device used 1.50 GiB of 80.00 GiB at peak "
                      "(driver: total - free, all processes)\n"),
      std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find(
                "\nmemory  attention matrix not materialised: 1.0 MiB (f32), "
                "512.0 KiB (bf16) for S/P, B*H*N*M = 262144 scores; kernels "
                "keep lse, 4.0 KiB; saved 1.0x the tensors' 1.0 MiB (q, k, "
                "v, out)\n"),
            std::string::npos)
      << text.str();
}

TEST(AttentionReportTest, BackwardAlsoCountsDpAndDelta) {
  std::ostringstream text;
  AttentionReport report = gradBenchReport();
  printText(report, text);
  EXPECT_NE(text.str().find("\nmemory  attention matrices not materialised: "
                            "2.0 MiB (f32), 1.0 MiB (bf16) for P and dP, 2 x "
                            "B*H*N*M = 262144 scores; kernels keep lse and "
                            "delta, 8.0 KiB; saved 1.0x the tensors' 2.0 MiB "
                            "(q, k, v, out, dout, dq, dk, dv)\n"),
            std::string::npos)
      << text.str();
  nlohmann::json memory = toJson(report)["memory"];
  EXPECT_EQ(memory["attention_matrices"], 2);
  EXPECT_EQ(memory["attention_matrix_bytes_f32"], 2 * 4 * 256 * 256 * 4);
  EXPECT_EQ(memory["kept_bytes"], 2 * 4 * 256 * 4);
}

TEST(AttentionReportTest, ForwardBenchHasNoKernelLine) {
  AttentionReport report = gradBenchReport();
  report.backward.reset();
  report.backwardBench.reset();
  std::ostringstream text;
  printText(report, text);
  EXPECT_EQ(text.str().find("kernels:"), std::string::npos) << text.str();
  EXPECT_FALSE(toJson(report).contains("bench_backward"));
}

} // namespace
