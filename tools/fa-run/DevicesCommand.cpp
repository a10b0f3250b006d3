//===- DevicesCommand.cpp - `fa-run devices` ------------------------------===//

#include "DevicesCommand.h"

#include "fa/runtime/Context.h"
#include "fa/runtime/Error.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace fa {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

nlohmann::json deviceJson(const DeviceInfo &device) {
  return {{"ordinal", device.ordinal},
          {"name", device.name},
          {"arch", device.smName()},
          {"multiprocessors", device.multiprocessors},
          {"memory_bytes", device.memoryBytes},
          {"l2_bytes", device.l2CacheBytes}};
}

void printDevice(const DeviceInfo &device) {
  std::printf("%d: %s, %s, %d SMs, %.1f GiB, L2 %.0f MiB\n", device.ordinal,
              device.name.c_str(), device.smName().c_str(),
              device.multiprocessors, device.memoryBytes / kGiB,
              device.l2CacheBytes / kMiB);
}

} // namespace

CLI::App *addDevicesCommand(CLI::App &app, DevicesOptions &options) {
  CLI::App *command =
      app.add_subcommand("devices", "List the CUDA devices (GPUs) found. "
                                    "Exit code 0 when there is one, 2 when "
                                    "there is none (no driver, or it reports "
                                    "no device), 1 on any other error");
  command->add_flag("--json", options.json,
                    "Print one JSON object instead of text");
  return command;
}

int runDevices(const DevicesOptions &options) {
  std::vector<DeviceInfo> devices;
  std::string none;
  try {
    devices = listDevices();
  } catch (const NoDeviceError &error) {
    none = error.what();
  }
  if (options.json) {
    nlohmann::json json = {{"devices", nlohmann::json::array()}};
    for (const DeviceInfo &device : devices)
      json["devices"].push_back(deviceJson(device));
    if (!none.empty())
      json["none_because"] = none;
    std::cout << json.dump(2) << "\n";
  } else if (!none.empty()) {
    std::cout << none << "\n";
  } else {
    for (const DeviceInfo &device : devices)
      printDevice(device);
  }
  return none.empty() ? 0 : kNoDeviceExitCode;
}

} // namespace fa
