//===- Data.cpp -----------------------------------------------------------===//

#include "fa/train/Data.h"

#include "fa/runtime/Error.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <system_error>

namespace fa::train {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token shards are read as little-endian uint16 in place");

namespace {

std::string systemError(int error) { return std::strerror(error); }

using File = std::unique_ptr<std::FILE, int (*)(std::FILE *)>;

File openFile(const std::string &path, const std::string &what) {
  File file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file)
    throw Error(what + ": cannot open it: " + systemError(errno));
  return file;
}

/// Appends the rest of `file` to `out` as raw bytes (out's elements are
/// `Element`s; a trailing partial element is zero-filled) and returns the
/// bytes read.
template <typename Element>
std::size_t readAll(std::FILE *file, std::vector<Element> &out,
                    const std::string &what) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  // A regular file's size is known: room for it and one more chunk (the
  // read that finds the end) keeps a large shard from being copied as the
  // vector grows.
  struct stat info;
  if (fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode))
    out.resize((static_cast<std::size_t>(info.st_size) + kChunk) /
                   sizeof(Element) +
               1);
  std::size_t bytes = 0;
  while (true) {
    const std::size_t needed =
        (bytes + kChunk + sizeof(Element) - 1) / sizeof(Element);
    if (out.size() < needed)
      out.resize(std::max(needed, out.size() + out.size() / 2));
    const std::size_t read = std::fread(
        reinterpret_cast<char *>(out.data()) + bytes, 1, kChunk, file);
    bytes += read;
    if (read < kChunk)
      break;
  }
  if (std::ferror(file))
    throw Error(what + ": cannot read it: " + systemError(errno));
  out.resize((bytes + sizeof(Element) - 1) / sizeof(Element));
  return bytes;
}

std::int32_t littleEndianInt32(const std::uint16_t *words) {
  const std::uint32_t value = static_cast<std::uint32_t>(words[0]) |
                              static_cast<std::uint32_t>(words[1]) << 16;
  std::int32_t result;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

} // namespace

DataFormat parseDataFormat(const std::string &name) {
  if (name == "bytes")
    return DataFormat::Bytes;
  if (name == "u16")
    return DataFormat::U16;
  throw Error("unknown data format '" + name + "': use bytes or u16");
}

const char *dataFormatName(DataFormat format) {
  return format == DataFormat::U16 ? "u16" : "bytes";
}

TokenCorpus loadCorpus(const std::string &path) {
  const std::string what = "loading the text " + path;
  File file = openFile(path, what);
  std::vector<std::uint8_t> bytes;
  readAll(file.get(), bytes, what);
  if (bytes.empty())
    throw Error(what + ": the file is empty");
  TokenCorpus corpus{path, {bytes.begin(), bytes.end()}, 0, 1};
  return corpus;
}

