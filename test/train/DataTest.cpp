//===- DataTest.cpp - corpora, the split and the batch sampler ------------===//

#include "fa/train/Data.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <set>

using namespace fa;
using namespace fa::train;
using namespace fa::traintest;

namespace {

/// Tokens i % 251: every window of fewer than 251 tokens is unique, so a
/// window's tokens tell where it came from.
TokenCorpus countingCorpus(std::size_t size) {
  TokenCorpus corpus{"counting", std::vector<std::uint16_t>(size)};
  for (std::size_t i = 0; i < size; ++i)
    corpus.tokens[i] = static_cast<std::uint16_t>(i % 251);
  return corpus;
}

/// Row `row` of a [batch, seq] array.
std::vector<std::int32_t> rowOf(const std::vector<std::int32_t> &values,
                                std::int64_t seq, std::int64_t row) {
  return {values.begin() + row * seq, values.begin() + (row + 1) * seq};
}

/// Expects row `row` of (tokens, targets) to be the window of `range` at
/// `start`: inputs and the next byte of each.
void expectWindow(const TokenRange &range, std::size_t start,
                  const std::vector<std::int32_t> &tokens,
                  const std::vector<std::int32_t> &targets, std::int64_t seq,
                  std::int64_t row) {
  ASSERT_LE(start + seq + 1, range.size);
  for (std::int64_t t = 0; t < seq; ++t) {
    ASSERT_EQ(tokens[row * seq + t], range.data[start + t]) << "t " << t;
    ASSERT_EQ(targets[row * seq + t], range.data[start + t + 1]) << "t " << t;
  }
}

TEST(CorpusTest, LoadsTheFileBytes) {
  std::string path = testDirectory() + "/text.bin";
  std::string bytes("a\0b\xff\n", 5);
  writeBytes(path, bytes);
  TokenCorpus corpus = loadCorpus(path);
  EXPECT_EQ(corpus.name, path);
  EXPECT_EQ(corpus.tokens,
            (std::vector<std::uint16_t>{'a', 0, 'b', 0xff, '\n'}));
  EXPECT_EQ(corpus.headerBytes, 0u);
  EXPECT_EQ(corpus.tokenBytes, 1u);
  EXPECT_EQ(loadCorpus(path, DataFormat::Bytes).tokens, corpus.tokens);
}

TEST(CorpusTest, LoadErrorsNameTheFileAndTheReason) {
  std::string directory = testDirectory();
  FA_EXPECT_ERROR(loadCorpus(directory + "/missing.txt"),
                  directory + "/missing.txt: cannot open it: No such file");
  writeBytes(directory + "/empty.txt", "");
  FA_EXPECT_ERROR(loadCorpus(directory + "/empty.txt"),
                  "empty.txt: the file is empty");
  FA_EXPECT_ERROR(loadCorpus(directory), "Is a directory");
}

/// `tokens` as little-endian uint16 bytes.
std::string u16Bytes(const std::vector<std::uint16_t> &tokens) {
  std::string bytes;
  for (std::uint16_t token : tokens) {
    bytes += static_cast<char>(token & 0xff);
    bytes += static_cast<char>(token >> 8);
  }
  return bytes;
}

/// llm.c's 1024-byte header: 256 little-endian int32, the first three set.
std::string llmcHeader(std::int32_t magic, std::int32_t version,
                       std::int32_t count) {
  std::string header(kLlmcHeaderBytes, '\0');
  const std::int32_t fields[] = {magic, version, count};
  for (int f = 0; f < 3; ++f)
    for (int b = 0; b < 4; ++b)
      header[4 * f + b] = static_cast<char>(
          (static_cast<std::uint32_t>(fields[f]) >> (8 * b)) & 0xff);
  return header;
}

TEST(TokenShardTest, RawShardRoundTrips) {
  const std::string path = testDirectory() + "/train.bin";
  const std::vector<std::uint16_t> tokens = {0, 1, 255, 256, 50256, 65535, 7};
  writeBytes(path, u16Bytes(tokens));
  TokenCorpus corpus = loadTokenShard(path);
  EXPECT_EQ(corpus.name, path);
  EXPECT_EQ(corpus.tokens, tokens);
  EXPECT_EQ(corpus.headerBytes, 0u);
  EXPECT_EQ(corpus.tokenBytes, 2u);
  EXPECT_EQ(loadCorpus(path, DataFormat::U16).tokens, tokens);
}

TEST(TokenShardTest, LargeRawShardRoundTrips) {
  // More than the reader's 1 MiB chunk, and not a multiple of it.
  const std::string path = testDirectory() + "/large.bin";
  std::vector<std::uint16_t> tokens(700001);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<std::uint16_t>(i * 2654435761u >> 7);
  writeBytes(path, u16Bytes(tokens));
  EXPECT_EQ(loadTokenShard(path).tokens, tokens);
}

TEST(TokenShardTest, LlmcShardRoundTripsWithoutItsHeader) {
  const std::string directory = testDirectory();
  const std::vector<std::uint16_t> tokens = {50256, 15496, 11, 995, 0, 65535};
  for (std::int32_t version : {1, 2}) {
    const std::string path =
        directory + "/v" + std::to_string(version) + ".bin";
    writeBytes(path, llmcHeader(kLlmcMagic, version, 6) + u16Bytes(tokens));
    TokenCorpus corpus = loadTokenShard(path);
    EXPECT_EQ(corpus.tokens, tokens) << "version " << version;
    EXPECT_EQ(corpus.headerBytes, 1024u);
    EXPECT_EQ(corpus.tokenBytes, 2u);
  }
}

TEST(TokenShardTest, MalformedShardsNameTheFileAndTheProblem) {
  const std::string directory = testDirectory();
  auto shard = [&](const std::string &name, const std::string &bytes) {
    writeBytes(directory + "/" + name, bytes);
    return directory + "/" + name;
  };
  const std::string prefix = "loading the uint16 token shard " + directory;
  FA_EXPECT_ERROR(loadTokenShard(shard("odd.bin", "abc")),
                  prefix + "/odd.bin: it holds 3 bytes, an odd number");
  FA_EXPECT_ERROR(loadTokenShard(shard("empty.bin", "")),
                  prefix + "/empty.bin: the file is empty");
  FA_EXPECT_ERROR(loadTokenShard(directory + "/missing.bin"),
                  prefix + "/missing.bin: cannot open it: No such file");
  FA_EXPECT_ERROR(loadTokenShard(directory), "Is a directory");
  const std::string four = u16Bytes({1, 2, 3, 4});
  FA_EXPECT_ERROR(
      loadTokenShard(shard("short.bin", llmcHeader(kLlmcMagic, 1, 10) + four)),
      prefix + "/short.bin: llm.c header: header says 10 tokens, file holds 4 "
               "(truncated?)");
  FA_EXPECT_ERROR(
      loadTokenShard(shard("long.bin", llmcHeader(kLlmcMagic, 1, 3) + four)),
      "llm.c header: header says 3 tokens, file holds 4");
  FA_EXPECT_ERROR(loadTokenShard(shard("negative.bin",
                                       llmcHeader(kLlmcMagic, 1, -1) + four)),
                  "header says -1 tokens, file holds 4");
  FA_EXPECT_ERROR(
      loadTokenShard(shard("version.bin", llmcHeader(kLlmcMagic, 3, 4) + four)),
      prefix + "/version.bin: llm.c header: version 3 is not one this reader "
               "knows (1 or 2)");
  FA_EXPECT_ERROR(loadTokenShard(shard("oddpayload.bin",
                                       llmcHeader(kLlmcMagic, 1, 2) + "abc")),
                  "llm.c header: the 3 bytes after the header are an odd "
                  "number");
  FA_EXPECT_ERROR(
      loadTokenShard(shard("none.bin", llmcHeader(kLlmcMagic, 1, 0))),
      "llm.c header: the shard holds no tokens");
  FA_EXPECT_ERROR(loadTokenShard(shard(
                      "cut.bin", llmcHeader(kLlmcMagic, 1, 4).substr(0, 100))),
                  prefix + "/cut.bin: llm.c header: the file holds 100 bytes, "
                           "less than the 1024-byte header");
}

TEST(TokenShardTest, AnotherMagicIsRawUnlessTheRestIsAnLlmcHeader) {
  // A file whose first int is not the magic is raw uint16, even one that
  // starts with the magic's neighbour ...
  const std::string directory = testDirectory();
  std::string bytes = llmcHeader(kLlmcMagic + 1, 7, 99) + u16Bytes({1, 2});
  writeBytes(directory + "/raw.bin", bytes);
  TokenCorpus corpus = loadTokenShard(directory + "/raw.bin");
  ASSERT_EQ(corpus.tokens.size(), 514u);
  EXPECT_EQ(corpus.headerBytes, 0u);
  EXPECT_EQ(corpus.tokens[2], 7);
  EXPECT_EQ(corpus.tokens[513], 2);
  // ... but an llm.c header (version 1 or 2, the file's token count) with a
  // damaged magic is refused rather than trained on as tokens.
  writeBytes(directory + "/damaged.bin",
             llmcHeader(123, 1, 2) + u16Bytes({1, 2}));
  FA_EXPECT_ERROR(loadTokenShard(directory + "/damaged.bin"),
                  "damaged.bin: its first 1024 bytes look like an llm.c "
                  "header (version 1, 2 tokens, as the file holds) but the "
                  "magic is 123, not 20240520");
}

TEST(TokenShardTest, TokensAtOrAboveTheVocabularyAreRefusedWithTheirOffset) {
  const std::string directory = testDirectory();
  writeBytes(directory + "/raw.bin", u16Bytes({1, 2, 300, 5, 70}));
  TokenCorpus raw = loadTokenShard(directory + "/raw.bin");
  EXPECT_NO_THROW(checkTokensBelow(raw, 301));
  FA_EXPECT_ERROR(checkTokensBelow(raw, 300),
                  directory + "/raw.bin: token 2 (byte offset 4) is 300, not "
                              "below --vocab 300: raise --vocab");
  writeBytes(directory + "/llmc.bin",
             llmcHeader(kLlmcMagic, 1, 5) + u16Bytes({1, 2, 300, 5, 70}));
  FA_EXPECT_ERROR(checkTokensBelow(loadTokenShard(directory + "/llmc.bin"), 64),
                  "llmc.bin: token 2 (byte offset 1028) is 300");
  writeBytes(directory + "/text.txt", "hello");
  FA_EXPECT_ERROR(checkTokensBelow(loadCorpus(directory + "/text.txt"), 105),
                  "text.txt: token 2 (byte offset 2) is 108, not below "
                  "--vocab 105");
  FA_EXPECT_ERROR(checkTokensBelow(raw, 0), "--vocab 0 must be positive");
}

TEST(DataFormatTest, ParsesItsNames) {
  EXPECT_EQ(parseDataFormat("bytes"), DataFormat::Bytes);
  EXPECT_EQ(parseDataFormat("u16"), DataFormat::U16);
  EXPECT_STREQ(dataFormatName(DataFormat::U16), "u16");
  EXPECT_STREQ(dataFormatName(DataFormat::Bytes), "bytes");
  FA_EXPECT_ERROR(parseDataFormat("u32"),
                  "unknown data format 'u32': use bytes or u16");
}

TEST(TrainingDataTest, SplitsOneFileOrTakesASeparateValidationFile) {
  const std::string directory = testDirectory();
  std::vector<std::uint16_t> train(1000), validation(77);
  for (std::size_t i = 0; i < train.size(); ++i)
    train[i] = static_cast<std::uint16_t>(1000 + i);
  for (std::size_t i = 0; i < validation.size(); ++i)
    validation[i] = static_cast<std::uint16_t>(5 + i);
  writeBytes(directory + "/train.bin", u16Bytes(train));
  writeBytes(directory + "/val.bin",
             llmcHeader(kLlmcMagic, 1, 77) + u16Bytes(validation));

  DataOptions options;
  options.path = directory + "/train.bin";
  options.format = DataFormat::U16;
  options.valFraction = 0.25;
  TrainingData one = TrainingData::load(options, 2000, 1);
  CorpusSplit split = one.split();
  ASSERT_EQ(split.train.size, 750u);
  ASSERT_EQ(split.validation.size, 250u);
  EXPECT_EQ(split.train.data[0], 1000);
  EXPECT_EQ(split.validation.data[0], 1750);
  EXPECT_EQ(one.describe(), directory + "/train.bin (u16)");

  options.validationPath = directory + "/val.bin";
  TrainingData two = TrainingData::load(options, 2000, 1);
  // Moved, it still views its own tokens.
  TrainingData moved = std::move(two);
  split = moved.split();
  ASSERT_EQ(split.train.size, 1000u);
  ASSERT_EQ(split.validation.size, 77u);
  EXPECT_EQ(std::vector<std::uint16_t>(split.train.data,
                                       split.train.data + split.train.size),
            train);
  EXPECT_EQ(
      std::vector<std::uint16_t>(split.validation.data,
                                 split.validation.data + split.validation.size),
      validation);
  EXPECT_EQ(moved.describe(), directory + "/train.bin (u16), validation " +
                                  directory + "/val.bin");
  // Every file's tokens are checked against the vocabulary.
  FA_EXPECT_ERROR(TrainingData::load(options, 1999, 1),
                  "train.bin: token 999 (byte offset 1998) is 1999");
  options.path = directory + "/val.bin";
  options.validationPath = directory + "/train.bin";
  FA_EXPECT_ERROR(TrainingData::load(options, 1000, 1),
                  "train.bin: token 0 (byte offset 0) is 1000");
}

TEST(TrainingDataTest, HostBytesCountTwoBytesAToken) {
  const std::string directory = testDirectory();
  writeBytes(directory + "/train.bin", std::string(1000, 'x'));
  writeBytes(directory + "/val.bin", std::string(300, 'y'));
  DataOptions options;
  options.syntheticBytes = 12345;
  EXPECT_EQ(dataHostBytes(options), 2u * 12345u);
  options.path = directory + "/train.bin";
  EXPECT_EQ(dataHostBytes(options), 2000u); // 1000 bytes, a token each.
  options.format = DataFormat::U16;
  EXPECT_EQ(dataHostBytes(options), 1000u); // 500 uint16 tokens.
  options.validationPath = directory + "/val.bin";
  EXPECT_EQ(dataHostBytes(options), 1300u);
  options.path = directory + "/missing.bin";
  EXPECT_EQ(dataHostBytes(options), 300u);
}

TEST(TrainingDataTest, SyntheticBytesAndTheirErrors) {
  DataOptions options;
  options.syntheticBytes = 5000;
  TrainingData data = TrainingData::load(options, 256, 3);
  EXPECT_EQ(data.split().train.size + data.split().validation.size, 5000u);
  EXPECT_EQ(data.describe(), "synthetic (seed 3, 5000 bytes)");
  // The synthetic text is ASCII: a vocabulary of 128 holds it.
  EXPECT_NO_THROW(TrainingData::load(options, 128, 3));
  FA_EXPECT_ERROR(TrainingData::load(options, 100, 3),
                  "synthetic (seed 3, 5000 bytes): token");
  options.valFraction = 0;
  FA_EXPECT_ERROR(TrainingData::load(options, 256, 3),
                  "(--val-fraction) must be in (0, 1)");
  options.valFraction = 0.1;
  options.syntheticBytes = 0;
  FA_EXPECT_ERROR(TrainingData::load(options, 256, 3),
                  "--synthetic-bytes must be positive");
  options.syntheticBytes = 5000;
  options.validationPath = "val.bin";
  FA_EXPECT_ERROR(TrainingData::load(options, 256, 3),
                  "--val-data val.bin needs --data");
  options.validationPath.clear();
  options.format = DataFormat::U16;
  FA_EXPECT_ERROR(TrainingData::load(options, 256, 3),
                  "--data-format u16 needs --data");
}

TEST(CorpusTest, SyntheticTextIsDeterministicPerSeed) {
  TokenCorpus a = syntheticCorpus(20000, 1);
  EXPECT_EQ(a.tokens.size(), 20000u);
  EXPECT_EQ(a.tokens, syntheticCorpus(20000, 1).tokens);
  EXPECT_NE(a.tokens, syntheticCorpus(20000, 2).tokens);
  std::vector<std::uint16_t> shorter = syntheticCorpus(777, 1).tokens;
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), a.tokens.begin()));
  FA_EXPECT_ERROR(syntheticCorpus(0, 1), "size must be positive");
}

