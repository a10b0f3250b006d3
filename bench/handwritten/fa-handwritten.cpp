//===- fa-handwritten.cpp - Run the hand-written kernels ------------------===//
//
//   fa-handwritten attention --batch 4 --heads 16 --seq 4096 --dim 128
//                            --dtype bf16 --causal --grad --check --bench
//   fa-handwritten layernorm --rows 4096 --cols 1024 --dtype bf16 --grad
//                            --check --bench [--json]
//
// The hand-written CUDA C++ kernels of bench/handwritten/, the baseline the
// generated ones are benchmarked against, run as fa-run runs those: random
// inputs, an fp64 check, CUDA-event timings, the same report. Errors go to
// stderr with exit code 1; without a GPU (or without an sm_90 one),
// --skip-if-no-gpu turns that into 77, which ctest reports as SKIPPED.
//
//===----------------------------------------------------------------------===//

#include "attention_command.h"
#include "layernorm_command.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

int main(int argc, char **argv) {
  CLI::App app("fa-handwritten: runs the hand-written CUDA kernels (the "
               "baseline for the generated ones) on random inputs, checks "
               "them against an fp64 reference and times them, as fa-run "
               "does the generated kernels.",
               "fa-handwritten");
  app.require_subcommand(1);
  std::vector<std::unique_ptr<fa::handwritten::Subcommand>> commands;
  commands.push_back(fa::handwritten::makeAttentionCommand(app));
  commands.push_back(fa::handwritten::makeLayerNormCommand(app));
  CLI11_PARSE(app, argc, argv);

  for (const auto &command : commands)
    if (command->parsed())
      return fa::handwritten::runReportingErrors(*command);
  return 1;
}
