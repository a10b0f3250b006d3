//===- GradCheckCommand.h - `fa-run gradcheck` ------------------*- C++ -*-===//
//
//   fa-run gradcheck --layers 2 --d-model 128 --heads 2 --seq 33 --batch 2
//                    --dtype f32
//
// One forward and backward of the GPT model on the GPU against the fp64 CPU
// reference, per parameter tensor (GradCheck.h). Exit 0 when every tensor is
// within the tolerance, 1 otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_GRADCHECKCOMMAND_H
#define FA_RUN_GRADCHECKCOMMAND_H

#include "GpuRunOptions.h"

#include "fa/train/GradCheck.h"

#include <CLI/CLI.hpp>

namespace fa {

struct GradCheckCommandOptions {
  GpuRunOptions gpu;
  train::GradCheckOptions check;
  std::string dtype = "f32";
};

/// --layers, --d-model, --heads, --seq, --vocab and --untied-head, shared
/// with `fa-run train`.
void addModelOptions(CLI::App *command, train::GptConfig &config);
/// The products' options, shared with `fa-run train`: --epilogues (parsed
/// by train::EpilogueFusion::parse) and the weight-gradient stream,
/// --weight-grad-stream (the default) or --serial-weight-grads, which
/// exclude each other. Each help text says what the command does with it.
struct ProductOptionsHelp {
  const char *epilogues, *stream, *serial;
};
void addProductOptions(CLI::App *command, train::EpilogueFusion &epilogues,
                       bool &weightGradStream, const ProductOptionsHelp &help);
/// Throws fa::Error naming the options to change when the model options do
/// not make a model (heads not dividing d_model, ...).
void checkModelOptions(const train::GptConfig &config);

CLI::App *addGradCheckCommand(CLI::App &app, GradCheckCommandOptions &options);
int runGradCheck(GradCheckCommandOptions &options);

} // namespace fa

#endif // FA_RUN_GRADCHECKCOMMAND_H
