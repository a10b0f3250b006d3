//===- Data.cpp -----------------------------------------------------------===//

#include "fa/train/Data.h"

#include "fa/runtime/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

namespace fa::train {

namespace {

std::string systemError(int error) { return std::strerror(error); }

} // namespace

ByteCorpus loadCorpus(const std::string &path) {
  const std::string what = "loading the training text " + path;
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(
      std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file)
    throw Error(what + ": cannot open it: " + systemError(errno));
  ByteCorpus corpus{path, {}};
  std::uint8_t chunk[1 << 16];
  while (std::size_t read = std::fread(chunk, 1, sizeof chunk, file.get()))
    corpus.bytes.insert(corpus.bytes.end(), chunk, chunk + read);
  if (std::ferror(file.get()))
    throw Error(what + ": cannot read it: " + systemError(errno));
  if (corpus.bytes.empty())
    throw Error(what + ": the file is empty");
  return corpus;
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

ByteCorpus syntheticCorpus(std::size_t bytes, std::uint64_t seed) {
  if (bytes == 0)
    throw Error("generating the synthetic training text: the size must be "
                "positive");
  SentenceWriter writer(seed);
  std::string text;
  text.reserve(bytes + 1024);
  while (text.size() < bytes)
    writer.paragraph(text);
  ByteCorpus corpus;
  corpus.name = "synthetic (seed " + std::to_string(seed) + ", " +
                std::to_string(bytes) + " bytes)";
  corpus.bytes.assign(text.begin(), text.begin() + bytes);
  return corpus;
}

//===----------------------------------------------------------------------===//
// Splitting and sampling
//===----------------------------------------------------------------------===//

CorpusSplit splitCorpus(const ByteCorpus &corpus, double valFraction) {
  if (!(valFraction > 0.0 && valFraction < 1.0))
    throw Error("splitting " + corpus.name +
                ": the validation fraction must be in (0, 1), got " +
                std::to_string(valFraction));
  const std::size_t size = corpus.bytes.size();
  const auto validation =
      static_cast<std::size_t>(static_cast<double>(size) * valFraction);
  const std::uint8_t *data = corpus.bytes.data();
  return {{data, size - validation}, {data + size - validation, validation}};
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

/// One row of inputs and its next-byte targets from the seq + 1 bytes at
/// `window`.
void fillRow(const std::uint8_t *window, std::int64_t seq, std::int32_t *tokens,
             std::int32_t *targets) {
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
  if (split.train.size < window)
    throw Error(what + ": the training text holds " +
                std::to_string(split.train.size) +
                " bytes, fewer than seq + 1 = " + std::to_string(window));
  if (split.validation.size < window)
    throw Error(what + ": the validation text holds " +
                std::to_string(split.validation.size) +
                " bytes, fewer than seq + 1 = " + std::to_string(window));
}

std::size_t BatchSampler::trainWindowStart(std::int64_t step,
                                           std::int64_t row) const {
  // The hash keeps a slot for a rank (0): the global row takes its place,
  // so a single process draws the windows it drew before ranks existed.
  const std::uint64_t globalRow = static_cast<std::uint64_t>(rank * rows + row);
  const std::uint64_t key = mix(
      mix(mix(mix(seed) ^ 0) ^ static_cast<std::uint64_t>(step)) ^ globalRow);
  // Windows may start anywhere their seq + 1 bytes fit; the modulo's bias is
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