TokenCorpus loadTokenShard(const std::string &path) {
  const std::string what = "loading the uint16 token shard " + path;
  File file = openFile(path, what);
  TokenCorpus corpus{path, {}, 0, 2};
  const std::size_t bytes = readAll(file.get(), corpus.tokens, what);
  if (bytes == 0)
    throw Error(what + ": the file is empty");
  std::vector<std::uint16_t> &tokens = corpus.tokens;
  const bool llmc =
      bytes >= 4 && littleEndianInt32(tokens.data()) == kLlmcMagic;
  if (!llmc) {
    // nanoGPT's train.bin / val.bin: uint16 tokens and nothing else. A file
    // whose first 1024 bytes read as llm.c's header (version 1 or 2, a token
    // count matching the file) but with another first int is a damaged or
    // foreign header, not tokens.
    if (bytes >= kLlmcHeaderBytes) {
      const std::int32_t version = littleEndianInt32(tokens.data() + 2);
      const std::int32_t count = littleEndianInt32(tokens.data() + 4);
      if ((version == 1 || version == 2) && count > 0 &&
          static_cast<std::size_t>(count) * 2 == bytes - kLlmcHeaderBytes)
        throw Error(what + ": its first " + std::to_string(kLlmcHeaderBytes) +
                    " bytes look like an llm.c header (version " +
                    std::to_string(version) + ", " + std::to_string(count) +
                    " tokens, as the file holds) but the magic is " +
                    std::to_string(littleEndianInt32(tokens.data())) +
                    ", not " + std::to_string(kLlmcMagic));
    }
    if (bytes % 2 != 0)
      throw Error(what + ": it holds " + std::to_string(bytes) +
                  " bytes, an odd number, so it is not uint16 tokens (a raw "
                  "shard has no header; llm.c's starts with the magic " +
                  std::to_string(kLlmcMagic) + ")");
    return corpus;
  }
  const std::string header = what + ": llm.c header: ";
  if (bytes < kLlmcHeaderBytes)
    throw Error(header + "the file holds " + std::to_string(bytes) +
                " bytes, less than the " + std::to_string(kLlmcHeaderBytes) +
                "-byte header (truncated?)");
  const std::int32_t version = littleEndianInt32(tokens.data() + 2);
  const std::int32_t count = littleEndianInt32(tokens.data() + 4);
  if (version != 1 && version != 2)
    throw Error(header + "version " + std::to_string(version) +
                " is not one this reader knows (1 or 2)");
  const std::size_t payload = bytes - kLlmcHeaderBytes;
  if (payload % 2 != 0)
    throw Error(header + "the " + std::to_string(payload) +
                " bytes after the header are an odd number, not uint16 "
                "tokens");
  if (count < 0 || static_cast<std::size_t>(count) != payload / 2)
    throw Error(header + "header says " + std::to_string(count) +
                " tokens, file holds " + std::to_string(payload / 2) +
                (count >= 0 && static_cast<std::size_t>(count) > payload / 2
                     ? " (truncated?)"
                     : ""));
  if (count == 0)
    throw Error(header + "the shard holds no tokens");
  tokens.erase(tokens.begin(), tokens.begin() + kLlmcHeaderBytes / 2);
  corpus.headerBytes = kLlmcHeaderBytes;
  return corpus;
}

TokenCorpus loadCorpus(const std::string &path, DataFormat format) {
  return format == DataFormat::U16 ? loadTokenShard(path) : loadCorpus(path);
}

void checkTokensBelow(const TokenCorpus &corpus, std::int64_t vocab) {
  if (vocab <= 0)
    throw Error("checking the tokens of " + corpus.name + ": --vocab " +
                std::to_string(vocab) + " must be positive");
  for (std::size_t i = 0; i < corpus.tokens.size(); ++i)
    if (corpus.tokens[i] >= vocab)
      throw Error(corpus.name + ": token " + std::to_string(i) +
                  " (byte offset " +
                  std::to_string(corpus.headerBytes + i * corpus.tokenBytes) +
                  ") is " + std::to_string(corpus.tokens[i]) +
                  ", not below --vocab " + std::to_string(vocab) +
                  ": raise --vocab to the tokenizer's vocabulary size (or "
                  "check --data-format)");
}

//===----------------------------------------------------------------------===//
// The synthetic text
//===----------------------------------------------------------------------===//

