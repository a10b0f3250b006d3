//===- KernelLibrary.cpp - Parsing the kernel manifest --------------------===//

#include "fa/runtime/KernelLibrary.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include "JsonReader.h"
#include "ReadFile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

namespace fa {
namespace {

using nlohmann::json;

constexpr const char *kManifestFormat = "fa-kernel-library";
constexpr int kManifestVersion = 1;

/// The keys of a tensor map parameter that say what KernelArgs encodes it
/// from; "tensor" comes with the others or with none of them.
constexpr const char *kTensorMapSourceKeys[] = {"dtype", "box", "swizzle"};

/// A tensor map's "tensor", "dtype", "box" and "swizzle" (KernelLibrary.h);
/// a tensor map without them is bound by the caller.
void readTensorMapSource(const ObjectReader &reader, KernelParam &param) {
  std::string what = "tensor map parameter '" + param.name + "'";
  if (!reader.has("tensor")) {
    for (const char *key : kTensorMapSourceKeys)
      if (reader.has(key))
        reader.fail(what + " has '" + key +
                    "' but no 'tensor' (the memref parameter it maps)");
    return;
  }
  param.tensor = reader.string("tensor");
  if (param.tensor.empty() || param.tensor == param.name)
    reader.fail(what + " must name another parameter as its 'tensor'");
  param.dtype = reader.dtype("dtype");
  const json &box = reader.array("box", 0);
  if (box.empty() || box.size() > kMaxTensorMapRank)
    reader.fail(what + " has a box of " + std::to_string(box.size()) +
                " dimensions; a tensor map has 1 to 5");
  for (std::size_t d = 0; d < box.size(); ++d)
    param.box.push_back(reader.checkedInteger(
        box[d], "box[" + std::to_string(d) + "]", 1, kMaxTensorMapBoxDim));
  std::string swizzle = reader.string("swizzle");
  std::optional<TensorMapSwizzle> named = tensorMapSwizzleNamed(swizzle);
  if (!named)
    reader.fail(what + " has unknown swizzle '" + swizzle +
                "'; expected none, 32b, 64b or 128b");
  param.swizzle = *named;
}

KernelParam readParam(const json &value, const ObjectReader &kernel,
                      std::size_t index) {
  ObjectReader reader(value, kernel.where() + ": params[" +
                                 std::to_string(index) + "]");
  KernelParam param;
  param.name = reader.string("name");
  std::string kind = reader.string("kind");
  if (kind == "memref") {
    // i32 tensors (doc_ids) are a kind of their own: DType names the element
    // types of q, k and v, which i32 is not.
    bool int32 = reader.string("dtype") == "i32";
    param.kind = int32 ? ParamKind::I32Memref : ParamKind::Memref;
    if (!int32)
      param.dtype = reader.dtype("dtype");
    param.rank = reader.integerAs<int>("rank", 0);
    // Absent in manifests written before strided parameters: contiguous.
    if (reader.has("strided"))
      param.strided = reader.boolean("strided");
  } else if (kind == "i32") {
    param.kind = ParamKind::I32;
  } else if (kind == "i64") {
    param.kind = ParamKind::I64;
  } else if (kind == "f32") {
    param.kind = ParamKind::F32;
  } else if (kind == "tensormap") {
    param.kind = ParamKind::TensorMap;
    readTensorMapSource(reader, param);
  } else {
    reader.fail("parameter '" + param.name + "' has unknown kind '" + kind +
                "'; expected memref, i32, i64, f32 or tensormap");
  }
  return param;
}

std::string joinWords(const std::vector<std::string> &words) {
  std::string text;
  for (const std::string &word : words)
    text += (text.empty() ? "" : ", ") + word;
  return text;
}

GridExtent readGridExtent(const json &value, const ObjectReader &kernel,
                          const std::string &op, std::size_t index) {
  std::string what = "grid[" + std::to_string(index) + "]";
  if (!value.is_string())
    return {"", kernel.checkedIntegerAs<unsigned>(value, what, 1)};
  std::string symbol = value.get<std::string>();
  std::vector<std::string> allowed = gridSymbolsOf(op);
  if (std::find(allowed.begin(), allowed.end(), symbol) != allowed.end())
    return {symbol, 1};
  std::vector<std::string> known = gridSymbolsOf("");
  bool otherOps = std::find(known.begin(), known.end(), symbol) != known.end();
  kernel.fail(what + " is the " +
              (otherOps ? "symbol '" + symbol + "', which a " + op +
                              " kernel cannot use"
                        : "unknown symbol '" + symbol + "'") +
              "; expected " + joinWords(allowed) + " or a number");
}

Dim3 readBlock(const ObjectReader &kernel) {
  const json &block = kernel.array("block", 3);
  auto extent = [&](std::size_t i) {
    return kernel.checkedIntegerAs<unsigned>(
        block[i], "block[" + std::to_string(i) + "]", 1);
  };
  return {extent(0), extent(1), extent(2)};
}

std::map<std::string, std::int64_t> readConfig(const ObjectReader &kernel) {
  ObjectReader config(kernel.field("config"), kernel.where() + ": config");
  std::map<std::string, std::int64_t> values;
  for (const auto &[key, value] : kernel.field("config").items())
    values[key] = config.checkedInteger(value, "'" + key + "'", 0);
  return values;
}

/// config[key], which must be a positive integer; `why` says what it is for.
std::int64_t positiveConfig(const KernelSpec &spec, const ObjectReader &kernel,
                            const std::string &key, const std::string &why) {
  auto it = spec.config.find(key);
  if (it == spec.config.end() || it->second < 1)
    kernel.fail("config needs a positive integer '" + key + "' (" + why + ")");
  return it->second;
}

/// The optional "variant" string: absent or "" for a plain kernel.
std::string readVariant(const ObjectReader &kernel) {
  if (!kernel.has("variant"))
    return "";
  return kernel.string("variant");
}

void readAttentionFields(const ObjectReader &kernel, KernelSpec &spec) {
  spec.headDim = kernel.integer("head_dim", 1);
  spec.causal = kernel.boolean("causal");
  spec.variant = readVariant(kernel);
  const json &scale = kernel.field("scale");
  if (scale.is_number())
    spec.scale = scale.get<double>();
  else if (!scale.is_null())
    kernel.wrongType("scale", "a number or null", scale);
  spec.blockM = positiveConfig(spec, kernel, "block_m",
                               spec.op == kAttentionDkDvOp
                                   ? "keys per block: it sizes the key_tiles "
                                     "grid dimension"
                                   : "it sizes the query_tiles grid dimension");
  if (spec.op == kAttentionBackwardOp) {
    spec.deltaKernel = kernel.string("delta_kernel");
    spec.dkdvKernel = kernel.string("dkdv_kernel");
    if (kernel.has("dsinks_kernel"))
      spec.dsinksKernel = kernel.string("dsinks_kernel");
  }
}

/// An attention_bwd_dkdv kernel with config split_dkdv = 1 computes dV in
/// the blocks of grid z 0 and dK in those of z 1: its grid z must be
/// dkdv_parts (2), and only such a kernel may have it, or half of dK and dV
/// would go unwritten (or be written twice).
void requireSplitDkdvGrid(const ObjectReader &kernel, const KernelSpec &spec) {
  auto split = spec.config.find("split_dkdv");
  bool splitKernel = split != spec.config.end() && split->second != 0;
  if (split != spec.config.end() && split->second > 1)
    kernel.fail("config 'split_dkdv' must be 0 or 1, got " +
                std::to_string(split->second));
  bool partsGrid = spec.grid[2].symbol == "dkdv_parts";
  if (splitKernel && !partsGrid)
    kernel.fail("config split_dkdv = 1 needs grid[2] = dkdv_parts (dV in "
                "blocks of z 0, dK in blocks of z 1)");
  if (!splitKernel && partsGrid)
    kernel.fail("grid[2] is dkdv_parts, which only a kernel with config "
                "split_dkdv = 1 may use");
}

/// An attention_bwd_dsinks kernel: the tensors it reads and writes, by name
/// (its grid, one block per head, needs no config).
void requireDsinksParams(const ObjectReader &kernel, const KernelSpec &spec) {
  for (const char *name : {"lse", "delta", "sinks", "dsinks"}) {
    auto param =
        std::find_if(spec.params.begin(), spec.params.end(),
                     [&](const KernelParam &p) { return p.name == name; });
    if (param == spec.params.end())
      kernel.fail(std::string("an attention_bwd_dsinks kernel takes '") + name +
                  "', and this one has no such parameter");
    if (param->kind != ParamKind::Memref || param->dtype != DType::F32)
      kernel.fail(std::string("parameter '") + name +
                  "' must be an f32 memref");
  }
}

void readLayerNormFields(const ObjectReader &kernel, KernelSpec &spec) {
  bool params = spec.op == kLayerNormParamsOp;
  spec.blockCols =
      positiveConfig(spec, kernel, "block_cols",
                     params ? "it sizes the column_tiles grid dimension"
                            : "the widest row a resident kernel holds");
  if (params)
    return;
  spec.rowsPerTile = positiveConfig(spec, kernel, "rows",
                                    "rows per tile: it sizes the grid and "
                                    "the backward's partial sums");
  auto resident = spec.config.find("resident");
  if (resident == spec.config.end() || resident->second > 1)
    kernel.fail("config needs 'resident' 0 or 1 (whether the kernel keeps a "
                "row of at most block_cols elements on chip)");
  spec.resident = resident->second == 1;
  if (spec.op == kLayerNormBackwardOp)
    spec.paramsKernel = kernel.string("params_kernel");
}

/// A layernorm_fwd kernel takes eps at launch. One without the parameter
/// has a constant compiled in and would ignore the caller's eps.
void requireEpsParam(const ObjectReader &kernel, const KernelSpec &spec) {
  for (const KernelParam &param : spec.params)
    if (param.name == "eps") {
      if (param.kind != ParamKind::F32)
        kernel.fail("parameter 'eps' must be of kind f32");
      return;
    }
  kernel.fail("a layernorm_fwd kernel takes eps as an f32 parameter named "
              "'eps', and this one has none (a library built before eps was "
              "a parameter? rebuild it)");
}

/// Every tensor map that names a `tensor` maps a memref parameter of the
/// kernel of its dtype and of its box's rank: KernelArgs encodes it from that
/// parameter's value.
void requireTensorMapSources(const ObjectReader &kernel,
                             const KernelSpec &spec) {
  for (const KernelParam &map : spec.params) {
    if (map.kind != ParamKind::TensorMap || map.tensor.empty())
      continue;
    std::string what =
        "tensor map parameter '" + map.name + "' maps '" + map.tensor + "'";
    auto tensor = std::find_if(
        spec.params.begin(), spec.params.end(),
        [&](const KernelParam &p) { return p.name == map.tensor; });
    if (tensor == spec.params.end() || tensor->kind != ParamKind::Memref)
      kernel.fail(what + ", which is not a memref parameter of the kernel");
    if (tensor->dtype != map.dtype)
      kernel.fail(what + " as " + dtypeName(map.dtype) + ", but '" +
                  map.tensor + "' holds " + dtypeName(tensor->dtype));
    if (static_cast<std::size_t>(tensor->rank) != map.box.size())
      kernel.fail(what + " with the box " + formatShape(map.box) + ", but '" +
                  map.tensor + "' is a rank-" + std::to_string(tensor->rank) +
                  " memref");
  }
}

/// Whether an attention kernel takes views: its q parameter is strided, or,
/// in a kernel without q, its out (attention_bwd_delta) or its dq (the
/// attention_bwd of a fused dQ, which converts dq_accum into dq).
bool takesViews(const KernelSpec &spec) {
  for (const char *name : {"q", "out", "dq"})
    for (const KernelParam &param : spec.params)
      if (param.name == name)
        return param.kind == ParamKind::Memref && param.strided;
  return false;
}

bool isLayerNormOp(const std::string &op) {
  return op == kLayerNormForwardOp || op == kLayerNormBackwardOp ||
         op == kLayerNormParamsOp;
}

KernelSpec readKernel(const json &value, std::size_t index,
                      const std::string &manifestContext,
                      const std::filesystem::path &directory,
                      const std::string &target) {
  // Name the kernel in errors as soon as its name is known.
  std::string indexed =
      manifestContext + ": kernels[" + std::to_string(index) + "]";
  KernelSpec spec;
  spec.name = ObjectReader(value, indexed).string("name");
  ObjectReader kernel(value, manifestContext + ": kernel '" + spec.name + "'");

  spec.op = kernel.string("op");
  spec.ptxPath = (directory / kernel.string("ptx")).string();
  spec.entry = kernel.string("entry");
  spec.target = target;
  spec.dtype = kernel.dtype("dtype");
  spec.config = readConfig(kernel);
  if (hasAttentionTile(spec.op))
    readAttentionFields(kernel, spec);
  else if (isLayerNormOp(spec.op))
    readLayerNormFields(kernel, spec);
  spec.block = readBlock(kernel);
  const json &grid = kernel.array("grid", 3);
  for (std::size_t i = 0; i < 3; ++i)
    spec.grid[i] = readGridExtent(grid[i], kernel, spec.op, i);
  spec.dynamicSharedBytes =
      kernel.integerAs<unsigned>("dynamic_shared_bytes", 0);
  const json &params = kernel.array("params", 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    spec.params.push_back(readParam(params[i], kernel, i));
  requireTensorMapSources(kernel, spec);
  if (hasAttentionTile(spec.op))
    spec.views = takesViews(spec);
  if (spec.op == kLayerNormForwardOp)
    requireEpsParam(kernel, spec);
  if (spec.op == kAttentionDsinksOp)
    requireDsinksParams(kernel, spec);
  if (spec.op == kAttentionDkDvOp)
    requireSplitDkdvGrid(kernel, spec);
  return spec;
}

/// A kernel that another one runs with, named by a key of its entry.
struct Companion {
  const char *key; // "params_kernel", ...
  const char *op;  // What the named kernel must compute.
  const std::string &name;
};

std::vector<Companion> companionsOf(const KernelSpec &spec) {
  if (spec.op == kLayerNormBackwardOp)
    return {{"params_kernel", kLayerNormParamsOp, spec.paramsKernel}};
  if (spec.op == kAttentionBackwardOp && !spec.dsinksKernel.empty())
    return {{"delta_kernel", kAttentionDeltaOp, spec.deltaKernel},
            {"dkdv_kernel", kAttentionDkDvOp, spec.dkdvKernel},
            {"dsinks_kernel", kAttentionDsinksOp, spec.dsinksKernel}};
  if (spec.op == kAttentionBackwardOp)
    return {{"delta_kernel", kAttentionDeltaOp, spec.deltaKernel},
            {"dkdv_kernel", kAttentionDkDvOp, spec.dkdvKernel}};
  return {};
}

/// Ten significant digits, no trailing zeros: "1e-05", "0.125".
std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.10g", value);
  return text;
}

std::string describeScale(const std::optional<double> &scale) {
  return scale ? formatNumber(*scale) : "1/sqrt(head_dim)";
}

/// Whether a named variant ('+'-joined) has `part`.
bool variantHas(const std::string &variant, const std::string &part) {
  return ("+" + variant + "+").find("+" + part + "+") != std::string::npos;
}

/// Every kernel's companions are in the library and compute what they must;
/// an attention kernel's are of its group (dtype, head_dim, causal, variant)
/// and have its scale, since they compute parts of the same gradient. The
/// dsinks kernel has no head_dim, scale or variant (it reads f32 statistics
/// whatever the dtype), and only a sinks kernel names one.
void checkCompanionKernels(const KernelLibrary &library,
                           const ObjectReader &top) {
  for (const KernelSpec &spec : library.kernels())
    for (const Companion &companion : companionsOf(spec)) {
      std::string what = "kernel '" + spec.name + "': " + companion.key + " '" +
                         companion.name + "'";
      const KernelSpec *other = library.named(companion.name);
      if (!other)
        top.fail(what + " is not in the library");
      if (other->op != companion.op)
        top.fail(what + " computes " + other->op + ", not " + companion.op);
      if (other->op == kAttentionDsinksOp) {
        if (!variantHas(spec.variant, "sinks"))
          top.fail("kernel '" + spec.name +
                   "' names a dsinks_kernel, but its "
                   "variant '" +
                   spec.variant + "' has no sinks");
        continue;
      }
      if (!isAttentionOp(spec.op))
        continue;
      KernelQuery expected{companion.op, spec.dtype,   spec.headDim,
                           spec.causal,  spec.variant, spec.views};
      if (!expected.matches(*other))
        top.fail(what + " is " + other->describe() + ", expected " +
                 expected.describe());
      if (other->scale != spec.scale)
        top.fail(what + " has scale " + describeScale(other->scale) +
                 ", expected " + describeScale(spec.scale));
    }
}

} // namespace

double KernelSpec::softmaxScale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

KernelQuery KernelSpec::query() const {
  return {op, dtype, headDim, causal, variant, views};
}

std::string KernelSpec::describe() const {
  if (op != kLayerNormForwardOp && op != kLayerNormBackwardOp)
    return query().describe();
  return query().describe() + (resident ? " cols<=" + std::to_string(blockCols)
                                        : std::string(" any cols"));
}

std::string KernelQuery::describe() const {
  std::string text = op + " " + dtypeName(dtype);
  if (!hasAttentionTile(op))
    return text;
  return text + " head_dim=" + std::to_string(headDim) +
         (causal ? " causal" : " non-causal") +
         (variant.empty() ? "" : " variant=" + variant) +
         (views ? " views" : "");
}

const char *paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Memref:
    return "memref";
  case ParamKind::I32Memref:
    return "memref<i32>";
  case ParamKind::I32:
    return "i32";
  case ParamKind::I64:
    return "i64";
  case ParamKind::F32:
    return "f32";
  case ParamKind::TensorMap:
    return "tensormap";
  }
  return "?";
}

