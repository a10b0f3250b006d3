//===- PhiloxGpuTest.cpp - The compiler's Philox against the CPU's --------===//
//
// Runs fixtures/PhiloxFixture.mlir, compiled by fa-opt (its fa.philox and
// fa.apply_dropout lowered by convert-fa-to-nvgpu), and compares every
// 16-bit random value, keep bit and dropped tile it writes with the CPU
// reference of runtime/include/fa/runtime/Philox.h, bit for bit. Skipped
// without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Launch.h"
#include "fa/runtime/Module.h"
#include "fa/runtime/Philox.h"

#include <cstring>
#include <fstream>
#include <sstream>

using namespace fa;
using namespace fa::gputest;

namespace {

/// One launch of the fixture: the scores of `batch` x `heads` x `queries` x
/// `keys` under (seed, offset, p).
struct DropoutCase {
  std::uint64_t seed;
  std::uint32_t offset;
  float p;
  std::uint32_t batch, heads, queries, keys;
};

/// One launch of a fixture tile kernel: its variant (0 to 4, the origins'
/// known alignments (R, C) = (1, 1), (32, 1), (16, 16), (32, 32), (1, 32))
/// and the tile's origin in units: first row 64 x + R rowShift, first column
/// C colUnits.
struct TileLaunch {
  std::uint32_t variant, rowShift, colUnits;
};

constexpr std::uint32_t kVariantRowStep[] = {1, 32, 16, 32, 1};
constexpr std::uint32_t kVariantColStep[] = {1, 1, 16, 32, 32};

std::vector<std::uint32_t> toWords(const Bytes &bytes) {
  std::vector<std::uint32_t> words(bytes.size() / sizeof(std::uint32_t));
  std::memcpy(words.data(), bytes.data(), words.size() * sizeof(words[0]));
  return words;
}

class PhiloxGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    std::ifstream file(FA_PHILOX_FIXTURE_PTX);
    ASSERT_TRUE(file) << "cannot read " << FA_PHILOX_FIXTURE_PTX;
    std::stringstream text;
    text << file.rdbuf();
    ptx = text.str();
    module = std::make_unique<Module>(ptx.c_str(), "PhiloxFixture.ptx");
  }

  /// The kernel's bits and keep words (one per score), in score order.
  std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>
  run(const DropoutCase &c) {
    std::int64_t scores = std::int64_t{c.batch} * c.heads * c.queries * c.keys;
    DeviceBuffer bits("bits", scores * 4), keep("keep", scores * 4);
    // Poisoned, so that an element the kernel skips cannot pass by chance.
    bits.fill(0xA5, stream->get());
    keep.fill(0xA5, stream->get());
    // memref<?xi32> as MLIR passes it: allocated and aligned pointers,
    // offset, size, stride; then the scalars.
    std::uint64_t bitsPointer = bits.get(), keepPointer = keep.get();
    std::int64_t zero = 0, size = scores, one = 1;
    std::uint32_t seedLow = static_cast<std::uint32_t>(c.seed);
    std::uint32_t seedHigh = static_cast<std::uint32_t>(c.seed >> 32);
    std::uint32_t offset = c.offset, queries = c.queries, keys = c.keys;
    float p = c.p;
    void *args[] = {&bitsPointer, &bitsPointer, &zero,        &size,
                    &one,         &keepPointer, &keepPointer, &zero,
                    &size,        &one,         &seedLow,     &seedHigh,
                    &offset,      &p,           &queries,     &keys};
    constexpr unsigned kThreads = 128; // the fixture's known_block_size
    LaunchConfig config;
    config.grid = {
        static_cast<unsigned>(
            (std::int64_t{c.queries} * c.keys + kThreads - 1) / kThreads),
        c.batch * c.heads, 1};
    config.block = {kThreads, 1, 1};
    launchKernel(module->function("philox_dropout_bits"), config, stream->get(),
                 args, "philox_dropout_bits");
    stream->synchronize();
    return {toWords(bits.download()), toWords(keep.download())};
  }

  /// fa.apply_dropout's tile kernel `entry` (the fixture's variant
  /// `tile.variant`) on a [batch, heads, seq, 16] tile of ones.
  std::vector<float> runTile(const std::string &entry, const DropoutCase &c,
                             const TileLaunch &tile) {
    constexpr std::int64_t kTileRows = 64, kTileCols = 16;
    std::int64_t rowTiles = (c.queries + kTileRows - 1) / kTileRows;
    std::int64_t elements =
        std::int64_t{c.batch} * c.heads * c.queries * kTileCols;
    DeviceBuffer out("out", elements * sizeof(float));
    out.fill(0xA5, stream->get());
    // memref<?x?x?x16xf32>: pointers, offset, sizes, row-major strides.
    std::uint64_t pointer = out.get();
    std::int64_t zero = 0;
    std::int64_t sizes[] = {c.batch, c.heads, c.queries, kTileCols};
    std::int64_t strides[] = {c.heads * c.queries * kTileCols,
                              c.queries * kTileCols, kTileCols, 1};
    std::uint32_t seedLow = static_cast<std::uint32_t>(c.seed);
    std::uint32_t seedHigh = static_cast<std::uint32_t>(c.seed >> 32);
    std::uint32_t offset = c.offset, heads = c.heads;
    std::uint32_t rowShift = tile.rowShift, colUnits = tile.colUnits,
                  variant = tile.variant;
    float p = c.p;
    void *args[] = {&pointer,    &pointer,    &zero,       &sizes[0],
                    &sizes[1],   &sizes[2],   &sizes[3],   &strides[0],
                    &strides[1], &strides[2], &strides[3], &seedLow,
                    &seedHigh,   &offset,     &p,          &rowShift,
                    &colUnits,   &heads,      &variant};
    LaunchConfig config;
    config.grid = {static_cast<unsigned>(rowTiles), c.batch * c.heads, 1};
    config.block = {64, 1, 1}; // the fixture's known_block_size
    launchKernel(module->function(entry), config, stream->get(), args, entry);
    stream->synchronize();
    Bytes bytes = out.download();
    std::vector<float> values(elements);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }

  std::string ptx;
  std::unique_ptr<Module> module;
};

