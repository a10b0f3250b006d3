//===- EpilogueFusionTest.cpp - --epilogues and the product defaults ------===//

#include "fa/train/GptModel.h"
#include "fa/train/GradCheck.h"
#include "fa/train/Trainer.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

using namespace fa;
using namespace fa::train;

namespace {

bool same(const EpilogueFusion &a, const EpilogueFusion &b) {
  return a.geluForward == b.geluForward && a.geluBackward == b.geluBackward &&
         a.biasGradients == b.biasGradients;
}

TEST(EpilogueFusionTest, ParsesNoneAllAndLists) {
  EXPECT_TRUE(same(EpilogueFusion::parse("none"), {false, false, false}));
  EXPECT_TRUE(same(EpilogueFusion::parse("all"), {true, true, true}));
  EXPECT_TRUE(same(EpilogueFusion::parse("bias-grad"), {false, false, true}));
  EXPECT_TRUE(same(EpilogueFusion::parse("gelu-backward,gelu-forward"),
                   {true, true, false}));
}

TEST(EpilogueFusionTest, DescribeIsWhatParseTakes) {
  for (const char *list : {"none", "gelu-forward", "gelu-forward,bias-grad",
                           "gelu-forward,gelu-backward,bias-grad"}) {
    EpilogueFusion fusion = EpilogueFusion::parse(list);
    EXPECT_EQ(fusion.describe(), list);
    EXPECT_TRUE(same(EpilogueFusion::parse(fusion.describe()), fusion));
  }
}

TEST(EpilogueFusionTest, UnknownNameIsNamed) {
  try {
    EpilogueFusion::parse("gelu-forward,bias");
    FAIL() << "parse accepted 'bias'";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("unknown epilogue 'bias'"),
              std::string::npos)
        << error.what();
  }
}

// The defaults that measured fastest on an H100 together
// (bench/results/2026-12-07-train-ce-bias-stream): GELU's forward and
// backward in the products, the bias gradients in a kernel of their own on
// the weight-gradient stream, for training and its gradient check alike.
TEST(EpilogueFusionTest, DefaultsRunTheBiasGradientsBesideTheStream) {
  EXPECT_EQ(EpilogueFusion().describe(), "gelu-forward,gelu-backward");
  EXPECT_TRUE(TrainOptions().weightGradStream);
  EXPECT_TRUE(GradCheckOptions().weightGradStream);
  EXPECT_TRUE(same(TrainOptions().epilogues, GradCheckOptions().epilogues));
}

} // namespace
