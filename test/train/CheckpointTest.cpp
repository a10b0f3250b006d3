//===- CheckpointTest.cpp - round trips, atomic saves, corrupt files ------===//

#include "fa/train/Checkpoint.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

using namespace fa::train;
using namespace fa::traintest;
using nlohmann::json;

namespace {

GptConfig tinyConfig() {
  GptConfig config;
  config.layers = 2;
  config.dModel = 8;
  config.heads = 2;
  config.seq = 4;
  return config;
}

/// A state whose arrays hold values a lossy format would change: -0, the
/// smallest subnormal, infinities and a NaN with a payload.
TrainState sampleState() {
  TrainState state;
  state.config = tinyConfig();
  state.step = 1234;
  state.seed = 0xfedcba9876543210ull; // Above INT64_MAX.
  state.hyperparameters =
      json{{"lr", 6e-4}, {"batch", 8}, {"schedule", "cosine"}}.dump();
  ParameterLayout layout(state.config);
  state.parameters = initialParameters(layout, state.config, 7);
  state.adamM.assign(state.parameters.size(), 0.0f);
  state.adamV.assign(state.parameters.size(), 0.0f);
  for (std::size_t i = 0; i < state.parameters.size(); ++i) {
    state.adamM[i] = state.parameters[i] * 0.5f + 1e-7f * static_cast<float>(i);
    state.adamV[i] = state.parameters[i] * state.parameters[i];
  }
  std::uint32_t payloadNaN = 0x7fc01234u;
  std::memcpy(&state.adamM[1], &payloadNaN, sizeof payloadNaN);
  state.adamM[2] = -0.0f;
  state.adamM[3] = std::numeric_limits<float>::denorm_min();
  state.adamV[0] = std::numeric_limits<float>::infinity();
  state.adamV[1] = -std::numeric_limits<float>::infinity();
  return state;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The names of the files in `directory`.
std::vector<std::string> filesIn(const std::string &directory) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The checkpoint's fields by position (see Checkpoint.h).
constexpr std::size_t kMagicSize = 16, kWordSize = 8;

std::uint64_t loadWord(const std::string &bytes, std::size_t offset) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kWordSize; ++i)
    value |=
        static_cast<std::uint64_t>(static_cast<std::uint8_t>(bytes[offset + i]))
        << (8 * i);
  return value;
}

std::string storeWord(std::uint64_t value) {
  std::string bytes(kWordSize, '\0');
  for (std::size_t i = 0; i < kWordSize; ++i)
    bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

/// `bytes` with its checksum recomputed over everything before it.
std::string resealed(std::string bytes) {
  std::size_t body = bytes.size() - kWordSize;
  return bytes.substr(0, body) + storeWord(fnv1a64(bytes.data(), body));
}

/// A checkpoint file with its header JSON edited by `edit`, its header length
/// and checksum rewritten to match: corrupt content the checksum cannot see.
template <typename Edit>
std::string withHeader(const std::string &bytes, Edit edit) {
  std::uint64_t headerSize = loadWord(bytes, kMagicSize);
  std::string header = bytes.substr(kMagicSize + kWordSize, headerSize);
  edit(header);
  return resealed(bytes.substr(0, kMagicSize) + storeWord(header.size()) +
                  header + bytes.substr(kMagicSize + kWordSize + headerSize));
}

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    directory = testDirectory();
    path = directory + "/run.ckpt";
  }

  /// Writes `bytes` as `path` and expects loading it to fail with `text`.
  void expectLoadError(const std::string &bytes, const std::string &text) {
    writeBytes(path, bytes);
    FA_EXPECT_ERROR(loadCheckpoint(path), "loading checkpoint " + path + ": ");
    FA_EXPECT_ERROR(loadCheckpoint(path), text);
  }

  std::string directory, path;
};

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  TrainState state = sampleState();
  saveCheckpoint(path, state);
  TrainState loaded = loadCheckpoint(path);
  EXPECT_EQ(loaded.config.describe(), state.config.describe());
  EXPECT_EQ(loaded.step, state.step);
  EXPECT_EQ(loaded.seed, state.seed);
  EXPECT_EQ(loaded.hyperparameters, state.hyperparameters);
  EXPECT_TRUE(sameBits(loaded.parameters, state.parameters));
  EXPECT_TRUE(sameBits(loaded.adamM, state.adamM));
  EXPECT_TRUE(sameBits(loaded.adamV, state.adamV));

  std::string bytes = readBytes(path);
  EXPECT_EQ(bytes.substr(0, kMagicSize), "FA-CHECKPOINT 1\n");
  const std::size_t elements = state.parameters.size();
  EXPECT_EQ(bytes.size(), kMagicSize + kWordSize + loadWord(bytes, kMagicSize) +
                              3 * elements * sizeof(float) + kWordSize);
  json header = json::parse(
      bytes.substr(kMagicSize + kWordSize, loadWord(bytes, kMagicSize)));
  EXPECT_EQ(header["config"]["d_model"], 8);
  EXPECT_EQ(header["arrays"]["adam_v"], elements);
  EXPECT_EQ(header["hyperparameters"]["batch"], 8);
}

