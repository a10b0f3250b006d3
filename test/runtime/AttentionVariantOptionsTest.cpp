//===- AttentionVariantOptionsTest.cpp - fa-run's variant flags -----------===//
//
// The variant `fa-run attention`'s flags make (AttentionVariantOptions.h),
// for flags that parse; the refusals are fa-run.error.variant-* ctest cases.
//
//===----------------------------------------------------------------------===//

#include "AttentionVariantOptions.h"

#include "fa/runtime/Npy.h"

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace fa;
using fa::errortest::errorOf;

namespace {

const AttentionShape kShape{2, 4, 2, 8, 8, 64};

TEST(AttentionVariantOptionsTest, PlainCausalStaysTopLeftAndPlain) {
  VariantOptions options;
  EXPECT_EQ(variantFromOptions(options, kShape, 0).name(), "");
  options.causal = "top-left";
  AttentionVariant variant = variantFromOptions(options, kShape, 0);
  EXPECT_EQ(variant.causal, CausalAlignment::TopLeft);
  EXPECT_EQ(variant.name(), "");
}

TEST(AttentionVariantOptionsTest, NamedFlagsGiveTheirValuesAndName) {
  VariantOptions options;
  options.causal = "bottom-right";
  options.window = "3,0";
  options.softcap = "30";
  options.alibi = true;
  options.docLens = "3,2";
  AttentionVariant variant = variantFromOptions(options, kShape, 0);
  EXPECT_EQ(variant.name(),
            "causal_bottom_right+window+document+softcap+alibi");
  EXPECT_EQ(variant.causal, CausalAlignment::BottomRight);
  EXPECT_EQ(variant.window->left, 3);
  EXPECT_EQ(variant.window->right, 0);
  EXPECT_EQ(*variant.softcap, 30.0f);
  EXPECT_EQ(variant.alibiSlopes, alibiSlopes(4));
  EXPECT_EQ(variant.docIds,
            (std::vector<std::int32_t>{0, 0, 0, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 2,
                                       2, 2}));
  EXPECT_EQ(variant.documentSource, "lengths 3,2");
  // --variant may repeat the flags' name.
  options.variantName = variant.name();
  EXPECT_EQ(variantFromOptions(options, kShape, 0).name(), options.variantName);
}

TEST(AttentionVariantOptionsTest, DocumentIdsComeFromAFile) {
  std::string path =
      (std::filesystem::path(testing::TempDir()) / "fa-doc-ids.npy").string();
  writeNpy(path, IntegerTensor{{2, 8},
                               {0, 0, 0, 0, 5, 5, 5, 5, //
                                1, 2, 3, 4, 5, 6, 7, 8}});
  VariantOptions options;
  options.docIdsPath = path;
  AttentionVariant variant = variantFromOptions(options, kShape, 0);
  EXPECT_EQ(variant.name(), "document");
  EXPECT_EQ(variant.docIds[4], 5);
  EXPECT_EQ(variant.documentSource, path);
  // Per (b, h): 16 + 16 pairs in batch row 0, 8 in row 1; 4 heads.
  EXPECT_EQ(variant.keptPairs(kShape), 4 * (32 + 8));
}

TEST(AttentionVariantOptionsTest, UserVariantTakesParamsAndAMask) {
  std::string path =
      (std::filesystem::path(testing::TempDir()) / "fa-mask.npy").string();
  IntegerTensor mask{{8, 8}, {}};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      mask.values.push_back(j < 3 || j <= i ? 7 : 0); // Nonzero keeps.
  writeNpy(path, mask);
  VariantOptions options;
  options.variantName = "prefix_lm";
  options.params = {"prefix=3", "table=t.npy"};
  options.maskPath = path;
  AttentionVariant variant = variantFromOptions(options, kShape, 0);
  EXPECT_EQ(variant.name(), "prefix_lm");
  EXPECT_TRUE(variant.custom());
  EXPECT_EQ(variant.params.at("prefix"), "3");
  EXPECT_EQ(variant.params.at("table"), "t.npy");
  EXPECT_EQ(variant.maskShape, (Shape{8, 8}));
  EXPECT_EQ(variant.mask[1 * 8 + 2], 1);
  EXPECT_EQ(variant.mask[1 * 8 + 3], 0);
  EXPECT_EQ(variant.keptPairs(kShape), 8 * (3 * 3 + 4 + 5 + 6 + 7 + 8));
  options.params = {"prefix=3", "prefix=4"};
  EXPECT_EQ(errorOf([&] { variantFromOptions(options, kShape, 0); }),
            "--param prefix is given twice");
}

TEST(AttentionVariantOptionsTest, SinksAreDrawnFromTheSeedOrRead) {
  VariantOptions options;
  options.window = "3,0";
  options.sinks = true;
  AttentionVariant variant = variantFromOptions(options, kShape, 42);
  EXPECT_EQ(variant.name(), "window+sinks");
  EXPECT_EQ(variant.sinks, randomSinks(4, 8, 42));
  EXPECT_EQ(variant.sinksSource, "random, seed 42");
  EXPECT_NE(variantFromOptions(options, kShape, 43).sinks, variant.sinks);

  std::string path =
      (std::filesystem::path(testing::TempDir()) / "fa-sinks.npy").string();
  writeNpy(path, HostTensor{{4}, {0.5f, -1.0f, 2.0f, 0.0f}}, DType::F32);
  options = {};
  options.sinksPath = path;
  variant = variantFromOptions(options, kShape, 0);
  EXPECT_EQ(variant.name(), "sinks");
  EXPECT_EQ(variant.sinks, (std::vector<float>{0.5f, -1.0f, 2.0f, 0.0f}));
  EXPECT_EQ(variant.sinksSource, path);

  writeNpy(path, HostTensor{{2, 2}, {0.5f, -1.0f, 2.0f, 0.0f}}, DType::F32);
  EXPECT_EQ(errorOf([&] { variantFromOptions(options, kShape, 0); }),
            "--sinks-file " + path +
                " has shape [2, 2], expected [4] [heads] (one logit per "
                "query head)");
  writeNpy(path, HostTensor{{4}, {0.5f, NAN, 2.0f, 0.0f}}, DType::F32);
  EXPECT_EQ(errorOf([&] { variantFromOptions(options, kShape, 0); }),
            "--sinks-file " + path + ": sink 1 is not a finite f32");
}

TEST(AttentionVariantOptionsTest, DropoutTakesPTheSeedAndAnOffset) {
  VariantOptions options;
  options.softcap = "30";
  options.dropout = "0.1";
  AttentionVariant variant =
      variantFromOptions(options, kShape, 0xfedcba9876543210ULL);
  EXPECT_EQ(variant.name(), "softcap+dropout");
  EXPECT_EQ(variant.dropout->p, 0.1f);
  EXPECT_EQ(variant.dropout->seed, 0xfedcba9876543210ULL);
  EXPECT_EQ(variant.dropout->offset, 0u);
  options.dropoutOffset = "4294967295";
  EXPECT_EQ(variantFromOptions(options, kShape, 0).dropout->offset,
            4294967295u);
  options.dropout = "0";
  EXPECT_EQ(variantFromOptions(options, kShape, 0).dropout->p, 0.0f);

  for (const char *bad : {"1", "-0.1", "0.99999999", "nan", "x", "1e400"}) {
    options.dropout = bad;
    EXPECT_EQ(errorOf([&] { variantFromOptions(options, kShape, 0); }),
              std::string("--dropout ") + bad +
                  ": expected a probability P with 0 <= P < 1 (as f32)");
  }
  options.dropout = "0.5";
  for (const char *bad : {"-1", "4294967296", "1.5", "x"}) {
    options.dropoutOffset = bad;
    EXPECT_EQ(errorOf([&] { variantFromOptions(options, kShape, 0); }),
              std::string("--dropout-offset ") + bad +
                  ": expected an integer from 0 to 4294967295 (u32)");
  }
}

} // namespace
