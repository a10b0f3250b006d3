//===- AttentionVariant.cpp -----------------------------------------------===//

#include "fa/runtime/AttentionVariant.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Npy.h"

#include "AttentionVariantRule.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sstream>

namespace fa {
namespace {

std::string joinNames(const std::vector<std::string> &names,
                      const char *separator) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : separator) + name;
  return text;
}

std::string shortNumber(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

/// For each position of a non-decreasing ids row, where its document
/// starts and ends: [first[i], end[i]).
void documentSpans(const std::int32_t *ids, std::int64_t seq,
                   std::vector<std::int64_t> &first,
                   std::vector<std::int64_t> &end) {
  first.assign(static_cast<std::size_t>(seq), 0);
  end.assign(static_cast<std::size_t>(seq), seq);
  for (std::int64_t i = 1; i < seq; ++i)
    first[i] = ids[i] == ids[i - 1] ? first[i - 1] : i;
  for (std::int64_t i = seq - 1; i-- > 0;)
    end[i] = ids[i] == ids[i + 1] ? end[i + 1] : i + 1;
}

/// The parameters a variant binds by name, whatever the kernel.
const std::set<std::string> &namedParams() {
  static const std::set<std::string> names = {
      "window_left", "window_right", "softcap",      "alibi_slopes",  "doc_ids",
      "sinks",       "dropout_p",    "dropout_seed", "dropout_offset"};
  return names;
}

/// The flag that gives a named parameter, for messages.
const char *flagOfNamedParam(const std::string &name) {
  if (name == "window_left" || name == "window_right")
    return "--window L,R";
  if (name == "softcap")
    return "--softcap C";
  if (name == "alibi_slopes")
    return "--alibi";
  if (name == "sinks")
    return "--sinks or --sinks-file";
  if (name == "dropout_p" || name == "dropout_seed" || name == "dropout_offset")
    return "--dropout P (with --seed and --dropout-offset)";
  return "--doc-lens or --doc-ids";
}

std::vector<std::string> paramNames(const KernelSpec &kernel) {
  std::vector<std::string> names;
  for (const KernelParam &param : kernel.params)
    names.push_back(param.name);
  return names;
}

template <typename T> bool parseWhole(const std::string &text, T &value) {
  const char *end = text.data() + text.size();
  auto [last, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && last == end;
}

/// --param NAME=VALUE as a scalar of `param`'s kind.
ArgValue scalarValue(const KernelParam &param, const std::string &text) {
  std::string what = "--param " + param.name + "=" + text + ": ";
  if (param.kind == ParamKind::F32) {
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value) ||
        std::fabs(value) > std::numeric_limits<float>::max())
      throw Error(what + "parameter '" + param.name +
                  "' is f32; expected a finite number");
    return static_cast<float>(value);
  }
  std::int64_t value = 0;
  if (!parseWhole(text, value))
    throw Error(what + "parameter '" + param.name + "' is " +
                paramKindName(param.kind) + "; expected an integer");
  if (param.kind == ParamKind::I64)
    return value;
  if (value < std::numeric_limits<std::int32_t>::min() ||
      value > std::numeric_limits<std::int32_t>::max())
    throw Error(what + "parameter '" + param.name +
                "' is i32; the value does not fit");
  return static_cast<std::int32_t>(value);
}

bool namesNpyFile(const std::string &text) {
  return text.size() > 4 && text.compare(text.size() - 4, 4, ".npy") == 0;
}

/// --param NAME=FILE.npy as a tensor of `param`'s kind and element type.
VariantParams::Tensor tensorValue(const KernelParam &param,
                                  const std::string &path) {
  VariantParams::Tensor tensor{param.name, param.kind, param.dtype, {}, {}};
  if (param.kind == ParamKind::I32Memref) {
    IntegerTensor values = readNpyIntegers(path);
    tensor.shape = values.shape;
    tensor.bytes.resize(values.values.size() * sizeof(std::int32_t));
    for (std::size_t i = 0; i < values.values.size(); ++i) {
      std::int64_t value = values.values[i];
      if (value < std::numeric_limits<std::int32_t>::min() ||
          value > std::numeric_limits<std::int32_t>::max())
        throw Error("--param " + param.name + "=" + path + ": element " +
                    std::to_string(i) + " does not fit i32");
      auto narrow = static_cast<std::int32_t>(value);
      std::memcpy(tensor.bytes.data() + i * sizeof(narrow), &narrow,
                  sizeof(narrow));
    }
  } else {
    HostTensor values = readNpy(path);
    tensor.shape = values.shape;
    tensor.bytes = encode(values.values, param.dtype);
  }
  if (static_cast<int>(tensor.shape.size()) != param.rank)
    throw Error("--param " + param.name + "=" + path + ": parameter '" +
                param.name + "' is a rank-" + std::to_string(param.rank) +
                " tensor, but the file has shape " + formatShape(tensor.shape));
  return tensor;
}