TEST_F(CheckpointTest, UntiedConfigRoundTrips) {
  TrainState state = sampleState();
  state.config.tiedHead = false;
  std::size_t elements = ParameterLayout(state.config).totalSize();
  state.parameters.assign(elements, 1.5f);
  state.adamM.assign(elements, 2.5f);
  state.adamV.assign(elements, 3.5f);
  saveCheckpoint(path, state);
  TrainState loaded = loadCheckpoint(path);
  EXPECT_FALSE(loaded.config.tiedHead);
  EXPECT_TRUE(sameBits(loaded.adamV, state.adamV));
}

TEST_F(CheckpointTest, SavingLeavesOnlyTheCheckpoint) {
  TrainState state = sampleState();
  saveCheckpoint(path, state);
  state.step = 2000;
  saveCheckpoint(path, state); // Replaces the first.
  EXPECT_EQ(filesIn(directory), std::vector<std::string>{"run.ckpt"});
  EXPECT_EQ(loadCheckpoint(path).step, 2000);
}

TEST_F(CheckpointTest, FailedSaveKeepsThePreviousCheckpoint) {
  TrainState state = sampleState();
  saveCheckpoint(path, state);
  // A directory where the temporary file must go: creating it fails, even
  // for root.
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::filesystem::create_directory(temporary);
  TrainState next = state;
  next.step = 9999;
  FA_EXPECT_ERROR(saveCheckpoint(path, next),
                  "saving checkpoint " + path + ": cannot create " + temporary +
                      ": Is a directory");
  EXPECT_EQ(loadCheckpoint(path).step, 1234);
}

TEST_F(CheckpointTest, FailedRenameRemovesTheTemporaryFile) {
  // `path` a non-empty directory: the file is written, the rename fails.
  std::filesystem::create_directories(path + "/occupied");
  FA_EXPECT_ERROR(saveCheckpoint(path, sampleState()), "cannot rename");
  EXPECT_EQ(filesIn(directory), std::vector<std::string>{"run.ckpt"});
  EXPECT_TRUE(std::filesystem::is_directory(path));
}

TEST_F(CheckpointTest, SaveIntoAMissingDirectoryFails) {
  std::string missing = directory + "/no/such/dir/run.ckpt";
  FA_EXPECT_ERROR(saveCheckpoint(missing, sampleState()),
                  "saving checkpoint " + missing + ": cannot create " +
                      missing + ".tmp.");
  FA_EXPECT_ERROR(saveCheckpoint(missing, sampleState()),
                  "No such file or directory");
}

TEST_F(CheckpointTest, InconsistentStatesAreNotWritten) {
  TrainState shortArray = sampleState();
  shortArray.adamV.pop_back();
  FA_EXPECT_ERROR(saveCheckpoint(path, shortArray), "adam_v holds");
  TrainState notJson = sampleState();
  notJson.hyperparameters = "{lr: 3";
  FA_EXPECT_ERROR(saveCheckpoint(path, notJson),
                  "hyperparameters: not valid JSON");
  TrainState negative = sampleState();
  negative.step = -1;
  FA_EXPECT_ERROR(saveCheckpoint(path, negative), "step -1 is negative");
  TrainState badConfig = sampleState();
  badConfig.config.heads = 3;
  FA_EXPECT_ERROR(saveCheckpoint(path, badConfig), "must divide d_model");
  EXPECT_TRUE(filesIn(directory).empty());
}