bool isAttentionOp(const std::string &op) {
  return op.rfind("attention", 0) == 0;
}

bool hasAttentionTile(const std::string &op) {
  return isAttentionOp(op) && op != kAttentionDsinksOp;
}

std::string formatEps(double eps) { return formatNumber(eps); }

std::vector<std::string> gridSymbolsOf(const std::string &op) {
  if (op == kAttentionDsinksOp)
    return {"heads", "one"};
  if (op == kAttentionDkDvOp)
    return {"query_tiles",    "batch_heads", "key_tiles",
            "batch_kv_heads", "dkdv_parts",  "one"};
  if (op == kAttentionForwardOp)
    return {"query_tiles", "persistent_query_tiles", "batch_heads",
            "key_tiles",   "batch_kv_heads",         "one"};
  if (isAttentionOp(op))
    return {"query_tiles", "batch_heads", "key_tiles", "batch_kv_heads", "one"};
  if (op == kLayerNormForwardOp)
    return {"row_tiles", "persistent_row_tiles", "one"};
  if (op == kLayerNormBackwardOp)
    return {"persistent_row_tiles", "one"};
  if (op == kLayerNormParamsOp)
    return {"column_tiles", "one"};
  return {"query_tiles",
          "persistent_query_tiles",
          "batch_heads",
          "key_tiles",
          "batch_kv_heads",
          "dkdv_parts",
          "heads",
          "row_tiles",
          "persistent_row_tiles",
          "column_tiles",
          "one"};
}

