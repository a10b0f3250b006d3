//===- StepProfile.h - Where a training step's time goes --------*- C++ -*-===//
//
// `fa-run train --profile`: a per-phase breakdown of training steps.
//
// How it measures: a PhaseScope around each group of launches of one phase
// records a CUDA event before and after them on the stream they go to. The
// GPU time between the two is the phase's (kernels and the gaps between the
// kernels of that group). Events, rather than a profiler's per-kernel
// records, because they need nothing but the driver, cost two event records
// per scope, and can be read at the end of the step: a profiled step ends in
// the loss's sync anyway, so reading them adds no sync to the step, and the
// steps that are not profiled record nothing (a scope then tests a pointer).
//
// Every launch of a step is attributed once: scopes do not nest (opening one
// inside another is a programming error, reported when the step ends).
// What no scope covers is idle/other: step wall time (host clock, from the
// step's start to its loss on the host) minus the sum of the phases: host
// work (sampling and uploading the batch, launching), gaps while the GPU
// waits for launches, and the final sync. It is never negative: a sum above
// the wall (which one stream's non-nesting scopes cannot produce) is clamped
// to 0 and flagged in the table.
//
// Communication that overlaps the backward (--ddp overlap) runs on the
// communication stream: its scopes are timed there and reported on their own
// row, "communication (overlapped)", neither in the sum nor subtracted from
// idle/other (the training stream's wait for the last bucket is idle there).
//
// The accumulation and the table (ProfileTotals, summarizeProfile,
// formatProfileTable, profileWindow) are plain arithmetic, tested without a
// GPU; StepProfiler and PhaseScope hold the events.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_STEPPROFILE_H
#define FA_TRAIN_STEPPROFILE_H

#include "fa/runtime/Stream.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa::train {

/// The phases of a step, each launch in exactly one.
enum class Phase {
  AttentionForward,  // The library's attention forward kernel.
  AttentionBackward, // Its backward (delta, dK/dV, dQ).
  LayerNorm,         // The library's LayerNorm forward and backward.
  Matmul,            // cuBLASLt: linear layers forward and backward, the head
                     // (the forward's bias add is cuBLASLt's epilogue).
  // The elementwise and layout kernels, a phase per kind, so that each
  // fusion candidate's share shows on its own:
  Embedding,        // Token + position embedding forward; its backward (the wte
                    // scatter-add and the wpe column sums).
  HeadsLayout,      // Fused QKV to [B, H, N, D] heads and the heads merged back
                    // to [M, C], forward (split, merge) and backward (unmerge,
                    // join).
  BiasGrad,         // The linear layers' bias-gradient column sums (partials
                    // and their finishing sum).
  Gelu,             // GELU forward and backward.
  Residual,         // Residual adds of the forward, the backward's adds of a
                    // LayerNorm's dx into the residual gradient.
  ElementwiseOther, // Any other elementwise launch of a step (casts,
                    // zeroing). Today's step has none, so the row reads 0;
                    // a new one goes here until it earns a row of its own.
  Loss,             // Cross-entropy forward and backward, the loss's sum.
  Optimizer,        // Gradient norm, clipping and AdamW.
  Communication,    // NCCL on the training stream (0 on one GPU).
};
inline constexpr int kPhaseCount = 13;
static_assert(static_cast<int>(Phase::Communication) + 1 == kPhaseCount,
              "kPhaseCount counts the phases; Communication is the last");

/// "attention fwd", "matmul", ...: the table's row names.
const char *phaseName(Phase phase);

/// Milliseconds of each phase, summed over the profiled steps.
struct ProfileTotals {
  std::array<double, kPhaseCount> phaseMs{};
  double overlappedCommunicationMs = 0; // On the communication stream.
  bool hasOverlappedCommunication = false;
  double wallMs = 0;
  std::int64_t steps = 0;
  std::int64_t tokensPerStep = 0; // All ranks' tokens of one step.

  /// One step's phases (ms), overlapped communication and host wall time.
  void addStep(const std::array<double, kPhaseCount> &stepPhaseMs,
               double stepOverlappedMs, bool overlapped, double stepWallMs);
};

