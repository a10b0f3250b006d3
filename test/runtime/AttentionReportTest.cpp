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
