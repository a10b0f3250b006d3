//===- Schedule.h - The learning-rate schedule ------------------*- C++ -*-===//
//
// Linear warm-up, then cosine decay to a floor (GPT-2/GPT-3, llm.c). Steps
// count from 0; with W = warmupSteps, S = totalSteps:
//
//   step < W:       lr = maxLr * (step + 1) / W          (maxLr at step W - 1)
//   W <= step < S:  p  = (step - W) / (S - W)             (0 at W, -> 1 at S)
//                   lr = minLr + (maxLr - minLr) * (1 + cos(pi p)) / 2
//   step >= S:      lr = minLr
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_SCHEDULE_H
#define FA_TRAIN_SCHEDULE_H

#include <cstdint>

namespace fa::train {

struct LrSchedule {
  float maxLr = 6e-4f;
  float minLr = 6e-5f;
  std::int64_t warmupSteps = 100;
  std::int64_t totalSteps = 5000;

  /// Throws fa::Error naming the bad value unless 0 <= minLr <= maxLr,
  /// maxLr > 0 (both finite), totalSteps > 0 and
  /// 0 <= warmupSteps <= totalSteps.
  void validate() const;
};

/// The warm-up a run of `totalSteps` gets unless told otherwise: 100 steps
/// (nanoGPT's and llm.c's), but never more than a tenth of the run, so that
/// a short run still spends most of its steps at and after the peak.
std::int64_t defaultWarmupSteps(std::int64_t totalSteps);

/// The learning rate of step `step` (>= 0; fa::Error otherwise, or when the
/// schedule does not validate).
float learningRate(const LrSchedule &schedule, std::int64_t step);

} // namespace fa::train

#endif // FA_TRAIN_SCHEDULE_H