/// Per-step means and shares of the wall time.
struct ProfileRow {
  std::string name;
  double msPerStep = 0;
  double percentOfStep = 0;
};

struct ProfileSummary {
  std::vector<ProfileRow> phases; // kPhaseCount rows, in Phase order.
  std::optional<ProfileRow> overlappedCommunication;
  ProfileRow idle; // wall - sum of phases, at least 0.
  ProfileRow wall; // 100%.
  double phaseSumMsPerStep = 0;
  /// The phases summed to more than the wall: idle was clamped to 0 and
  /// this is by how much (ms per step); 0 otherwise.
  double overshootMsPerStep = 0;
  std::int64_t steps = 0;
  double tokensPerSecond = 0; // Of the profiled steps themselves.
};

/// Throws fa::Error when no step was profiled.
ProfileSummary summarizeProfile(const ProfileTotals &totals);

/// The table (a row per phase, idle/other, step (wall)) and its footnotes;
/// `stepRange` names the profiled steps ("steps 11-30").
std::string formatProfileTable(const ProfileSummary &summary,
                               const std::string &stepRange);

/// The JSON object of a summary (phase name -> ms/step and %, idle, wall,
/// steps, tokens/s): one line of --log.
std::string profileJson(const ProfileSummary &summary);

/// Which steps to profile, 0-based [begin, end): `count` steps after up to
/// 10 warm-up steps (cuBLASLt plans, the driver's first launches), or after
/// half the run when it is shorter; at least one step when
/// first < last.
struct StepWindow {
  std::int64_t begin = 0, end = 0;
  bool contains(std::int64_t step) const { return step >= begin && step < end; }
  std::int64_t size() const { return end - begin; }
};
StepWindow profileWindow(std::int64_t firstStep, std::int64_t lastStep,
                         std::int64_t count);

/// The events of the profiled steps. A step: beginStep(), the step's scopes,
/// then (after the step's work has been waited for) endStep().
class StepProfiler {
public:
  StepProfiler();
  ~StepProfiler();
  StepProfiler(const StepProfiler &) = delete;
  StepProfiler &operator=(const StepProfiler &) = delete;

  /// Scopes record events from here to endStep().
  void beginStep();
  /// Reads the step's events (waits for them), adds the step to the totals
  /// with `wallMs` (less the time spent creating events), and stops
  /// recording. Throws fa::Error if a scope failed
  /// to record or scopes nested.
  void endStep(double wallMs);
  bool recording() const { return active; }
  ProfileTotals &totals() { return sums; }
  const ProfileTotals &totals() const { return sums; }

private:
  friend class PhaseScope;
  /// Records the start event; returns the scope's slot.
  std::size_t open(Phase phase, const Stream &stream, bool overlapped);
  /// Records the stop event (never throws: a failure is kept for endStep).
  void close(std::size_t slot, const Stream &stream) noexcept;

  struct Slot {
    std::unique_ptr<Event> start, stop;
    Phase phase = Phase::ElementwiseOther;
    bool overlapped = false;
  };
  std::vector<Slot> slots; // Reused from step to step.
  std::size_t used = 0;
  bool active = false;
  std::optional<Phase> openPhase; // The training stream's open scope.
  std::string failure;            // The first error a scope met.
  double creatingMs = 0;          // Host time this step spent creating events.
  ProfileTotals sums;
};

/// `PhaseScope scope(profiler, Phase::Matmul, stream);` around the launches
/// of one phase. With a null profiler, or one not recording this step, it
/// does nothing. `overlapped`: a stream that runs beside the training
/// stream (the DDP communication stream).
class PhaseScope {
public:
  PhaseScope(StepProfiler *profiler, Phase phase, const Stream &stream,
             bool overlapped = false);
  ~PhaseScope();
  PhaseScope(const PhaseScope &) = delete;
  PhaseScope &operator=(const PhaseScope &) = delete;

private:
  StepProfiler *profiler = nullptr;
  const Stream &stream;
  std::size_t slot = 0;
};

} // namespace fa::train

#endif // FA_TRAIN_STEPPROFILE_H
