//===- RandomFill.cpp - Launching the device random generator -------------===//

#include "fa/runtime/RandomFill.h"

#include "fa/runtime/Launch.h"

#include <algorithm>

// RandomFill.cu built for sm_90 (code and PTX), embedded at build time.
extern "C" const unsigned char faRandomFillFatbin[];

namespace fa {
namespace {

constexpr unsigned kThreads = 256;
// A grid-stride loop: enough blocks to fill any GPU, whatever the count.
constexpr std::int64_t kMaxBlocks = 8192;

} // namespace

DeviceRandom::DeviceRandom(std::uint64_t seed)
    : module(faRandomFillFatbin, "the built-in random input kernels"),
      seed(seed) {}

void DeviceRandom::fillNormal(const DeviceBuffer &buffer, DType dtype,
                              std::uint64_t index, const Stream &stream) const {
  std::int64_t count =
      static_cast<std::int64_t>(buffer.bytes() / dtypeBytes(dtype));
  if (count == 0)
    return;
  std::string entry = std::string("random_normal_") + dtypeName(dtype);
  LaunchConfig config;
  config.grid = {static_cast<unsigned>(std::min<std::int64_t>(
                     (count + kThreads - 1) / kThreads, kMaxBlocks)),
                 1, 1};
  config.block = {kThreads, 1, 1};
  CUdeviceptr out = buffer.get();
  std::uint64_t seedArg = seed, indexArg = index;
  void *args[] = {&out, &count, &seedArg, &indexArg};
  launchKernel(module.function(entry), config, stream.get(), args,
               entry + " (random inputs)");
}

void DeviceRandom::fillNormal(
    std::initializer_list<const DeviceBuffer *> buffers, DType dtype,
    const Stream &stream) const {
  std::uint64_t index = 0;
  for (const DeviceBuffer *buffer : buffers) {
    if (buffer)
      fillNormal(*buffer, dtype, index, stream);
    ++index;
  }
  stream.synchronize();
}

} // namespace fa