TEST_F(CheckpointTest, MissingFile) {
  FA_EXPECT_ERROR(loadCheckpoint(path),
                  "loading checkpoint " + path +
                      ": cannot open it: No such file or directory");
}

TEST_F(CheckpointTest, OnlyRegularFilesAreLoaded) {
  // Opening a pipe blocked until a writer came, and its size is unknown.
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  FA_EXPECT_ERROR(loadCheckpoint(path),
                  "loading checkpoint " + path + ": not a regular file");
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  FA_EXPECT_ERROR(loadCheckpoint(path),
                  "loading checkpoint " + path + ": not a regular file");
}

TEST_F(CheckpointTest, WrongMagicOrVersion) {
  saveCheckpoint(path, sampleState());
  std::string bytes = readBytes(path);
  expectLoadError(
      "PK\x03\x04" + bytes.substr(4),
      "not a checkpoint: it does not start with \"FA-CHECKPOINT 1\"");
  expectLoadError("FA-CHECKPOINT 2\n" + bytes.substr(kMagicSize),
                  "unsupported format version '2'; this build reads version 1");
}

TEST_F(CheckpointTest, TruncatedFiles) {
  saveCheckpoint(path, sampleState());
  std::string bytes = readBytes(path);
  const std::size_t headerEnd =
      kMagicSize + kWordSize + loadWord(bytes, kMagicSize);
  expectLoadError("", "truncated: its 0 bytes end inside the magic line");
  expectLoadError(bytes.substr(0, 10), "end inside the magic line");
  expectLoadError(bytes.substr(0, kMagicSize + 3),
                  "end inside the header length");
  expectLoadError(bytes.substr(0, headerEnd - 5), "end inside the header");
  for (std::size_t size : {headerEnd, headerEnd + 100, bytes.size() - 1})
    expectLoadError(bytes.substr(0, size),
                    "truncated: " + std::to_string(size) +
                        " bytes where its header describes " +
                        std::to_string(bytes.size()));
  expectLoadError(bytes + "x", "1 bytes after the end its header describes");
}

TEST_F(CheckpointTest, ChecksumMismatch) {
  saveCheckpoint(path, sampleState());
  std::string bytes = readBytes(path);
  std::string flippedValue = bytes;
  flippedValue[bytes.size() - 100] ^= 0x01;
  expectLoadError(flippedValue, "checksum mismatch");
  std::string flippedStep = bytes;
  flippedStep.replace(flippedStep.find("\"step\":1234"), 11, "\"step\":1235");
  expectLoadError(flippedStep, "the file is corrupted");
  std::string flippedChecksum = bytes;
  flippedChecksum.back() ^= 0x80;
  expectLoadError(flippedChecksum, "checksum mismatch");
}

TEST_F(CheckpointTest, ArraysMustMatchTheConfig) {
  saveCheckpoint(path, sampleState());
  std::string bytes = readBytes(path);
  std::size_t elements = sampleState().parameters.size();
  // Another model under the same arrays.
  expectLoadError(withHeader(bytes,
                             [](std::string &header) {
                               json parsed = json::parse(header);
                               parsed["config"]["layers"] = 3;
                               header = parsed.dump();
                             }),
                  "header: 'arrays': 'parameters' holds " +
                      std::to_string(elements) + " values, but the model");
  expectLoadError(withHeader(bytes,
                             [](std::string &header) {
                               json parsed = json::parse(header);
                               parsed["arrays"]["adam_m"] = 5;
                               header = parsed.dump();
                             }),
                  "'adam_m' holds 5 values");
}

/// A checkpoint of `header` and no arrays, with a valid checksum: the few
/// hundred bytes an attacker needs to describe any model.
std::string headerOnlyCheckpoint(const json &header) {
  std::string text = header.dump();
  return resealed("FA-CHECKPOINT 1\n" + storeWord(text.size()) + text +
                  storeWord(0));
}

