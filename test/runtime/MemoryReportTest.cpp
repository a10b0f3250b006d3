//===- MemoryReportTest.cpp - fa-run's memory lines, no GPU ---------------===//

#include "MemoryReport.h"
#include "LayerNormReport.h"
#include "ReportFormat.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace fa;

namespace {

TEST(MemoryReportTest, BytesInBinaryUnits) {
  EXPECT_EQ(formatBytes(0), "0 bytes");
  EXPECT_EQ(formatBytes(1023), "1023 bytes");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(24.0 * 1024 * 1024), "24.0 MiB");
  EXPECT_EQ(formatBytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
  EXPECT_EQ(formatBytes(8.0 * 1024 * 1024 * 1024 * 1024), "8192.00 GiB");
}

TEST(MemoryReportTest, JsonNamesWhichIsWhich) {
  EXPECT_EQ(memoryJson({100, 2000, 30000}), nlohmann::json::parse(R"({
    "allocated_peak_bytes": 100,
    "device_used_bytes": 2000,
    "device_total_bytes": 30000
  })"));
}

/// A LayerNorm report of 1000 x 1024 bf16, forward only, with fa-run's
/// memory filled in by hand.
LayerNormReport layerNormReport() {
  LayerNormReport report;
  report.shape = {1000, 1024};
  report.xShape = {1000, 1024};
  report.device.name = "Test GPU";
  report.forward.name = "fwd";
  report.memory = {4u << 20, 700u << 20, 80ull << 30};
  return report;
}

TEST(MemoryReportTest, LayerNormTextHasAMemoryLine) {
  std::ostringstream text;
  printText(layerNormReport(), text);
  EXPECT_NE(text.str().find("\nmemory  allocated by fa-run 4.0 MiB at peak "
                            "(its buffers); device used 700.0 MiB of 80.00 "
                            "GiB at peak (driver: total - free, all "
                            "processes)\n"),
            std::string::npos)
      << text.str();
}

TEST(MemoryReportTest, LayerNormJsonKeepsItsKeysBesideMemory) {
  nlohmann::json json = toJson(layerNormReport());
  std::vector<std::string> keys;
  for (const auto &item : json.items())
    keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "cols", "device", "dtype", "eps", "files_written", "grad",
                      "kernels", "memory", "op", "rows", "x_shape"}));
  EXPECT_EQ(json["memory"], memoryJson({4u << 20, 700u << 20, 80ull << 30}));
}

} // namespace
