//===- Data.h - Training tokens and their batches ---------------*- C++ -*-===//
//
// A corpus is a sequence of tokens: the bytes of a text file (vocab 256), or
// the uint16 token shards that nanoGPT's prepare.py (raw little-endian
// uint16, no header) and llm.c (a 1024-byte header, then uint16 tokens)
// write. It is split once into a training range (the front) and a validation
// range (the back), or a separate file is the validation range. Training
// batches are random windows of the training range chosen by a hash of
// (seed, step, global row), so a run resumed at step k sees the batches it
// would have seen without saving any sampler state; validation batches are
// fixed, non-overlapping windows of the validation range.
//
// A window of seq + 1 tokens at `start` gives one row: inputs
// tokens[start, start + seq) and targets tokens[start + 1, start + seq + 1).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_DATA_H
#define FA_TRAIN_DATA_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa::train {

/// How a data file holds its tokens.
enum class DataFormat {
  Bytes, // Every byte is a token (0 .. 255).
  U16,   // uint16 little-endian tokens, with or without llm.c's header.
};

/// "bytes" or "u16"; anything else throws fa::Error listing both.
DataFormat parseDataFormat(const std::string &name);
const char *dataFormatName(DataFormat format);

/// llm.c's token shard header: kLlmcHeaderInts int32 (little-endian), [0]
/// the magic, [1] the version (1, or 2 in newer llm.c), [2] the number of
/// uint16 tokens that follow.
constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::size_t kLlmcHeaderInts = 256;
constexpr std::size_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;

/// A corpus's tokens, with a name for messages. uint16 holds every token
/// either format can store (bytes and u16 shards alike); batches widen them
/// to int32.
struct TokenCorpus {
  std::string name; // The file's path, or "synthetic (seed 7, 1000000 bytes)".
  std::vector<std::uint16_t> tokens;
  /// Where token i lies in the file: byte headerBytes + i * tokenBytes.
  std::size_t headerBytes = 0;
  std::size_t tokenBytes = 1;
};

/// The bytes of the file at `path`, one token each. Throws fa::Error naming
/// the file when it cannot be opened or read (with the system's reason) or
/// is empty.
TokenCorpus loadCorpus(const std::string &path);

/// The tokens of a uint16 shard. A file whose first int32 is kLlmcMagic is
/// llm.c's: its version must be 1 or 2 and its token count must match what
/// the file holds after the header. Any other file is raw uint16 (nanoGPT's
/// train.bin / val.bin): an odd number of bytes is an error. Throws
/// fa::Error naming the file for those, an unreadable, missing or empty
/// file, and a shard without tokens.
TokenCorpus loadTokenShard(const std::string &path);

/// loadCorpus or loadTokenShard.
TokenCorpus loadCorpus(const std::string &path, DataFormat format);

/// Throws fa::Error naming the corpus, the first token >= vocab, its
/// offset (in tokens and in bytes of the file) and --vocab.
void checkTokensBelow(const TokenCorpus &corpus, std::int64_t vocab);

/// `bytes` bytes (positive) of English-like sentences from a fixed grammar:
/// about 100 word forms, subject-verb number agreement, optional adjectives,
/// adverbs, prepositional phrases and joined clauses, paragraphs of a few
/// sentences. The same (bytes, seed) gives the same text on every platform,
/// and a shorter text is a prefix of a longer one with the same seed. This is
/// the trainer's text when no file is given: learnable well below the 8
/// bits per byte of uniform bytes, but not by counting characters alone.
TokenCorpus syntheticCorpus(std::size_t bytes, std::uint64_t seed);

/// A contiguous run of a corpus's tokens. It views the corpus, which must
/// outlive it (and every sampler built on it).
struct TokenRange {
  const std::uint16_t *data = nullptr;
  std::size_t size = 0;
};

struct CorpusSplit {
  TokenRange train;
  TokenRange validation;
};

/// The last floor(size * valFraction) tokens are validation, the rest
/// training. Throws unless 0 < valFraction < 1. Whether each part is long
/// enough is checked by BatchSampler, which knows the sequence length.
CorpusSplit splitCorpus(const TokenCorpus &corpus, double valFraction);

/// Where a run's tokens come from (TrainOptions holds one).
struct DataOptions {
  /// Training data; empty: the synthetic corpus (bytes).
  std::string path;
  DataFormat format = DataFormat::Bytes;
  /// Validation data (same format); empty: the last valFraction of `path`.
  std::string validationPath;
  double valFraction = 0.1;
  std::size_t syntheticBytes = std::size_t{1} << 20;
};

/// The host memory TrainingData::load(options, ...) will hold: 2 bytes a
/// token, from the files' sizes (a file that cannot be examined counts 0;
/// loading it reports why).
std::uint64_t dataHostBytes(const DataOptions &options);

/// A run's training and validation tokens, owned, and their split.
class TrainingData {
public:
  /// Loads `options` (the synthetic corpus drawn from `seed`), checks every
  /// token is below `vocab` and splits it. Throws fa::Error naming the file
  /// and the option to change.
  static TrainingData load(const DataOptions &options, std::int64_t vocab,
                           std::uint64_t seed);

  /// Views into this object (valid while it lives and is not moved from).
  CorpusSplit split() const;
  /// The training corpus's name, and the validation file's when separate:
  /// "train.bin (u16)", "a.bin (u16), validation b.bin".
  std::string describe() const;

private:
  TokenCorpus train, validation; // validation: empty unless a separate file.
  DataFormat format = DataFormat::Bytes;
  double valFraction = 0.1;
};

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
  /// hold at least seq + 1 tokens (the message names --seq and the data
  /// options).
  BatchSampler(const CorpusSplit &split, std::int64_t batch, std::int64_t seq,
               std::uint64_t seed, std::int64_t rank = 0,
               std::int64_t worldSize = 1);

  /// Step `step`'s (>= 0) batch for this rank: row b is the window starting
  /// at trainWindowStart(step, b). Depends only on (seed, step, rank *
  /// batch + b).
  void trainBatch(std::int64_t step, std::vector<std::int32_t> &tokens,
                  std::vector<std::int32_t> &targets) const;

  /// Validation batch `index` (>= 0): row b is window (index * batch + b)
  /// modulo validationWindows(), window w starting at token w * seq.
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