TEST(CorpusTest, SyntheticTextIsSentencesOfAFewCharacters) {
  TokenCorpus corpus = syntheticCorpus(200000, 3);
  std::string text(corpus.tokens.begin(), corpus.tokens.end());
  EXPECT_EQ(text.substr(0, 1).find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 0u);
  for (const char *expected : {". ", ".\n", "! ", " cats ", " children "})
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  // Subject-verb agreement: a plural subject never takes "sees".
  EXPECT_EQ(text.find("cats sees"), std::string::npos);
  EXPECT_NE(text.find("cat sees"), std::string::npos);

  std::vector<double> counts(256, 0.0);
  for (std::uint16_t byte : corpus.tokens) {
    ASSERT_LT(byte, 128) << "ASCII";
    counts[byte] += 1.0;
  }
  double entropy = 0.0;
  int distinct = 0;
  for (double count : counts)
    if (count > 0) {
      ++distinct;
      double p = count / corpus.tokens.size();
      entropy -= p * std::log2(p);
    }
  // Letters, a few capitals, space and punctuation: far from 8 bits a byte,
  // far from a constant.
  EXPECT_GT(distinct, 25);
  EXPECT_LT(distinct, 60);
  EXPECT_GT(entropy, 3.5);
  EXPECT_LT(entropy, 4.8);
}

