//===- ReportFormat.h - Numbers and errors in fa-run reports ----*- C++ -*-===//

#ifndef FA_RUN_REPORTFORMAT_H
#define FA_RUN_REPORTFORMAT_H

#include "fa/runtime/Compare.h"

#include <nlohmann/json.hpp>

#include <string>

namespace fa {

/// "1.234e-03".
std::string scientific(double value);
/// `value` with `digits` decimals.
std::string fixed(double value, int digits);
/// "512 bytes", "16.0 KiB", "24.0 MiB", "1.50 GiB".
std::string formatBytes(double bytes);

/// "out: max_abs=1.2e-03 rel=3.4e-04", with the NaN count when there are any.
std::string describeErrors(const std::string &name, const ErrorStats &stats);
/// {"max_abs", "rel", "nan", "count"}.
nlohmann::json errorsJson(const ErrorStats &stats);

} // namespace fa

#endif // FA_RUN_REPORTFORMAT_H
