//===- TuneCommand.h - `fa-run tune` ----------------------------*- C++ -*-===//

#ifndef FA_RUN_TUNECOMMAND_H
#define FA_RUN_TUNECOMMAND_H

#include "GpuRunOptions.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fa {

struct TuneOptions : GpuRunOptions {
  std::string outPath; // Empty: <kernelDir>/tuning.json.
  // Which groups to tune; empty means all.
  std::vector<std::string> directions; // "forward", "backward".
  std::vector<std::string> dtypes;
  std::vector<std::int64_t> dims;
  std::vector<std::string> causalModes; // "causal", "non-causal".
};

CLI::App *addTuneCommand(CLI::App &app, TuneOptions &options);

/// Times every kernel of each selected group per sequence class and writes
/// the tuning cache; returns 1 when a candidate failed its check (it is left
/// out of the cache).
int runTune(const TuneOptions &options);

} // namespace fa

#endif // FA_RUN_TUNECOMMAND_H
