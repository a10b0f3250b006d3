//===- DeviceBuffer.cpp ---------------------------------------------------===//

#include "fa/runtime/DeviceBuffer.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

#include <utility>

namespace fa {
namespace {

std::string formatBytes(std::size_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bytes < 1024 * 1024)
    return std::to_string(bytes) + " bytes";
  return std::to_string(static_cast<long long>(bytes / kMiB + 0.5)) + " MiB";
}

} // namespace

DeviceBuffer::DeviceBuffer(std::string name, std::size_t bytes)
    : size(bytes), bufferName(std::move(name)) {
  // cuMemAlloc rejects zero bytes; a zero-sized tensor simply has no memory.
  if (bytes == 0)
    return;
  checkCu(driver().cuMemAlloc(&pointer, bytes),
          "allocating " + formatBytes(bytes) + " of device memory for " +
              bufferName);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : pointer(std::exchange(other.pointer, 0)),
      size(std::exchange(other.size, 0)),
      bufferName(std::move(other.bufferName)) {}

DeviceBuffer::~DeviceBuffer() {
  // Freeing only fails if the context is already gone; nothing to report.
  if (pointer)
    driver().cuMemFree(pointer);
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
