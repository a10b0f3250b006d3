//===- ReferenceGpu.cpp - Launching the fp64 GPU reference ----------------===//

#include "fa/runtime/Reference.h"

#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Launch.h"
#include "fa/runtime/Module.h"

#include "AttentionReferenceParams.h"

#include <cstring>

// AttentionReference.cu built for sm_90 (code and PTX), embedded at build time.
extern "C" const unsigned char faAttentionReferenceFatbin[];

namespace fa {
namespace {

constexpr unsigned kThreadsPerRow = 128;
constexpr std::int64_t kMaxGridY = 65535;

const char *referenceEntry(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "attention_reference_bf16";
  case DType::F16:
    return "attention_reference_f16";
  case DType::F32:
    return "attention_reference_f32";
  }
  return "?";
}

std::vector<double> downloadDoubles(const DeviceBuffer &buffer) {
  Bytes bytes = buffer.download();
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

} // namespace

AttentionReference referenceAttentionGpu(const AttentionShape &shape,
                                         DType dtype, CUdeviceptr q,
                                         CUdeviceptr k, CUdeviceptr v,
                                         double scale, bool causal,
                                         const Stream &stream) {
  shape.validate();
  std::int64_t batchHeads = shape.batch * shape.heads;
  if (batchHeads > kMaxGridY)
    throw Error("computing the attention reference on the GPU: batch*heads " +
                std::to_string(batchHeads) + " exceeds the grid limit " +
                std::to_string(kMaxGridY));

  Module module(faAttentionReferenceFatbin, "the built-in fp64 attention "
                                            "reference kernels");
  const char *entry = referenceEntry(dtype);
  CUfunction function = module.function(entry);
  DeviceBuffer out("the reference output",
                   elementCount(shape.query()) * sizeof(double));
  DeviceBuffer lse("the reference log-sum-exp",
                   elementCount(shape.logSumExp()) * sizeof(double));

  AttentionReferenceParams params{shape.heads,   shape.kvHeads, shape.seqQ,
                                  shape.seqKv,   shape.headDim, scale,
                                  causal ? 1 : 0};
  CUdeviceptr outPointer = out.get(), lsePointer = lse.get();
  void *args[] = {&q, &k, &v, &outPointer, &lsePointer, &params};
  LaunchConfig config;
  config.grid = {static_cast<unsigned>(shape.seqQ),
                 static_cast<unsigned>(batchHeads), 1};
  config.block = {kThreadsPerRow, 1, 1};
  config.dynamicSharedBytes = static_cast<unsigned>(
      (2 * shape.headDim + 2 * kThreadsPerRow) * sizeof(double));
  allowDynamicSharedMemory(function, config.dynamicSharedBytes, entry);
  launchKernel(function, config, stream.get(), args, entry);
  stream.synchronize();
  return {downloadDoubles(out), downloadDoubles(lse)};
}

} // namespace fa
