//===- TuningCache.cpp - Reading and writing the tuning cache -------------===//

#include "fa/runtime/TuningCache.h"

#include "fa/runtime/Error.h"

#include "JsonReader.h"
#include "ReadFile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fa {
namespace {

using nlohmann::json;

constexpr const char *kCacheFormat = "fa-tuning-cache";
constexpr int kCacheVersion = 1;

bool sameKey(const TuningEntry &entry, const KernelQuery &group,
             const std::string &seqClass) {
  return entry.group == group && entry.seqClass == seqClass;
}

std::string readSeqClass(const ObjectReader &reader) {
  std::string name = reader.string("seq_class");
  std::string known;
  for (const SeqClass &seqClass : kSeqClasses) {
    if (name == seqClass.name)
      return name;
    known +=
        std::string(known.empty() ? "" : ", ") + "\"" + seqClass.name + "\"";
  }
  reader.fail("unknown seq_class \"" + name + "\"; expected " + known);
}

std::map<std::string, double> readCandidates(const ObjectReader &entry) {
  ObjectReader reader(entry.field("candidates"),
                      entry.where() + ": candidates");
  std::map<std::string, double> candidates;
  for (const auto &[name, tflops] : entry.field("candidates").items()) {
    if (!tflops.is_number())
      reader.wrongType(name, "a number (TFLOP/s)", tflops);
    candidates[name] = tflops.get<double>();
  }
  return candidates;
}

TuningEntry readEntry(const json &value, const std::string &context) {
  ObjectReader reader(value, context);
  TuningEntry entry;
  entry.group.op = reader.string("op");
  entry.group.dtype = reader.dtype("dtype");
  entry.group.headDim = reader.integer("head_dim", 1);
  entry.group.causal = reader.boolean("causal");
  // Absent for plain kernels (and in caches written before variants).
  if (reader.has("variant"))
    entry.group.variant = reader.string("variant");
  // Absent for kernels on contiguous tensors (and in caches written before
  // views twins): an entry of a views group must not serve a contiguous one.
  if (reader.has("views"))
    entry.group.views = reader.boolean("views");
  entry.seqClass = readSeqClass(reader);
  entry.kernel = reader.string("kernel");
  entry.tflops = reader.number("tflops");
  entry.candidates = readCandidates(reader);
  return entry;
}

json entryJson(const TuningEntry &entry) {
  json value = {{"op", entry.group.op},
                {"dtype", dtypeName(entry.group.dtype)},
                {"head_dim", entry.group.headDim},
                {"causal", entry.group.causal},
                {"seq_class", entry.seqClass},
                {"kernel", entry.kernel},
                {"tflops", entry.tflops},
                {"candidates", entry.candidates}};
  if (!entry.group.variant.empty())
    value["variant"] = entry.group.variant;
  if (entry.group.views)
    value["views"] = true;
  return value;
}

} // namespace

const SeqClass &seqClassOf(std::int64_t seqKv) {
  for (const SeqClass &seqClass : kSeqClasses)
    if (seqKv <= seqClass.maxSeqKv)
      return seqClass;
  return kSeqClasses.back();
}

TuningCache TuningCache::load(const std::string &path) {
  return parse(readFile(path, "reading the tuning cache"), path);
}

std::optional<TuningCache> TuningCache::loadIfPresent(const std::string &path) {
  if (!std::filesystem::exists(path))
    return std::nullopt;
  return load(path);
}

TuningCache TuningCache::parse(const std::string &text,
                               const std::string &path) {
  std::string context = "tuning cache " + path;
  json document = parseJson(text, context);
  ObjectReader top(document, context);
  top.requireFormat(kCacheFormat, kCacheVersion);

  TuningCache cache;
  cache.path = path;
  cache.device = top.string("device");
  const json &entries = top.array("entries", 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    TuningEntry entry =
        readEntry(entries[i], context + ": entries[" + std::to_string(i) + "]");
    if (cache.find(entry.group, entry.seqClass))
      top.fail("two entries for " + entry.group.describe() + " seq_class " +
               entry.seqClass);
    cache.entries.push_back(std::move(entry));
  }
  return cache;
}

std::string TuningCache::serialize() const {
  json document = {{"format", kCacheFormat},
                   {"version", kCacheVersion},
                   {"device", device},
                   {"entries", json::array()}};
  for (const TuningEntry &entry : entries)
    document["entries"].push_back(entryJson(entry));
  return document.dump(2) + "\n";
}

void TuningCache::save(const std::string &target) const {
  std::string what = "writing the tuning cache " + target;
  // The temporary file sits next to the target so that the rename stays on
  // one file system, where it is atomic.
  std::string temporary = target + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error(what + ": cannot create " + temporary);
    file << serialize();
    file.close();
    if (!file)
      throw Error(what + ": cannot write " + temporary);
  }
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::string reason = error.message();
    std::filesystem::remove(temporary, error);
    throw Error(what + ": cannot rename " + temporary + " to it: " + reason);
  }
}

const TuningEntry *TuningCache::find(const KernelQuery &group,
                                     const std::string &seqClass) const {
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const TuningEntry &entry) {
                           return sameKey(entry, group, seqClass);
                         });
  return it == entries.end() ? nullptr : &*it;
}

void TuningCache::record(TuningEntry entry) {
  for (TuningEntry &existing : entries)
    if (sameKey(existing, entry.group, entry.seqClass)) {
      existing = std::move(entry);
      return;
    }
  entries.push_back(std::move(entry));
}

std::string defaultTuningCachePath(const std::string &kernelDirectory) {
  return (std::filesystem::path(kernelDirectory) / "tuning.json").string();
}

} // namespace fa
