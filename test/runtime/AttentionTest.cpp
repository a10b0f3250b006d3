//===- AttentionTest.cpp - Attention shapes, grids and bindings -----------===//

#include "fa/runtime/Attention.h"
#include "fa/runtime/Error.h"

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

using namespace fa;
using fa::errortest::errorOf;

namespace {

KernelSpec specWithGrid(std::array<GridExtent, 3> grid, std::int64_t blockM) {
  KernelSpec spec;
  spec.name = "k";
  spec.blockM = blockM;
  spec.grid = grid;
  return spec;
}

TEST(AttentionShapeTest, ShapesAndGroupedHeads) {
  AttentionShape shape{2, 8, 2, 100, 300, 64};
  EXPECT_EQ(shape.query(), (Shape{2, 8, 100, 64}));
  EXPECT_EQ(shape.keyValue(), (Shape{2, 2, 300, 64}));
  EXPECT_EQ(shape.logSumExp(), (Shape{2, 8, 100}));
  EXPECT_EQ(shape.kvHeadOf(0), 0);
  EXPECT_EQ(shape.kvHeadOf(3), 0);
  EXPECT_EQ(shape.kvHeadOf(4), 1);
  EXPECT_EQ(shape.describe(),
            "batch=2 heads=8 kv_heads=2 seq_q=100 seq_kv=300 head_dim=64");
}

TEST(AttentionShapeTest, FlopsHalveWhenCausal) {
  AttentionShape shape{2, 16, 16, 4096, 4096, 128};
  double full = 4.0 * 2 * 16 * 4096.0 * 4096.0 * 128;
  EXPECT_DOUBLE_EQ(shape.flops(false), full);
  EXPECT_DOUBLE_EQ(shape.flops(true), full / 2);
}

TEST(AttentionShapeTest, ForwardMemoryIsOneScoreMatrixAgainstLse) {
  // GQA: k and v have 2 heads, q and out 8; N = 100 queries, M = 300 keys.
  AttentionShape shape{2, 8, 2, 100, 300, 64};
  AttentionMemory memory = attentionMemory(shape, DType::BF16, false);
  EXPECT_EQ(memory.matrices, 1);
  EXPECT_EQ(memory.matrixElements, 2 * 8 * 100 * 300);
  EXPECT_EQ(memory.matricesBytesF32, 2 * 8 * 100 * 300 * 4);
  EXPECT_EQ(memory.matricesBytesElement, 2 * 8 * 100 * 300 * 2);
  EXPECT_EQ(memory.keptBytes, 2 * 8 * 100 * 4);
  EXPECT_EQ(memory.tensorBytes, (2 * (2 * 8 * 100 * 64) +  // q, out
                                 2 * (2 * 2 * 300 * 64)) * // k, v
                                    2);
  EXPECT_DOUBLE_EQ(memory.savedVsTensors(),
                   double(2 * 8 * 100 * 300 * 4 - 2 * 8 * 100 * 4) /
                       memory.tensorBytes);
}

TEST(AttentionShapeTest, BackwardMemoryDoublesEveryCount) {
  AttentionShape shape{1, 4, 4, 256, 256, 128};
  AttentionMemory forward = attentionMemory(shape, DType::F32, false);
  AttentionMemory backward = attentionMemory(shape, DType::F32, true);
  EXPECT_EQ(backward.matrices, 2); // P and dP (dS in its place).
  EXPECT_EQ(backward.matrixElements, forward.matrixElements);
  EXPECT_EQ(backward.matricesBytesF32, 2 * forward.matricesBytesF32);
  // In f32 the element-type matrices are the f32 ones.
  EXPECT_EQ(backward.matricesBytesElement, backward.matricesBytesF32);
  EXPECT_EQ(backward.keptBytes, 2 * forward.keptBytes); // lse and delta.
  EXPECT_EQ(backward.tensorBytes, 2 * forward.tensorBytes);
  EXPECT_DOUBLE_EQ(backward.savedVsTensors(), forward.savedVsTensors());
}

TEST(AttentionShapeTest, LongSequencesDoNotOverflow) {
  // 128K tokens, 64 heads: 2^40 scores per matrix, 8 TiB in f32 for both.
  AttentionShape shape{1, 64, 8, 131072, 131072, 128};
  AttentionMemory memory = attentionMemory(shape, DType::BF16, true);
  EXPECT_EQ(memory.matricesBytesF32, std::int64_t(1) << 43);
}

TEST(AttentionShapeTest, Validation) {
  EXPECT_NO_THROW((AttentionShape{1, 8, 2, 1, 1, 64}.validate()));
  EXPECT_THROW((AttentionShape{1, 8, 3, 1, 1, 64}.validate()), Error);
  EXPECT_THROW((AttentionShape{0, 8, 8, 1, 1, 64}.validate()), Error);
  EXPECT_THROW((AttentionShape{1, 8, 8, 1, 0, 64}.validate()), Error);
}

TEST(AttentionGridTest, ResolvesSymbols) {
  KernelSpec spec = specWithGrid(
      {GridExtent{"query_tiles"}, GridExtent{"batch_heads"}, GridExtent{"one"}},
      64);
  AttentionShape shape{3, 5, 5, 129, 7, 64};
  Dim3 grid = attentionGrid(spec, shape);
  EXPECT_EQ(grid.x, 3u); // ceil(129 / 64)
  EXPECT_EQ(grid.y, 15u);
  EXPECT_EQ(grid.z, 1u);

  shape.seqQ = 128;
  EXPECT_EQ(attentionGrid(spec, shape).x, 2u);
}

TEST(AttentionGridTest, RejectsTooManyBatchHeadsForGridY) {
  KernelSpec spec = specWithGrid(
      {GridExtent{"query_tiles"}, GridExtent{"batch_heads"}, GridExtent{"one"}},
      64);
  EXPECT_NO_THROW(attentionGrid(spec, AttentionShape{65535, 1, 1, 64, 64, 64}));
  try {
    attentionGrid(spec, AttentionShape{65536, 1, 1, 64, 64, 64});
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("exceeds CUDA's limit of 65535"),
              std::string::npos)
        << error.what();
  }
}

