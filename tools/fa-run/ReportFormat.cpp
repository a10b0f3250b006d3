//===- ReportFormat.cpp ---------------------------------------------------===//

#include "ReportFormat.h"

#include <cstdio>

namespace fa {

std::string scientific(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3e", value);
  return text;
}

std::string fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string formatBytes(double bytes) {
  constexpr double kKiB = 1024;
  if (bytes < kKiB)
    return fixed(bytes, 0) + " bytes";
  if (bytes < kKiB * kKiB)
    return fixed(bytes / kKiB, 1) + " KiB";
  if (bytes < kKiB * kKiB * kKiB)
    return fixed(bytes / (kKiB * kKiB), 1) + " MiB";
  return fixed(bytes / (kKiB * kKiB * kKiB), 2) + " GiB";
}

std::string describeErrors(const std::string &name, const ErrorStats &stats) {
  std::string text = name + ": max_abs=" + scientific(stats.maxAbs) +
                     " rel=" + scientific(stats.relative);
  if (stats.nanCount)
    text += " NaN=" + std::to_string(stats.nanCount) + "/" +
            std::to_string(stats.count) + " (unwritten or computed NaN)";
  return text;
}

nlohmann::json errorsJson(const ErrorStats &stats) {
  return {{"max_abs", stats.maxAbs},
          {"rel", stats.relative},
          {"nan", stats.nanCount},
          {"count", stats.count}};
}

} // namespace fa
