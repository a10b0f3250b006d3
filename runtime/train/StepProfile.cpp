//===- StepProfile.cpp - Where a training step's time goes ----------------===//

#include "fa/train/StepProfile.h"

#include "fa/runtime/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace fa::train {

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::AttentionForward:
    return "attention fwd";
  case Phase::AttentionBackward:
    return "attention bwd";
  case Phase::LayerNorm:
    return "layernorm fwd+bwd";
  case Phase::Matmul:
    return "matmul (cuBLASLt)";
  case Phase::Embedding:
    return "embedding";
  case Phase::HeadsLayout:
    return "heads layout";
  case Phase::BiasGrad:
    return "bias grad";
  case Phase::Gelu:
    return "gelu";
  case Phase::Residual:
    return "residual";
  case Phase::ElementwiseOther:
    return "elementwise (other)";
  case Phase::Loss:
    return "loss (cross-entropy)";
  case Phase::Optimizer:
    return "optimizer (norm, AdamW)";
  case Phase::Communication:
    return "communication";
  }
  return "?";
}

void ProfileTotals::addStep(const std::array<double, kPhaseCount> &stepPhaseMs,
                            double stepOverlappedMs, bool overlapped,
                            double stepWallMs) {
  for (int i = 0; i < kPhaseCount; ++i)
    phaseMs[i] += stepPhaseMs[i];
  overlappedCommunicationMs += stepOverlappedMs;
  hasOverlappedCommunication = hasOverlappedCommunication || overlapped;
  wallMs += stepWallMs;
  ++steps;
}

ProfileSummary summarizeProfile(const ProfileTotals &totals) {
  if (totals.steps <= 0)
    throw Error("the step profile holds no profiled step");
  const double steps = static_cast<double>(totals.steps);
  const double wall = totals.wallMs / steps;
  auto row = [&](const std::string &name, double msPerStep) {
    return ProfileRow{name, msPerStep, wall > 0 ? 100 * msPerStep / wall : 0};
  };
  ProfileSummary summary;
  summary.steps = totals.steps;
  for (int i = 0; i < kPhaseCount; ++i) {
    const double ms = totals.phaseMs[i] / steps;
    summary.phases.push_back(row(phaseName(static_cast<Phase>(i)), ms));
    summary.phaseSumMsPerStep += ms;
  }
  if (totals.hasOverlappedCommunication)
    summary.overlappedCommunication = row(
        "communication (overlapped)", totals.overlappedCommunicationMs / steps);
  const double idle = wall - summary.phaseSumMsPerStep;
  if (idle < 0)
    summary.overshootMsPerStep = -idle;
  summary.idle = row("idle/other", std::max(0.0, idle));
  summary.wall = row("step (wall)", wall);
  if (totals.wallMs > 0)
    summary.tokensPerSecond = static_cast<double>(totals.tokensPerStep) *
                              steps / (totals.wallMs / 1e3);
  return summary;
}

std::string formatProfileTable(const ProfileSummary &summary,
                               const std::string &stepRange) {
  std::string text = "step profile: " + stepRange + " (" +
                     std::to_string(summary.steps) +
                     (summary.steps == 1 ? " step" : " steps") +
                     "), CUDA events around each phase's launches\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-28s %10s %10s\n", "phase", "ms/step",
                "% of step");
  text += line;
  auto add = [&](const ProfileRow &row, const char *mark) {
    std::snprintf(line, sizeof line, "  %-28s %10.3f %9.1f%%%s\n",
                  row.name.c_str(), row.msPerStep, row.percentOfStep, mark);
    text += line;
  };
  for (const ProfileRow &row : summary.phases)
    add(row, "");
  if (summary.overlappedCommunication)
    add(*summary.overlappedCommunication, " *");
  add(summary.idle, summary.overshootMsPerStep > 0 ? " !" : "");
  add(summary.wall, "");
  std::snprintf(line, sizeof line,
                "  profiled steps: %.0f tokens/s (recording events adds host "
                "work; the throughput line leaves these steps out)\n",
                summary.tokensPerSecond);
  text += line;
  text += "  idle/other = step wall time (host clock) - the phases: host work "
          "(batch upload, launches), GPU gaps between phases, the loss's "
          "sync\n";
  if (summary.overlappedCommunication)
    text += "  * on the communication stream, overlapping the backward: not "
            "in the sum, not subtracted from idle/other (the training "
            "stream's wait for it is in idle/other)\n";
  if (summary.overshootMsPerStep > 0) {
    std::snprintf(line, sizeof line,
                  "  ! the phases sum to %.3f ms/step more than the wall time; "
                  "idle/other clamped to 0\n",
                  summary.overshootMsPerStep);
    text += line;
  }
  return text;
}