namespace {

/// A word with its singular and plural forms (the same for most words).
struct Word {
  const char *singular;
  const char *plural;
};

constexpr Word kDeterminers[] = {{"the", "the"},    {"a", "some"},
                                 {"this", "these"}, {"that", "those"},
                                 {"my", "my"},      {"every", "many"}};
constexpr Word kNouns[] = {
    {"cat", "cats"},       {"dog", "dogs"},         {"bird", "birds"},
    {"child", "children"}, {"farmer", "farmers"},   {"river", "rivers"},
    {"king", "kings"},     {"teacher", "teachers"}, {"fox", "foxes"},
    {"tree", "trees"},     {"ship", "ships"},       {"mouse", "mice"},
    {"woman", "women"},    {"city", "cities"},      {"garden", "gardens"},
    {"stone", "stones"}};
constexpr const char *kAdjectives[] = {
    "small", "old",   "red",    "quiet", "happy", "bright",  "cold",
    "green", "tired", "clever", "heavy", "brown", "strange", "gentle"};
/// Verbs as "he ..." and "they ...": agreement with the subject's number.
constexpr Word kTransitiveVerbs[] = {
    {"sees", "see"},     {"likes", "like"},    {"follows", "follow"},
    {"finds", "find"},   {"watches", "watch"}, {"carries", "carry"},
    {"chases", "chase"}, {"helps", "help"},    {"remembers", "remember"},
    {"builds", "build"}};
constexpr Word kIntransitiveVerbs[] = {
    {"sleeps", "sleep"}, {"runs", "run"},   {"sings", "sing"},
    {"waits", "wait"},   {"falls", "fall"}, {"laughs", "laugh"}};
constexpr const char *kAdverbs[] = {"slowly", "quietly", "today",
                                    "again",  "often",   "at night"};
constexpr const char *kPrepositions[] = {"near", "under",  "behind", "with",
                                         "over", "beside", "across", "inside"};
constexpr const char *kConjunctions[] = {"and", "but", "because", "while"};

/// Writes random sentences. Choices come from the engine's raw output (whose
/// sequence the standard fixes) reduced modulo the number of options, not from
/// std::uniform_int_distribution, whose algorithm differs between libraries.
class SentenceWriter {
public:
  explicit SentenceWriter(std::uint64_t seed) : rng(seed) {}

  void paragraph(std::string &text) {
    std::uint64_t sentences = 2 + below(5);
    for (std::uint64_t i = 0; i < sentences; ++i) {
      std::size_t start = text.size() + (i ? 1 : 0);
      if (i)
        text += ' ';
      clause(text);
      if (percent(30)) {
        text += percent(50) ? ", " : " ";
        text += pick(kConjunctions);
        text += ' ';
        clause(text);
      }
      text += percent(90) ? '.' : '!';
      text[start] = static_cast<char>(text[start] - 'a' + 'A');
    }
    text += '\n';
  }

private:
  std::uint64_t below(std::uint64_t count) { return rng() % count; }
  bool percent(std::uint64_t chance) { return below(100) < chance; }
  template <typename T, std::size_t N> const T &pick(const T (&options)[N]) {
    return options[below(N)];
  }

  /// A noun phrase of the given number.
  void nounPhrase(std::string &text, bool plural) {
    const Word &determiner = pick(kDeterminers);
    text += plural ? determiner.plural : determiner.singular;
    if (percent(40)) {
      text += ' ';
      text += pick(kAdjectives);
    }
    text += ' ';
    const Word &noun = pick(kNouns);
    text += plural ? noun.plural : noun.singular;
  }

  /// subject verb [object | adverb] [preposition noun-phrase]; the verb
  /// agrees with the subject, which the adjective may separate from it.
  void clause(std::string &text) {
    bool plural = percent(40);
    nounPhrase(text, plural);
    text += ' ';
    if (percent(65)) {
      const Word &verb = pick(kTransitiveVerbs);
      text += plural ? verb.plural : verb.singular;
      text += ' ';
      nounPhrase(text, percent(40));
    } else {
      const Word &verb = pick(kIntransitiveVerbs);
      text += plural ? verb.plural : verb.singular;
      if (percent(50)) {
        text += ' ';
        text += pick(kAdverbs);
      }
    }
    if (percent(35)) {
      text += ' ';
      text += pick(kPrepositions);
      text += ' ';
      nounPhrase(text, percent(40));
    }
  }

  std::mt19937_64 rng;
};

} // namespace

