//===- KernelLibrary.cpp - Parsing the kernel manifest --------------------===//

#include "fa/runtime/KernelLibrary.h"

#include "fa/runtime/Error.h"

#include "ReadFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace fa {
namespace {

using nlohmann::json;

constexpr const char *kManifestFormat = "fa-kernel-library";
constexpr int kManifestVersion = 1;

/// A JSON object being read, with the context its errors start with
/// ("kernel manifest lib/manifest.json: kernel 'x'").
class ObjectReader {
public:
  ObjectReader(const json &object, std::string context)
      : object(object), context(std::move(context)) {
    if (!object.is_object())
      fail("expected an object, got " + std::string(object.type_name()));
  }

  const json &field(const std::string &key) const {
    auto it = object.find(key);
    if (it == object.end())
      fail("missing key '" + key + "'");
    return *it;
  }

  std::string string(const std::string &key) const {
    const json &value = field(key);
    if (!value.is_string())
      wrongType(key, "a string", value);
    return value.get<std::string>();
  }

  std::int64_t integer(const std::string &key, std::int64_t minimum) const {
    return checkedInteger(field(key), "'" + key + "'", minimum);
  }

  bool boolean(const std::string &key) const {
    const json &value = field(key);
    if (!value.is_boolean())
      wrongType(key, "true or false", value);
    return value.get<bool>();
  }

  const json &array(const std::string &key, std::size_t size) const {
    const json &value = field(key);
    if (!value.is_array() || (size && value.size() != size))
      wrongType(key, size ? "an array of " + std::to_string(size) : "an array",
                value);
    return value;
  }

  /// A number with at least `minimum`; `what` names it for errors.
  std::int64_t checkedInteger(const json &value, const std::string &what,
                              std::int64_t minimum) const {
    if (!value.is_number_integer())
      fail(what + " must be an integer, got " + value.dump());
    std::int64_t number = value.get<std::int64_t>();
    if (number < minimum)
      fail(what + " must be at least " + std::to_string(minimum) + ", got " +
           std::to_string(number));
    return number;
  }

  [[noreturn]] void wrongType(const std::string &key,
                              const std::string &expected,
                              const json &value) const {
    fail("key '" + key + "' must be " + expected + ", got " + value.dump());
  }

  [[noreturn]] void fail(const std::string &message) const {
    throw Error(context + ": " + message);
  }

  const std::string &where() const { return context; }

private:
  const json &object;
  std::string context;
};

DType readDType(const ObjectReader &reader, const std::string &key) {
  std::string name = reader.string(key);
  try {
    return parseDType(name);
  } catch (const Error &error) {
    reader.fail("key '" + key + "': " + error.what());
  }
}

KernelParam readParam(const json &value, const ObjectReader &kernel,
                      std::size_t index) {
  ObjectReader reader(value, kernel.where() + ": params[" +
                                 std::to_string(index) + "]");
  KernelParam param;
  param.name = reader.string("name");
  std::string kind = reader.string("kind");
  if (kind == "memref") {
    param.kind = ParamKind::Memref;
    param.dtype = readDType(reader, "dtype");
    param.rank = static_cast<int>(reader.integer("rank", 0));
  } else if (kind == "i32") {
    param.kind = ParamKind::I32;
  } else if (kind == "i64") {
    param.kind = ParamKind::I64;
  } else if (kind == "f32") {
    param.kind = ParamKind::F32;
  } else {
    reader.fail("parameter '" + param.name + "' has unknown kind '" + kind +
                "'; expected memref, i32, i64 or f32");
  }
  return param;
}

GridExtent readGridExtent(const json &value, const ObjectReader &kernel,
                          std::size_t index) {
  std::string what = "grid[" + std::to_string(index) + "]";
  if (!value.is_string())
    return {"", static_cast<unsigned>(kernel.checkedInteger(value, what, 1))};
  std::string symbol = value.get<std::string>();
  if (std::find(kGridSymbols.begin(), kGridSymbols.end(), symbol) ==
      kGridSymbols.end())
    kernel.fail(what + " is the unknown symbol '" + symbol +
                "'; expected query_tiles, batch_heads, one or a number");
  return {symbol, 1};
}

Dim3 readBlock(const ObjectReader &kernel) {
  const json &block = kernel.array("block", 3);
  auto extent = [&](std::size_t i) {
    return static_cast<unsigned>(
        kernel.checkedInteger(block[i], "block[" + std::to_string(i) + "]", 1));
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
  spec.dtype = readDType(kernel, "dtype");
  spec.headDim = kernel.integer("head_dim", 1);
  spec.causal = kernel.boolean("causal");
  const json &scale = kernel.field("scale");
  if (scale.is_number())
    spec.scale = scale.get<double>();
  else if (!scale.is_null())
    kernel.wrongType("scale", "a number or null", scale);

  spec.config = readConfig(kernel);
  auto blockM = spec.config.find("block_m");
  if (blockM == spec.config.end() || blockM->second < 1)
    kernel.fail("config needs a positive integer 'block_m' (it sizes the "
                "query_tiles grid dimension)");
  spec.blockM = blockM->second;
  spec.block = readBlock(kernel);
  const json &grid = kernel.array("grid", 3);
  for (std::size_t i = 0; i < 3; ++i)
    spec.grid[i] = readGridExtent(grid[i], kernel, i);
  spec.dynamicSharedBytes =
      static_cast<unsigned>(kernel.integer("dynamic_shared_bytes", 0));
  const json &params = kernel.array("params", 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    spec.params.push_back(readParam(params[i], kernel, i));
  return spec;
}

} // namespace

double KernelSpec::softmaxScale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

std::string KernelSpec::describe() const {
  return KernelQuery{op, dtype, headDim, causal}.describe();
}

std::string KernelQuery::describe() const {
  return op + " " + dtypeName(dtype) + " head_dim=" + std::to_string(headDim) +
         (causal ? " causal" : " non-causal");
}

KernelLibrary KernelLibrary::load(const std::string &directory) {
  std::string path =
      (std::filesystem::path(directory) / "manifest.json").string();
  return parse(readFile(path, "reading the kernel library"), path);
}

KernelLibrary KernelLibrary::parse(const std::string &text,
                                   const std::string &manifestPath) {
  std::string context = "kernel manifest " + manifestPath;
  json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded())
    throw Error(context + ": not valid JSON");

  ObjectReader top(manifest, context);
  if (top.string("format") != kManifestFormat)
    top.fail("'format' must be \"" + std::string(kManifestFormat) + "\"");
  if (top.integer("version", 0) != kManifestVersion)
    top.fail("unsupported version " + top.field("version").dump() +
             "; this runtime reads version " +
             std::to_string(kManifestVersion));
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
  return library;
}

const KernelSpec &KernelLibrary::find(const KernelQuery &query) const {
  for (const KernelSpec &spec : specs)
    if (spec.op == query.op && spec.dtype == query.dtype &&
        spec.headDim == query.headDim && spec.causal == query.causal)
      return spec;
  std::string available;
  for (const KernelSpec &spec : specs)
    available += "\n  " + spec.name + " (" + spec.describe() + ")";
  throw Error(
      "no kernel for " + query.describe() + " in " + manifestPath +
      (specs.empty() ? "; the library is empty" : "; it has:" + available));
}

} // namespace fa
