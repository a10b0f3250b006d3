//===- AttentionVariantOptions.cpp ----------------------------------------===//

#include "AttentionVariantOptions.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Npy.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace fa {
namespace {

constexpr const char *kGroup = "Variant (kernels whose \"variant\" matches)";

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos)
      return parts;
    start = comma + 1;
  }
}

bool parseInteger(const std::string &text, std::int64_t &value) {
  const char *end = text.data() + text.size();
  auto [last, error] = std::from_chars(text.data(), end, value);
  return !text.empty() && error == std::errc() && last == end;
}

AttentionWindow parseWindow(const std::string &text) {
  std::vector<std::string> parts = splitCommas(text);
  AttentionWindow window;
  if (parts.size() != 2 || !parseInteger(parts[0], window.left) ||
      !parseInteger(parts[1], window.right) || window.left < 0 ||
      window.right < 0)
    throw Error("--window " + text +
                ": expected L,R, two non-negative integers (keys i + off - L "
                "to i + off + R)");
  return window;
}

float parseSoftcap(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0) || !std::isfinite(value) ||
      value > std::numeric_limits<float>::max())
    throw Error("--softcap " + text +
                ": expected a positive number (s' = c * tanh(s / c))");
  return static_cast<float>(value);
}

std::vector<std::int64_t> parseLengths(const std::string &text) {
  std::vector<std::int64_t> lengths;
  for (const std::string &part : splitCommas(text)) {
    std::int64_t length = 0;
    if (!parseInteger(part, length) || length < 1)
      throw Error("--doc-lens " + text + ": '" + part +
                  "' is not a positive integer; expected lengths such as "
                  "300,1000");
    lengths.push_back(length);
  }
  return lengths;
}

std::vector<std::int32_t> readDocumentIds(const std::string &path,
                                          const AttentionShape &shape) {
  IntegerTensor ids = readNpyIntegers(path);
  Shape expected = {shape.batch, shape.seqQ};
  if (ids.shape != expected)
    throw Error("--doc-ids " + path + " has shape " + formatShape(ids.shape) +
                ", expected " + formatShape(expected) + " [batch, seq]");
  std::vector<std::int32_t> narrow;
  narrow.reserve(ids.values.size());
  for (std::size_t i = 0; i < ids.values.size(); ++i) {
    std::int64_t id = ids.values[i];
    if (id < std::numeric_limits<std::int32_t>::min() ||
        id > std::numeric_limits<std::int32_t>::max())
      throw Error("--doc-ids " + path + ": id " + std::to_string(id) +
                  " at position " + std::to_string(i) + " does not fit int32");
    narrow.push_back(static_cast<std::int32_t>(id));
  }
  try {
    checkDocumentIds(narrow, shape.batch, shape.seqQ);
  } catch (const Error &error) {
    throw Error("--doc-ids " + path + ": " + error.what());
  }
  return narrow;
}

std::vector<float> readSinks(const std::string &path,
                             const AttentionShape &shape) {
  HostTensor sinks = readNpy(path);
  Shape expected = {shape.heads};
  if (sinks.shape != expected)
    throw Error("--sinks-file " + path + " has shape " +
                formatShape(sinks.shape) + ", expected " +
                formatShape(expected) + " [heads] (one logit per query head)");
  for (std::size_t h = 0; h < sinks.values.size(); ++h)
    if (!std::isfinite(sinks.values[h]))
      throw Error("--sinks-file " + path + ": sink " + std::to_string(h) +
                  " is not a finite f32");
  return sinks.values;
}

float parseDropout(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  // p is passed as f32: 0.99999999 would round to 1, which drops everything.
  if (text.empty() || *end != '\0' ||
      !(value >= 0 && value < 1 && static_cast<float>(value) < 1.0f))
    throw Error("--dropout " + text +
                ": expected a probability P with 0 <= P < 1 (as f32)");
  return static_cast<float>(value);
}

std::uint32_t parseDropoutOffset(const std::string &text) {
  std::int64_t value = 0;
  if (!parseInteger(text, value) || value < 0 ||
      value > std::numeric_limits<std::uint32_t>::max())
    throw Error("--dropout-offset " + text +
                ": expected an integer from 0 to 4294967295 (u32)");
  return static_cast<std::uint32_t>(value);
}