template <typename T> Bytes bytesOf(const std::vector<T> &values) {
  Bytes bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// The named variant parameters this variant gives.
VariantParams namedVariantParams(const AttentionVariant &variant,
                                 const AttentionShape &shape) {
  VariantParams params;
  if (variant.window) {
    params.scalars["window_left"] = variant.window->left;
    params.scalars["window_right"] = variant.window->right;
  }
  if (variant.softcap)
    params.scalars["softcap"] = *variant.softcap;
  if (!variant.alibiSlopes.empty())
    params.tensors.push_back({"alibi_slopes",
                              ParamKind::Memref,
                              DType::F32,
                              {shape.heads},
                              bytesOf(variant.alibiSlopes)});
  if (!variant.docIds.empty())
    params.tensors.push_back({"doc_ids",
                              ParamKind::I32Memref,
                              DType::F32,
                              {shape.batch, shape.seqQ},
                              bytesOf(variant.docIds)});
  if (!variant.sinks.empty())
    params.tensors.push_back({"sinks",
                              ParamKind::Memref,
                              DType::F32,
                              {shape.heads},
                              bytesOf(variant.sinks)});
  if (const std::optional<AttentionDropout> &dropout = variant.dropout) {
    params.scalars["dropout_p"] = dropout->p;
    // The kernels take the u64 seed and u32 offset as i64 and i32: the
    // same bits.
    params.scalars["dropout_seed"] = static_cast<std::int64_t>(dropout->seed);
    params.scalars["dropout_offset"] =
        static_cast<std::int32_t>(dropout->offset);
  }
  return params;
}

} // namespace

/// The rule of `variant` on `shape`, with host pointers into it.
AttentionVariantRule hostVariantRule(const AttentionVariant &variant,
                                     const AttentionShape &shape) {
  AttentionVariantRule rule{};
  rule.heads = shape.heads;
  rule.seqQ = shape.seqQ;
  rule.seqKv = shape.seqKv;
  rule.causal = variant.causal == CausalAlignment::TopLeft ? kRuleTopLeftCausal
                : variant.causal == CausalAlignment::BottomRight
                    ? kRuleBottomRightCausal
                    : kRuleNoCausal;
  rule.hasWindow = variant.window.has_value();
  if (variant.window) {
    rule.windowLeft = variant.window->left;
    rule.windowRight = variant.window->right;
  }
  rule.softcap = variant.softcap ? *variant.softcap : 0.0;
  rule.alibiSlopes =
      variant.alibiSlopes.empty() ? nullptr : variant.alibiSlopes.data();
  rule.docIds = variant.docIds.empty() ? nullptr : variant.docIds.data();
  rule.mask = variant.mask.empty() ? nullptr : variant.mask.data();
  rule.maskPerHead = variant.maskShape.size() == 4;
  rule.sinks = variant.sinks.empty() ? nullptr : variant.sinks.data();
  rule.hasDropout = variant.dropout.has_value();
  if (variant.dropout) {
    rule.dropoutThreshold = dropoutThreshold(variant.dropout->p);
    rule.dropoutScale = dropoutScale(variant.dropout->p);
    rule.dropoutSeed = variant.dropout->seed;
    rule.dropoutOffset = variant.dropout->offset;
  }
  return rule;
}

const char *causalAlignmentName(CausalAlignment alignment) {
  switch (alignment) {
  case CausalAlignment::TopLeft:
    return "top-left";
  case CausalAlignment::BottomRight:
    return "bottom-right";
  case CausalAlignment::None:
    break;
  }
  return "none";
}

bool isNamedVariant(const std::string &name) {
  if (name.empty())
    return false;
  std::size_t start = 0;
  while (true) {
    std::size_t plus = name.find('+', start);
    std::string part = name.substr(start, plus - start);
    if (std::find_if(std::begin(kNamedVariants), std::end(kNamedVariants),
                     [&](const char *named) { return part == named; }) ==
        std::end(kNamedVariants))
      return false;
    if (plus == std::string::npos)
      return true;
    start = plus + 1;
  }
}

