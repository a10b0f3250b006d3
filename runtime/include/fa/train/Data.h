//===- Data.h - Byte-level training text and its batches --------*- C++ -*-===//
//
// The model reads bytes: every byte of the text is one token (kByteVocab).
// A corpus is split once into a training range (the front) and a validation
// range (the back). Training batches are random windows of the training range
// chosen by a hash of (seed, step, global row), so a run resumed at step k sees
// the batches it would have seen without saving any sampler state; validation
// batches are fixed, non-overlapping windows of the validation range.
//
// A window of seq + 1 bytes at `start` gives one row: inputs
// bytes[start, start + seq) and targets bytes[start + 1, start + seq + 1).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_DATA_H
#define FA_TRAIN_DATA_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa::train {

/// A text as tokens (its bytes), with a name for messages.
struct ByteCorpus {
  std::string name; // The file's path, or "synthetic (seed 7, 1000000 bytes)".
  std::vector<std::uint8_t> bytes;
};

/// The bytes of the file at `path`. Throws fa::Error naming the file when it
/// cannot be opened or read (with the system's reason) or is empty.
ByteCorpus loadCorpus(const std::string &path);

/// `bytes` bytes (positive) of English-like sentences from a fixed grammar:
/// about 100 word forms, subject-verb number agreement, optional adjectives,
/// adverbs, prepositional phrases and joined clauses, paragraphs of a few
/// sentences. The same (bytes, seed) gives the same text on every platform,
/// and a shorter text is a prefix of a longer one with the same seed. This is
/// the trainer's text when no file is given: learnable well below the 8
/// bits per byte of uniform bytes, but not by counting characters alone.
ByteCorpus syntheticCorpus(std::size_t bytes, std::uint64_t seed);

/// A contiguous run of a corpus's bytes. It views the corpus, which must
/// outlive it (and every sampler built on it).
struct TokenRange {
  const std::uint8_t *data = nullptr;
  std::size_t size = 0;
};

struct CorpusSplit {
  TokenRange train;
  TokenRange validation;
};

/// The last floor(size * valFraction) bytes are validation, the rest
/// training. Throws unless 0 < valFraction < 1. Whether each part is long
/// enough is checked by BatchSampler, which knows the sequence length.
CorpusSplit splitCorpus(const ByteCorpus &corpus, double valFraction);

/// The bytes of an int32 token (or target) array, as DeviceBuffer::upload
/// takes them.
std::vector<std::uint8_t> tokenBytes(const std::vector<std::int32_t> &tokens);

/// Training and validation batches of `batch` rows of `seq` tokens, as
/// row-major [batch, seq] int32 arrays (tokens and targets each).
///
/// Data parallelism: a step's global batch has batch * worldSize rows, and
/// rank r reads rows r * batch .. (r + 1) * batch - 1 of it. A row's window
/// depends on (seed, step, global row) only, so the ranks of a data-parallel
/// run read, together, exactly the batch one process with batch * worldSize
/// rows reads (and its losses can be compared with it), and no two ranks
/// read the same row. The validation range is not split: validationBatch(i)
/// is the same on every rank, and distributed validation gives each rank
/// different indices (rank r takes i = r, r + worldSize, ... below
/// validationBatches()) and sums the losses across ranks.
class BatchSampler {
public:
  /// Throws fa::Error unless batch, seq and worldSize are positive,
  /// 0 <= rank < worldSize, and the training and validation ranges each
  /// hold at least seq + 1 bytes.
  BatchSampler(const CorpusSplit &split, std::int64_t batch, std::int64_t seq,
               std::uint64_t seed, std::int64_t rank = 0,
               std::int64_t worldSize = 1);

  /// Step `step`'s (>= 0) batch for this rank: row b is the window starting
  /// at trainWindowStart(step, b). Depends only on (seed, step, rank *
  /// batch + b).
  void trainBatch(std::int64_t step, std::vector<std::int32_t> &tokens,
                  std::vector<std::int32_t> &targets) const;

  /// Validation batch `index` (>= 0): row b is window (index * batch + b)
  /// modulo validationWindows(), window w starting at byte w * seq.
  void validationBatch(std::int64_t index, std::vector<std::int32_t> &tokens,
                       std::vector<std::int32_t> &targets) const;

  /// Validation windows: (validation size - 1) / seq, >= 1. Their inputs do
  /// not overlap (a window's last target is the next one's first input).
  std::int64_t validationWindows() const;
  /// ceil(validationWindows() / batch): batches 0 .. validationBatches() - 1
  /// see every window at least once (the last one wraps round to the start
  /// when the windows do not fill it).
  std::int64_t validationBatches() const;

  /// Where row `row` of this rank's part of step `step`'s batch starts, as
  /// an offset into the training range; always in [0, size - seq - 1].
  std::size_t trainWindowStart(std::int64_t step, std::int64_t row) const;
  /// Where row `row` of validation batch `index` starts, as an offset into
  /// the validation range.
  std::size_t validationWindowStart(std::int64_t index, std::int64_t row) const;

  std::int64_t batch() const { return rows; }
  std::int64_t seq() const { return length; }

private:
  CorpusSplit split;
  std::int64_t rows, length;
  std::uint64_t seed;
  std::int64_t rank;
};

} // namespace fa::train

#endif // FA_TRAIN_DATA_H
