//===- AttentionReport.cpp ------------------------------------------------===//

#include "AttentionReport.h"

#include "ReportFormat.h"

namespace fa {
namespace {

constexpr const char *kForwardFlops = "4 * B * H * N * M * D, half if causal";
constexpr const char *kBackwardFlops =
    "2.5 * 4 * B * H * N * M * D, half if causal";
// A variant counts only the score elements its mask keeps, as FlexAttention.
constexpr const char *kVariantForwardFlops = "4 * D * kept (i, j) pairs";
constexpr const char *kVariantBackwardFlops = "2.5 * 4 * D * kept (i, j) pairs";

const char *forwardFormula(const AttentionReport &report) {
  return report.variant.name.empty() ? kForwardFlops : kVariantForwardFlops;
}

const char *backwardFormula(const AttentionReport &report) {
  return report.variant.name.empty() ? kBackwardFlops : kVariantBackwardFlops;
}

void printBench(const char *pass, const BenchReport &bench, const char *formula,
                std::ostream &os) {
  os << "bench   " << pass << fixed(bench.timing.medianMs, 4)
     << " ms (median of " << bench.timing.runs << ", min "
     << fixed(bench.timing.minMs, 4) << ", max " << fixed(bench.timing.maxMs, 4)
     << ", " << bench.bufferSets << " buffer sets)  " << fixed(bench.tflops, 1)
     << " TFLOP/s";
  if (formula)
    os << " counting " << formula;
  os << "\n";
  if (bench.kernels.empty())
    return;
  os << "bench   " << pass << "kernels:";
  const char *separator = " ";
  for (const KernelTiming &kernel : bench.kernels) {
    os << separator << kernel.stage << " " << fixed(kernel.timing.medianMs, 4)
       << " ms";
    separator = ", ";
  }
  os << " (median of each alone)\n";
}

nlohmann::json benchJson(const BenchReport &bench, const char *formula) {
  nlohmann::json json = {
      {"median_ms", bench.timing.medianMs}, {"min_ms", bench.timing.minMs},
      {"max_ms", bench.timing.maxMs},       {"runs", bench.timing.runs},
      {"buffer_sets", bench.bufferSets},    {"flops", bench.flops},
      {"flops_formula", formula},           {"tflops", bench.tflops}};
  for (const KernelTiming &kernel : bench.kernels)
    json["kernels"][kernel.stage] = {{"name", kernel.kernel},
                                     {"median_ms", kernel.timing.medianMs}};
  return json;
}

const char *passOrFail(bool passed) { return passed ? "PASS" : "FAIL"; }

AttentionMemory reportedAttentionMemory(const AttentionReport &report) {
  return attentionMemory(report.shape, report.kernel.dtype,
                         report.backward.has_value());
}

/// "attention matrix not materialised: 2.00 GiB (f32), 1.00 GiB (bf16) for
/// S/P, ...": what attentionMemory() counts, in words.
std::string describeAttentionMemory(const AttentionMemory &memory,
                                    DType dtype) {
  bool backward = memory.matrices > 1;
  return std::string(backward ? "attention matrices" : "attention matrix") +
         " not materialised: " + formatBytes(memory.matricesBytesF32) +
         " (f32), " + formatBytes(memory.matricesBytesElement) + " (" +
         dtypeName(dtype) + ") for " + (backward ? "P and dP, 2 x " : "S/P, ") +
         "B*H*N*M = " + std::to_string(memory.matrixElements) +
         " scores; kernels keep " + (backward ? "lse and delta" : "lse") +
         ", " + formatBytes(memory.keptBytes) + "; saved " +
         fixed(memory.savedVsTensors(), 1) + "x the tensors' " +
         formatBytes(memory.tensorBytes) + " (q, k, v, out" +
         (backward ? ", dout, dq, dk, dv)" : ")");
}

nlohmann::json memoryJson(const MemoryReport &memory,
                          const AttentionMemory &attention) {
  nlohmann::json json = memoryJson(memory);
  json["attention_matrices"] = attention.matrices;
  json["attention_matrix_elements"] = attention.matrixElements;
  json["attention_matrix_bytes_f32"] = attention.matricesBytesF32;
  json["attention_matrix_bytes_element"] = attention.matricesBytesElement;
  json["kept_bytes"] = attention.keptBytes;
  json["tensor_bytes"] = attention.tensorBytes;
  json["saved_vs_tensors_ratio"] = attention.savedVsTensors();
  return json;
}

} // namespace

VariantReport variantReport(const AttentionVariant &variant,
                            const AttentionShape &shape) {
  VariantReport report;
  report.name = variant.name();
  if (report.name.empty())
    return report;
  report.values = variant.describe();
  report.keptPairs = variant.keptPairs(shape);
  nlohmann::json &json = report.json;
  json = nlohmann::json::object();
  json["causal"] = causalAlignmentName(variant.causal);
  if (variant.window) {
    json["window_left"] = variant.window->left;
    json["window_right"] = variant.window->right;
  }
  if (!variant.docIds.empty())
    json["documents"] = variant.documentSource;
  if (variant.softcap)
    json["softcap"] = *variant.softcap;
  if (!variant.alibiSlopes.empty())
    json["alibi_slopes"] = variant.alibiSlopes;
  if (!variant.sinks.empty()) {
    json["sinks"] = variant.sinks;
    json["sinks_source"] = variant.sinksSource;
  }
  if (const std::optional<AttentionDropout> &dropout = variant.dropout)
    json["dropout"] = {{"p", dropout->p},
                       {"seed", dropout->seed},
                       {"offset", dropout->offset}};
  if (!variant.mask.empty())
    json["mask_shape"] = variant.maskShape;
  if (!variant.params.empty())
    json["params"] = variant.params;
  return report;
}

void printText(const AttentionReport &report, std::ostream &os) {
  const KernelSpec &kernel = report.kernel;
  os << "kernel  " << kernel.name << " (" << kernel.describe() << ")\n"
     << "chosen  " << report.choice.reason << "\n";
  if (const auto &backward = report.backward) {
    os << "grad    " << backward->dq.name << " (" << backward->dq.describe()
       << ") after " << backward->delta.name << " and " << backward->dkdv.name;
    if (backward->dsinks)
      os << ", then " << backward->dsinks->name;
    os << "\n"
       << "chosen  " << backward->choice.reason << "\n";
  }
  os << "device  " << report.device.name << " (" << report.device.smName()
     << ", " << report.device.multiprocessors << " SMs)\n"
     << "shape   " << report.shape.describe() << "\n";
  if (!report.variant.name.empty())
    os << "variant " << report.variant.name << " (" << report.variant.values
       << "): " << report.variant.keptPairs << " kept (i, j) pairs\n";
  for (const std::string &file : report.filesWritten)
    os << "wrote   " << file << "\n";
  if (const auto &check = report.check) {
    os << "check   reference=" << check->reference << "  "
       << describeErrors("out", check->out) << "  "
       << describeErrors("lse", check->lse)
       << "  rtol=" << scientific(check->relativeTolerance) << "  "
       << passOrFail(check->forwardPassed()) << "\n";
    if (const auto &gradients = check->gradients)
      os << "check   grad  " << describeErrors("dq", gradients->dq) << "  "
         << describeErrors("dk", gradients->dk) << "  "
         << describeErrors("dv", gradients->dv)
         << (gradients->dsinks
                 ? "  " + describeErrors("dsinks", *gradients->dsinks)
                 : std::string())
         << "  rtol=" << scientific(gradients->relativeTolerance) << "  "
         << passOrFail(gradients->passed()) << "\n";
  }
  if (const auto &bench = report.bench)
    printBench(report.backwardBench ? "forward  " : "", *bench,
               report.variant.name.empty() ? nullptr : kVariantForwardFlops,
               os);
  if (const auto &bench = report.backwardBench)
    printBench("backward ", *bench, backwardFormula(report), os);
  os << "memory  " << describeMemory(report.memory) << "\n"
     << "memory  "
     << describeAttentionMemory(reportedAttentionMemory(report), kernel.dtype)
     << "\n";
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
      {"variant", report.variant.name},
      {"config", kernel.config},
      {"grad", report.backward.has_value()},
      {"device", report.device.name},
      {"batch", shape.batch},
      {"heads", shape.heads},
      {"kv_heads", shape.kvHeads},
      {"seq_q", shape.seqQ},
      {"seq_kv", shape.seqKv},
      {"head_dim", shape.headDim},
      {"files_written", report.filesWritten}};
  if (!report.variant.name.empty()) {
    json["variant_values"] = report.variant.json;
    json["kept_pairs"] = report.variant.keptPairs;
  }
  if (const auto &backward = report.backward) {
    json["backward"] = {
        {"kernel", backward->dq.name},
        {"delta_kernel", backward->delta.name},
        {"dkdv_kernel", backward->dkdv.name},
        {"kernel_source", kernelSourceName(backward->choice.source)},
        {"kernel_source_reason", backward->choice.reason},
        {"config", backward->dq.config}};
    if (backward->dsinks)
      json["backward"]["dsinks_kernel"] = backward->dsinks->name;
  }
  if (const auto &check = report.check) {
    json["check"] = {{"reference", check->reference},
                     {"rtol", check->relativeTolerance},
                     {"out", errorsJson(check->out)},
                     {"lse", errorsJson(check->lse)},
                     {"passed", check->passed()}};
    if (const auto &gradients = check->gradients)
      json["check"]["gradients"] = {{"rtol", gradients->relativeTolerance},
                                    {"dq", errorsJson(gradients->dq)},
                                    {"dk", errorsJson(gradients->dk)},
                                    {"dv", errorsJson(gradients->dv)},
                                    {"passed", gradients->passed()}};
    if (const auto &gradients = check->gradients;
        gradients && gradients->dsinks)
      json["check"]["gradients"]["dsinks"] = errorsJson(*gradients->dsinks);
  }
  if (const auto &bench = report.bench)
    json["bench"] = benchJson(*bench, forwardFormula(report));
  if (const auto &bench = report.backwardBench)
    json["bench_backward"] = benchJson(*bench, backwardFormula(report));
  json["memory"] = memoryJson(report.memory, reportedAttentionMemory(report));
  return json;
}

} // namespace fa