std::string namedVariantName(const NamedVariantSet &present) {
  // kNamedVariants' order.
  const bool flags[] = {present.causalBottomRight,
                        present.window,
                        present.document,
                        present.softcap,
                        present.alibi,
                        present.sinks,
                        present.dropout};
  static_assert(std::size(flags) == std::size(kNamedVariants));
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < std::size(flags); ++i)
    if (flags[i])
      parts.push_back(kNamedVariants[i]);
  return joinNames(parts, "+");
}

std::string AttentionVariant::namedName() const {
  return namedVariantName({causal == CausalAlignment::BottomRight,
                           window.has_value(), !docIds.empty(),
                           softcap.has_value(), !alibiSlopes.empty(),
                           !sinks.empty(), dropout.has_value()});
}

std::string AttentionVariant::name() const {
  return custom() ? customName : namedName();
}

void AttentionVariant::validate(const AttentionShape &shape) const {
  shape.validate();
  std::string where = "attention variant " +
                      (name().empty() ? "plain" : name()) + " on " +
                      shape.describe() + ": ";
  if (window && (window->left < 0 || window->right < 0))
    throw Error(where + "window bounds must be non-negative, got (" +
                std::to_string(window->left) + ", " +
                std::to_string(window->right) + ")");
  if (softcap && !(*softcap > 0 && std::isfinite(*softcap)))
    throw Error(where + "softcap must be positive and finite, got " +
                shortNumber(*softcap));
  if (!alibiSlopes.empty() &&
      static_cast<std::int64_t>(alibiSlopes.size()) != shape.heads)
    throw Error(where + "ALiBi needs one slope per head (" +
                std::to_string(shape.heads) + "), got " +
                std::to_string(alibiSlopes.size()));
  if (!docIds.empty()) {
    if (shape.seqQ != shape.seqKv)
      throw Error(where + "document masks need seq_q == seq_kv");
    checkDocumentIds(docIds, shape.batch, shape.seqQ);
  }
  if (!sinks.empty()) {
    if (static_cast<std::int64_t>(sinks.size()) != shape.heads)
      throw Error(where + "sinks need one logit per query head (" +
                  std::to_string(shape.heads) + "), got " +
                  std::to_string(sinks.size()));
    for (std::size_t h = 0; h < sinks.size(); ++h)
      if (!std::isfinite(sinks[h]))
        throw Error(where + "sink " + std::to_string(h) + " is " +
                    shortNumber(sinks[h]) + "; sinks must be finite");
  }
  if (dropout && !(dropout->p >= 0 && dropout->p < 1))
    throw Error(where + "dropout p must be in [0, 1), got " +
                shortNumber(dropout->p));
  if (!mask.empty()) {
    Shape perProblem = {shape.seqQ, shape.seqKv};
    Shape perHead = {shape.batch, shape.heads, shape.seqQ, shape.seqKv};
    if (maskShape != perProblem && maskShape != perHead)
      throw Error(where + "the mask has shape " + formatShape(maskShape) +
                  ", expected " + formatShape(perProblem) + " or " +
                  formatShape(perHead));
    if (static_cast<std::int64_t>(mask.size()) != elementCount(maskShape))
      throw Error(where + "the mask has " + std::to_string(mask.size()) +
                  " elements for shape " + formatShape(maskShape));
  }
}

bool AttentionVariant::keeps(const AttentionShape &shape, std::int64_t b,
                             std::int64_t h, std::int64_t i,
                             std::int64_t j) const {
  return ruleKeeps(hostVariantRule(*this, shape), b, h, i, j);
}

std::int64_t AttentionVariant::keptPairs(const AttentionShape &shape) const {
  validate(shape);
  AttentionVariantRule rule = hostVariantRule(*this, shape);
  std::int64_t kept = 0;
  if (!mask.empty()) {
    // A dense mask is as large as the count: test every element.
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t h = 0; h < shape.heads; ++h)
        for (std::int64_t i = 0; i < shape.seqQ; ++i)
          for (std::int64_t j = 0; j < shape.seqKv; ++j)
            kept += ruleKeeps(rule, b, h, i, j);
    return kept;
  }
  // Otherwise each row keeps one interval: the causal/window range cut to
  // the row's document (contiguous, as the ids are non-decreasing); the
  // same for every head.
  std::int64_t batches = docIds.empty() ? 1 : shape.batch;
  std::vector<std::int64_t> docFirst, docEnd;
  for (std::int64_t b = 0; b < batches; ++b) {
    if (!docIds.empty())
      documentSpans(docIds.data() + b * shape.seqQ, shape.seqQ, docFirst,
                    docEnd);
    for (std::int64_t i = 0; i < shape.seqQ; ++i) {
      long long first, end;
      ruleKeyRange(rule, i, first, end);
      if (!docIds.empty()) {
        first = std::max<long long>(first, docFirst[i]);
        end = std::min<long long>(end, docEnd[i]);
      }
      kept += std::max<long long>(0, end - first);
    }
  }
  return kept * shape.heads * (docIds.empty() ? shape.batch : 1);
}

