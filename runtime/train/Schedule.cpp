//===- Schedule.cpp -------------------------------------------------------===//

#include "fa/train/Schedule.h"

#include "fa/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace fa::train {

void LrSchedule::validate() const {
  auto fail = [](const std::string &message) {
    throw Error("learning-rate schedule: " + message);
  };
  if (!std::isfinite(maxLr) || !(maxLr > 0.0f))
    fail("max_lr must be positive, got " + std::to_string(maxLr));
  if (!std::isfinite(minLr) || minLr < 0.0f || minLr > maxLr)
    fail("min_lr must be in [0, max_lr = " + std::to_string(maxLr) + "], got " +
         std::to_string(minLr));
  if (totalSteps <= 0)
    fail("total steps must be positive, got " + std::to_string(totalSteps));
  if (warmupSteps < 0 || warmupSteps > totalSteps)
    fail("warm-up steps must be in [0, total steps = " +
         std::to_string(totalSteps) + "], got " + std::to_string(warmupSteps));
}

std::int64_t defaultWarmupSteps(std::int64_t totalSteps) {
  return std::clamp<std::int64_t>(totalSteps / 10, 0, 100);
}

float learningRate(const LrSchedule &schedule, std::int64_t step) {
  schedule.validate();
  if (step < 0)
    throw Error("learning-rate schedule: step " + std::to_string(step) +
                " is negative");
  const double maxLr = schedule.maxLr, minLr = schedule.minLr;
  if (step >= schedule.totalSteps)
    return schedule.minLr;
  if (step < schedule.warmupSteps)
    return static_cast<float>(maxLr * static_cast<double>(step + 1) /
                              static_cast<double>(schedule.warmupSteps));
  const double progress =
      static_cast<double>(step - schedule.warmupSteps) /
      static_cast<double>(schedule.totalSteps - schedule.warmupSteps);
  const double pi = std::acos(-1.0);
  return static_cast<float>(minLr + (maxLr - minLr) *
                                        (1.0 + std::cos(pi * progress)) / 2.0);
}

} // namespace fa::train
