//===- ReferenceGpu.cpp - Launching the fp64 GPU references ---------------===//

#include "fa/runtime/Reference.h"

#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Launch.h"
#include "fa/runtime/Module.h"
#include "fa/runtime/Nvtx.h"

#include "AttentionReferenceParams.h"

#include <cmath>
#include <cstdint>
#include <cstring>

// AttentionReference.cu built for sm_90 (code and PTX), embedded at build time.
extern "C" const unsigned char faAttentionReferenceFatbin[];

namespace fa {
namespace {

constexpr unsigned kThreadsPerRow = 128;
constexpr std::int64_t kMaxGridY = 65535;

/// The reference kernels, loaded into the current context.
class ReferenceKernels {
public:
  ReferenceKernels()
      : module(faAttentionReferenceFatbin,
               "the built-in fp64 attention reference kernels") {}

  /// Launches `<name>_<dtype>` with one block of kThreadsPerRow threads per
  /// row, `rows` x `groups` blocks, `rowDoubles` + 2 per thread doubles of
  /// shared memory.
  void launch(const std::string &name, DType dtype, std::int64_t rows,
              std::int64_t groups, std::int64_t rowDoubles, void **args,
              const Stream &stream) const {
    std::string entry = name + "_" + dtypeName(dtype);
    CUfunction function = module.function(entry);
    LaunchConfig config;
    config.grid = {static_cast<unsigned>(rows), static_cast<unsigned>(groups),
                   1};
    config.block = {kThreadsPerRow, 1, 1};
    config.dynamicSharedBytes = static_cast<unsigned>(
        (rowDoubles + 2 * kThreadsPerRow) * sizeof(double));
    allowDynamicSharedMemory(function, config.dynamicSharedBytes, entry);
    launchKernel(function, config, stream.get(), args, entry);
  }

private:
  Module module;
};

/// Throws unless `blocks` fit in grid.y; `what` names them.
void checkGridY(std::int64_t blocks, const char *what) {
  if (blocks > kMaxGridY)
    throw Error(std::string("computing the attention reference on the GPU: ") +
                what + " " + std::to_string(blocks) +
                " exceeds the grid limit " + std::to_string(kMaxGridY));
}

template <typename T>
DeviceBuffer uploaded(const std::string &name, const std::vector<T> &values) {
  DeviceBuffer buffer(name, values.size() * sizeof(T));
  Bytes bytes(buffer.bytes());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  buffer.upload(bytes);
  return buffer;
}

/// A variant's rule with its tensors (slopes, doc ids, mask, sinks) on the
/// device, for as long as the reference kernels run.
class DeviceVariantRule {
public:
  DeviceVariantRule(const AttentionVariant &variant,
                    const AttentionShape &shape)
      : slopes(uploaded("the reference's ALiBi slopes", variant.alibiSlopes)),
        docIds(uploaded("the reference's doc ids", variant.docIds)),
        mask(uploaded("the reference's mask", variant.mask)),
        sinks(uploaded("the reference's sinks", variant.sinks)),
        rule(hostVariantRule(variant, shape)) {
    // Null where the variant has no such tensor, as on the host.
    rule.alibiSlopes =
        rule.alibiSlopes ? devicePointer<float>(slopes) : nullptr;
    rule.docIds = rule.docIds ? devicePointer<int>(docIds) : nullptr;
    rule.mask = rule.mask ? devicePointer<unsigned char>(mask) : nullptr;
    rule.sinks = rule.sinks ? devicePointer<float>(sinks) : nullptr;
  }

  const AttentionVariantRule &get() const { return rule; }

private:
  template <typename T> static const T *devicePointer(const DeviceBuffer &b) {
    return reinterpret_cast<const T *>(static_cast<std::uintptr_t>(b.get()));
  }

