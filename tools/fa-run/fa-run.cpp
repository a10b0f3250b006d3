//===- fa-run.cpp - Run compiled kernels ----------------------------------===//
//
//   fa-run attention --batch 2 --heads 16 --seq 4096 --dim 128 --dtype bf16
//                    --causal --check --bench
//   fa-run attention --q q.npy --k k.npy --v v.npy --out o.npy --dtype f16
//   fa-run layernorm --rows 4096 --cols 1024 --dtype bf16 --grad --check
//                    --bench
//   fa-run tune --dtype bf16 --dim 128      (writes <kernels>/tuning.json)
//   fa-run train --data text.txt --layers 6 --d-model 384 --heads 6
//                --seq 256 --batch 32 --steps 2000 --checkpoint run.ckpt
//   fa-run gradcheck --layers 2 --d-model 128 --heads 2 --dtype f32
//   fa-run devices
//
// Errors go to stderr, one line each, with exit code 1 (ErrorReport.h).
// Without a GPU, --skip-if-no-gpu turns that into exit code 77, which ctest
// reports as SKIPPED.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommand.h"
#include "DevicesCommand.h"
#include "ErrorReport.h"
#include "GradCheckCommand.h"
#include "LayerNormCommand.h"
#include "TrainCommand.h"
#include "TuneCommand.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char **argv) {
  CLI::App app("fa-run: runs kernels compiled by fa-opt from the kernel "
               "library (PTX + manifest.json), checks and times them.",
               "fa-run");
  app.require_subcommand(1);
  fa::AttentionOptions attention;
  fa::LayerNormOptions layerNorm;
  fa::TuneOptions tune;
  fa::DevicesOptions devices;
  fa::TrainCommandOptions train;
  fa::GradCheckCommandOptions gradCheck;
  CLI::App *attentionCommand = fa::addAttentionCommand(app, attention);
  CLI::App *layerNormCommand = fa::addLayerNormCommand(app, layerNorm);
  CLI::App *tuneCommand = fa::addTuneCommand(app, tune);
  CLI::App *devicesCommand = fa::addDevicesCommand(app, devices);
  CLI::App *trainCommand = fa::addTrainCommand(app, train);
  CLI::App *gradCheckCommand = fa::addGradCheckCommand(app, gradCheck);
  CLI11_PARSE(app, argc, argv);
  train.commandLine.assign(argv + 1, argv + argc);

  bool skipIfNoGpu = attention.skipIfNoGpu || layerNorm.skipIfNoGpu ||
                     tune.skipIfNoGpu || train.gpu.skipIfNoGpu ||
                     gradCheck.gpu.skipIfNoGpu;
  auto runParsedCommand = [&] {
    if (attentionCommand->parsed())
      return fa::runAttention(attention);
    if (layerNormCommand->parsed())
      return fa::runLayerNorm(layerNorm);
    if (tuneCommand->parsed())
      return fa::runTune(tune);
    if (devicesCommand->parsed())
      return fa::runDevices(devices);
    if (trainCommand->parsed())
      return fa::runTrain(train);
    if (gradCheckCommand->parsed())
      return fa::runGradCheck(gradCheck);
    return 1;
  };
  return fa::runReportingErrors(app.get_subcommands().front()->get_name(),
                                runParsedCommand, skipIfNoGpu, std::cerr);
}