void readMask(const std::string &path, const AttentionShape &shape,
              AttentionVariant &variant) {
  IntegerTensor mask = readNpyIntegers(path);
  Shape perProblem = {shape.seqQ, shape.seqKv};
  Shape perHead = {shape.batch, shape.heads, shape.seqQ, shape.seqKv};
  if (mask.shape != perProblem && mask.shape != perHead)
    throw Error("--mask-file " + path + " has shape " +
                formatShape(mask.shape) + ", expected " +
                formatShape(perProblem) + " [seq_q, seq_kv] or " +
                formatShape(perHead) + " [batch, heads, seq_q, seq_kv]");
  variant.maskShape = mask.shape;
  variant.mask.reserve(mask.values.size());
  for (std::int64_t value : mask.values)
    variant.mask.push_back(value != 0);
}

void addParams(const std::vector<std::string> &params,
               AttentionVariant &variant) {
  for (const std::string &param : params) {
    std::size_t equals = param.find('=');
    if (equals == 0 || equals == std::string::npos ||
        equals + 1 == param.size())
      throw Error("--param " + param +
                  ": expected NAME=VALUE or NAME=FILE.npy");
    std::string name = param.substr(0, equals);
    if (!variant.params.emplace(name, param.substr(equals + 1)).second)
      throw Error("--param " + name + " is given twice");
  }
}

/// --variant NAME: a user's variant, or a named one the flags must agree
/// with (the flags carry its values).
void applyVariantName(const std::string &name, AttentionVariant &variant) {
  if (name.empty())
    return;
  if (!isNamedVariant(name)) {
    variant.customName = name;
    return;
  }
  if (name != variant.namedName())
    throw Error("--variant " + name +
                " is a named variant, which its flags choose (--causal="
                "bottom-right, --window, --doc-lens/--doc-ids, --softcap, "
                "--alibi, --sinks/--sinks-file, --dropout); the flags given "
                "make '" +
                (variant.namedName().empty() ? std::string("plain")
                                             : variant.namedName()) +
                "'");
}

} // namespace

void addVariantOptions(CLI::App *command, VariantOptions &o) {
  // An option whose value may be left out: plain --causal is top-left.
  command
      ->add_option("--causal", o.causal,
                   "Causal mask: top-left aligned like PyTorch's is_causal "
                   "(query i sees keys j <= i; plain --causal), or "
                   "--causal=bottom-right, FlashAttention's alignment for "
                   "seq_q != seq_kv (j <= i + seq_kv - seq_q)")
      ->expected(0, 1)
      ->default_str("top-left")
      ->type_name("[=top-left|bottom-right]")
      ->check(CLI::IsMember({"top-left", "bottom-right"}).description(""))
      ->group(kGroup);
  command
      ->add_option("--window", o.window,
                   "Sliding window L,R: query i keeps keys i + off - L to "
                   "i + off + R (off = seq_kv - seq_q), L, R >= 0")
      ->group(kGroup);
  command
      ->add_option("--softcap", o.softcap,
                   "Soft-cap the scores: s' = C * tanh(s / C), C > 0 (Gemma)")
      ->group(kGroup);
  command
      ->add_flag("--alibi", o.alibi,
                 "ALiBi: s' = s - slope[h] * |i + off - j|, slopes "
                 "2^(-8 (h + 1) / H)")
      ->group(kGroup);
  CLI::Option *lengths =
      command
          ->add_option("--doc-lens", o.docLens,
                       "Packed documents of these lengths (e.g. 300,1000), "
                       "in order, repeated until the sequence is covered, the "
                       "last one cut; the same for every batch row. Queries "
                       "see keys of their own document (seq_q == seq_kv)")
          ->group(kGroup);
  command
      ->add_option("--doc-ids", o.docIdsPath,
                   "Document ids, .npy integers [B, N], non-decreasing along "
                   "each row: query i sees key j when ids[b, i] == "
                   "ids[b, j]")
      ->excludes(lengths)
      ->group(kGroup);
  CLI::Option *sinks =
      command
          ->add_flag("--sinks", o.sinks,
                     "Attention sinks (GPT-OSS): a logit per query head that "
                     "joins every row's softmax denominator, lse = log(exp("
                     "sink[h]) + sum_j exp(s_ij)); random, ln(seq_kv) + "
                     "N(0, 1) from --seed. With --grad also dsinks")
          ->group(kGroup);
  command
      ->add_option("--sinks-file", o.sinksPath,
                   "Attention sinks from a file, .npy floats [H]")
      ->excludes(sinks)
      ->group(kGroup);
  CLI::Option *dropout =
      command
          ->add_option("--dropout", o.dropout,
                       "Attention dropout with probability P (0 <= P < 1): "
                       "P_ij is dropped where Philox-4x32-10 keyed by --seed "
                       "draws 16 bits below P * 2^16 (runtime/include/fa/"
                       "runtime/Philox.h), kept ones scaled by 1 / (1 - P)")
          ->group(kGroup);
  command
      ->add_option("--dropout-offset", o.dropoutOffset,
                   "Dropout's Philox offset O (u32), which separates masks "
                   "of one seed (e.g. per step and layer). Default: 0")
      ->needs(dropout)
      ->group(kGroup);
  command
      ->add_option("--variant", o.variantName,
                   "Run kernels of this variant: a user's (fa.variant in "
                   "the compiled MLIR; with --kernels DIR), or a named "
                   "combination such as window+softcap, which must agree "
                   "with the flags that give its values")
      ->group(kGroup);
  command
      ->add_option("--param", o.params,
                   "A user's variant capture: NAME=VALUE for a scalar (i64 "
                   "or f32, as the kernel's parameter), NAME=FILE.npy for a "
                   "tensor. Repeatable")
      ->group(kGroup);
  command
      ->add_option("--mask-file", o.maskPath,
                   "The mask of a user's variant for --check, .npy bool or "
                   "integers (nonzero keeps) [N, M] or [B, H, N, M]; "
                   "combined with the flags' conditions")
      ->group(kGroup);
}

