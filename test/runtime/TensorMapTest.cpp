//===- TensorMapTest.cpp - Tensor-map arguments checked without a GPU -----===//
//
// checkTiledTensorMapSpec refuses what cuTensorMapEncodeTiled would, before
// any driver call, and says which argument broke which rule, naming every
// argument of the map. A "tensormap" kernel parameter (manifest kind) is
// passed by KernelArgs as a pointer to the map's 128 bytes.
//
//===----------------------------------------------------------------------===//

#include "../ErrorTesting.h"

#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace fa;
using fa::errortest::errorOf;

namespace {

/// A [1000, 64] bf16 tensor with 64 x 64 boxes: the ring fixture's map.
TiledTensorMapSpec validSpec() {
  TiledTensorMapSpec spec;
  spec.data = 0x7f0000001000;
  spec.dtype = DType::BF16;
  spec.shape = {1000, 64};
  spec.box = {64, 64};
  return spec;
}

std::string checkError(const TiledTensorMapSpec &spec) {
  return errorOf([&] { checkTiledTensorMapSpec(spec); });
}

TEST(TensorMapTest, AcceptsARowMajorTensorWithATailAndABoxAsWideAsItsRows) {
  EXPECT_EQ(checkError(validSpec()), "no error");
  TiledTensorMapSpec swizzled = validSpec();
  swizzled.swizzle = TensorMapSwizzle::Bytes128;
  EXPECT_EQ(checkError(swizzled), "no error");
  // A view whose rows are 192 elements apart (one head of a fused QKV row).
  TiledTensorMapSpec strided = validSpec();
  strided.strides = {192, 1};
  EXPECT_EQ(checkError(strided), "no error");
}

TEST(TensorMapTest, ErrorsNameEveryArgumentOfTheMap) {
  TiledTensorMapSpec spec = validSpec();
  spec.box = {512, 64};
  EXPECT_EQ(checkError(spec),
            "encoding a tiled tensor map (bf16 tensor at 0x7f0000001000 of "
            "shape [1000, 64], strides row-major, box [512, 64], swizzle "
            "none): box dimension 0 must be 1 to 256 elements");
}

TEST(TensorMapTest, RefusesRanksOutsideOneToFive) {
  TiledTensorMapSpec spec = validSpec();
  spec.shape = {};
  spec.box = {};
  EXPECT_NE(checkError(spec).find("a tensor map has 1 to 5 dimensions, got 0"),
            std::string::npos);
  spec.shape = {1, 1, 1, 1, 1, 64};
  spec.box = {1, 1, 1, 1, 1, 64};
  EXPECT_NE(checkError(spec).find("a tensor map has 1 to 5 dimensions, got 6"),
            std::string::npos);
}

TEST(TensorMapTest, RefusesABoxOrStridesOfAnotherRank) {
  TiledTensorMapSpec spec = validSpec();
  spec.box = {64};
  EXPECT_NE(checkError(spec).find(
                "the box needs one size per tensor dimension (2), got 1"),
            std::string::npos);
  spec = validSpec();
  spec.strides = {1};
  EXPECT_NE(checkError(spec).find(
                "strides need one value per tensor dimension (2), got 1"),
            std::string::npos);
}

TEST(TensorMapTest, RefusesAnAddressNotOn16Bytes) {
  TiledTensorMapSpec spec = validSpec();
  spec.data += 8;
  EXPECT_NE(checkError(spec).find("the address must be a multiple of 16 bytes"),
            std::string::npos);
}

TEST(TensorMapTest, RefusesEmptyDimensionsAndBoxes) {
  TiledTensorMapSpec spec = validSpec();
  spec.shape = {0, 64};
  EXPECT_NE(checkError(spec).find("dimension 0 must hold 1 to 2^32 elements"),
            std::string::npos);
  spec = validSpec();
  spec.box = {64, 0};
  EXPECT_NE(checkError(spec).find("box dimension 1 must be 1 to 256 elements"),
            std::string::npos);
}

TEST(TensorMapTest, RefusesStridesTmaCannotTake) {
  TiledTensorMapSpec spec = validSpec();
  spec.strides = {64, 2};
  EXPECT_NE(checkError(spec).find("the innermost stride must be 1 element"),
            std::string::npos);
  // 100 bf16 elements are 200 bytes, not a multiple of 16.
  spec.strides = {100, 1};
  EXPECT_NE(checkError(spec).find("the stride of dimension 0 must be a "
                                  "positive multiple of 16 bytes below 2^40, "
                                  "got 200 bytes"),
            std::string::npos);
}

TEST(TensorMapTest, RefusesBoxRowsThatAreNotWhole16ByteUnits) {
  TiledTensorMapSpec spec = validSpec();
  spec.shape = {1000, 4};
  spec.strides = {64, 1}; // Rows 128 bytes apart: only the box is too narrow.
  spec.box = {64, 4};
  EXPECT_NE(
      checkError(spec).find("a box row must be a multiple of 16 bytes, got 8"),
      std::string::npos);
}

TEST(TensorMapTest, RefusesBoxRowsWiderThanTheSwizzleSpan) {
  TiledTensorMapSpec spec = validSpec();
  spec.swizzle = TensorMapSwizzle::Bytes64;
  EXPECT_NE(checkError(spec).find("a box row under swizzle 64b must be at "
                                  "most 64 bytes, got 128"),
            std::string::npos);
}

TEST(TensorMapTest, SwizzlesAreNamedAsTheManifestNamesThem) {
  for (TensorMapSwizzle swizzle :
       {TensorMapSwizzle::None, TensorMapSwizzle::Bytes32,
        TensorMapSwizzle::Bytes64, TensorMapSwizzle::Bytes128})
    EXPECT_EQ(tensorMapSwizzleNamed(tensorMapSwizzleName(swizzle)), swizzle);
  EXPECT_STREQ(tensorMapSwizzleName(TensorMapSwizzle::Bytes128), "128b");
  EXPECT_EQ(tensorMapSwizzleNamed("swizzle_128b"), std::nullopt);
  EXPECT_EQ(tensorMapSwizzleNamed("128B"), std::nullopt);
}

/// A map whose 16 words are 1, 2, ..., 16, so a copy of it is recognisable.
TensorMapArg numberedMap() {
  TensorMapArg arg;
  for (std::size_t i = 0; i < 16; ++i)
    arg.map.opaque[i] = i + 1;
  return arg;
}

KernelSpec mapKernel() {
  KernelSpec spec;
  spec.name = "tma_kernel";
  spec.params = {{"map", ParamKind::TensorMap},
                 {"rows", ParamKind::I32},
                 {"out", ParamKind::Memref, DType::BF16, 2}};
  return spec;
}

TEST(TensorMapTest, KernelArgsPassATensorMapByValueIn128Bytes) {
  KernelSpec spec = mapKernel();
  KernelArgs args(spec, {{"map", numberedMap()},
                         {"rows", std::int32_t{1000}},
                         {"out", MemrefArg{0x1000, DType::BF16, {1024, 64}}}});
  // The map, then rows, then the memref's 3 + 2 * 2 parameters.
  ASSERT_EQ(args.count(), 1u + 1u + 7u);
  TensorMapArg expected = numberedMap();
  EXPECT_EQ(std::memcmp(args.pointers()[0], &expected.map, sizeof(CUtensorMap)),
            0);
  EXPECT_EQ(sizeof(CUtensorMap), 128u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(args.pointers()[0]) % 64, 0u);
  EXPECT_EQ(args.slotOf("rows"), 1u);
  EXPECT_EQ(args.slot(1), KernelArgs::slotValue(std::int32_t{1000}));
  EXPECT_EQ(args.slot(2), 0x1000u);
}

TEST(TensorMapTest, CopiedKernelArgsPointAtTheirOwnTensorMap) {
  KernelSpec spec = mapKernel();
  auto original = std::make_unique<KernelArgs>(
      spec, ArgBindings{{"map", numberedMap()},
                        {"rows", std::int32_t{1}},
                        {"out", MemrefArg{0x1000, DType::BF16, {64, 64}}}});
  KernelArgs copy(*original);
  EXPECT_NE(copy.pointers()[0], original->pointers()[0]);
  original.reset();
  TensorMapArg expected = numberedMap();
  EXPECT_EQ(std::memcmp(copy.pointers()[0], &expected.map, sizeof(CUtensorMap)),
            0);
}

TEST(TensorMapTest, ATensorMapParameterRefusesOtherValues) {
  KernelSpec spec = mapKernel();
  EXPECT_EQ(errorOf([&] {
              KernelArgs args(
                  spec, {{"map", std::int64_t{0}},
                         {"rows", std::int32_t{1}},
                         {"out", MemrefArg{0x1000, DType::BF16, {64, 64}}}});
            }),
            "passing arguments to kernel tma_kernel: parameter 'map' is "
            "tensormap but was given a value of another kind");
}

TEST(TensorMapTest, ManifestsNameTheKindTensormap) {
  // The manifest sample's kernel (KernelLibraryTest.cpp) taking its key
  // tiles through a tensor map.
  KernelLibrary library = KernelLibrary::parse(
      R"({"format": "fa-kernel-library", "version": 1, "target": "sm_90a",
          "kernels": [{
            "name": "attention_fwd_bf16_d64", "op": "attention_fwd",
            "ptx": "attention_fwd_bf16_d64.ptx",
            "entry": "attention_fwd_bf16_d64",
            "dtype": "bf16", "head_dim": 64, "causal": false, "scale": null,
            "config": {"block_m": 64, "block_n": 64, "num_warps": 4,
                       "num_stages": 1},
            "block": [128, 1, 1], "grid": ["query_tiles", "batch_heads", "one"],
            "dynamic_shared_bytes": 0,
            "params": [{"name": "k_map", "kind": "tensormap"},
                       {"name": "q", "kind": "memref", "dtype": "bf16",
                        "rank": 4}]}]})",
      "/lib/manifest.json");
  ASSERT_EQ(library.kernels().size(), 1u);
  const KernelParam &map = library.kernels()[0].params[0];
  EXPECT_EQ(map.kind, ParamKind::TensorMap);
  EXPECT_STREQ(paramKindName(map.kind), "tensormap");
}

} // namespace
