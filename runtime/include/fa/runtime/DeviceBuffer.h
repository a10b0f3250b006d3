//===- DeviceBuffer.h - GPU memory ------------------------------*- C++ -*-===//

#ifndef FA_RUNTIME_DEVICEBUFFER_H
#define FA_RUNTIME_DEVICEBUFFER_H

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa {

using Bytes = std::vector<std::uint8_t>;

/// A count of live bytes and its high-water mark. Any thread may update it:
/// both are relaxed atomics (a counter, not a lock), so counting costs next
/// to nothing beside the allocation it counts.
class ByteHighWater {
public:
  /// Counts `bytes` more as live; returns whether that raised the peak.
  bool add(std::size_t bytes);
  void subtract(std::size_t bytes);

  std::size_t live() const { return liveBytes.load(std::memory_order_relaxed); }
  std::size_t peak() const { return peakBytes.load(std::memory_order_relaxed); }

private:
  std::atomic<std::size_t> liveBytes{0};
  std::atomic<std::size_t> peakBytes{0};
};

/// A GPU's memory as the driver reports it (cuMemGetInfo).
struct DeviceMemoryUsage {
  /// total - free: every process's and context's memory on the GPU, the
  /// driver's own reservations (context, modules, local memory) included.
  std::size_t usedBytes = 0;
  std::size_t totalBytes = 0;
};

/// The current context's GPU, now.
DeviceMemoryUsage deviceMemoryUsage();

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

  /// The bytes every DeviceBuffer of the process holds (on any GPU) and the
  /// most they held at once. Process-wide, like the allocator it counts.
  static const ByteHighWater &allocated();
  /// The most memory in use the driver reported when sampled: at every new
  /// peak of allocated() (right after that allocation) and at each
  /// sampleDeviceUsage(), which callers make after launching kernels, as the
  /// driver reserves their local memory at launch. Zeros before a sample.
  static DeviceMemoryUsage deviceUsagePeak();
  /// Samples deviceMemoryUsage() into deviceUsagePeak().
  static void sampleDeviceUsage();

private:
  CUdeviceptr pointer = 0;
  std::size_t size = 0;
  std::string bufferName;
};

} // namespace fa

#endif // FA_RUNTIME_DEVICEBUFFER_H