// Seeds with both halves set, offsets 0 to 2^32 - 1, key counts that are not
// multiples of 8 or 32 (a partial last block), query counts that are not
// multiples of 16, one query, and dropout probabilities 0, 0.1, 0.5 and the
// largest f32 below 1.
TEST_F(PhiloxGpuTest, KernelBitsAndKeepMaskMatchTheCpuReference) {
  const DropoutCase cases[] = {
      {0, 0, 0.0f, 1, 1, 1, 1},
      {0x0123456789abcdefull, 7, 0.1f, 2, 3, 17, 13},
      {0xffffffffffffffffull, 0xffffffffu, 0.5f, 1, 2, 5, 1001},
      {42, 123456, 0.99999994f, 3, 1, 64, 70},
  };
  for (const DropoutCase &c : cases) {
    auto [bits, keep] = run(c);
    std::size_t mismatches = 0, index = 0;
    for (std::uint32_t batch = 0; batch < c.batch; ++batch)
      for (std::uint32_t head = 0; head < c.heads; ++head)
        for (std::uint32_t query = 0; query < c.queries; ++query)
          for (std::uint32_t key = 0; key < c.keys; ++key, ++index) {
            DropoutPosition position{batch, head, c.heads, query, key};
            std::uint32_t expected = dropoutBits(c.seed, c.offset, position);
            bool expectedKeep = dropoutKeep(c.seed, c.offset, position, c.p);
            if (bits[index] == expected && keep[index] == expectedKeep)
              continue;
            if (++mismatches <= 5)
              ADD_FAILURE()
                  << "seed " << c.seed << " offset " << c.offset << " p " << c.p
                  << " at (b " << batch << ", h " << head << ", i " << query
                  << ", j " << key << "): GPU bits " << std::hex << bits[index]
                  << " keep " << keep[index] << ", CPU " << expected << " keep "
                  << expectedKeep;
          }
    EXPECT_EQ(mismatches, 0u) << "of " << index << " scores";
  }
}