TEST(AttentionGridTest, FixedCountsPassThrough) {
  KernelSpec spec = specWithGrid(
      {GridExtent{"", 132}, GridExtent{"query_tiles"}, GridExtent{"", 2}}, 128);
  Dim3 grid = attentionGrid(spec, AttentionShape{1, 1, 1, 1, 1, 64});
  EXPECT_EQ(grid.x, 132u);
  EXPECT_EQ(grid.y, 1u);
  EXPECT_EQ(grid.z, 2u);
}

TEST(AttentionGridTest, PersistentQueryTilesWithoutOccupancyAreEveryTile) {
  KernelSpec spec = specWithGrid({GridExtent{"persistent_query_tiles"},
                                  GridExtent{"one"}, GridExtent{"one"}},
                                 128);
  // ceil(1000 / 128) = 8 query tiles for each of batch 3 * heads 16.
  AttentionShape shape{3, 16, 4, 1000, 1000, 64};
  EXPECT_EQ(attentionQueryTiles(spec, shape), 8 * 48);
  Dim3 grid = attentionGrid(spec, shape);
  EXPECT_EQ(grid.x, 8u * 48u);
  EXPECT_EQ(grid.y, 1u);
  EXPECT_EQ(grid.z, 1u);
  shape.seqQ = 1024;
  EXPECT_EQ(attentionGrid(spec, shape).x, 8u * 48u);
  shape.seqQ = 1025;
  EXPECT_EQ(attentionGrid(spec, shape).x, 9u * 48u);
}

TEST(AttentionGridTest, PersistentBlocksAreTheTilesUpToTheResidentBlocks) {
  KernelSpec spec = specWithGrid({GridExtent{"persistent_query_tiles"},
                                  GridExtent{"one"}, GridExtent{"one"}},
                                 64);
  spec.block = {256, 1, 1};
  // 32 query tiles * 32 batch heads = 1024 tiles; an H100 runs 132 * 2.
  AttentionShape large{2, 16, 16, 2048, 2048, 64};
  EXPECT_EQ(persistentAttentionBlocks(spec, large, 132 * 2), 264);
  // Fewer tiles than resident blocks: one block per tile.
  AttentionShape small{1, 2, 2, 100, 100, 64};
  EXPECT_EQ(persistentAttentionBlocks(spec, small, 264), 4);
  EXPECT_EQ(
      persistentAttentionBlocks(spec, AttentionShape{1, 1, 1, 1, 1, 64}, 264),
      1);
  EXPECT_EQ(persistentAttentionBlocks(spec, large, 1024), 1024);
  EXPECT_EQ(errorOf([&] { persistentAttentionBlocks(spec, large, 0); }),
            "kernel k: not one block of 256 threads fits on this GPU "
            "(occupancy 0)");
}