double AttentionVariant::flops(const AttentionShape &shape) const {
  return 4.0 * static_cast<double>(shape.headDim) *
         static_cast<double>(keptPairs(shape));
}

std::string AttentionVariant::describe() const {
  std::vector<std::string> parts;
  if (causal != CausalAlignment::None)
    parts.push_back(std::string("causal=") + causalAlignmentName(causal));
  if (window)
    parts.push_back("window=(" + std::to_string(window->left) + ", " +
                    std::to_string(window->right) + ")");
  if (!docIds.empty())
    parts.push_back(documentSource.empty() ? "document"
                                           : "documents=" + documentSource);
  if (softcap)
    parts.push_back("softcap=" + shortNumber(*softcap));
  if (!alibiSlopes.empty())
    parts.push_back("alibi");
  if (!sinks.empty())
    parts.push_back(sinksSource.empty() ? "sinks" : "sinks=" + sinksSource);
  if (dropout)
    parts.push_back("dropout=(p " + shortNumber(dropout->p) + ", seed " +
                    std::to_string(dropout->seed) + ", offset " +
                    std::to_string(dropout->offset) + ")");
  if (!mask.empty())
    parts.push_back("mask=" + formatShape(maskShape));
  for (const auto &[name, value] : params)
    parts.push_back(name + "=" + value);
  return parts.empty() ? "none" : joinNames(parts, " ");
}

std::vector<float> alibiSlopes(std::int64_t heads) {
  std::vector<float> slopes(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h)
    slopes[h] = static_cast<float>(std::exp2(-8.0 * static_cast<double>(h + 1) /
                                             static_cast<double>(heads)));
  return slopes;
}

std::vector<float> randomSinks(std::int64_t heads, std::int64_t seqKv,
                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  // A uniform double in (0, 1] from the top 53 bits.
  auto uniform = [&rng] {
    return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
  };
  const double pi = std::acos(-1.0);
  std::vector<float> sinks(static_cast<std::size_t>(heads));
  for (float &sink : sinks) {
    double normal =
        std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * pi * uniform());
    sink = static_cast<float>(std::log(static_cast<double>(seqKv)) + normal);
  }
  return sinks;
}

std::vector<std::int32_t>
documentIdsFromLengths(const std::vector<std::int64_t> &lengths,
                       std::int64_t batch, std::int64_t seq) {
  if (lengths.empty())
    throw Error("document lengths: expected at least one length");
  for (std::size_t d = 0; d < lengths.size(); ++d)
    if (lengths[d] < 1)
      throw Error("document lengths: length " + std::to_string(d + 1) + " is " +
                  std::to_string(lengths[d]) +
                  "; every length must be positive");
  std::vector<std::int32_t> row(static_cast<std::size_t>(seq));
  std::int64_t position = 0;
  for (std::int32_t document = 0; position < seq; ++document) {
    std::int64_t length = lengths[document % lengths.size()];
    for (std::int64_t t = 0; t < length && position < seq; ++t)
      row[position++] = document;
  }
  std::vector<std::int32_t> ids;
  ids.reserve(static_cast<std::size_t>(batch * seq));
  for (std::int64_t b = 0; b < batch; ++b)
    ids.insert(ids.end(), row.begin(), row.end());
  return ids;
}

void checkDocumentIds(const std::vector<std::int32_t> &ids, std::int64_t batch,
                      std::int64_t seq) {
  if (static_cast<std::int64_t>(ids.size()) != batch * seq)
    throw Error("doc ids: expected [batch, seq] = [" + std::to_string(batch) +
                ", " + std::to_string(seq) + "], " +
                std::to_string(batch * seq) + " ids, got " +
                std::to_string(ids.size()));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 1; i < seq; ++i)
      if (ids[b * seq + i] < ids[b * seq + i - 1])
        throw Error("doc ids must be non-decreasing along each batch row "
                    "(the kernels skip tiles by it): doc ids [" +
                    std::to_string(b) + ", " + std::to_string(i) +
                    "] = " + std::to_string(ids[b * seq + i]) + " follows " +
                    std::to_string(ids[b * seq + i - 1]));
}