KernelLibrary KernelLibrary::load(const std::string &directory) {
  NvtxRange range{"load kernel library"};
  std::string path =
      (std::filesystem::path(directory) / "manifest.json").string();
  return parse(readFile(path, "reading the kernel library"), path);
}

KernelLibrary KernelLibrary::parse(const std::string &text,
                                   const std::string &manifestPath) {
  std::string context = "kernel manifest " + manifestPath;
  json manifest = parseJson(text, context);
  ObjectReader top(manifest, context);
  top.requireFormat(kManifestFormat, kManifestVersion);
  std::string target = top.string("target");
  auto directory = std::filesystem::path(manifestPath).parent_path();

  KernelLibrary library;
  library.manifestPath = manifestPath;
  std::set<std::string> names;
  const json &kernels = top.array("kernels", 0);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    KernelSpec spec = readKernel(kernels[i], i, context, directory, target);
    if (!names.insert(spec.name).second)
      top.fail("kernel name '" + spec.name + "' appears twice");
    library.specs.push_back(std::move(spec));
  }
  checkCompanionKernels(library, top);
  return library;
}

bool KernelQuery::matches(const KernelSpec &spec) const {
  return spec.query() == *this;
}

bool KernelQuery::operator==(const KernelQuery &other) const {
  return op == other.op && dtype == other.dtype && headDim == other.headDim &&
         causal == other.causal && variant == other.variant &&
         views == other.views;
}