TEST(AttentionGridTest, QueryTilesNeedBlockM) {
  KernelSpec spec = specWithGrid(
      {GridExtent{"heads"}, GridExtent{"one"}, GridExtent{"one"}}, 0);
  spec.op = "attention_bwd_dsinks";
  EXPECT_EQ(errorOf([&] {
              attentionQueryTiles(spec, AttentionShape{1, 1, 1, 1, 1, 64});
            }),
            "kernel k (attention_bwd_dsinks) has no block_m to count query "
            "tiles in");
}

TEST(AttentionBindingsTest, TensorsHaveTheirShapesAndTypes) {
  AttentionShape shape{2, 4, 2, 10, 20, 64};
  ArgBindings bindings =
      attentionBindings(DType::F16, shape, {0x100, 0x200, 0x300, 0x400, 0x500});
  const auto &k = std::get<MemrefArg>(bindings.at("k"));
  EXPECT_EQ(k.data, 0x200u);
  EXPECT_EQ(k.dtype, DType::F16);
  EXPECT_EQ(k.shape, shape.keyValue());
  const auto &out = std::get<MemrefArg>(bindings.at("out"));
  EXPECT_EQ(out.shape, shape.query());
  const auto &lse = std::get<MemrefArg>(bindings.at("lse"));
  EXPECT_EQ(lse.dtype, DType::F32);
  EXPECT_EQ(lse.shape, shape.logSumExp());
  EXPECT_TRUE(k.strides.empty()); // Contiguous unless given.
}