TEST(SplitTest, ValidationIsTheLastFraction) {
  TokenCorpus corpus = countingCorpus(1000);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  EXPECT_EQ(split.train.data, corpus.tokens.data());
  EXPECT_EQ(split.train.size, 900u);
  EXPECT_EQ(split.validation.data, corpus.tokens.data() + 900);
  EXPECT_EQ(split.validation.size, 100u);
  for (double bad : {0.0, 1.0, -0.5, std::nan("")})
    FA_EXPECT_ERROR(splitCorpus(corpus, bad),
                    "validation fraction (--val-fraction) must be in (0, 1)");
}

TEST(SamplerTest, SameStepSameBatchWhateverCameBefore) {
  TokenCorpus corpus = countingCorpus(5000);
  CorpusSplit split = splitCorpus(corpus, 0.2);
  BatchSampler sampler(split, 4, 16, 42);
  std::vector<std::int32_t> tokens, targets, later, laterTargets;
  for (std::int64_t step = 0; step < 10; ++step)
    sampler.trainBatch(step, tokens, targets);
  sampler.trainBatch(7, later, laterTargets);

  // A fresh sampler (a resumed run) asked for step 7 first.
  BatchSampler resumed(split, 4, 16, 42);
  std::vector<std::int32_t> fresh, freshTargets;
  resumed.trainBatch(7, fresh, freshTargets);
  EXPECT_EQ(later, fresh);
  EXPECT_EQ(laterTargets, freshTargets);
  ASSERT_EQ(fresh.size(), 4u * 16u);
}

