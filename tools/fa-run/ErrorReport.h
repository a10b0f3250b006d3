//===- ErrorReport.h - fa-run's one line per failure ------------*- C++ -*-===//
//
// Whatever a command throws ends fa-run with one line on stderr,
// "fa-run: ...", and exit status 1, never an abort: a missing GPU is exit
// status 77 instead (ctest's SKIPPED) when the user asked for that with
// --skip-if-no-gpu.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_ERRORREPORT_H
#define FA_RUN_ERRORREPORT_H

#include <functional>
#include <ostream>
#include <string>

namespace fa {

inline constexpr int kSkippedExitCode = 77;

/// Runs `command`, fa-run's subcommand `commandName`, and returns its exit
/// status; if it throws, writes one line saying why to `errors` and returns
/// 1 (or kSkippedExitCode, see above).
int runReportingErrors(const std::string &commandName,
                       const std::function<int()> &command, bool skipIfNoGpu,
                       std::ostream &errors);

} // namespace fa

#endif // FA_RUN_ERRORREPORT_H
