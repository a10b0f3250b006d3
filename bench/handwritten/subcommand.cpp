//===- subcommand.cpp -----------------------------------------------------===//

#include "subcommand.h"

#include "fa/runtime/Error.h"

#include <iostream>
#include <sstream>
#include <vector>

namespace fa::handwritten {

Subcommand::Subcommand(CLI::App &app, const std::string &name,
                       const std::string &description)
    : command(app.add_subcommand(name, description)) {}

void Subcommand::addRunOptions(const std::string &runsHelp) {
  command->add_option("--seed", options.seed, "Seed of the random inputs")
      ->capture_default_str();
  command->add_option("--warmup", options.warmup, "Untimed runs before timing")
      ->capture_default_str()
      ->check(atLeast(0));
  command->add_option("--runs", options.runs, runsHelp)
      ->capture_default_str()
      ->check(atLeast(1));
  command->add_option("--device", options.device, "CUDA device ordinal")
      ->capture_default_str();
  command->add_flag("--json", options.json,
                    "Print one JSON object instead of text");
  command->add_flag("--skip-if-no-gpu", options.skipIfNoGpu,
                    "Exit with 77 (ctest's SKIPPED) instead of 1 when there "
                    "is no GPU, or none the kernels are built for (sm_90a)");
}

CLI::Validator atLeast(double minimum) {
  std::ostringstream text;
  text << minimum;
  const std::string bound = text.str();
  return CLI::Validator(
      [minimum, bound](std::string &input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value))
          return "must be a number, got " + input;
        if (value < minimum)
          return "must be at least " + bound + ", got " + input;
        return {};
      },
      ">=" + bound);
}

int runReportingErrors(Subcommand &command) {
  try {
    return command.run();
  } catch (const NoDeviceError &error) {
    std::cerr << "fa-handwritten: " << error.what() << "\n";
    return command.runOptions().skipIfNoGpu ? kSkippedExitCode : 1;
  } catch (const Error &error) {
    std::cerr << "fa-handwritten: " << error.what() << "\n";
    return 1;
  }
}

void requireSm90(const DeviceInfo &device) {
  if (device.computeMajor != 9 || device.computeMinor != 0)
    throw NoDeviceError("CUDA device " + std::to_string(device.ordinal) + " (" +
                        device.name + ") is " + device.smName() +
                        "; the hand-written kernels are compiled for sm_90a "
                        "only (H100, H200)");
}

} // namespace fa::handwritten
