//===- ScheduleTest.cpp - warm-up, cosine decay and the floor -------------===//

#include "fa/train/Schedule.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fa::train;
using namespace fa::traintest;

namespace {

/// max 1e-3, min 1e-4, 10 warm-up steps, 110 in all: 100 steps of decay.
LrSchedule schedule() { return {1e-3f, 1e-4f, 10, 110}; }

TEST(ScheduleTest, WarmsUpLinearlyToTheMaximum) {
  LrSchedule s = schedule();
  EXPECT_FLOAT_EQ(learningRate(s, 0), 1e-4f); // maxLr / warmup, not 0.
  EXPECT_FLOAT_EQ(learningRate(s, 4), 5e-4f);
  EXPECT_FLOAT_EQ(learningRate(s, 9), 1e-3f);
}

TEST(ScheduleTest, DecaysAlongACosineToTheMinimum) {
  LrSchedule s = schedule();
  EXPECT_FLOAT_EQ(learningRate(s, 10), 1e-3f);   // Decay starts at the top.
  EXPECT_FLOAT_EQ(learningRate(s, 60), 5.5e-4f); // Halfway: the mean.
  // A quarter of the way: min + (max - min) (1 + cos(pi / 4)) / 2.
  EXPECT_FLOAT_EQ(learningRate(s, 35),
                  1e-4f + 9e-4f * (1.0f + std::sqrt(0.5f)) / 2.0f);
  EXPECT_FLOAT_EQ(learningRate(s, 110), 1e-4f);
  EXPECT_FLOAT_EQ(learningRate(s, 1000000), 1e-4f);
  for (std::int64_t step = 10; step < 110; ++step)
    EXPECT_GT(learningRate(s, step), learningRate(s, step + 1)) << step;
}

TEST(ScheduleTest, NoWarmUpOrNoDecay) {
  LrSchedule constant{1e-3f, 1e-3f, 0, 50};
  for (std::int64_t step : {0, 25, 50, 99})
    EXPECT_FLOAT_EQ(learningRate(constant, step), 1e-3f);
  LrSchedule warmupOnly{1e-3f, 0.0f, 4, 4};
  EXPECT_FLOAT_EQ(learningRate(warmupOnly, 3), 1e-3f);
  EXPECT_FLOAT_EQ(learningRate(warmupOnly, 4), 0.0f);
}

TEST(ScheduleTest, RejectsInconsistentSchedules) {
  auto with = [](auto edit) {
    LrSchedule s = schedule();
    edit(s);
    return s;
  };
  FA_EXPECT_ERROR(learningRate(schedule(), -1), "step -1 is negative");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.minLr = 2e-3f; }).validate(),
                  "min_lr must be in [0, max_lr");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.minLr = -1e-4f; }).validate(),
                  "min_lr must be in [0, max_lr");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.maxLr = 0.0f; }).validate(),
                  "max_lr must be positive");
  FA_EXPECT_ERROR(with([](LrSchedule &s) {
                    s.maxLr = std::numeric_limits<float>::quiet_NaN();
                  }).validate(),
                  "max_lr must be positive");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.warmupSteps = 111; }).validate(),
                  "warm-up steps must be in [0, total steps = 110], got 111");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.warmupSteps = -1; }).validate(),
                  "warm-up steps");
  FA_EXPECT_ERROR(with([](LrSchedule &s) { s.totalSteps = 0; }).validate(),
                  "total steps must be positive");
  // learningRate validates too.
  FA_EXPECT_ERROR(learningRate(with([](LrSchedule &s) { s.minLr = 1.0f; }), 0),
                  "min_lr");
}

} // namespace

TEST(ScheduleTest, DefaultWarmUpIsATenthOfAShortRunAndAtMost100Steps) {
  EXPECT_EQ(defaultWarmupSteps(5), 0);
  EXPECT_EQ(defaultWarmupSteps(50), 5);
  EXPECT_EQ(defaultWarmupSteps(999), 99);
  EXPECT_EQ(defaultWarmupSteps(5000), 100);
  for (std::int64_t steps : {1, 7, 50, 1000, 100000}) {
    LrSchedule s{1e-3f, 1e-4f, defaultWarmupSteps(steps), steps};
    EXPECT_NO_THROW(s.validate()) << steps;
  }
}
