//===- KernelArgsTest.cpp - MLIR memref descriptor argument packing -------===//

#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace fa;

namespace {

KernelParam memref(const std::string &name, DType dtype, int rank) {
  return {name, ParamKind::Memref, dtype, rank};
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

} // namespace
