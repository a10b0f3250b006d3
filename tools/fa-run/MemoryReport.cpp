//===- MemoryReport.cpp ---------------------------------------------------===//

#include "MemoryReport.h"

#include "ReportFormat.h"

#include "fa/runtime/DeviceBuffer.h"

namespace fa {

MemoryReport processMemoryReport() {
  DeviceMemoryUsage device = DeviceBuffer::deviceUsagePeak();
  return {DeviceBuffer::allocated().peak(), device.usedBytes,
          device.totalBytes};
}

std::string describeMemory(const MemoryReport &memory) {
  return "allocated by fa-run " + formatBytes(memory.allocatedPeakBytes) +
         " at peak (its buffers); device used " +
         formatBytes(memory.deviceUsedBytes) + " of " +
         formatBytes(memory.deviceTotalBytes) +
         " at peak (driver: total - free, all processes)";
}

nlohmann::json memoryJson(const MemoryReport &memory) {
  return {{"allocated_peak_bytes", memory.allocatedPeakBytes},
          {"device_used_bytes", memory.deviceUsedBytes},
          {"device_total_bytes", memory.deviceTotalBytes}};
}

} // namespace fa