  DeviceBuffer slopes, docIds, mask, sinks;
  AttentionVariantRule rule;
};

AttentionReferenceParams paramsOf(const AttentionShape &shape, double scale,
                                  const DeviceVariantRule &rule) {
  return {shape.heads,   shape.kvHeads, shape.seqQ, shape.seqKv,
          shape.headDim, scale,         rule.get()};
}

AttentionVariant causalVariant(bool causal) {
  AttentionVariant variant;
  if (causal)
    variant.causal = CausalAlignment::TopLeft;
  return variant;
}

DeviceBuffer doubles(const char *name, const Shape &shape) {
  return DeviceBuffer(name, elementCount(shape) * sizeof(double));
}

std::vector<double> downloadDoubles(const DeviceBuffer &buffer) {
  Bytes bytes = buffer.download();
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// dsinks[h] = -sum_{b,i} exp(sinks[h] - lse[b,h,i]) * delta[b,h,i], from
/// the rows' fp64 lse and delta [batch, heads, seq_q].
std::vector<double> sinkGradients(const AttentionShape &shape,
                                  const std::vector<float> &sinks,
                                  const std::vector<double> &lse,
                                  const std::vector<double> &delta) {
  std::vector<double> dsinks(sinks.size(), 0);
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h)
      for (std::int64_t i = 0; i < shape.seqQ; ++i) {
        std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
        dsinks[h] -=
            std::exp(static_cast<double>(sinks[h]) - lse[row]) * delta[row];
      }
  return dsinks;
}

} // namespace

AttentionReference referenceAttentionGpu(const AttentionShape &shape,
                                         DType dtype, CUdeviceptr q,
                                         CUdeviceptr k, CUdeviceptr v,
                                         double scale, bool causal,
                                         const Stream &stream) {
  return referenceAttentionGpu(shape, dtype, q, k, v, scale,
                               causalVariant(causal), stream);
}

AttentionReference
referenceAttentionGpu(const AttentionShape &shape, DType dtype, CUdeviceptr q,
                      CUdeviceptr k, CUdeviceptr v, double scale,
                      const AttentionVariant &variant, const Stream &stream) {
  NvtxRange range{"fp64 reference (GPU): attention"};
  variant.validate(shape);
  checkGridY(shape.batch * shape.heads, "batch*heads");
  ReferenceKernels kernels;
  DeviceBuffer out = doubles("the reference output", shape.query());
  DeviceBuffer lse = doubles("the reference log-sum-exp", shape.logSumExp());

  DeviceVariantRule rule(variant, shape);
  AttentionReferenceParams params = paramsOf(shape, scale, rule);
  CUdeviceptr outPointer = out.get(), lsePointer = lse.get();
  void *args[] = {&q, &k, &v, &outPointer, &lsePointer, &params};
  // Shared: the query row and the output accumulator.
  kernels.launch("attention_reference", dtype, shape.seqQ,
                 shape.batch * shape.heads, 2 * shape.headDim, args, stream);
  stream.synchronize();
  return {downloadDoubles(out), downloadDoubles(lse)};
}

AttentionGradReference referenceAttentionGradGpu(const AttentionShape &shape,
                                                 DType dtype, CUdeviceptr q,
                                                 CUdeviceptr k, CUdeviceptr v,
                                                 CUdeviceptr dout, double scale,
                                                 bool causal,
                                                 const Stream &stream) {
  return referenceAttentionGradGpu(shape, dtype, q, k, v, dout, scale,
                                   causalVariant(causal), stream);
}

AttentionGradReference referenceAttentionGradGpu(
    const AttentionShape &shape, DType dtype, CUdeviceptr q, CUdeviceptr k,
    CUdeviceptr v, CUdeviceptr dout, double scale,
    const AttentionVariant &variant, const Stream &stream) {
  NvtxRange range{"fp64 reference (GPU): attention gradients"};
  variant.validate(shape);
  checkGridY(shape.batch * shape.heads, "batch*heads");
  ReferenceKernels kernels;
  DeviceBuffer dq = doubles("the reference dq", shape.query());
  DeviceBuffer dk = doubles("the reference dk", shape.keyValue());
  DeviceBuffer dv = doubles("the reference dv", shape.keyValue());
  DeviceBuffer lse = doubles("the reference log-sum-exp", shape.logSumExp());
  DeviceBuffer delta = doubles("the reference delta", shape.logSumExp());

  DeviceVariantRule rule(variant, shape);
  AttentionReferenceParams params = paramsOf(shape, scale, rule);
  CUdeviceptr dqPointer = dq.get(), dkPointer = dk.get(), dvPointer = dv.get(),
              lsePointer = lse.get(), deltaPointer = delta.get();
  void *rowArgs[] = {
      &q, &k, &v, &dout, &dqPointer, &lsePointer, &deltaPointer, &params};
  // Shared: the query and dout rows and the dq accumulator.
  kernels.launch("attention_grad_reference_rows", dtype, shape.seqQ,
                 shape.batch * shape.heads, 3 * shape.headDim, rowArgs, stream);
  void *keyArgs[] = {&q,         &k,          &v,
                     &dout,      &lsePointer, &deltaPointer,
                     &dkPointer, &dvPointer,  &params};
  // Shared: the key and value rows and the dk and dv accumulators.
  kernels.launch("attention_grad_reference_keys", dtype, shape.seqKv,
                 shape.batch * shape.kvHeads, 4 * shape.headDim, keyArgs,
                 stream);
  stream.synchronize();
  AttentionGradReference result{
      downloadDoubles(dq), downloadDoubles(dk), downloadDoubles(dv), {}};
  if (!variant.sinks.empty())
    result.dsinks = sinkGradients(shape, variant.sinks, downloadDoubles(lse),
                                  downloadDoubles(delta));
  return result;
}

} // namespace fa