TEST(SamplerTest, StepsSeedsAndRanksDiffer) {
  TokenCorpus corpus = countingCorpus(100000);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  std::vector<std::int32_t> a, b, targets;
  BatchSampler sampler(split, 4, 32, 1);
  sampler.trainBatch(0, a, targets);
  sampler.trainBatch(1, b, targets);
  EXPECT_NE(a, b);
  BatchSampler(split, 4, 32, 2).trainBatch(0, b, targets);
  EXPECT_NE(a, b);
  std::vector<std::int32_t> rank0, rank1;
  BatchSampler(split, 4, 32, 1, 0, 2).trainBatch(0, rank0, targets);
  BatchSampler(split, 4, 32, 1, 1, 2).trainBatch(0, rank1, targets);
  EXPECT_NE(rank0, rank1);
  // Rows of one batch are different windows too.
  EXPECT_NE(rowOf(a, 32, 0), rowOf(a, 32, 1));
}

TEST(SamplerTest, TargetsAreTheNextBytes) {
  TokenCorpus corpus = syntheticCorpus(30000, 5);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  BatchSampler sampler(split, 3, 64, 9);
  std::vector<std::int32_t> tokens, targets;
  for (std::int64_t step = 0; step < 5; ++step) {
    sampler.trainBatch(step, tokens, targets);
    for (std::int64_t row = 0; row < 3; ++row) {
      expectWindow(split.train, sampler.trainWindowStart(step, row), tokens,
                   targets, 64, row);
      for (std::int64_t t = 0; t + 1 < 64; ++t)
        EXPECT_EQ(tokens[row * 64 + t + 1], targets[row * 64 + t]);
    }
  }
}

