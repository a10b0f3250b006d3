//===- DeviceBuffer.cpp ---------------------------------------------------===//

#include "fa/runtime/DeviceBuffer.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/MemoryBudget.h"

#include <type_traits>
#include <utility>

namespace fa {
namespace {

/// peak = max(peak, value), atomically; returns whether it raised it.
bool raiseTo(std::atomic<std::size_t> &peak, std::size_t value) {
  std::size_t seen = peak.load(std::memory_order_relaxed);
  while (seen < value &&
         !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed))
    ;
  return seen < value;
}

/// What DeviceBuffer::allocated() and deviceUsagePeak() report. Constant-
/// initialised and trivially destructible, so it outlives every buffer.
struct ProcessMemory {
  ByteHighWater allocated;
  std::atomic<std::size_t> deviceUsedPeak{0};
  std::atomic<std::size_t> deviceTotal{0};

  void sample(const DeviceMemoryUsage &usage) {
    raiseTo(deviceUsedPeak, usage.usedBytes);
    deviceTotal.store(usage.totalBytes, std::memory_order_relaxed);
  }
};
ProcessMemory processMemory;
static_assert(std::is_trivially_destructible_v<ProcessMemory>);

CUresult queryDeviceMemory(DeviceMemoryUsage &usage) {
  std::size_t free = 0, total = 0;
  CUresult result = driver().cuMemGetInfo(&free, &total);
  usage = {total - free, total};
  return result;
}

} // namespace

bool ByteHighWater::add(std::size_t bytes) {
  return raiseTo(peakBytes,
                 liveBytes.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void ByteHighWater::subtract(std::size_t bytes) {
  liveBytes.fetch_sub(bytes, std::memory_order_relaxed);
}

DeviceMemoryUsage deviceMemoryUsage() {
  DeviceMemoryUsage usage;
  checkCu(queryDeviceMemory(usage), "reading the device's free memory");
  return usage;
}

DeviceBuffer::DeviceBuffer(std::string name, std::size_t bytes)
    : size(bytes), bufferName(std::move(name)) {
  // cuMemAlloc rejects zero bytes; a zero-sized tensor simply has no memory.
  if (bytes == 0)
    return;
  checkCu(driver().cuMemAlloc(&pointer, bytes),
          "allocating " + formatByteCount(bytes) + " of device memory for " +
              bufferName);
  if (!processMemory.allocated.add(bytes))
    return;
  // The buffer is allocated: a failed sample must not throw and leak it.
  DeviceMemoryUsage usage;
  if (queryDeviceMemory(usage) == CUDA_SUCCESS)
    processMemory.sample(usage);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : pointer(std::exchange(other.pointer, 0)),
      size(std::exchange(other.size, 0)),
      bufferName(std::move(other.bufferName)) {}

DeviceBuffer::~DeviceBuffer() {
  // Freeing only fails if the context is already gone; nothing to report.
  if (!pointer)
    return;
  driver().cuMemFree(pointer);
  processMemory.allocated.subtract(size);
}

const ByteHighWater &DeviceBuffer::allocated() {
  return processMemory.allocated;
}

DeviceMemoryUsage DeviceBuffer::deviceUsagePeak() {
  return {processMemory.deviceUsedPeak.load(std::memory_order_relaxed),
          processMemory.deviceTotal.load(std::memory_order_relaxed)};
}

void DeviceBuffer::sampleDeviceUsage() {
  processMemory.sample(deviceMemoryUsage());
}

void DeviceBuffer::upload(const Bytes &host) {
  if (host.size() != size)
    throw Error("copying " + bufferName +
                " to the device: " + std::to_string(host.size()) +
                " bytes given for a buffer of " + std::to_string(size));
  if (size)
    checkCu(driver().cuMemcpyHtoD(pointer, host.data(), size),
            "copying " + bufferName + " to the device");
}

Bytes DeviceBuffer::download() const {
  Bytes host(size);
  if (size)
    checkCu(driver().cuMemcpyDtoH(host.data(), pointer, size),
            "copying " + bufferName + " from the device");
  return host;
}

void DeviceBuffer::copyFrom(const DeviceBuffer &source) {
  if (source.size != size)
    throw Error("copying " + source.bufferName + " into " + bufferName +
                ": sizes differ (" + std::to_string(source.size) + " and " +
                std::to_string(size) + " bytes)");
  if (size)
    checkCu(driver().cuMemcpyDtoD(pointer, source.pointer, size),
            "copying " + source.bufferName + " into " + bufferName);
}

void DeviceBuffer::fill(std::uint8_t value, CUstream stream) {
  if (size)
    checkCu(driver().cuMemsetD8Async(pointer, value, size, stream),
            "filling " + bufferName);
}

} // namespace fa
