//===- MemoryBudget.cpp ---------------------------------------------------===//

#include "fa/runtime/MemoryBudget.h"

#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Error.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace fa {
namespace {

// The message lists this many of the largest items; the rest are summed.
constexpr std::size_t kItemsNamed = 4;

std::string describeItems(std::vector<MemoryItem> items) {
  std::stable_sort(items.begin(), items.end(),
                   [](const MemoryItem &a, const MemoryItem &b) {
                     return a.bytes > b.bytes;
                   });
  std::string text;
  std::uint64_t rest = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i >= kItemsNamed) {
      rest = std::min(rest + items[i].bytes,
                      std::numeric_limits<std::uint64_t>::max() / 2);
      continue;
    }
    text +=
        (i ? ", " : "") + items[i].what + " " + formatByteCount(items[i].bytes);
  }
  if (rest > 0)
    text += ", others " + formatByteCount(rest);
  return text;
}

void checkFits(const std::string &run, const char *memory, const char *freeWord,
               const std::vector<MemoryItem> &items, std::uint64_t needed,
               std::uint64_t free) {
  if (needed <= free)
    return;
  throw Error(run + " needs " + formatByteCount(needed) + " of " + memory +
              " (" + describeItems(items) + "), but " + formatByteCount(free) +
              " " + freeWord + ": use smaller sizes");
}

} // namespace

void MemoryBudget::addDevice(std::string what, std::uint64_t bytes) {
  device.push_back({std::move(what), bytes});
}

void MemoryBudget::addHost(std::string what, std::uint64_t bytes) {
  host.push_back({std::move(what), bytes});
}

std::uint64_t MemoryBudget::total(const std::vector<MemoryItem> &items) {
  std::uint64_t sum = 0;
  for (const MemoryItem &item : items)
    if (__builtin_add_overflow(sum, item.bytes, &sum))
      return std::numeric_limits<std::uint64_t>::max();
  return sum;
}

void MemoryBudget::checkHost(const std::string &run,
                             std::uint64_t available) const {
  checkFits(run, "host memory", "is available", host, hostBytes(), available);
}

void MemoryBudget::checkDevice(const std::string &run,
                               std::uint64_t free) const {
  checkFits(run, "device memory", "is free on the GPU", device, deviceBytes(),
            free);
}

std::uint64_t availableHostMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:")
      return kib * 1024;
  }
  struct sysinfo info{};
  if (sysinfo(&info) != 0)
    throw Error("reading the host's available memory: sysinfo failed");
  return static_cast<std::uint64_t>(info.freeram) * info.mem_unit;
}

std::uint64_t freeDeviceMemory() {
  DeviceMemoryUsage usage = deviceMemoryUsage();
  return usage.totalBytes - usage.usedBytes;
}

std::string formatByteCount(std::uint64_t bytes) {
  constexpr double kKiB = 1024.0;
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / kKiB;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= kKiB;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

} // namespace fa