std::string bindingsError(const AttentionShape &shape,
                          const AttentionBuffers &buffers) {
  try {
    attentionBindings(DType::BF16, shape, buffers);
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

TEST(AttentionBindingsTest, ViewsOfAFusedProjectionCarryTheirStrides) {
  // q, k, v: heads of one [2, 10, 3 * 4 * 64] bf16 buffer at 0x1000.
  AttentionShape shape{2, 4, 4, 10, 10, 64};
  const std::int64_t width = 3 * 4 * 64;
  const Strides fused = {10 * width, 64, width, 1};
  AttentionBuffers buffers{0x1000, 0x1000 + 4 * 64 * 2, 0x1000 + 8 * 64 * 2,
                           0x9000, 0xA000};
  buffers.strides = {fused, fused, fused, {}};
  ArgBindings bindings = attentionBindings(DType::BF16, shape, buffers);
  for (const char *name : {"q", "k", "v"})
    EXPECT_EQ(std::get<MemrefArg>(bindings.at(name)).strides, fused) << name;
  EXPECT_EQ(std::get<MemrefArg>(bindings.at("k")).data, 0x1200u);
  EXPECT_TRUE(std::get<MemrefArg>(bindings.at("out")).strides.empty());
  EXPECT_TRUE(std::get<MemrefArg>(bindings.at("lse")).strides.empty());

  AttentionBackwardBuffers backward{0x1000, 0x1000, 0x1000, 0x9000, 0xA000,
                                    0xB000, 0xC000, 0xC000, 0xC000};
  backward.strides.dk = fused;
  backward.strides.dout = {10 * 256, 64, 256, 1};
  ArgBindings backwardBindings =
      attentionBackwardBindings(DType::BF16, shape, backward, 0xD000);
  EXPECT_EQ(std::get<MemrefArg>(backwardBindings.at("dk")).strides, fused);
  EXPECT_EQ(std::get<MemrefArg>(backwardBindings.at("dout")).strides,
            (Strides{10 * 256, 64, 256, 1}));
  EXPECT_TRUE(std::get<MemrefArg>(backwardBindings.at("dq")).strides.empty());
  EXPECT_TRUE(
      std::get<MemrefArg>(backwardBindings.at("delta")).strides.empty());
}

TEST(AttentionBindingsTest, ViewsMustKeepTheKernelsChunksAligned) {
  AttentionShape shape{1, 2, 2, 10, 10, 64};
  AttentionBuffers buffers{0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
  const std::string prefix = "attention tensor v [1, 2, 10, 64] with strides ";
  buffers.strides.v = {2560, 64, 132, 1}; // 264-byte rows: not 16-byte ones.
  EXPECT_EQ(bindingsError(shape, buffers),
            prefix + "[2560, 64, 132, 1]: stride 132 is 264 bytes, not a "
                     "multiple of 16 (the kernels move rows in 16-byte "
                     "chunks)");
  buffers.strides.v = {2560, 64, 128, 1};
  buffers.v = 0x3008;
  EXPECT_EQ(bindingsError(shape, buffers),
            prefix + "[2560, 64, 128, 1]: the pointer is not 16-byte aligned");
  buffers.v = 0x3000;
  buffers.strides.v = {2560, 64, 128};
  EXPECT_EQ(bindingsError(shape, buffers),
            prefix + "[2560, 64, 128]: expected 4 strides (batch, heads, seq, "
                     "head_dim)");
  buffers.strides.v = {2560, 64, 128, 2};
  EXPECT_EQ(bindingsError(shape, buffers),
            prefix + "[2560, 64, 128, 2]: the head_dim stride must be 1");
  buffers.strides.v = {2560, -64, 128, 1};
  EXPECT_EQ(bindingsError(shape, buffers),
            prefix + "[2560, -64, 128, 1]: every stride must be at least 1");
  buffers.strides.v = {2560, 64, 128, 1};
  EXPECT_EQ(bindingsError(shape, buffers), "no error");
}

/// A forward's parameters (q, k, v, out, lse), then `extra`.
KernelSpec forwardSpecWith(std::vector<KernelParam> extra) {
  KernelSpec spec;
  spec.name = "fwd";
  spec.op = kAttentionForwardOp;
  for (const char *tensor : {"q", "k", "v", "out"})
    spec.params.push_back({tensor, ParamKind::Memref, DType::BF16, 4});
  spec.params.push_back({"lse", ParamKind::Memref, DType::F32, 3});
  spec.params.insert(spec.params.end(), extra.begin(), extra.end());
  return spec;
}

TEST(AttentionTileCounterTest, OnlyKernelsWithTheParameterTakeOne) {
  EXPECT_FALSE(takesTileCounter(forwardSpecWith({})));
  EXPECT_FALSE(takesTileCounter(
      forwardSpecWith({{"doc_ids", ParamKind::I32Memref, DType::F32, 2}})));
  EXPECT_TRUE(takesTileCounter(forwardSpecWith(
      {{"tile_counter", ParamKind::I32Memref, DType::F32, 1}})));
  EXPECT_EQ(kTileCounterBytes, 4u);
}

TEST(AttentionTileCounterTest, ACounterOfAnotherKindOrRankIsRefused) {
  const std::string expected =
      "; a tile counter is memref<i32> of rank 1 (memref<1xi32>)";
  EXPECT_EQ(errorOf([] {
              takesTileCounter(forwardSpecWith(
                  {{"tile_counter", ParamKind::I32Memref, DType::F32, 2}}));
            }),
            "kernel fwd: parameter 'tile_counter' is memref<i32> of rank 2" +
                expected);
  EXPECT_EQ(errorOf([] {
              takesTileCounter(forwardSpecWith(
                  {{"tile_counter", ParamKind::Memref, DType::F32, 1}}));
            }),
            "kernel fwd: parameter 'tile_counter' is memref of rank 1" +
                expected);
  EXPECT_EQ(errorOf([] {
              takesTileCounter(forwardSpecWith(
                  {{"tile_counter", ParamKind::I32, DType::F32, 0}}));
            }),
            "kernel fwd: parameter 'tile_counter' is i32" + expected);
}

TEST(AttentionTileCounterTest, TheCounterIsBoundAsOneI32AfterTheTensors) {
  KernelSpec spec =
      forwardSpecWith({{"tile_counter", ParamKind::I32Memref, DType::F32, 1}});
  AttentionShape shape{1, 2, 2, 10, 10, 64};
  ArgBindings bindings = attentionBindings(DType::BF16, shape,
                                           {0x100, 0x200, 0x300, 0x400, 0x500});
  bindings["tile_counter"] = tileCounterArg(0x600);
  const auto &counter = std::get<I32MemrefArg>(bindings.at("tile_counter"));
  EXPECT_EQ(counter.data, 0x600u);
  EXPECT_EQ(counter.shape, (Shape{1}));
  KernelArgs args(spec, bindings);
  // Four rank-4 memrefs (11 slots each) and lse (rank 3, 9 slots) first;
  // then the counter's descriptor: both pointers, offset 0, size 1, stride 1.
  std::size_t slot = args.slotOf("tile_counter");
  EXPECT_EQ(slot, 4u * 11 + 9);
  EXPECT_EQ(args.count(), slot + 5);
  EXPECT_EQ(args.slot(slot), 0x600u);
  EXPECT_EQ(args.slot(slot + 1), 0x600u);
  EXPECT_EQ(args.slot(slot + 2), 0u);
  EXPECT_EQ(args.slot(slot + 3), 1u);
  EXPECT_EQ(args.slot(slot + 4), 1u);
  // A kernel that takes a counter cannot be packed without one.
  bindings.erase("tile_counter");
  EXPECT_EQ(errorOf([&] { KernelArgs(spec, bindings); })
                .rfind("passing arguments to kernel fwd: parameter "
                       "'tile_counter' ",
                       0),
            0u);
}

} // namespace
