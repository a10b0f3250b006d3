//===- DevicesCommand.h - `fa-run devices` ----------------------*- C++ -*-===//

#ifndef FA_RUN_DEVICESCOMMAND_H
#define FA_RUN_DEVICESCOMMAND_H

#include <CLI/CLI.hpp>

namespace fa {

struct DevicesOptions {
  bool json = false;
};

CLI::App *addDevicesCommand(CLI::App &app, DevicesOptions &options);

/// `fa-run devices` exits with this when the machine has no usable GPU (no
/// driver, or the driver reports none), so that scripts can tell "no GPU"
/// from a failure (exit 1) and from GPUs found (exit 0).
inline constexpr int kNoDeviceExitCode = 2;

/// Lists the GPUs and returns 0, or says why there are none and returns
/// kNoDeviceExitCode.
int runDevices(const DevicesOptions &options);

} // namespace fa

#endif // FA_RUN_DEVICESCOMMAND_H