std::string profileJson(const ProfileSummary &summary) {
  auto entry = [](const ProfileRow &row) {
    return nlohmann::json{{"ms_per_step", row.msPerStep},
                          {"percent_of_step", row.percentOfStep}};
  };
  nlohmann::json phases = nlohmann::json::object();
  for (const ProfileRow &row : summary.phases)
    phases[row.name] = entry(row);
  if (summary.overlappedCommunication)
    phases[summary.overlappedCommunication->name] =
        entry(*summary.overlappedCommunication);
  nlohmann::json json = {{"steps", summary.steps},
                         {"phases", phases},
                         {"phase_sum_ms_per_step", summary.phaseSumMsPerStep},
                         {"idle_ms_per_step", summary.idle.msPerStep},
                         {"idle_clamped", summary.overshootMsPerStep > 0},
                         {"wall_ms_per_step", summary.wall.msPerStep},
                         {"tokens_per_second", summary.tokensPerSecond}};
  return json.dump();
}

StepWindow profileWindow(std::int64_t firstStep, std::int64_t lastStep,
                         std::int64_t count) {
  if (count <= 0)
    throw Error("--profile-steps " + std::to_string(count) +
                " must be positive");
  if (firstStep >= lastStep)
    return {firstStep, firstStep};
  const std::int64_t warmup =
      std::min<std::int64_t>(10, (lastStep - firstStep) / 2);
  const std::int64_t begin = firstStep + warmup;
  return {begin, std::min(lastStep, begin + count)};
}

StepProfiler::StepProfiler() = default;
StepProfiler::~StepProfiler() = default;

void StepProfiler::beginStep() {
  used = 0;
  creatingMs = 0;
  openPhase.reset();
  failure.clear();
  active = true;
}

std::size_t StepProfiler::open(Phase phase, const Stream &stream,
                               bool overlapped) {
  if (!overlapped) {
    if (openPhase && failure.empty())
      failure = std::string("a '") + phaseName(phase) +
                "' scope opened inside a '" + phaseName(*openPhase) +
                "' scope: its launches would count twice";
    openPhase = phase;
  }
  if (used == slots.size()) {
    // The first profiled step creates the events (later ones reuse them):
    // host time the step would not otherwise spend, left out of its wall.
    const auto started = std::chrono::steady_clock::now();
    slots.push_back(Slot{std::make_unique<Event>(), std::make_unique<Event>()});
    creatingMs += std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  }
  Slot &slot = slots[used];
  slot.phase = phase;
  slot.overlapped = overlapped;
  slot.start->record(stream);
  return used++;
}

void StepProfiler::close(std::size_t index, const Stream &stream) noexcept {
  if (!slots[index].overlapped)
    openPhase.reset();
  try {
    slots[index].stop->record(stream);
  } catch (const std::exception &error) {
    if (failure.empty())
      failure = std::string("ending a '") + phaseName(slots[index].phase) +
                "' scope: " + error.what();
  }
}

void StepProfiler::endStep(double wallMs) {
  active = false;
  if (!failure.empty())
    throw Error("step profile: " + failure);
  std::array<double, kPhaseCount> phaseMs{};
  double overlappedMs = 0;
  bool overlapped = false;
  for (std::size_t i = 0; i < used; ++i) {
    const Slot &slot = slots[i];
    const double ms = Event::elapsedMs(*slot.start, *slot.stop);
    if (slot.overlapped) {
      overlappedMs += ms;
      overlapped = true;
    } else {
      phaseMs[static_cast<int>(slot.phase)] += ms;
    }
  }
  sums.addStep(phaseMs, overlappedMs, overlapped,
               std::max(0.0, wallMs - creatingMs));
}

PhaseScope::PhaseScope(StepProfiler *profiler, Phase phase,
                       const Stream &stream, bool overlapped)
    : stream(stream) {
  if (!profiler || !profiler->recording())
    return;
  slot = profiler->open(phase, stream, overlapped);
  this->profiler = profiler;
}

PhaseScope::~PhaseScope() {
  if (profiler)
    profiler->close(slot, stream);
}

} // namespace fa::train