TEST(SamplerTest, RanksReadTheRowsOfOneGlobalBatch) {
  TokenCorpus corpus = countingCorpus(10003);
  CorpusSplit split = splitCorpus(corpus, 0.05);
  const std::int64_t world = 4, seq = 8, rows = 2;
  BatchSampler single(split, rows * world, seq, 11);
  std::vector<std::int32_t> all, allTargets, part, partTargets;
  for (std::int64_t step = 0; step < 50; ++step) {
    single.trainBatch(step, all, allTargets);
    for (std::int64_t rank = 0; rank < world; ++rank) {
      BatchSampler sampler(split, rows, seq, 11, rank, world);
      sampler.trainBatch(step, part, partTargets);
      const std::int64_t offset = rank * rows * seq;
      ASSERT_TRUE(std::equal(part.begin(), part.end(), all.begin() + offset));
      ASSERT_TRUE(std::equal(partTargets.begin(), partTargets.end(),
                             allTargets.begin() + offset));
      for (std::int64_t row = 0; row < rows; ++row) {
        std::size_t start = sampler.trainWindowStart(step, row);
        ASSERT_EQ(start, single.trainWindowStart(step, rank * rows + row));
        ASSERT_LE(start + seq + 1, split.train.size);
      }
    }
  }
}

TEST(SamplerTest, EveryWindowCanBeDrawn) {
  // 20 training bytes, seq 4: windows of 5 bytes start at 0 .. 15.
  TokenCorpus corpus = countingCorpus(40);
  CorpusSplit split = splitCorpus(corpus, 0.5);
  BatchSampler sampler(split, 4, 4, 3);
  std::set<std::size_t> starts;
  for (std::int64_t step = 0; step < 200; ++step)
    for (std::int64_t row = 0; row < 4; ++row)
      starts.insert(sampler.trainWindowStart(step, row));
  EXPECT_EQ(starts.size(), 16u);
  EXPECT_EQ(*starts.begin(), 0u);
  EXPECT_EQ(*starts.rbegin(), 15u);
}