AttentionVariant variantFromOptions(const VariantOptions &o,
                                    const AttentionShape &shape,
                                    std::uint64_t seed) {
  AttentionVariant variant;
  if (o.causal == "top-left")
    variant.causal = CausalAlignment::TopLeft;
  else if (o.causal == "bottom-right")
    variant.causal = CausalAlignment::BottomRight;
  if (!o.window.empty())
    variant.window = parseWindow(o.window);
  if (!o.softcap.empty())
    variant.softcap = parseSoftcap(o.softcap);
  if (o.alibi)
    variant.alibiSlopes = alibiSlopes(shape.heads);
  if (!o.docLens.empty() || !o.docIdsPath.empty()) {
    if (shape.seqQ != shape.seqKv)
      throw Error(std::string(o.docLens.empty() ? "--doc-ids" : "--doc-lens") +
                  ": document masks need seq_q == seq_kv, got " +
                  std::to_string(shape.seqQ) + " and " +
                  std::to_string(shape.seqKv));
    if (!o.docLens.empty()) {
      variant.docIds = documentIdsFromLengths(parseLengths(o.docLens),
                                              shape.batch, shape.seqQ);
      variant.documentSource = "lengths " + o.docLens;
    } else {
      variant.docIds = readDocumentIds(o.docIdsPath, shape);
      variant.documentSource = o.docIdsPath;
    }
  }
  if (o.sinks) {
    variant.sinks = randomSinks(shape.heads, shape.seqKv, seed);
    variant.sinksSource = "random, seed " + std::to_string(seed);
  } else if (!o.sinksPath.empty()) {
    variant.sinks = readSinks(o.sinksPath, shape);
    variant.sinksSource = o.sinksPath;
  }
  if (!o.dropout.empty()) {
    AttentionDropout dropout;
    dropout.p = parseDropout(o.dropout);
    dropout.seed = seed;
    if (!o.dropoutOffset.empty())
      dropout.offset = parseDropoutOffset(o.dropoutOffset);
    variant.dropout = dropout;
  }
  applyVariantName(o.variantName, variant);
  if (!o.maskPath.empty()) {
    if (!variant.custom())
      throw Error("--mask-file " + o.maskPath +
                  " is the reference mask of a user's variant: it needs "
                  "--variant NAME");
    readMask(o.maskPath, shape, variant);
  }
  addParams(o.params, variant);
  if (!variant.params.empty() && !variant.custom())
    throw Error("--param gives a user's variant its captures: it needs "
                "--variant NAME");
  variant.validate(shape);
  return variant;
}

} // namespace fa
