//===- TmaRingGpuTest.cpp - A copy through the compiler's TMA ring --------===//
//
// Runs fixtures/TmaRingFixture.mlir, compiled by fa-opt (fa.ring_* lowered
// to nvgpu mbarriers and TMA loads, the tensor map a 128-byte
// __grid_constant__ parameter): a [rows, 64] bf16 tensor goes through a
// 3-stage ring of 64 x 64 slots (filled by a thread that also copies, or by
// a producer warp of its own), the map encoded by encodeTiledTensorMap and
// passed by KernelArgs as a "tensormap" parameter, into an output of whole
// tiles that was poisoned first. Rows below `rows` must come back bit for bit,
// the tail of the last tile as zeros (TMA's out-of-bounds fill). And a
// rank-4 [batch, heads, seq, 128] bf16 tensor through a ring of swizzled
// 64 x 128 panel slots (tma_ring_panels): each slot's raw shared memory
// must hold the two 128-byte-swizzled panels bit for bit, the rows past
// `seq` zero. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/Launch.h"
#include "fa/runtime/Module.h"
#include "fa/runtime/TensorMap.h"

#include <cstring>
#include <fstream>
#include <sstream>

using namespace fa;
using namespace fa::gputest;

namespace {

constexpr std::int64_t kColumns = 64;  // The fixture's tensor width.
constexpr std::int64_t kTileRows = 64; // Its box: 64 x 64.
// The fixture's kernels and their known_block_size: thread 0 producing
// between its copies, or a fifth warp producing only.
struct RingKernel {
  const char *name;
  unsigned threads;
};
constexpr RingKernel kSharedProducer{"tma_ring_copy", 128};
constexpr RingKernel kProducerWarp{"tma_ring_copy_producer_warp", 160};
constexpr std::uint8_t kPoison = 0xA5;

/// A fixture kernel's parameters, as its manifest entry would list them.
KernelSpec ringCopySpec(const RingKernel &kernel) {
  KernelSpec spec;
  spec.name = kernel.name;
  spec.params = {{"map", ParamKind::TensorMap},
                 {"out", ParamKind::Memref, DType::BF16, 2},
                 {"rows", ParamKind::I32}};
  return spec;
}

/// The panel kernel: 64-row tiles of a head_dim-128 bf16 tensor, stored as
/// two [64, 64] panels of 128-byte rows, 128-byte swizzled.
constexpr RingKernel kPanels{"tma_ring_panels", 160};
constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kPanelColumns = 64; // 128 bytes of bf16: the span.
constexpr std::int64_t kTileElements = kTileRows * kHeadDim;
/// 16-byte chunks of a 128-byte swizzled row, and the rows of the pattern.
constexpr std::int64_t kChunkElements = 8;
constexpr std::int64_t kSwizzleRows = 8;

/// Distinct 16-bit patterns (NaN payloads included: the copy moves bits).
std::vector<std::uint16_t> inputBits(std::int64_t elements) {
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(elements));
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = static_cast<std::uint16_t>((i * 2654435761u) >> 13);
  return bits;
}

class TmaRingGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    std::ifstream file(FA_TMA_RING_FIXTURE_PTX);
    ASSERT_TRUE(file) << "cannot read " << FA_TMA_RING_FIXTURE_PTX;
    std::stringstream text;
    text << file.rdbuf();
    ptx = text.str();
    module = std::make_unique<Module>(ptx.c_str(), "TmaRingFixture.ptx");
  }

  /// Runs fixture kernel `name` on `grid` blocks of `threads`, then returns
  /// `out`'s 16-bit elements.
  std::vector<std::uint16_t> launchAndDownload(const std::string &name,
                                               Dim3 grid, unsigned threads,
                                               KernelArgs &args,
                                               const DeviceBuffer &out) {
    LaunchConfig config;
    config.grid = grid;
    config.block = {threads, 1, 1};
    launchKernel(module->function(name), config, stream->get(), args.pointers(),
                 name);
    stream->synchronize();
    Bytes outBytes = out.download();
    std::vector<std::uint16_t> output(outBytes.size() / sizeof(std::uint16_t));
    std::memcpy(output.data(), outBytes.data(), outBytes.size());
    return output;
  }

  /// Copies a [rows, 64] tensor through `kernel`'s ring on `blocks` blocks
  /// and checks the whole-tile output bit for bit.
  void copyAndCheck(const RingKernel &kernel, std::int64_t rows,
                    unsigned blocks) {
    SCOPED_TRACE(std::string(kernel.name) + ", rows " + std::to_string(rows) +
                 ", " + std::to_string(blocks) + " blocks");
    std::vector<std::uint16_t> input = inputBits(rows * kColumns);
    Bytes inputBytes(input.size() * sizeof(std::uint16_t));
    std::memcpy(inputBytes.data(), input.data(), inputBytes.size());
    DeviceBuffer source("source", inputBytes.size());
    source.upload(inputBytes);
    std::int64_t outRows = (rows + kTileRows - 1) / kTileRows * kTileRows;
    DeviceBuffer out("out", static_cast<std::size_t>(outRows * kColumns) *
                                sizeof(std::uint16_t));
    out.fill(kPoison, stream->get());

    TiledTensorMapSpec map;
    map.data = source.get();
    map.dtype = DType::BF16;
    map.shape = {rows, kColumns};
    map.box = {kTileRows, kColumns};
    KernelSpec spec = ringCopySpec(kernel);
    KernelArgs args(
        spec, {{"map", TensorMapArg{encodeTiledTensorMap(map)}},
               {"out", MemrefArg{out.get(), DType::BF16, {outRows, kColumns}}},
               {"rows", static_cast<std::int32_t>(rows)}});
    std::vector<std::uint16_t> output =
        launchAndDownload(spec.name, {blocks, 1, 1}, kernel.threads, args, out);
    std::int64_t mismatches = 0;
    for (std::size_t i = 0; i < output.size(); ++i) {
      std::uint16_t expected = i < input.size() ? input[i] : 0;
      if (output[i] != expected && mismatches++ < 5)
        ADD_FAILURE() << "element " << i << " (row " << i / kColumns
                      << ", column " << i % kColumns << "): got 0x" << std::hex
                      << output[i] << ", expected 0x" << expected << std::dec;
    }
    EXPECT_EQ(mismatches, 0) << "of " << output.size() << " elements";
  }

  /// Loads a [batch, heads, seq, 128] bf16 tensor through the panel ring
  /// and checks every slot's raw bytes against the layout TMA's 128-byte
  /// swizzle gives a 1024-byte-aligned panel: element (r, c) of tile t,
  /// c = 64 p + 8 j + e, lies at element 4096 p + 64 r + 8 (j XOR (r mod 8))
  /// + e of the slot, and is zero where t * 64 + r >= seq.
  void panelsAndCheck(std::int64_t batch, std::int64_t heads,
                      std::int64_t seq) {
    SCOPED_TRACE("panels: batch " + std::to_string(batch) + ", heads " +
                 std::to_string(heads) + ", seq " + std::to_string(seq));
    std::vector<std::uint16_t> input =
        inputBits(batch * heads * seq * kHeadDim);
    Bytes inputBytes(input.size() * sizeof(std::uint16_t));
    std::memcpy(inputBytes.data(), input.data(), inputBytes.size());
    DeviceBuffer source("panel source", inputBytes.size());
    source.upload(inputBytes);
    std::int64_t tiles = (seq + kTileRows - 1) / kTileRows;
    std::int64_t outElements = batch * heads * tiles * kTileElements;
    DeviceBuffer out("panel out", static_cast<std::size_t>(outElements) *
                                      sizeof(std::uint16_t));
    out.fill(kPoison, stream->get());

    TiledTensorMapSpec map;
    map.data = source.get();
    map.dtype = DType::BF16;
    map.shape = {batch, heads, seq, kHeadDim};
    map.box = {1, 1, kTileRows, kPanelColumns};
    map.swizzle = TensorMapSwizzle::Bytes128;
    KernelSpec spec;
    spec.name = kPanels.name;
    spec.params = {{"map", ParamKind::TensorMap},
                   {"out", ParamKind::Memref, DType::BF16, 1},
                   {"seq", ParamKind::I32}};
    KernelArgs args(spec,
                    {{"map", TensorMapArg{encodeTiledTensorMap(map)}},
                     {"out", MemrefArg{out.get(), DType::BF16, {outElements}}},
                     {"seq", static_cast<std::int32_t>(seq)}});
    std::vector<std::uint16_t> output = launchAndDownload(
        spec.name,
        {static_cast<unsigned>(heads), static_cast<unsigned>(batch), 1},
        kPanels.threads, args, out);
    std::int64_t mismatches = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t t = 0; t < tiles; ++t)
          for (std::int64_t r = 0; r < kTileRows; ++r)
            for (std::int64_t c = 0; c < kHeadDim; ++c) {
              std::int64_t row = t * kTileRows + r;
              std::uint16_t expected =
                  row < seq ? input[static_cast<std::size_t>(
                                  ((b * heads + h) * seq + row) * kHeadDim + c)]
                            : 0;
              std::int64_t panel = c / kPanelColumns;
              std::int64_t chunk = c % kPanelColumns / kChunkElements;
              std::int64_t inSlot =
                  panel * kTileRows * kPanelColumns + r * kPanelColumns +
                  (chunk ^ (r % kSwizzleRows)) * kChunkElements +
                  c % kChunkElements;
              std::int64_t at =
                  ((b * heads + h) * tiles + t) * kTileElements + inSlot;
              std::uint16_t got = output[static_cast<std::size_t>(at)];
              if (got != expected && mismatches++ < 5)
                ADD_FAILURE() << "batch " << b << ", head " << h << ", row "
                              << row << ", column " << c << " (slot element "
                              << inSlot << "): got 0x" << std::hex << got
                              << ", expected 0x" << expected << std::dec;
            }
    EXPECT_EQ(mismatches, 0) << "of " << output.size() << " elements";
  }

  std::string ptx;
  std::unique_ptr<Module> module;
};

TEST_F(TmaRingGpuTest, CopiesATensorWithATailBitForBitAndZeroFillsTheTail) {
  for (const RingKernel &kernel : {kSharedProducer, kProducerWarp}) {
    // 16 tiles, the last 40 rows long: 5 rounds of the 3 slots on one block.
    copyAndCheck(kernel, 1000, 1);
    // The same tiles over 3 blocks (6, 5 and 5 each): one ring per block.
    copyAndCheck(kernel, 1000, 3);
  }
}

TEST_F(TmaRingGpuTest, CopiesFewerTilesThanStagesAndBlocksWithoutTiles) {
  for (const RingKernel &kernel : {kSharedProducer, kProducerWarp}) {
    // One tile of one row, 63 rows of zero fill; blocks 1 to 3 have no tile.
    copyAndCheck(kernel, 1, 4);
    // Exactly two whole tiles.
    copyAndCheck(kernel, 128, 1);
  }
}

TEST_F(TmaRingGpuTest, LoadsARankFourTensorAsSwizzledPanels) {
  // 2 x 3 heads of 200 rows: 4 tiles each (2 rounds of the 2 slots), the
  // last 8 rows long, so 56 rows of zero fill.
  panelsAndCheck(2, 3, 200);
  // One whole tile per head.
  panelsAndCheck(1, 2, 64);
}

} // namespace
