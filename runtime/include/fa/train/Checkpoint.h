//===- Checkpoint.h - Saving and resuming a training run --------*- C++ -*-===//
//
// A checkpoint holds everything a run needs to continue bit for bit: the
// model's config, the step, the seed (the data sampler is stateless, see
// Data.h), the hyperparameters to check on resume, and the flat f32
// parameters and AdamW moments (ParameterLayout(config).totalSize() each).
//
// The file, version 1:
//
//   "FA-CHECKPOINT 1\n"                       magic line, 16 bytes
//   u64 header length in bytes, little-endian
//   header: JSON {"config": {"layers", "d_model", "heads", "seq", "vocab",
//                            "tied_head"},
//                 "step", "seed", "hyperparameters": <any JSON>,
//                 "arrays": {"parameters": N, "adam_m": N, "adam_v": N}}
//   parameters, adam_m, adam_v: N little-endian f32 each
//   u64 FNV-1a 64 of every byte before it, little-endian
//
// Saving is atomic: the file is written to `path`.tmp.<pid> beside `path`,
// flushed to disk, renamed over `path` and the directory flushed, so `path`
// holds the old checkpoint or the new one, never part of one.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_CHECKPOINT_H
#define FA_TRAIN_CHECKPOINT_H

#include "fa/train/GptConfig.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa::train {

struct TrainState {
  GptConfig config;
  /// Steps completed: the step a resumed run starts with.
  std::int64_t step = 0;
  std::uint64_t seed = 0;
  /// JSON text chosen by the trainer (learning rates, batch, ...). Saved as
  /// JSON, loaded back as compact JSON text (nlohmann's dump()), so compare
  /// it parsed, or produce it with dump() too.
  std::string hyperparameters = "{}";
  std::vector<float> parameters;
  std::vector<float> adamM;
  std::vector<float> adamV;
};

/// Writes `state` to `path` atomically (see above). Throws fa::Error naming
/// the file, with the system's reason, when it cannot be written, and before
/// writing anything when the state is inconsistent: an invalid config, a
/// negative step, hyperparameters that are not JSON, or an array whose size
/// is not the config's ParameterLayout::totalSize(), or a header longer than
/// loading accepts (1 MiB). On failure the
/// temporary file is removed and `path` is untouched.
void saveCheckpoint(const std::string &path, const TrainState &state);

/// Reads a checkpoint written by saveCheckpoint. Throws fa::Error naming the
/// file for a missing or unreadable file, a wrong magic line or version, a
/// truncated (or overlong) file, a header that does not parse, a checksum
/// mismatch, and arrays whose sizes do not match the config's layout. The
/// file is untrusted: the header must be at most 1 MiB and its model sizes
/// bounded (layers <= 4096, d_model <= 131072, seq and vocab <= 2^24), and
/// the file's size and checksum are checked before the arrays are allocated.
TrainState loadCheckpoint(const std::string &path);

/// The format's checksum: FNV-1a 64 over `size` bytes, continuing from
/// `hash` (start with kFnv1aOffset).
constexpr std::uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;
std::uint64_t fnv1a64(const void *data, std::size_t size,
                      std::uint64_t hash = kFnv1aOffset);

} // namespace fa::train

#endif // FA_TRAIN_CHECKPOINT_H
