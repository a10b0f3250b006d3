//===- AttentionReport.cpp ------------------------------------------------===//

#include "AttentionReport.h"

#include "ReportFormat.h"

namespace fa {

void printText(const AttentionReport &report, std::ostream &os) {
  const KernelSpec &kernel = report.kernel;
  os << "kernel  " << kernel.name << " (" << kernel.describe() << ")\n"
     << "chosen  " << report.choice.reason << "\n"
     << "device  " << report.device.name << " (" << report.device.smName()
     << ", " << report.device.multiprocessors << " SMs)\n"
     << "shape   " << report.shape.describe() << "\n";
  for (const std::string &file : report.filesWritten)
    os << "wrote   " << file << "\n";
  if (const auto &check = report.check) {
    os << "check   reference=" << check->reference << "  "
       << describeErrors("out", check->out) << "  "
       << describeErrors("lse", check->lse)
       << "  rtol=" << scientific(check->relativeTolerance) << "  "
       << (check->passed() ? "PASS" : "FAIL") << "\n";
  }
  if (const auto &bench = report.bench) {
    os << "bench   " << fixed(bench->timing.medianMs, 4) << " ms (median of "
       << bench->timing.runs << ", min " << fixed(bench->timing.minMs, 4)
       << ", max " << fixed(bench->timing.maxMs, 4) << ", " << bench->bufferSets
       << " buffer sets)  " << fixed(bench->tflops, 1) << " TFLOP/s\n";
  }
}

nlohmann::json toJson(const AttentionReport &report) {
  const KernelSpec &kernel = report.kernel;
  const AttentionShape &shape = report.shape;
  nlohmann::json json = {
      {"op", kernel.op},
      {"kernel", kernel.name},
      {"kernel_source", kernelSourceName(report.choice.source)},
      {"kernel_source_reason", report.choice.reason},
      {"dtype", dtypeName(kernel.dtype)},
      {"causal", kernel.causal},
      {"config", kernel.config},
      {"device", report.device.name},
      {"batch", shape.batch},
      {"heads", shape.heads},
      {"kv_heads", shape.kvHeads},
      {"seq_q", shape.seqQ},
      {"seq_kv", shape.seqKv},
      {"head_dim", shape.headDim},
      {"files_written", report.filesWritten}};
  if (const auto &check = report.check)
    json["check"] = {{"reference", check->reference},
                     {"rtol", check->relativeTolerance},
                     {"out", errorsJson(check->out)},
                     {"lse", errorsJson(check->lse)},
                     {"passed", check->passed()}};
  if (const auto &bench = report.bench)
    json["bench"] = {{"median_ms", bench->timing.medianMs},
                     {"min_ms", bench->timing.minMs},
                     {"max_ms", bench->timing.maxMs},
                     {"runs", bench->timing.runs},
                     {"buffer_sets", bench->bufferSets},
                     {"flops", shape.flops(kernel.causal)},
                     {"tflops", bench->tflops}};
  return json;
}

} // namespace fa