bool isAttentionTensorParam(const std::string &name) {
  // tile_counter, dq_accum and dq_semaphores: the launch's own buffers
  // (AttentionLaunch, AttentionBackwardLaunch, the C API's workspaces),
  // never the user's.
  static const std::set<std::string> names = {
      "q",  "k",  "v",  "out",    "lse",          "dout",     "delta",
      "dq", "dk", "dv", "dsinks", "tile_counter", "dq_accum", "dq_semaphores"};
  return names.count(name) != 0;
}

VariantParams variantParams(const AttentionVariant &variant,
                            const AttentionShape &shape,
                            const std::vector<const KernelSpec *> &kernels) {
  variant.validate(shape);
  VariantParams params = namedVariantParams(variant, shape);
  std::set<std::string> given;
  for (const auto &[name, value] : params.scalars)
    given.insert(name);
  for (const VariantParams::Tensor &tensor : params.tensors)
    given.insert(tensor.name);
  // A value the variant gives must reach a kernel: a kernel of the
  // variant's name compiled without it would silently ignore it.
  for (const std::string &name : given) {
    bool taken = false;
    for (const KernelSpec *kernel : kernels)
      for (const KernelParam &param : kernel->params)
        taken = taken || param.name == name;
    if (!taken)
      throw Error("kernel " + kernels.front()->name + " (variant " +
                  variant.name() + ") takes no parameter '" + name +
                  "', which " + flagOfNamedParam(name) +
                  " gives; its parameters are " +
                  joinNames(paramNames(*kernels.front()), ", "));
  }

  // Every --param must name a parameter of some kernel that is not one the
  // runtime binds itself.
  for (const auto &[name, value] : variant.params) {
    if (isAttentionTensorParam(name) || namedParams().count(name))
      throw Error(
          "--param " + name + ": '" + name + "' is bound by fa-run itself" +
          (namedParams().count(name)
               ? std::string(" (give it with ") + flagOfNamedParam(name) + ")"
               : std::string()));
    bool known = false;
    for (const KernelSpec *kernel : kernels)
      for (const KernelParam &param : kernel->params)
        known = known || param.name == name;
    if (!known)
      throw Error("--param " + name + ": kernel " + kernels.front()->name +
                  " has no parameter '" + name + "'; its parameters are " +
                  joinNames(paramNames(*kernels.front()), ", "));
  }

  // Every parameter of every kernel must have a value, of its kind.
  for (const KernelSpec *kernel : kernels)
    for (const KernelParam &param : kernel->params) {
      // A tensor map of one of the tensors: KernelArgs encodes it.
      bool derived =
          param.kind == ParamKind::TensorMap && !param.tensor.empty();
      if (derived || isAttentionTensorParam(param.name) ||
          given.count(param.name))
        continue;
      auto value = variant.params.find(param.name);
      if (value == variant.params.end()) {
        if (namedParams().count(param.name))
          throw Error("kernel " + kernel->name + " takes '" + param.name +
                      "', which " + flagOfNamedParam(param.name) + " gives");
        throw Error("kernel " + kernel->name + " takes parameter '" +
                    param.name + "' (" + paramKindName(param.kind) +
                    "): give it with --param " + param.name +
                    (param.kind == ParamKind::Memref ||
                             param.kind == ParamKind::I32Memref
                         ? "=FILE.npy"
                         : "=VALUE"));
      }
      bool tensorParam =
          param.kind == ParamKind::Memref || param.kind == ParamKind::I32Memref;
      if (tensorParam != namesNpyFile(value->second))
        throw Error(
            "--param " + param.name + "=" + value->second + ": parameter '" +
            param.name + "' of kernel " + kernel->name + " is " +
            (tensorParam ? "a tensor: give a .npy file"
                         : std::string("a scalar (") +
                               paramKindName(param.kind) + "): give a number"));
      if (tensorParam)
        params.tensors.push_back(tensorValue(param, value->second));
      else
        params.scalars[param.name] = scalarValue(param, value->second);
      given.insert(param.name);
    }
  return params;
}

VariantArgs::VariantArgs(const VariantParams &params) : values(params.scalars) {
  buffers.reserve(params.tensors.size());
  for (const VariantParams::Tensor &tensor : params.tensors) {
    DeviceBuffer &buffer = buffers.emplace_back("the variant's " + tensor.name,
                                                tensor.bytes.size());
    buffer.upload(tensor.bytes);
    if (tensor.kind == ParamKind::I32Memref)
      values[tensor.name] = I32MemrefArg{buffer.get(), tensor.shape};
    else
      values[tensor.name] = MemrefArg{buffer.get(), tensor.dtype, tensor.shape};
  }
}

} // namespace fa
