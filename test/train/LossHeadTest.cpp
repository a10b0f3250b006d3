//===- LossHeadTest.cpp - The chunk rule and the shape checks, no GPU -----===//
//
// LossHead's arithmetic without a device: the row alignment, the workspace
// of a chunk, the chunk chosen for a budget, and the errors of a bad shape
// or chunk. The chunked products and losses: LossHeadGpuTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "fa/train/LossHead.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace fa;
using namespace fa::train;

namespace {

/// GPT-2's vocabulary and width, 16 x 1024 tokens.
constexpr std::int64_t kGpt2Rows = 16384, kGpt2Vocab = 50257,
                       kGpt2Channels = 768;

TEST(LossHeadTest, RowAlignmentKeepsChunkStartsSixteenByteAligned) {
  // Rows of a multiple of 16 bytes: any row may start a chunk.
  EXPECT_EQ(LossHead::rowAlignment(128, DType::BF16), 1);
  EXPECT_EQ(LossHead::rowAlignment(768, DType::BF16), 1);
  EXPECT_EQ(LossHead::rowAlignment(4, DType::F32), 1);
  // 200-byte rows: every second row; 14-byte rows: every eighth; 28: fourth.
  EXPECT_EQ(LossHead::rowAlignment(100, DType::BF16), 2);
  EXPECT_EQ(LossHead::rowAlignment(7, DType::BF16), 8);
  EXPECT_EQ(LossHead::rowAlignment(7, DType::F32), 4);
}

TEST(LossHeadTest, WorkspaceIsF32LogitsAndDlogitsOfTheChunk) {
  EXPECT_EQ(LossHead::workspaceBytes(kGpt2Vocab, DType::BF16, 890),
            std::size_t{890} * kGpt2Vocab * (4 + 2));
  EXPECT_EQ(LossHead::workspaceBytes(301, DType::F32, 7),
            std::size_t{7} * 301 * (4 + 4));
}

TEST(LossHeadTest, WholeBatchWhenItFitsTheBudget) {
  // The byte model's head: 4096 rows x 256 of f32 + bf16, 6 MiB.
  EXPECT_EQ(LossHead::chooseChunkRows(4096, 256, 384, DType::BF16), 4096);
  // Exactly the batch's workspace fits; one byte less does not.
  const std::size_t whole = LossHead::workspaceBytes(301, DType::BF16, 2000);
  EXPECT_EQ(LossHead::chooseChunkRows(2000, 301, 128, DType::BF16, whole),
            2000);
  EXPECT_EQ(LossHead::chooseChunkRows(2000, 301, 128, DType::BF16, whole - 1),
            1999);
}

TEST(LossHeadTest, Gpt2VocabularyTakesTheMostRowsUnderTheDefaultBudget) {
  // 256 MiB / (50257 x 6 bytes) = 890.2 rows in bf16; / (50257 x 8) = 667.7
  // in f32.
  const std::int64_t bf16 = LossHead::chooseChunkRows(
      kGpt2Rows, kGpt2Vocab, kGpt2Channels, DType::BF16);
  EXPECT_EQ(bf16, 890);
  EXPECT_LE(LossHead::workspaceBytes(kGpt2Vocab, DType::BF16, bf16),
            LossHead::kDefaultChunkBytes);
  EXPECT_GT(LossHead::workspaceBytes(kGpt2Vocab, DType::BF16, bf16 + 1),
            LossHead::kDefaultChunkBytes);
  EXPECT_EQ(LossHead::chooseChunkRows(kGpt2Rows, kGpt2Vocab, kGpt2Channels,
                                      DType::F32),
            667);
}

TEST(LossHeadTest, ChunkRoundsDownToTheRowAlignment) {
  // 7 bf16 channels: chunks of multiples of 8 rows. 20 rows' worth of
  // budget gives 16.
  const std::size_t twenty = LossHead::workspaceBytes(100, DType::BF16, 20);
  EXPECT_EQ(LossHead::chooseChunkRows(1000, 100, 7, DType::BF16, twenty), 16);
  // 100 bf16 channels: multiples of 2.
  EXPECT_EQ(LossHead::chooseChunkRows(1000, 100, 100, DType::BF16, twenty), 20);
  const std::size_t nineteen = LossHead::workspaceBytes(100, DType::BF16, 19);
  EXPECT_EQ(LossHead::chooseChunkRows(1000, 100, 100, DType::BF16, nineteen),
            18);
}

TEST(LossHeadTest, AtLeastOneAlignedChunkWhateverTheBudget) {
  EXPECT_EQ(LossHead::chooseChunkRows(1000, 100, 128, DType::BF16, 1), 1);
  EXPECT_EQ(LossHead::chooseChunkRows(1000, 100, 7, DType::BF16, 1), 8);
  // Fewer rows than the alignment: the whole batch, which needs none.
  EXPECT_EQ(LossHead::chooseChunkRows(5, 100, 7, DType::BF16, 1), 5);
}

TEST(LossHeadTest, ChosenChunksPassTheShapeCheck) {
  for (std::int64_t rows : {1, 5, 7, 2000, 16384})
    for (std::int64_t channels : {7, 100, 128, 768})
      for (DType dtype : {DType::BF16, DType::F32})
        for (std::size_t budget :
             {std::size_t{1}, std::size_t{1} << 16, std::size_t{1} << 20,
              LossHead::kDefaultChunkBytes}) {
          const std::int64_t chunk =
              LossHead::chooseChunkRows(rows, 301, channels, dtype, budget);
          EXPECT_NO_THROW(
              LossHead::checkShape(rows, 301, channels, dtype, chunk))
              << rows << " rows, " << channels << " channels, chunk " << chunk;
        }
}

TEST(LossHeadTest, ChooseChunkRowsRefusesBadArguments) {
  FA_EXPECT_ERROR(LossHead::chooseChunkRows(0, 301, 128, DType::BF16),
                  "choosing the LM head loss's chunk (rows 0, vocab 301, "
                  "channels 128, bf16, budget 268435456 bytes): rows, vocab "
                  "and channels must be at least 1");
  FA_EXPECT_ERROR(LossHead::chooseChunkRows(10, 0, 128, DType::BF16),
                  "rows, vocab and channels must be at least 1");
  FA_EXPECT_ERROR(LossHead::chooseChunkRows(10, 301, -1, DType::BF16),
                  "rows, vocab and channels must be at least 1");
  FA_EXPECT_ERROR(LossHead::chooseChunkRows(10, 301, 128, DType::F16),
                  "activations must be bf16 or f32, not f16");
  FA_EXPECT_ERROR(LossHead::chooseChunkRows(10, 301, 128, DType::BF16, 0),
                  "budget 0 bytes): the budget must be at least 1 byte");
}

TEST(LossHeadTest, CheckShapeNamesTheShapeOfABadChunk) {
  FA_EXPECT_ERROR(LossHead::checkShape(2000, 301, 128, DType::BF16, 0),
                  "LM head loss (rows 2000, vocab 301, channels 128, bf16, "
                  "chunks of 0 rows): the chunk must hold 1 to 2000 rows");
  FA_EXPECT_ERROR(LossHead::checkShape(2000, 301, 128, DType::BF16, 2001),
                  "chunks of 2001 rows): the chunk must hold 1 to 2000 rows");
  FA_EXPECT_ERROR(LossHead::checkShape(100, 301, 7, DType::BF16, 12),
                  "LM head loss (rows 100, vocab 301, channels 7, bf16, chunks "
                  "of 12 rows): a chunk of fewer than all rows must be a "
                  "multiple of 8 rows, so that every chunk's 7-channel bf16 "
                  "rows start 16-byte aligned");
  FA_EXPECT_ERROR(LossHead::checkShape(0, 301, 128, DType::F32, 1),
                  "rows, vocab and channels must be at least 1");
  FA_EXPECT_ERROR(LossHead::checkShape(10, 301, 128, DType::F16, 10),
                  "activations must be bf16 or f32, not f16");
  // All rows in one chunk need no alignment; an aligned chunk passes.
  EXPECT_NO_THROW(LossHead::checkShape(100, 301, 7, DType::BF16, 100));
  EXPECT_NO_THROW(LossHead::checkShape(100, 301, 7, DType::BF16, 16));
  EXPECT_NO_THROW(LossHead::checkShape(2000, 4096, 128, DType::F32, 7));
}

} // namespace
