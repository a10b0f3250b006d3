//===- DeviceBuffer.h - GPU memory ------------------------------*- C++ -*-===//

#ifndef FA_RUNTIME_DEVICEBUFFER_H
#define FA_RUNTIME_DEVICEBUFFER_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa {

using Bytes = std::vector<std::uint8_t>;

/// Device memory from cuMemAlloc (never managed memory), named for errors.
///
/// Copies are synchronous and go through the legacy default stream, so they
/// are ordered with work on Streams (which are created blocking).
class DeviceBuffer {
public:
  DeviceBuffer(std::string name, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr get() const { return pointer; }
  std::size_t bytes() const { return size; }

  /// Copies `host`, which must be exactly bytes() long, to the device.
  void upload(const Bytes &host);
  Bytes download() const;
  void copyFrom(const DeviceBuffer &source);
  /// Sets every byte to `value` on `stream`; 0xFF makes every float NaN,
  /// which marks elements a kernel failed to write.
  void fill(std::uint8_t value, CUstream stream);

private:
  CUdeviceptr pointer = 0;
  std::size_t size = 0;
  std::string bufferName;
};

} // namespace fa

#endif // FA_RUNTIME_DEVICEBUFFER_H
