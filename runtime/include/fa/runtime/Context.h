//===- Context.h - GPUs and their primary contexts --------------*- C++ -*-===//

#ifndef FA_RUNTIME_CONTEXT_H
#define FA_RUNTIME_CONTEXT_H

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace fa {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int multiprocessors = 0;
  std::size_t memoryBytes = 0;
  std::size_t l2CacheBytes = 0;

  /// "sm_90" for compute capability 9.0.
  std::string smName() const;
};

/// Every GPU the driver sees; throws NoDeviceError when there is none.
std::vector<DeviceInfo> listDevices();

/// The primary context of one GPU (the one the CUDA runtime and PyTorch also
/// use), made current on the calling thread for the Context's lifetime.
/// Create it before, and destroy it after, every object that holds device
/// memory, modules, streams or events.
class Context {
public:
  explicit Context(int ordinal);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const DeviceInfo &device() const { return info; }

private:
  DeviceInfo info;
  CUdevice deviceHandle = 0;
  CUcontext context = nullptr;
};

} // namespace fa

#endif // FA_RUNTIME_CONTEXT_H