TEST(SamplerTest, ValidationWindowsAreSequentialAndWrap) {
  // 101 validation bytes, seq 10: windows at 0, 10, ..., 90 (each 11 bytes).
  TokenCorpus corpus = countingCorpus(1010);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  ASSERT_EQ(split.validation.size, 101u);
  BatchSampler sampler(split, 4, 10, 1);
  EXPECT_EQ(sampler.validationWindows(), 10);
  EXPECT_EQ(sampler.validationBatches(), 3);
  std::vector<std::size_t> starts;
  for (std::int64_t index = 0; index < sampler.validationBatches(); ++index)
    for (std::int64_t row = 0; row < 4; ++row)
      starts.push_back(sampler.validationWindowStart(index, row));
  EXPECT_EQ(starts, (std::vector<std::size_t>{0, 10, 20, 30, 40, 50, 60, 70, 80,
                                              90, 0, 10}));
  std::vector<std::int32_t> tokens, targets, again, againTargets;
  for (std::int64_t index : {0, 2, 5}) {
    sampler.validationBatch(index, tokens, targets);
    for (std::int64_t row = 0; row < 4; ++row)
      expectWindow(split.validation, sampler.validationWindowStart(index, row),
                   tokens, targets, 10, row);
    sampler.validationBatch(index, again, againTargets);
    EXPECT_EQ(tokens, again);
    EXPECT_EQ(targets, againTargets);
  }
}