/// The header of sampleState() with config[key] = value and arrays of
/// `elements` values each.
json headerWith(const std::string &key, std::int64_t value,
                std::int64_t elements) {
  json config = {{"layers", 2}, {"d_model", 8}, {"heads", 2},
                 {"seq", 4},    {"vocab", 256}, {"tied_head", true}};
  config[key] = value;
  return {
      {"config", config},
      {"step", 0},
      {"seed", 1},
      {"hyperparameters", json::object()},
      {"arrays",
       {{"parameters", elements}, {"adam_m", elements}, {"adam_v", elements}}}};
}

TEST_F(CheckpointTest, HugeModelsAreRejectedBeforeAnythingIsSized) {
  // A trillion layers used to build a layout of twelve trillion tensors
  // (until memory ran out); a d_model of 2^32 overflowed the layout's sizes.
  expectLoadError(headerOnlyCheckpoint(headerWith("layers", 1000000000000, 1)),
                  "header: 'config': 'layers' must be at most 4096, got "
                  "1000000000000");
  expectLoadError(headerOnlyCheckpoint(headerWith("d_model", 1ll << 32, 1)),
                  "header: 'config': 'd_model' must be at most 131072, got "
                  "4294967296");
  expectLoadError(headerOnlyCheckpoint(headerWith("seq", 1ll << 40, 1)),
                  "'seq' must be at most 16777216");
  expectLoadError(headerOnlyCheckpoint(headerWith("vocab", 1ll << 40, 1)),
                  "'vocab' must be at most 16777216");

  // The largest model the bounds allow gets as far as the size check, with
  // no overflow on the way.
  GptConfig largest;
  largest.layers = 4096;
  largest.dModel = 131072;
  largest.heads = 1;
  largest.seq = 16777216;
  largest.vocab = 16777216;
  largest.tiedHead = false;
  std::int64_t elements = ParameterLayout(largest).totalSize();
  json header = headerWith("layers", largest.layers, elements);
  header["config"] = {{"layers", largest.layers},
                      {"d_model", largest.dModel},
                      {"heads", 1},
                      {"seq", largest.seq},
                      {"vocab", largest.vocab},
                      {"tied_head", false}};
  std::string bytes = headerOnlyCheckpoint(header);
  std::uint64_t described = kMagicSize + kWordSize + header.dump().size() +
                            3 * static_cast<std::uint64_t>(elements) * 4 +
                            kWordSize;
  expectLoadError(bytes, "truncated: " + std::to_string(bytes.size()) +
                             " bytes where its header describes " +
                             std::to_string(described));
}

TEST_F(CheckpointTest, OverlongHeadersAreRejected) {
  saveCheckpoint(path, sampleState());
  std::string header;
  std::string bytes = withHeader(readBytes(path), [&](std::string &text) {
    json parsed = json::parse(text);
    parsed["hyperparameters"]["note"] = std::string(2 << 20, 'x');
    text = header = parsed.dump();
  });
  expectLoadError(bytes, "header of " + std::to_string(header.size()) +
                             " bytes is longer than 1048576");

  TrainState state = sampleState();
  state.hyperparameters = json{{"note", std::string(2 << 20, 'x')}}.dump();
  FA_EXPECT_ERROR(saveCheckpoint(path, state),
                  "saving checkpoint " + path + ": header of ");
  FA_EXPECT_ERROR(saveCheckpoint(path, state),
                  "bytes is longer than 1048576, the most a checkpoint's "
                  "header may have");
}

TEST_F(CheckpointTest, MalformedHeaders) {
  saveCheckpoint(path, sampleState());
  std::string bytes = readBytes(path);
  expectLoadError(
      withHeader(bytes, [](std::string &header) { header.pop_back(); }),
      "header: not valid JSON");
  expectLoadError(withHeader(bytes,
                             [](std::string &header) {
                               json parsed = json::parse(header);
                               parsed["config"]["heads"] = 3;
                               header = parsed.dump();
                             }),
                  "header: 'config': GPT config: heads (3) must divide");
  expectLoadError(withHeader(bytes,
                             [](std::string &header) {
                               json parsed = json::parse(header);
                               parsed.erase("seed");
                               header = parsed.dump();
                             }),
                  "missing key 'seed'");
}

} // namespace