TokenCorpus syntheticCorpus(std::size_t bytes, std::uint64_t seed) {
  if (bytes == 0)
    throw Error("generating the synthetic training text: the size must be "
                "positive");
  SentenceWriter writer(seed);
  std::string text;
  text.reserve(bytes + 1024);
  while (text.size() < bytes)
    writer.paragraph(text);
  TokenCorpus corpus;
  corpus.name = "synthetic (seed " + std::to_string(seed) + ", " +
                std::to_string(bytes) + " bytes)";
  corpus.tokens.resize(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    corpus.tokens[i] = static_cast<unsigned char>(text[i]);
  return corpus;
}

//===----------------------------------------------------------------------===//
// Splitting and sampling
//===----------------------------------------------------------------------===//

CorpusSplit splitCorpus(const TokenCorpus &corpus, double valFraction) {
  if (!(valFraction > 0.0 && valFraction < 1.0))
    throw Error("splitting " + corpus.name +
                ": the validation fraction (--val-fraction) must be in (0, 1), "
                "got " +
                std::to_string(valFraction));
  const std::size_t size = corpus.tokens.size();
  const auto validation =
      static_cast<std::size_t>(static_cast<double>(size) * valFraction);
  const std::uint16_t *data = corpus.tokens.data();
  return {{data, size - validation}, {data + size - validation, validation}};
}

TrainingData TrainingData::load(const DataOptions &options, std::int64_t vocab,
                                std::uint64_t seed) {
  TrainingData data;
  data.format = options.format;
  data.valFraction = options.valFraction;
  if (options.path.empty()) {
    if (!options.validationPath.empty())
      throw Error("--val-data " + options.validationPath +
                  " needs --data (the synthetic corpus has no separate "
                  "validation file)");
    if (options.format != DataFormat::Bytes)
      throw Error("--data-format " +
                  std::string(dataFormatName(options.format)) +
                  " needs --data (the synthetic corpus is bytes)");
    if (options.syntheticBytes == 0)
      throw Error("--synthetic-bytes must be positive");
    data.train = syntheticCorpus(options.syntheticBytes, seed);
  } else {
    data.train = loadCorpus(options.path, options.format);
  }
  checkTokensBelow(data.train, vocab);
  if (!options.validationPath.empty()) {
    data.validation = loadCorpus(options.validationPath, options.format);
    checkTokensBelow(data.validation, vocab);
  } else {
    splitCorpus(data.train, options.valFraction); // Checks the fraction.
  }
  return data;
}

std::uint64_t dataHostBytes(const DataOptions &options) {
  auto tokensOf = [&](const std::string &path) -> std::uint64_t {
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (error)
      return 0;
    return options.format == DataFormat::U16 ? size / 2 : size;
  };
  const std::uint64_t tokens =
      options.path.empty()
          ? options.syntheticBytes
          : tokensOf(options.path) + (options.validationPath.empty()
                                          ? 0
                                          : tokensOf(options.validationPath));
  return tokens * sizeof(std::uint16_t);
}

CorpusSplit TrainingData::split() const {
  if (validation.tokens.empty())
    return splitCorpus(train, valFraction);
  return {{train.tokens.data(), train.tokens.size()},
          {validation.tokens.data(), validation.tokens.size()}};
}

std::string TrainingData::describe() const {
  std::string text = train.name;
  if (format != DataFormat::Bytes)
    text += std::string(" (") + dataFormatName(format) + ")";
  if (!validation.tokens.empty())
    text += ", validation " + validation.name;
  return text;
}

namespace {

/// SplitMix64's finaliser: a bijection of 64-bit words that mixes every input
/// bit into every output bit.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// One row of inputs and its next-token targets from the seq + 1 tokens at
/// `window`.
void fillRow(const std::uint16_t *window, std::int64_t seq,
             std::int32_t *tokens, std::int32_t *targets) {
  for (std::int64_t t = 0; t < seq; ++t) {
    tokens[t] = window[t];
    targets[t] = window[t + 1];
  }
}

} // namespace

std::vector<std::uint8_t> tokenBytes(const std::vector<std::int32_t> &tokens) {
  std::vector<std::uint8_t> bytes(tokens.size() * sizeof(std::int32_t));
  std::memcpy(bytes.data(), tokens.data(), bytes.size());
  return bytes;
}

BatchSampler::BatchSampler(const CorpusSplit &split, std::int64_t batch,
                           std::int64_t seq, std::uint64_t seed,
                           std::int64_t rank, std::int64_t worldSize)
    : split(split), rows(batch), length(seq), seed(seed), rank(rank) {
  const std::string what = "building the batch sampler";
  if (batch <= 0 || seq <= 0)
    throw Error(what + ": batch (" + std::to_string(batch) + ") and seq (" +
                std::to_string(seq) + ") must be positive");
  if (worldSize <= 0 || rank < 0 || rank >= worldSize)
    throw Error(what + ": rank " + std::to_string(rank) +
                " is not in a world of " + std::to_string(worldSize));
  const std::size_t window = static_cast<std::size_t>(seq) + 1;
  auto tooShort = [&](const char *part, std::size_t size, const char *fix) {
    return Error(what + ": the " + part + " data holds " +
                 std::to_string(size) + " tokens, fewer than seq + 1 = " +
                 std::to_string(window) + ": lower --seq, or " + fix);
  };
  if (split.train.size < window)
    throw tooShort("training", split.train.size,
                   "give more data (--data, --synthetic-bytes)");
  if (split.validation.size < window)
    throw tooShort("validation", split.validation.size,
                   "raise --val-fraction (or give a longer --val-data)");
}

std::size_t BatchSampler::trainWindowStart(std::int64_t step,
                                           std::int64_t row) const {
  // The hash keeps a slot for a rank (0): the global row takes its place,
  // so a single process draws the windows it drew before ranks existed.
  const std::uint64_t globalRow = static_cast<std::uint64_t>(rank * rows + row);
  const std::uint64_t key = mix(
      mix(mix(mix(seed) ^ 0) ^ static_cast<std::uint64_t>(step)) ^ globalRow);
  // Windows may start anywhere their seq + 1 tokens fit; the modulo's bias is
  // below count / 2^64.
  const std::uint64_t count = split.train.size - length;
  return static_cast<std::size_t>(key % count);
}

std::int64_t BatchSampler::validationWindows() const {
  return static_cast<std::int64_t>((split.validation.size - 1) /
                                   static_cast<std::size_t>(length));
}

std::int64_t BatchSampler::validationBatches() const {
  return (validationWindows() + rows - 1) / rows;
}

std::size_t BatchSampler::validationWindowStart(std::int64_t index,
                                                std::int64_t row) const {
  const std::int64_t windows = validationWindows();
  const std::int64_t window = (index % windows * rows + row) % windows;
  return static_cast<std::size_t>(window * length);
}

void BatchSampler::trainBatch(std::int64_t step,
                              std::vector<std::int32_t> &tokens,
                              std::vector<std::int32_t> &targets) const {
  if (step < 0)
    throw Error("sampling a training batch: step " + std::to_string(step) +
                " is negative");
  tokens.resize(static_cast<std::size_t>(rows * length));
  targets.resize(tokens.size());
  for (std::int64_t b = 0; b < rows; ++b)
    fillRow(split.train.data + trainWindowStart(step, b), length,
            tokens.data() + b * length, targets.data() + b * length);
}

void BatchSampler::validationBatch(std::int64_t index,
                                   std::vector<std::int32_t> &tokens,
                                   std::vector<std::int32_t> &targets) const {
  if (index < 0)
    throw Error("sampling a validation batch: index " + std::to_string(index) +
                " is negative");
  tokens.resize(static_cast<std::size_t>(rows * length));
  targets.resize(tokens.size());
  for (std::int64_t b = 0; b < rows; ++b)
    fillRow(split.validation.data + validationWindowStart(index, b), length,
            tokens.data() + b * length, targets.data() + b * length);
}

} // namespace fa::train
