//===- MemoryBudget.h - What a run allocates, before it does ----*- C++ -*-===//
//
// A command counts the device and host memory it will allocate, item by item,
// from the problem's sizes alone, and checks the totals against what the GPU
// has free and what the host has available before it allocates anything. A
// request that cannot fit then fails at once with a message naming the bytes
// needed, the largest items and the bytes free, rather than minutes later
// (or never: the OS kills a process that exhausts host memory silently).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_MEMORYBUDGET_H
#define FA_RUNTIME_MEMORYBUDGET_H

#include <cstdint>
#include <string>
#include <vector>

namespace fa {

/// One allocation (or several of one kind) a run will make.
struct MemoryItem {
  std::string what;
  std::uint64_t bytes = 0;
};

/// Device and host bytes a run needs. Sums saturate at UINT64_MAX, so that an
/// absurd request reads as "too large" rather than wrapping around.
class MemoryBudget {
public:
  void addDevice(std::string what, std::uint64_t bytes);
  void addHost(std::string what, std::uint64_t bytes);

  std::uint64_t deviceBytes() const { return total(device); }
  std::uint64_t hostBytes() const { return total(host); }
  const std::vector<MemoryItem> &deviceItems() const { return device; }
  const std::vector<MemoryItem> &hostItems() const { return host; }

  /// Throws Error("<run> needs 12.0 GiB of host memory (q 4.0 GiB, ...),
  /// but 8.0 GiB is available...") unless hostBytes() <= available.
  void checkHost(const std::string &run, std::uint64_t available) const;
  /// The same for the device's free memory.
  void checkDevice(const std::string &run, std::uint64_t free) const;

private:
  static std::uint64_t total(const std::vector<MemoryItem> &items);

  std::vector<MemoryItem> device;
  std::vector<MemoryItem> host;
};

/// The host memory a new allocation can take without swapping:
/// MemAvailable from /proc/meminfo (Linux 3.14+), else sysinfo's free RAM.
std::uint64_t availableHostMemory();

/// The current context's GPU's free memory (cuMemGetInfo).
std::uint64_t freeDeviceMemory();

/// "1.5 GiB", "12.0 MiB", "512 bytes".
std::string formatByteCount(std::uint64_t bytes);

} // namespace fa

#endif // FA_RUNTIME_MEMORYBUDGET_H