// fa.apply_dropout on 64 x 16 tiles (two warps, two row blocks each):
// every kept element is exactly 1 / (1 - p) (the kernel multiplies ones by
// its f32 scale), every dropped one 0, as the CPU mask says. The variants
// cover each way the lowering shares Philox blocks: origins it knows
// nothing of (one block per element, or per row pair), multiples of 16 (a
// block per 4 elements, the word chosen at run time) and of 32 (per 8,
// constant choices), at origins on and off those multiples (columns 6, 13,
// rows 5 off a group), with sequence lengths that end inside a row tile
// (rows past it are not stored).
TEST_F(PhiloxGpuTest, ApplyDropoutTilesMatchTheCpuMask) {
  const DropoutCase cases[] = {
      {0x0123456789abcdefull, 7, 0.1f, 2, 3, 100, 16},
      {0xfedcba9876543210ull, 0xffffffffu, 0.5f, 1, 2, 16, 16},
      {3, 1, 0.0f, 1, 1, 5, 16},
      {99, 5, 0.3f, 1, 1, 192, 16},
  };
  const TileLaunch launches[] = {
      {0, 0, 0},  {0, 5, 13}, {0, 0, 6}, {0, 3, 32}, {1, 0, 0}, {1, 0, 6},
      {1, 1, 13}, {2, 0, 0},  {2, 1, 1}, {2, 3, 2},  {2, 0, 3}, {3, 0, 0},
      {3, 0, 1},  {3, 1, 2},  {4, 5, 1}, {4, 0, 3},
  };
  for (const char *entry : {"dropout_tile", "dropout_tile_transposed"}) {
    bool transposed = std::string(entry) == "dropout_tile_transposed";
    for (const DropoutCase &c : cases)
      for (const TileLaunch &tile : launches) {
        std::vector<float> values = runTile(entry, c, tile);
        std::uint32_t rowOrigin = kVariantRowStep[tile.variant] * tile.rowShift;
        std::uint32_t colOrigin = kVariantColStep[tile.variant] * tile.colUnits;
        float scale = dropoutScale(c.p);
        std::size_t mismatches = 0, index = 0, kept = 0;
        for (std::uint32_t batch = 0; batch < c.batch; ++batch)
          for (std::uint32_t head = 0; head < c.heads; ++head)
            for (std::uint32_t row = 0; row < c.queries; ++row)
              for (std::uint32_t column = 0; column < 16; ++column, ++index) {
                std::uint32_t query =
                    transposed ? colOrigin + column : rowOrigin + row;
                std::uint32_t key =
                    transposed ? rowOrigin + row : colOrigin + column;
                bool keep = dropoutKeep(
                    c.seed, c.offset, {batch, head, c.heads, query, key}, c.p);
                kept += keep;
                float expected = keep ? scale : 0.0f;
                if (values[index] == expected)
                  continue;
                if (++mismatches <= 5)
                  ADD_FAILURE()
                      << entry << " variant " << tile.variant << " seed "
                      << c.seed << " at (b " << batch << ", h " << head
                      << ", query " << query << ", key " << key << "): GPU "
                      << values[index] << ", CPU " << expected;
              }
        EXPECT_EQ(mismatches, 0u)
            << entry << " variant " << tile.variant << " row origin "
            << rowOrigin << " column origin " << colOrigin;
        // The test can tell dropped from kept: both occur where p > 0.
        if (c.p > 0)
          EXPECT_LT(kept, index) << entry;
        EXPECT_GT(kept, 0u) << entry;
      }
  }
}

} // namespace
