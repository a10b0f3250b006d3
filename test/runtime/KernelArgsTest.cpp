//===- KernelArgsTest.cpp - MLIR memref descriptor argument packing -------===//

#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

using namespace fa;

namespace {

KernelParam memref(const std::string &name, DType dtype, int rank) {
  return {name, ParamKind::Memref, dtype, rank};
}

KernelParam stridedMemref(const std::string &name, DType dtype, int rank) {
  KernelParam param = memref(name, dtype, rank);
  param.strided = true;
  return param;
}

KernelParam scalar(const std::string &name, ParamKind kind) {
  return {name, kind, DType::F32, 0};
}

KernelSpec specWithParams(std::vector<KernelParam> params) {
  KernelSpec spec;
  spec.name = "test_kernel";
  spec.params = std::move(params);
  return spec;
}

std::string packError(const KernelSpec &spec, const ArgBindings &bindings) {
  try {
    KernelArgs args(spec, bindings);
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

TEST(KernelArgsTest, MemrefExpandsToItsDescriptor) {
  KernelSpec spec = specWithParams({memref("q", DType::BF16, 4)});
  KernelArgs args(spec,
                  {{"q", MemrefArg{0xABC000, DType::BF16, {2, 3, 5, 64}}}});
  // allocated, aligned, offset, sizes[4], strides[4]
  std::vector<std::uint64_t> expected = {0xABC000, 0xABC000,   0,      2,  3, 5,
                                         64,       3 * 5 * 64, 5 * 64, 64, 1};
  ASSERT_EQ(args.count(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(args.slot(i), expected[i]) << "slot " << i;
    EXPECT_EQ(*static_cast<std::uint64_t *>(args.pointers()[i]), expected[i]);
  }
}

TEST(KernelArgsTest, AttentionSignatureHas53Parameters) {
  KernelSpec spec =
      specWithParams({memref("q", DType::F16, 4), memref("k", DType::F16, 4),
                      memref("v", DType::F16, 4), memref("out", DType::F16, 4),
                      memref("lse", DType::F32, 3)});
  ArgBindings bindings = {{"q", MemrefArg{1, DType::F16, {1, 2, 3, 4}}},
                          {"k", MemrefArg{2, DType::F16, {1, 2, 3, 4}}},
                          {"v", MemrefArg{3, DType::F16, {1, 2, 3, 4}}},
                          {"out", MemrefArg{4, DType::F16, {1, 2, 3, 4}}},
                          {"lse", MemrefArg{5, DType::F32, {1, 2, 3}}}};
  KernelArgs args(spec, bindings);
  ASSERT_EQ(args.count(), 4 * 11 + 9u);
  EXPECT_EQ(args.slot(11), 2u);     // k's allocated pointer follows q's 11.
  EXPECT_EQ(args.slot(44), 5u);     // lse's allocated pointer.
  EXPECT_EQ(args.slot(44 + 8), 1u); // lse's innermost stride.
}

TEST(KernelArgsTest, ScalarsTakeOneSlotEach) {
  KernelSpec spec = specWithParams({scalar("n", ParamKind::I32),
                                    scalar("big", ParamKind::I64),
                                    scalar("scale", ParamKind::F32)});
  KernelArgs args(spec, {{"n", std::int32_t{-7}},
                         {"big", std::int64_t{1} << 40},
                         {"scale", 0.125f}});
  ASSERT_EQ(args.count(), 3u);
  std::int32_t n;
  std::memcpy(&n, args.pointers()[0], sizeof(n));
  EXPECT_EQ(n, -7);
  EXPECT_EQ(*static_cast<std::int64_t *>(args.pointers()[1]),
            std::int64_t{1} << 40);
  float scale;
  std::memcpy(&scale, args.pointers()[2], sizeof(scale));
  EXPECT_EQ(scale, 0.125f);
}

TEST(KernelArgsTest, PointersSurviveAMove) {
  KernelSpec spec = specWithParams({scalar("n", ParamKind::I64)});
  KernelArgs args(spec, {{"n", std::int64_t{99}}});
  KernelArgs moved(std::move(args));
  EXPECT_EQ(*static_cast<std::int64_t *>(moved.pointers()[0]), 99);
}

TEST(KernelArgsTest, Int32MemrefsExpandLikeOthersAndAreTheirOwnKind) {
  KernelSpec spec =
      specWithParams({{"doc_ids", ParamKind::I32Memref, DType::F32, 2},
                      memref("alibi_slopes", DType::F32, 1)});
  KernelArgs args(spec, {{"doc_ids", I32MemrefArg{0x2000, {2, 5}}},
                         {"alibi_slopes", MemrefArg{0x3000, DType::F32, {4}}}});
  // 3 + 2*2, then 3 + 2*1.
  ASSERT_EQ(args.count(), 12u);
  EXPECT_EQ(args.slot(0), 0x2000u);
  EXPECT_EQ(args.slot(1), 0x2000u);
  EXPECT_EQ(args.slot(3), 2u); // sizes
  EXPECT_EQ(args.slot(4), 5u);
  EXPECT_EQ(args.slot(5), 5u); // strides
  EXPECT_EQ(args.slot(6), 1u);
  EXPECT_EQ(args.slot(7), 0x3000u);
  EXPECT_EQ(args.slot(10), 4u);
  // An f32 tensor is no int32 one, nor the other way round.
  EXPECT_EQ(packError(spec, {{"doc_ids", MemrefArg{1, DType::F32, {2, 5}}},
                             {"alibi_slopes", I32MemrefArg{1, {4}}}}),
            "passing arguments to kernel test_kernel: parameter 'doc_ids' is "
            "memref<i32> but was given a value of another kind");
}

TEST(KernelArgsTest, SlotOfNamesEachParametersFirstSlot) {
  KernelSpec spec =
      specWithParams({memref("q", DType::BF16, 4), scalar("n", ParamKind::I32),
                      memref("lse", DType::F32, 3)});
  KernelArgs args(spec, {{"q", MemrefArg{0x1000, DType::BF16, {1, 2, 3, 4}}},
                         {"n", std::int32_t{5}},
                         {"lse", MemrefArg{0x2000, DType::F32, {1, 2, 3}}}});
  EXPECT_EQ(args.slotOf("q"), 0u);
  EXPECT_EQ(args.slotOf("n"), 11u);
  EXPECT_EQ(args.slotOf("lse"), 12u);
  EXPECT_EQ(args.slot(args.slotOf("lse")), 0x2000u);
  EXPECT_EQ(args.findSlot("n"), std::optional<std::size_t>(11));
  EXPECT_EQ(args.findSlot("dout"), std::nullopt);
  try {
    args.slotOf("dout");
    FAIL() << "slotOf found a parameter the kernel does not take";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "kernel test_kernel takes no parameter 'dout'");
  }
}

TEST(KernelArgsTest, SlotValueIsWhatPackingStores) {
  KernelSpec spec = specWithParams({scalar("n", ParamKind::I32),
                                    scalar("big", ParamKind::I64),
                                    scalar("scale", ParamKind::F32)});
  KernelArgs args(
      spec,
      {{"n", std::int32_t{-7}}, {"big", std::int64_t{-3}}, {"scale", 0.125f}});
  // 4-byte values fill the low half; the high half stays zero.
  EXPECT_EQ(KernelArgs::slotValue(std::int32_t{-7}), 0xFFFFFFF9u);
  EXPECT_EQ(args.slot(0), KernelArgs::slotValue(std::int32_t{-7}));
  EXPECT_EQ(args.slot(1), KernelArgs::slotValue(std::int64_t{-3}));
  EXPECT_EQ(args.slot(2), KernelArgs::slotValue(0.125f));
  EXPECT_EQ(KernelArgs::slotValue(CUdeviceptr{0xABC000}), 0xABC000u);
}

/// Packing from placeholders, then writing the per-call pointers and
/// scalars into their slots, gives the slots packing the real values does.
TEST(KernelArgsTest, PatchingPlaceholdersEqualsPackingTheValues) {
  KernelSpec spec =
      specWithParams({memref("q", DType::F16, 4),
                      memref("lse", DType::F32, 3),
                      scalar("dropout_seed", ParamKind::I64),
                      scalar("dropout_offset", ParamKind::I32),
                      scalar("p", ParamKind::F32),
                      {"doc_ids", ParamKind::I32Memref, DType::F32, 2}});
  auto bindings = [](CUdeviceptr q, CUdeviceptr lse, CUdeviceptr docIds,
                     std::int64_t seed, std::int32_t offset) {
    return ArgBindings{{"q", MemrefArg{q, DType::F16, {2, 4, 8, 64}}},
                       {"lse", MemrefArg{lse, DType::F32, {2, 4, 8}}},
                       {"dropout_seed", seed},
                       {"dropout_offset", offset},
                       {"p", 0.25f},
                       {"doc_ids", I32MemrefArg{docIds, {2, 8}}}};
  };
  KernelArgs packed(spec, bindings(0x7000, 0x8000, 0x9000, -42, -1));
  KernelArgs patched(spec, bindings(0, 0, 0, 0, 0));
  for (const char *pointer : {"q", "lse", "doc_ids"}) {
    CUdeviceptr value = packed.slot(packed.slotOf(pointer));
    patched.setSlot(patched.slotOf(pointer), value);     // Allocated.
    patched.setSlot(patched.slotOf(pointer) + 1, value); // Aligned.
  }
  patched.setSlot(patched.slotOf("dropout_seed"),
                  KernelArgs::slotValue(std::int64_t{-42}));
  patched.setSlot(patched.slotOf("dropout_offset"),
                  KernelArgs::slotValue(std::int32_t{-1}));
  ASSERT_EQ(patched.count(), packed.count());
  for (std::size_t i = 0; i < packed.count(); ++i) {
    EXPECT_EQ(patched.slot(i), packed.slot(i)) << "slot " << i;
    EXPECT_EQ(*static_cast<std::uint64_t *>(patched.pointers()[i]),
              packed.slot(i))
        << "slot " << i;
  }
  EXPECT_THROW(patched.setSlot(packed.count(), 1), std::out_of_range);
}

TEST(KernelArgsTest, CopiesPointIntoTheirOwnSlots) {
  KernelSpec spec =
      specWithParams({memref("x", DType::F32, 1), scalar("n", ParamKind::I64)});
  KernelArgs original(
      spec, {{"x", MemrefArg{0x100, DType::F32, {4}}}, {"n", std::int64_t{1}}});
  KernelArgs copy(original);
  copy.setSlot(copy.slotOf("x"), 0x200);
  copy.setSlot(copy.slotOf("n"), 2);
  EXPECT_EQ(original.slot(0), 0x100u);
  EXPECT_EQ(*static_cast<std::int64_t *>(original.pointers()[5]), 1);
  EXPECT_EQ(*static_cast<std::uint64_t *>(copy.pointers()[0]), 0x200u);
  EXPECT_EQ(*static_cast<std::int64_t *>(copy.pointers()[5]), 2);
  EXPECT_EQ(copy.slotOf("n"), 5u);

  KernelArgs assigned(specWithParams({scalar("m", ParamKind::I32)}),
                      {{"m", std::int32_t{3}}});
  assigned = copy;
  ASSERT_EQ(assigned.count(), copy.count());
  for (std::size_t i = 0; i < copy.count(); ++i) {
    EXPECT_EQ(assigned.slot(i), copy.slot(i)) << "slot " << i;
    EXPECT_NE(assigned.pointers()[i], copy.pointers()[i]) << "slot " << i;
    EXPECT_EQ(*static_cast<std::uint64_t *>(assigned.pointers()[i]),
              copy.slot(i));
  }
  EXPECT_EQ(assigned.findSlot("m"), std::nullopt);
  EXPECT_EQ(assigned.slotOf("n"), 5u);
}

TEST(KernelArgsTest, ExtraBindingsAreIgnored) {
  KernelSpec spec = specWithParams({scalar("n", ParamKind::I32)});
  KernelArgs args(spec, {{"n", std::int32_t{1}}, {"unused", 2.0f}});
  EXPECT_EQ(args.count(), 1u);
}

TEST(KernelArgsTest, ErrorsNameTheKernelAndParameter) {
  KernelSpec spec = specWithParams(
      {memref("lse", DType::F32, 3), scalar("n", ParamKind::I32)});
  MemrefArg lse{1, DType::F32, {1, 2, 3}};

  EXPECT_EQ(packError(spec, {{"lse", lse}}),
            "passing arguments to kernel test_kernel: parameter 'n' (i32) "
            "has no value; the caller provides: lse");
  EXPECT_EQ(packError(spec, {{"lse", lse}, {"n", 1.0f}}),
            "passing arguments to kernel test_kernel: parameter 'n' is i32 "
            "but was given a value of another kind");
  EXPECT_EQ(packError(spec, {{"lse", MemrefArg{1, DType::BF16, {1, 2, 3}}},
                             {"n", std::int32_t{1}}}),
            "passing arguments to kernel test_kernel: parameter 'lse' holds "
            "f32 but was given a bf16 tensor");
  EXPECT_EQ(packError(spec, {{"lse", MemrefArg{1, DType::F32, {1, 2, 3, 4}}},
                             {"n", std::int32_t{1}}}),
            "passing arguments to kernel test_kernel: parameter 'lse' is a "
            "rank-3 memref but was given shape [1, 2, 3, 4]");
}

TEST(KernelArgsTest, StridedParameterTakesAViewsStrides) {
  // Head 0 of q inside a fused [2, 5, 3 * 3 * 64] QKV product.
  KernelSpec spec = specWithParams({stridedMemref("q", DType::BF16, 4)});
  const std::int64_t width = 3 * 3 * 64;
  KernelArgs args(spec, {{"q", MemrefArg{0xABC000,
                                         DType::BF16,
                                         {2, 3, 5, 64},
                                         {5 * width, 64, width, 1}}}});
  std::vector<std::uint64_t> expected = {0xABC000, 0xABC000,  0,  2,     3, 5,
                                         64,       5 * width, 64, width, 1};
  ASSERT_EQ(args.count(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(args.slot(i), expected[i]) << "slot " << i;
}

TEST(KernelArgsTest, StridedParameterWithoutStridesIsRowMajor) {
  KernelSpec strided = specWithParams({stridedMemref("q", DType::BF16, 4)});
  KernelSpec contiguous = specWithParams({memref("q", DType::BF16, 4)});
  ArgBindings bindings = {
      {"q", MemrefArg{0xABC000, DType::BF16, {2, 3, 5, 64}}}};
  KernelArgs a(strided, bindings), b(contiguous, bindings);
  ASSERT_EQ(a.count(), b.count());
  for (std::size_t i = 0; i < a.count(); ++i)
    EXPECT_EQ(a.slot(i), b.slot(i)) << "slot " << i;
}

TEST(KernelArgsTest, StridesAreRefusedWhereTheKernelCannotTakeThem) {
  KernelSpec spec = specWithParams(
      {memref("lse", DType::F32, 3), stridedMemref("q", DType::BF16, 4)});
  MemrefArg lse{1, DType::F32, {1, 2, 3}};
  auto q = [](Strides strides) {
    return MemrefArg{2, DType::BF16, {1, 2, 3, 64}, std::move(strides)};
  };
  const std::string prefix = "passing arguments to kernel test_kernel: ";
  EXPECT_EQ(
      packError(spec, {{"lse", MemrefArg{1, DType::F32, {1, 2, 3}, {6, 3, 1}}},
                       {"q", q({})}}),
      prefix + "parameter 'lse' takes a contiguous tensor (its manifest "
               "entry is not \"strided\") but was given strides "
               "[6, 3, 1]");
  EXPECT_EQ(packError(spec, {{"lse", lse}, {"q", q({384, 64, 1})}}),
            prefix + "parameter 'q' was given 3 strides [384, 64, 1] for "
                     "shape [1, 2, 3, 64]; expected one per dimension");
  EXPECT_EQ(packError(spec, {{"lse", lse}, {"q", q({768, 128, 256, 2})}}),
            prefix + "parameter 'q' was given strides [768, 128, 256, 2] "
                     "whose innermost stride is not 1 (the kernel reads rows "
                     "as contiguous elements)");
  EXPECT_EQ(packError(spec, {{"lse", lse}, {"q", q({768, 0, 256, 1})}}),
            prefix + "parameter 'q' was given strides [768, 0, 256, 1]; "
                     "every stride must be at least 1");
  EXPECT_EQ(packError(spec, {{"lse", lse}, {"q", q({768, -64, 256, 1})}}),
            prefix + "parameter 'q' was given strides [768, -64, 256, 1]; "
                     "every stride must be at least 1");
}

/// k_tma of a warp-specialised forward: 128 x 64 boxes of one head of k,
/// swizzled in 128-byte spans.
KernelParam kTensorMap() {
  KernelParam param{"k_tma", ParamKind::TensorMap, DType::BF16};
  param.tensor = "k";
  param.box = {1, 1, 128, 64};
  param.swizzle = TensorMapSwizzle::Bytes128;
  return param;
}

std::string specError(const KernelParam &param, const MemrefArg &tensor) {
  try {
    tensorMapSpecOf(param, tensor);
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

TEST(KernelArgsTest, TensorMapSpecOfAContiguousTensor) {
  TiledTensorMapSpec map = tensorMapSpecOf(
      kTensorMap(), MemrefArg{0x7f0000001000, DType::BF16, {2, 4, 1000, 64}});
  EXPECT_EQ(map.data, 0x7f0000001000u);
  EXPECT_EQ(map.dtype, DType::BF16);
  EXPECT_EQ(map.shape, (Shape{2, 4, 1000, 64}));
  EXPECT_TRUE(map.strides.empty()); // Row-major, as the MemrefArg's.
  EXPECT_EQ(map.box, (Shape{1, 1, 128, 64}));
  EXPECT_EQ(map.swizzle, TensorMapSwizzle::Bytes128);
}

TEST(KernelArgsTest, TensorMapSpecOfAViewTakesItsStrides) {
  // Head h of k inside a fused [2, 1000, 3 * 4 * 64] QKV product.
  const std::int64_t width = 3 * 4 * 64;
  Strides strides = {1000 * width, 64, width, 1};
  TiledTensorMapSpec map = tensorMapSpecOf(
      kTensorMap(),
      MemrefArg{0x7f0000001000, DType::BF16, {2, 4, 1000, 64}, strides});
  EXPECT_EQ(map.shape, (Shape{2, 4, 1000, 64}));
  EXPECT_EQ(map.strides, strides);
}

TEST(KernelArgsTest, TensorMapSpecOfRefusesWhatTheMapCannotRead) {
  MemrefArg k{0x7f0000001000, DType::BF16, {2, 4, 1000, 64}};
  MemrefArg f16 = k;
  f16.dtype = DType::F16;
  EXPECT_EQ(specError(kTensorMap(), f16),
            "parameter 'k_tma' (the tensor map of 'k') holds bf16 but 'k' was "
            "given a f16 tensor");
  MemrefArg rank3 = k;
  rank3.shape = {8, 1000, 64};
  EXPECT_EQ(specError(kTensorMap(), rank3),
            "parameter 'k_tma' (the tensor map of 'k') has the rank-4 box "
            "[1, 1, 128, 64] but 'k' was given shape [8, 1000, 64]");
  // Rows padded to 68 elements, 136 bytes apart: TMA takes strides of
  // whole 16-byte units only.
  MemrefArg rows = k;
  rows.strides = {4 * 1000 * 68, 1000 * 68, 68, 1};
  EXPECT_EQ(specError(kTensorMap(), rows),
            "parameter 'k_tma' (the tensor map of 'k'): encoding a tiled "
            "tensor map (bf16 tensor at 0x7f0000001000 of shape [2, 4, 1000, "
            "64], strides [272000, 68000, 68, 1], box [1, 1, 128, 64], "
            "swizzle 128b): the stride of dimension 2 must be a positive "
            "multiple of 16 bytes below 2^40, got 136 bytes");
  KernelParam callers{"k_map", ParamKind::TensorMap};
  EXPECT_EQ(specError(callers, k),
            "parameter 'k_map' (tensormap) is not a tensor map that names "
            "the tensor it maps");
}

TEST(KernelArgsTest, TensorMapBoundByTheCallerIsPassedAsIs) {
  KernelSpec spec = specWithParams({memref("k", DType::BF16, 4), kTensorMap()});
  TensorMapArg numbered;
  for (std::size_t i = 0; i < 16; ++i)
    numbered.map.opaque[i] = i + 1;
  // k's address is no multiple of 16 bytes: a map encoded from it would be
  // refused, so the caller's is the one passed.
  KernelArgs args(spec, {{"k", MemrefArg{0x1008, DType::BF16, {1, 1, 8, 64}}},
                         {"k_tma", numbered}});
  ASSERT_EQ(args.count(), 11u + 1u);
  EXPECT_EQ(
      std::memcmp(args.pointers()[11], &numbered.map, sizeof(CUtensorMap)), 0);
}

TEST(KernelArgsTest, TensorMapEncodedFromItsTensorNamesBoth) {
  KernelSpec spec = specWithParams({memref("k", DType::BF16, 4), kTensorMap()});
  const std::string prefix = "passing arguments to kernel test_kernel: ";
  EXPECT_EQ(
      packError(spec, {{"q", MemrefArg{0x1000, DType::BF16, {1, 1, 8, 64}}}}),
      prefix + "parameter 'k' (memref) has no value; the caller "
               "provides: q");
  KernelSpec mapFirst = specWithParams({kTensorMap()});
  EXPECT_EQ(packError(mapFirst,
                      {{"q", MemrefArg{0x1000, DType::BF16, {1, 1, 8, 64}}}}),
            prefix + "parameter 'k_tma' (tensormap) has no value, nor has "
                     "'k', the tensor it maps; the caller provides: q");
  EXPECT_EQ(packError(mapFirst, {{"k", std::int64_t{0}}}),
            prefix + "parameter 'k_tma' maps 'k', which was given a value "
                     "other than a tensor");
  // Refused before any driver call, so no GPU is needed to see it.
  EXPECT_EQ(
      packError(spec, {{"k", MemrefArg{0x1008, DType::BF16, {1, 1, 8, 64}}}}),
      prefix + "parameter 'k_tma' (the tensor map of 'k'): encoding a tiled "
               "tensor map (bf16 tensor at 0x1008 of shape [1, 1, 8, 64], "
               "strides row-major, box [1, 1, 128, 64], swizzle 128b): the "
               "address must be a multiple of 16 bytes");
  EXPECT_EQ(
      packError(spec, {{"k", MemrefArg{0x1000, DType::F16, {1, 1, 8, 64}}}}),
      prefix + "parameter 'k' holds bf16 but was given a f16 tensor");
}

/// What pointers() throws, or "no error".
std::string pointersError(KernelArgs &args) {
  try {
    args.pointers();
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

/// What refreshTensorMaps() throws, or "no error".
std::string refreshError(KernelArgs &args) {
  try {
    args.refreshTensorMaps();
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

/// k as a C API plan packs it: a null placeholder, of a real shape.
MemrefArg placeholderK() { return MemrefArg{0, DType::BF16, {1, 2, 300, 64}}; }

/// What refreshTensorMaps says of k_tma when k's aligned pointer is
/// `address`, a multiple of 8 but not 16 bytes: the encoding is refused
/// before any driver call (checkTiledTensorMapSpec), so no GPU is needed
/// to see the refresh try it with the packed shape, box and swizzle.
std::string misalignedRefresh(const std::string &address) {
  return "refreshing the tensor maps of kernel test_kernel: parameter "
         "'k_tma' (the tensor map of 'k'): encoding a tiled tensor map (bf16 "
         "tensor at " +
         address +
         " of shape [1, 2, 300, 64], strides row-major, box [1, 1, 128, 64], "
         "swizzle 128b): the address must be a multiple of 16 bytes";
}

TEST(KernelArgsTest, KernelsWithoutDerivedTensorMapsAreAlwaysReady) {
  KernelSpec spec = specWithParams({memref("k", DType::BF16, 4)});
  KernelArgs args(spec, {{"k", placeholderK()}});
  EXPECT_TRUE(args.ready());
  EXPECT_TRUE(args.staleTensorMaps().empty());
  args.setSlot(args.slotOf("k") + 1, 0x1008);
  EXPECT_TRUE(args.ready());
  EXPECT_EQ(refreshError(args), "no error");
  EXPECT_EQ(pointersError(args), "no error");
}

TEST(KernelArgsTest, APlaceholderTensorMapIsCheckedButNotEncoded) {
  // Packing a null k needs no driver (no GPU here) and leaves k_tma unready.
  KernelSpec spec = specWithParams({memref("k", DType::BF16, 4), kTensorMap()});
  KernelArgs args(spec, {{"k", placeholderK()}});
  ASSERT_EQ(args.count(), 11u + 1u);
  EXPECT_FALSE(args.ready());
  EXPECT_EQ(args.staleTensorMaps(), std::vector<std::string>{"k_tma"});
  EXPECT_EQ(pointersError(args),
            "launching kernel test_kernel: parameter 'k_tma' (the tensor map "
            "of 'k') is not current: 'k' has a null (placeholder) pointer");
  // Still null: nothing to encode, nothing thrown, still refused.
  EXPECT_EQ(refreshError(args), "no error");
  EXPECT_FALSE(args.ready());
  // The rest of the map is still checked when packing: a shape TMA cannot
  // read is refused even with a placeholder pointer.
  MemrefArg padded = placeholderK();
  padded.shape = {1, 2, 300, 68};
  EXPECT_EQ(packError(spec, {{"k", padded}}),
            "passing arguments to kernel test_kernel: parameter 'k_tma' (the "
            "tensor map of 'k'): encoding a tiled tensor map (bf16 tensor at "
            "0x0 of shape [1, 2, 300, 68], strides row-major, box [1, 1, 128, "
            "64], swizzle 128b): the stride of dimension 2 must be a positive "
            "multiple of 16 bytes below 2^40, got 136 bytes");
}

TEST(KernelArgsTest, RefreshFollowsTheTensorsAlignedPointer) {
  // The map before its tensor: its source slot is found after packing.
  for (bool mapFirst : {false, true}) {
    SCOPED_TRACE(mapFirst ? "map first" : "tensor first");
    KernelSpec spec =
        mapFirst ? specWithParams({kTensorMap(), memref("k", DType::BF16, 4)})
                 : specWithParams({memref("k", DType::BF16, 4), kTensorMap()});
    KernelArgs args(spec, {{"k", placeholderK()}});
    // The allocated pointer is not what the kernel reads through: setting
    // it alone changes nothing.
    args.setSlot(args.slotOf("k"), 0x2008);
    EXPECT_EQ(refreshError(args), "no error");
    args.setSlot(args.slotOf("k") + 1, 0x1008);
    EXPECT_EQ(args.staleTensorMaps(), std::vector<std::string>{"k_tma"});
    EXPECT_EQ(pointersError(args),
              "launching kernel test_kernel: parameter 'k_tma' (the tensor "
              "map of 'k') is not current: it was not encoded for 'k' at "
              "0x1008 (refreshTensorMaps was not called after the patch)");
    EXPECT_EQ(refreshError(args), misalignedRefresh("0x1008"));
    // A refused refresh leaves the map unencoded, and the next one retries.
    EXPECT_FALSE(args.ready());
    EXPECT_EQ(refreshError(args), misalignedRefresh("0x1008"));
    args.setSlot(args.slotOf("k") + 1, 0x3018);
    EXPECT_EQ(refreshError(args), misalignedRefresh("0x3018"));
    // Back to the placeholder: nothing to encode.
    args.setSlot(args.slotOf("k") + 1, 0);
    EXPECT_EQ(refreshError(args), "no error");
    EXPECT_FALSE(args.ready());
  }
}

TEST(KernelArgsTest, CopiesKeepTheirOwnTensorMapBookkeeping) {
  KernelSpec spec = specWithParams({memref("k", DType::BF16, 4), kTensorMap()});
  KernelArgs original(spec, {{"k", placeholderK()}});
  KernelArgs copy(original);
  const std::size_t aligned = copy.slotOf("k") + 1;
  copy.setSlot(aligned, 0x1008);
  EXPECT_EQ(refreshError(copy), misalignedRefresh("0x1008"));
  // The original's k is still the placeholder.
  EXPECT_EQ(refreshError(original), "no error");
  EXPECT_EQ(pointersError(original),
            "launching kernel test_kernel: parameter 'k_tma' (the tensor map "
            "of 'k') is not current: 'k' has a null (placeholder) pointer");
  KernelArgs assigned(spec, {{"k", placeholderK()}});
  assigned = copy;
  EXPECT_EQ(refreshError(assigned), misalignedRefresh("0x1008"));
  assigned.setSlot(aligned, 0x5008);
  EXPECT_EQ(refreshError(assigned), misalignedRefresh("0x5008"));
  EXPECT_EQ(refreshError(copy), misalignedRefresh("0x1008"));
  KernelArgs moved(std::move(assigned));
  EXPECT_EQ(refreshError(moved), misalignedRefresh("0x5008"));
}

TEST(KernelArgsTest, AMapWhoseTensorTheKernelDoesNotTakeCannotBeRefreshed) {
  // Only k_tma: a null k cannot be patched in, so the map never gets ready.
  KernelSpec spec = specWithParams({kTensorMap()});
  KernelArgs args(spec, {{"k", placeholderK()}});
  EXPECT_EQ(refreshError(args), "no error");
  EXPECT_EQ(args.staleTensorMaps(), std::vector<std::string>{"k_tma"});
  EXPECT_EQ(pointersError(args),
            "launching kernel test_kernel: parameter 'k_tma' (the tensor map "
            "of 'k') is not current: 'k' has a null (placeholder) pointer");
}

} // namespace
