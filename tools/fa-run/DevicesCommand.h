//===- DevicesCommand.h - `fa-run devices` ----------------------*- C++ -*-===//

#ifndef FA_RUN_DEVICESCOMMAND_H
#define FA_RUN_DEVICESCOMMAND_H

#include <CLI/CLI.hpp>

namespace fa {

struct DevicesOptions {
  bool json = false;
};

CLI::App *addDevicesCommand(CLI::App &app, DevicesOptions &options);

/// Lists the GPUs, or says there are none (which is not an error here).
int runDevices(const DevicesOptions &options);

} // namespace fa

#endif // FA_RUN_DEVICESCOMMAND_H
