//===- GradCheckCommand.cpp - `fa-run gradcheck` --------------------------===//

#include "GradCheckCommand.h"

#include "fa/runtime/Context.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace fa {

void addProductOptions(CLI::App *command, train::EpilogueFusion &epilogues,
                       bool &weightGradStream, const ProductOptionsHelp &help) {
  command
      ->add_option_function<std::string>(
          "--epilogues",
          [&epilogues](const std::string &list) {
            try {
              epilogues = train::EpilogueFusion::parse(list);
            } catch (const Error &error) {
              throw CLI::ValidationError("--epilogues", error.what());
            }
          },
          help.epilogues)
      ->default_str(train::EpilogueFusion().describe());
  CLI::Option *stream = command->add_flag_callback(
      "--weight-grad-stream", [&weightGradStream] { weightGradStream = true; },
      help.stream);
  command
      ->add_flag_callback(
          "--serial-weight-grads",
          [&weightGradStream] { weightGradStream = false; }, help.serial)
      ->excludes(stream);
}

void addModelOptions(CLI::App *command, train::GptConfig &config) {
  command->add_option("--layers", config.layers, "Decoder blocks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--d-model", config.dModel, "Model width C")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--heads", config.heads,
                   "Attention heads (head_dim = d_model / heads must be one "
                   "the kernel library has: 64 or 128)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--seq", config.seq, "Sequence length (context)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--vocab", config.vocab,
                   "Vocabulary size V (embedding and LM head rows); every "
                   "token must be below it. fa-run train: 256 suits "
                   "--data-format bytes; u16 data needs it given")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_flag(
      "--untied-head", [&config](std::int64_t) { config.tiedHead = false; },
      "A separate LM head matrix instead of the token embedding's");
}

void checkModelOptions(const train::GptConfig &config) {
  if (config.dModel % config.heads != 0)
    throw Error("--heads " + std::to_string(config.heads) +
                " does not divide --d-model " + std::to_string(config.dModel) +
                ": change --heads or --d-model (head_dim = d_model / heads, "
                "64 or 128 in the kernel library)");
  config.validate(); // The rest: sizes, which CLI already checks positive.
}

CLI::App *addGradCheckCommand(CLI::App &app, GradCheckCommandOptions &o) {
  CLI::App *command = app.add_subcommand(
      "gradcheck", "Checks the GPT model's GPU gradients (every parameter "
                   "tensor) against an fp64 CPU reference");
  o.check.model.layers = 2;
  o.check.model.dModel = 128;
  o.check.model.heads = 2;
  o.check.model.seq = 33;
  addModelOptions(command, o.check.model);
  command->add_option("--batch", o.check.batch, "Sequences")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--dtype", o.dtype, "Activations: f32 or bf16")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  command->add_option("--seed", o.check.seed, "Parameters and batch")
      ->capture_default_str();
  addProductOptions(
      command, o.check.epilogues, o.check.weightGradStream,
      {"cuBLASLt epilogues to check: none, all, or a list of gelu-forward, "
       "gelu-backward, bias-grad",
       "Check the model with its weight-gradient products on a second stream "
       "beside the backward (the default, as fa-run train runs them)",
       "Check the model with its weight-gradient products on the training "
       "stream"});
  command->add_flag_callback(
      "--head-copies", [&o] { o.check.headViews = false; },
      "Check the model with q, k, v and the attention's output copied to "
      "[B, H, T, D] buffers instead of read in place");
  command
      ->add_option("--dropout", o.check.dropout,
                   "Dropout probability: both sides draw the masks of one "
                   "training step from --seed (bf16: the library has no f32 "
                   "attention dropout kernels)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  command->add_option("--tolerance", o.check.tolerance,
                      "Largest relative L2 error per tensor (default: 1e-4 "
                      "for f32, 3e-2 for bf16)");
  addKernelsOption(command, o.gpu);
  addDeviceOptions(command, o.gpu);
  addJsonOption(command, o.gpu);
  return command;
}

int runGradCheck(GradCheckCommandOptions &o) {
  o.check.dtype = parseDType(o.dtype);
  checkModelOptions(o.check.model);
  if (o.check.dropout > 0 && o.check.dtype == DType::F32)
    throw Error("--dropout needs --dtype bf16: the kernel library has no f32 "
                "attention dropout kernels");
  Context context(o.gpu.device);
  KernelLibrary library = KernelLibrary::load(o.gpu.kernelDirectory());
  train::GradCheckResult result =
      train::runGradCheck(o.check, context, library);
  if (o.gpu.json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const train::TensorGradError &t : result.tensors)
      tensors.push_back({{"name", t.name},
                         {"rel_l2_error", t.error},
                         {"max_abs_error", t.maxAbs},
                         {"reference_norm", t.refNorm},
                         {"passed", t.passed}});
    nlohmann::json report = {{"device", context.device().name},
                             {"model", o.check.model.describe()},
                             {"batch", o.check.batch},
                             {"dtype", o.dtype},
                             {"dropout", o.check.dropout},
                             {"gpu_loss", result.gpuLoss},
                             {"reference_loss", result.referenceLoss},
                             {"tolerance", result.tolerance},
                             {"tensors", tensors},
                             {"passed", result.passed()}};
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "gradient check on " << context.device().name << ": "
              << o.check.model.describe() << " batch=" << o.check.batch
              << " dtype=" << o.dtype << " dropout=" << o.check.dropout << "\n"
              << train::formatGradCheck(result);
  }
  return result.passed() ? 0 : 1;
}

} // namespace fa