namespace {

/// "plain, plain (causal), window (causal), plain (causal, views)": the
/// variants of `op`'s groups, with top-left causal where their kernels have
/// it and views where they take views, for messages.
std::string describeVariants(const std::vector<KernelQuery> &groups,
                             const std::string &op) {
  std::vector<std::string> seen;
  for (const KernelQuery &group : groups) {
    if (group.op != op)
      continue;
    std::string tags = std::string(group.causal ? "causal" : "") +
                       (group.causal && group.views ? ", " : "") +
                       (group.views ? "views" : "");
    std::string variant = (group.variant.empty() ? "plain" : group.variant) +
                          (tags.empty() ? "" : " (" + tags + ")");
    if (std::find(seen.begin(), seen.end(), variant) == seen.end())
      seen.push_back(variant);
  }
  std::string text;
  for (const std::string &variant : seen)
    text += (text.empty() ? "" : ", ") + variant;
  return text.empty() ? "none" : text;
}

} // namespace

const KernelSpec &KernelLibrary::find(const KernelQuery &query) const {
  for (const KernelSpec &spec : specs)
    if (query.matches(spec))
      return spec;
  // A variant's kernels are few; the variants the library has say more than
  // its whole list.
  if (!query.variant.empty())
    throw Error("no kernel for " + query.describe() + " in " + manifestPath +
                "; its " + query.op + " kernels have the variants: " +
                describeVariants(groups(), query.op));
  std::string available;
  for (const KernelSpec &spec : specs)
    available += "\n  " + spec.name + " (" + spec.describe() + ")";
  throw Error(
      "no kernel for " + query.describe() + " in " + manifestPath +
      (specs.empty() ? "; the library is empty" : "; it has:" + available));
}

std::vector<const KernelSpec *>
KernelLibrary::candidates(const KernelQuery &query) const {
  std::vector<const KernelSpec *> found;
  for (const KernelSpec &spec : specs)
    if (query.matches(spec))
      found.push_back(&spec);
  return found;
}

const KernelSpec *KernelLibrary::named(const std::string &name) const {
  for (const KernelSpec &spec : specs)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::vector<std::string> KernelLibrary::variants(const std::string &op) const {
  std::vector<std::string> found;
  for (const KernelSpec &spec : specs)
    if (spec.op == op &&
        std::find(found.begin(), found.end(), spec.variant) == found.end())
      found.push_back(spec.variant);
  return found;
}

std::vector<KernelQuery> KernelLibrary::groups() const {
  std::vector<KernelQuery> found;
  for (const KernelSpec &spec : specs)
    if (std::find(found.begin(), found.end(), spec.query()) == found.end())
      found.push_back(spec.query());
  return found;
}

} // namespace fa
