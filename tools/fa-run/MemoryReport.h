//===- MemoryReport.h - fa-run's device memory ------------------*- C++ -*-===//

#ifndef FA_RUN_MEMORYREPORT_H
#define FA_RUN_MEMORYREPORT_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace fa {

/// Two views of a run's peak device memory.
struct MemoryReport {
  /// The most fa-run's own device buffers held at once
  /// (DeviceBuffer::allocated().peak()).
  std::size_t allocatedPeakBytes = 0;
  /// The most the driver reported in use on the GPU (cuMemGetInfo: total -
  /// free) at the samples (DeviceBuffer::deviceUsagePeak()): other
  /// processes and the CUDA context's own memory count too.
  std::size_t deviceUsedBytes = 0;
  std::size_t deviceTotalBytes = 0;
};

/// The process's counters now.
MemoryReport processMemoryReport();

/// "allocated by fa-run 24.0 MiB at peak (its buffers); device used 1.52
/// GiB of 79.19 GiB at peak (driver: total - free, all processes)".
std::string describeMemory(const MemoryReport &memory);
/// {"allocated_peak_bytes", "device_used_bytes", "device_total_bytes"}.
nlohmann::json memoryJson(const MemoryReport &memory);

} // namespace fa

#endif // FA_RUN_MEMORYREPORT_H