TEST(SamplerTest, ValidationIsTheSameOnEveryRank) {
  TokenCorpus corpus = countingCorpus(4000);
  CorpusSplit split = splitCorpus(corpus, 0.25);
  std::vector<std::int32_t> rank0, rank1, targets0, targets1;
  BatchSampler(split, 2, 16, 5, 0, 2).validationBatch(3, rank0, targets0);
  BatchSampler(split, 2, 16, 5, 1, 2).validationBatch(3, rank1, targets1);
  EXPECT_EQ(rank0, rank1);
  EXPECT_EQ(targets0, targets1);
}

TEST(SamplerTest, ShortValidationTextGivesOneBatch) {
  // 9 validation bytes, seq 8: one window, repeated across the batch.
  TokenCorpus corpus = countingCorpus(90);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  BatchSampler sampler(split, 4, 8, 1);
  EXPECT_EQ(sampler.validationWindows(), 1);
  EXPECT_EQ(sampler.validationBatches(), 1);
  std::vector<std::int32_t> tokens, targets;
  sampler.validationBatch(0, tokens, targets);
  EXPECT_EQ(rowOf(tokens, 8, 0), rowOf(tokens, 8, 3));
}

TEST(SamplerTest, RejectsTooShortTextAndBadArguments) {
  TokenCorpus corpus = countingCorpus(100);
  CorpusSplit split = splitCorpus(corpus, 0.1); // 90 training, 10 validation.
  FA_EXPECT_ERROR(BatchSampler(split, 1, 10, 1),
                  "the validation data holds 10 tokens, fewer than seq + 1 = "
                  "11: lower --seq, or raise --val-fraction");
  EXPECT_NO_THROW(BatchSampler(split, 1, 9, 1));
  FA_EXPECT_ERROR(BatchSampler(split, 1, 90, 1),
                  "the training data holds 90 tokens, fewer than seq + 1 = 91: "
                  "lower --seq, or give more data");
  EXPECT_NO_THROW(BatchSampler(split, 1, 8, 1, 3, 10));
  FA_EXPECT_ERROR(BatchSampler(split, 0, 8, 1), "must be positive");
  FA_EXPECT_ERROR(BatchSampler(split, 1, 0, 1), "must be positive");
  FA_EXPECT_ERROR(BatchSampler(split, 1, 8, 1, 2, 2),
                  "rank 2 is not in a world of 2");
  FA_EXPECT_ERROR(BatchSampler(split, 1, 8, 1, -1, 2), "rank -1");
  FA_EXPECT_ERROR(BatchSampler(split, 1, 8, 1, 0, 0), "world of 0");
  BatchSampler sampler(split, 1, 8, 1);
  std::vector<std::int32_t> tokens, targets;
  FA_EXPECT_ERROR(sampler.trainBatch(-1, tokens, targets),
                  "step -1 is negative");
  FA_EXPECT_ERROR(sampler.validationBatch(-1, tokens, targets),
                  "index -1 is negative");
}

} // namespace

namespace {

TEST(TokenBytesTest, AreTheTokensInMemoryOrder) {
  const std::vector<std::int32_t> tokens = {0, 255, 65, 1 << 20};
  std::vector<std::uint8_t> bytes = fa::train::tokenBytes(tokens);
  ASSERT_EQ(bytes.size(), tokens.size() * 4);
  std::vector<std::int32_t> back(tokens.size());
  std::memcpy(back.data(), bytes.data(), bytes.size());
  EXPECT_EQ(back, tokens);
}

} // namespace
