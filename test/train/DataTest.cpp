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

/// Bytes i % 251: every window of fewer than 251 bytes is unique, so a
/// window's tokens tell where it came from.
ByteCorpus countingCorpus(std::size_t size) {
  ByteCorpus corpus{"counting", std::vector<std::uint8_t>(size)};
  for (std::size_t i = 0; i < size; ++i)
    corpus.bytes[i] = static_cast<std::uint8_t>(i % 251);
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
  ByteCorpus corpus = loadCorpus(path);
  EXPECT_EQ(corpus.name, path);
  EXPECT_EQ(std::string(corpus.bytes.begin(), corpus.bytes.end()), bytes);
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

TEST(CorpusTest, SyntheticTextIsDeterministicPerSeed) {
  ByteCorpus a = syntheticCorpus(20000, 1);
  EXPECT_EQ(a.bytes.size(), 20000u);
  EXPECT_EQ(a.bytes, syntheticCorpus(20000, 1).bytes);
  EXPECT_NE(a.bytes, syntheticCorpus(20000, 2).bytes);
  std::vector<std::uint8_t> shorter = syntheticCorpus(777, 1).bytes;
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), a.bytes.begin()));
  FA_EXPECT_ERROR(syntheticCorpus(0, 1), "size must be positive");
}

TEST(CorpusTest, SyntheticTextIsSentencesOfAFewCharacters) {
  ByteCorpus corpus = syntheticCorpus(200000, 3);
  std::string text(corpus.bytes.begin(), corpus.bytes.end());
  EXPECT_EQ(text.substr(0, 1).find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 0u);
  for (const char *expected : {". ", ".\n", "! ", " cats ", " children "})
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
  // Subject-verb agreement: a plural subject never takes "sees".
  EXPECT_EQ(text.find("cats sees"), std::string::npos);
  EXPECT_NE(text.find("cat sees"), std::string::npos);

  std::vector<double> counts(256, 0.0);
  for (std::uint8_t byte : corpus.bytes)
    counts[byte] += 1.0;
  double entropy = 0.0;
  int distinct = 0;
  for (double count : counts)
    if (count > 0) {
      ++distinct;
      double p = count / corpus.bytes.size();
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
  ByteCorpus corpus = countingCorpus(1000);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  EXPECT_EQ(split.train.data, corpus.bytes.data());
  EXPECT_EQ(split.train.size, 900u);
  EXPECT_EQ(split.validation.data, corpus.bytes.data() + 900);
  EXPECT_EQ(split.validation.size, 100u);
  for (double bad : {0.0, 1.0, -0.5, std::nan("")})
    FA_EXPECT_ERROR(splitCorpus(corpus, bad),
                    "validation fraction must be in (0, 1)");
}

TEST(SamplerTest, SameStepSameBatchWhateverCameBefore) {
  ByteCorpus corpus = countingCorpus(5000);
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
  ByteCorpus corpus = countingCorpus(100000);
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
  ByteCorpus corpus = syntheticCorpus(30000, 5);
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
  ByteCorpus corpus = countingCorpus(10003);
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
  ByteCorpus corpus = countingCorpus(40);
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
  ByteCorpus corpus = countingCorpus(1010);
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
  ByteCorpus corpus = countingCorpus(4000);
  CorpusSplit split = splitCorpus(corpus, 0.25);
  std::vector<std::int32_t> rank0, rank1, targets0, targets1;
  BatchSampler(split, 2, 16, 5, 0, 2).validationBatch(3, rank0, targets0);
  BatchSampler(split, 2, 16, 5, 1, 2).validationBatch(3, rank1, targets1);
  EXPECT_EQ(rank0, rank1);
  EXPECT_EQ(targets0, targets1);
}

TEST(SamplerTest, ShortValidationTextGivesOneBatch) {
  // 9 validation bytes, seq 8: one window, repeated across the batch.
  ByteCorpus corpus = countingCorpus(90);
  CorpusSplit split = splitCorpus(corpus, 0.1);
  BatchSampler sampler(split, 4, 8, 1);
  EXPECT_EQ(sampler.validationWindows(), 1);
  EXPECT_EQ(sampler.validationBatches(), 1);
  std::vector<std::int32_t> tokens, targets;
  sampler.validationBatch(0, tokens, targets);
  EXPECT_EQ(rowOf(tokens, 8, 0), rowOf(tokens, 8, 3));
}

TEST(SamplerTest, RejectsTooShortTextAndBadArguments) {
  ByteCorpus corpus = countingCorpus(100);
  CorpusSplit split = splitCorpus(corpus, 0.1); // 90 training, 10 validation.
  FA_EXPECT_ERROR(BatchSampler(split, 1, 10, 1),
                  "validation text holds 10 bytes");
  EXPECT_NO_THROW(BatchSampler(split, 1, 9, 1));
  FA_EXPECT_ERROR(BatchSampler(split, 1, 90, 1),
                  "holds 90 bytes, fewer than seq + 1");
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
