//===- TuningCacheTest.cpp - The tuning cache and kernel choice -----------===//

#include "fa/runtime/TuningCache.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/KernelChoice.h"
#include "fa/runtime/KernelLibrary.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

using namespace fa;
using nlohmann::json;

namespace {

const KernelQuery kGroup{"attention_fwd", DType::BF16, 128, true};
const std::string kDevice = "NVIDIA H100 80GB HBM3";

json kernel(const std::string &name, std::int64_t blockM) {
  return {{"name", name},
          {"op", "attention_fwd"},
          {"ptx", name + ".ptx"},
          {"entry", name},
          {"dtype", "bf16"},
          {"head_dim", 128},
          {"causal", true},
          {"scale", nullptr},
          {"config", {{"block_m", blockM}, {"block_n", 64}, {"num_warps", 4}}},
          {"block", {128, 1, 1}},
          {"grid", {"query_tiles", "batch_heads", "one"}},
          {"dynamic_shared_bytes", 0},
          {"params", json::array()}};
}

/// One group of two configurations; m64n64w4 is listed first.
KernelLibrary twoConfigLibrary() {
  json manifest = {{"format", "fa-kernel-library"},
                   {"version", 1},
                   {"target", "sm_90a"},
                   {"kernels",
                    {kernel("attention_fwd_bf16_d128_causal_m64n64w4", 64),
                     kernel("attention_fwd_bf16_d128_causal_m128n64w8", 128)}}};
  return KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
}

TuningEntry entry(const std::string &seqClass, const std::string &kernel) {
  return {kGroup, seqClass, kernel, 300.0, {{kernel, 300.0}}};
}

TuningCache cacheWith(std::vector<TuningEntry> entries) {
  TuningCache cache;
  cache.device = kDevice;
  cache.path = "/lib/tuning.json";
  cache.entries = std::move(entries);
  return cache;
}

std::string parseError(const std::string &text) {
  try {
    TuningCache::parse(text, "/lib/tuning.json");
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

json validCache() {
  return json::parse(R"({
    "format": "fa-tuning-cache", "version": 1, "device": "NVIDIA H100 80GB HBM3",
    "entries": [{"op": "attention_fwd", "dtype": "bf16", "head_dim": 128,
                 "causal": true, "seq_class": "<=4096",
                 "kernel": "attention_fwd_bf16_d128_causal_m128n64w8",
                 "tflops": 281.3,
                 "candidates": {"attention_fwd_bf16_d128_causal_m64n64w4": 250.5,
                                "attention_fwd_bf16_d128_causal_m128n64w8": 281.3}}]
  })");
}

TEST(KernelLibraryGroupsTest, FirstKernelOfAGroupIsItsDefault) {
  KernelLibrary library = twoConfigLibrary();
  EXPECT_EQ(library.find(kGroup).name,
            "attention_fwd_bf16_d128_causal_m64n64w4");
  std::vector<const KernelSpec *> candidates = library.candidates(kGroup);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[1]->name, "attention_fwd_bf16_d128_causal_m128n64w8");
  EXPECT_EQ(candidates[1]->blockM, 128);
  ASSERT_EQ(library.groups().size(), 1u);
  EXPECT_EQ(library.groups()[0], kGroup);
  EXPECT_EQ(library.named("nope"), nullptr);
}

TEST(SeqClassTest, BoundariesAreInclusive) {
  EXPECT_STREQ(seqClassOf(1).name, "<=1024");
  EXPECT_STREQ(seqClassOf(1024).name, "<=1024");
  EXPECT_STREQ(seqClassOf(1025).name, "<=4096");
  EXPECT_STREQ(seqClassOf(4096).name, "<=4096");
  EXPECT_STREQ(seqClassOf(4097).name, ">4096");
  EXPECT_STREQ(seqClassOf(1 << 20).name, ">4096");
}

TEST(TuningCacheTest, ParsesTheSchema) {
  TuningCache cache =
      TuningCache::parse(validCache().dump(), "/lib/tuning.json");
  EXPECT_EQ(cache.device, kDevice);
  EXPECT_EQ(cache.path, "/lib/tuning.json");
  const TuningEntry *found = cache.find(kGroup, "<=4096");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->kernel, "attention_fwd_bf16_d128_causal_m128n64w8");
  EXPECT_DOUBLE_EQ(found->tflops, 281.3);
  EXPECT_DOUBLE_EQ(
      found->candidates.at("attention_fwd_bf16_d128_causal_m64n64w4"), 250.5);
  EXPECT_EQ(cache.find(kGroup, "<=1024"), nullptr);
}

TEST(TuningCacheTest, SaveAndLoadRoundTrip) {
  std::filesystem::path directory =
      std::filesystem::path(testing::TempDir()) / "fa-tuning-round-trip";
  std::filesystem::create_directories(directory);
  std::string path = defaultTuningCachePath(directory.string());
  EXPECT_EQ(path, (directory / "tuning.json").string());

  TuningCache cache = cacheWith({entry("<=1024", "a"), entry(">4096", "b")});
  cache.entries[1].candidates["a"] = 123.25;
  cache.save(path);
  std::optional<TuningCache> loaded = TuningCache::loadIfPresent(path);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->serialize(), cache.serialize());
  EXPECT_EQ(loaded->entries[1].candidates.at("a"), 123.25);
  // The temporary file was renamed away.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(directory),
                          std::filesystem::directory_iterator()),
            1);
  EXPECT_FALSE(TuningCache::loadIfPresent((directory / "none.json").string()));
}

TEST(TuningCacheTest, VariantsAreTheirOwnEntries) {
  KernelQuery window = kGroup;
  window.variant = "window";
  TuningCache cache = cacheWith({entry("<=1024", "plain")});
  cache.record({window, "<=1024", "windowed", 200.0, {{"windowed", 200.0}}});
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(cache.find(kGroup, "<=1024")->kernel, "plain");
  EXPECT_EQ(cache.find(window, "<=1024")->kernel, "windowed");
  // Plain entries are written as before (no "variant"), and both round-trip.
  json written = json::parse(cache.serialize());
  EXPECT_FALSE(written["entries"][0].contains("variant"));
  EXPECT_EQ(written["entries"][1]["variant"], "window");
  TuningCache loaded = TuningCache::parse(cache.serialize(), "/lib/t.json");
  EXPECT_EQ(loaded.find(window, "<=1024")->kernel, "windowed");
  EXPECT_EQ(loaded.find(kGroup, "<=1024")->kernel, "plain");
}

TEST(TuningCacheTest, ViewsGroupsAreTheirOwnEntries) {
  KernelQuery views = kGroup;
  views.views = true;
  TuningCache cache = cacheWith({entry("<=1024", "contiguous")});
  cache.record({views, "<=1024", "twin", 200.0, {{"twin", 200.0}}});
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(cache.find(kGroup, "<=1024")->kernel, "contiguous");
  EXPECT_EQ(cache.find(views, "<=1024")->kernel, "twin");
  // Contiguous entries are written as before (no "views"); both round-trip.
  json written = json::parse(cache.serialize());
  EXPECT_FALSE(written["entries"][0].contains("views"));
  EXPECT_EQ(written["entries"][1]["views"], true);
  TuningCache loaded = TuningCache::parse(cache.serialize(), "/lib/t.json");
  EXPECT_EQ(loaded.find(views, "<=1024")->kernel, "twin");
  EXPECT_EQ(loaded.find(kGroup, "<=1024")->kernel, "contiguous");
  json wrong = validCache();
  wrong["entries"][0]["views"] = "yes";
  EXPECT_EQ(parseError(wrong.dump()),
            "tuning cache /lib/tuning.json: entries[0]: key 'views' must be "
            "true or false, got \"yes\"");
}

TEST(TuningCacheTest, RecordReplacesTheSameGroupAndClass) {
  TuningCache cache = cacheWith({entry("<=1024", "a")});
  cache.record(entry("<=1024", "b"));
  cache.record(entry("<=4096", "c"));
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(cache.find(kGroup, "<=1024")->kernel, "b");
  EXPECT_EQ(cache.find(kGroup, "<=4096")->kernel, "c");
}

TEST(TuningCacheTest, MalformedCachesNameTheFileAndTheProblem) {
  EXPECT_EQ(parseError("{\"format\": "),
            "tuning cache /lib/tuning.json: not valid JSON");
  json cache = validCache();
  cache["format"] = "fa-kernel-library";
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: 'format' must be "
            "\"fa-tuning-cache\"");
  cache = validCache();
  cache["version"] = 2;
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: unsupported version 2; this "
            "runtime reads version 1");
  cache = validCache();
  cache["entries"][0].erase("kernel");
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: entries[0]: missing key 'kernel'");
  cache = validCache();
  cache["entries"][0]["seq_class"] = "<=2048";
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: entries[0]: unknown seq_class "
            "\"<=2048\"; expected \"<=1024\", \"<=4096\", \">4096\"");
  cache = validCache();
  cache["entries"][0]["candidates"]["x"] = "fast";
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: entries[0]: candidates: key 'x' "
            "must be a number (TFLOP/s), got \"fast\"");
  cache = validCache();
  cache["entries"][0]["head_dim"] = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: entries[0]: 'head_dim' must be at "
            "most 9223372036854775807, got 18446744073709551615");
  cache = validCache();
  cache["entries"].push_back(cache["entries"][0]);
  EXPECT_EQ(parseError(cache.dump()),
            "tuning cache /lib/tuning.json: two entries for attention_fwd "
            "bf16 head_dim=128 causal seq_class <=4096");
}

TEST(TuningCacheTest, MalformedFileOnDiskIsNamed) {
  std::string path =
      (std::filesystem::path(testing::TempDir()) / "fa-bad-tuning.json")
          .string();
  std::ofstream(path) << "[1, 2";
  try {
    TuningCache::loadIfPresent(path);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "tuning cache " + path + ": not valid JSON");
  }
}

TEST(TuningCacheTest, DeeplyNestedValuesAreRejected) {
  std::string path =
      (std::filesystem::path(testing::TempDir()) / "fa-nested-tuning.json")
          .string();
  json cache = validCache();
  cache["device"] = "DEVICE";
  std::string text = cache.dump();
  text.replace(text.find("\"DEVICE\""), 8,
               std::string(100000, '[') + std::string(100000, ']'));
  std::ofstream(path) << text;
  try {
    TuningCache::loadIfPresent(path);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "tuning cache " + path + ": values nested deeper than 64 levels");
  }
}

TEST(KernelChoiceTest, CacheHitOnTheSameDevice) {
  KernelLibrary library = twoConfigLibrary();
  TuningCache cache =
      cacheWith({entry("<=4096", "attention_fwd_bf16_d128_causal_m128n64w8")});
  KernelChoice choice = chooseKernel(library, kGroup, 2048, &cache, kDevice);
  EXPECT_EQ(choice.kernel->name, "attention_fwd_bf16_d128_causal_m128n64w8");
  EXPECT_EQ(choice.source, KernelSource::TuningCache);
  EXPECT_EQ(choice.reason,
            "tuning cache /lib/tuning.json, seq_kv class <=4096");
  EXPECT_TRUE(choice.warning.empty());
}

TEST(KernelChoiceTest, NamedKernelMustBelongToTheGroup) {
  KernelLibrary library = twoConfigLibrary();
  KernelChoice choice = chooseNamedKernel(
      library, kGroup, "attention_fwd_bf16_d128_causal_m128n64w8");
  EXPECT_EQ(choice.kernel->name, "attention_fwd_bf16_d128_causal_m128n64w8");
  EXPECT_EQ(choice.source, KernelSource::Named);
  EXPECT_STREQ(kernelSourceName(choice.source), "named");
  KernelQuery otherGroup = kGroup;
  otherGroup.causal = false;
  std::string groupList = "\n  attention_fwd_bf16_d128_causal_m64n64w4"
                          "\n  attention_fwd_bf16_d128_causal_m128n64w8";
  try {
    chooseNamedKernel(library, kGroup, "nope");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "no kernel named nope in the library; the kernels of "
              "attention_fwd bf16 head_dim=128 causal are:" +
                  groupList);
  }
  try {
    chooseNamedKernel(library, otherGroup,
                      "attention_fwd_bf16_d128_causal_m64n64w4");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "kernel attention_fwd_bf16_d128_causal_m64n64w4 computes "
              "attention_fwd bf16 head_dim=128 causal, not attention_fwd "
              "bf16 head_dim=128 non-causal; the kernels of attention_fwd "
              "bf16 head_dim=128 non-causal are: none");
  }
}

TEST(KernelChoiceTest, ClassBoundariesPickTheirEntries) {
  KernelLibrary library = twoConfigLibrary();
  std::string tuned = "attention_fwd_bf16_d128_causal_m128n64w8";
  std::string fallback = "attention_fwd_bf16_d128_causal_m64n64w4";
  // Only <=4096 is tuned to the non-default kernel.
  TuningCache cache =
      cacheWith({entry("<=1024", fallback), entry("<=4096", tuned),
                 entry(">4096", fallback)});
  auto chosen = [&](std::int64_t seqKv) {
    return chooseKernel(library, kGroup, seqKv, &cache, kDevice).kernel->name;
  };
  EXPECT_EQ(chosen(1024), fallback);
  EXPECT_EQ(chosen(1025), tuned);
  EXPECT_EQ(chosen(4096), tuned);
  EXPECT_EQ(chosen(4097), fallback);
}

TEST(KernelChoiceTest, OtherDeviceOrNoCacheOrNoEntryGivesTheDefault) {
  KernelLibrary library = twoConfigLibrary();
  TuningCache cache =
      cacheWith({entry("<=4096", "attention_fwd_bf16_d128_causal_m128n64w8")});
  KernelChoice other =
      chooseKernel(library, kGroup, 4096, &cache, "NVIDIA H200");
  EXPECT_EQ(other.kernel->name, "attention_fwd_bf16_d128_causal_m64n64w4");
  EXPECT_EQ(other.source, KernelSource::Default);
  EXPECT_EQ(other.reason, "default: tuning cache /lib/tuning.json is for "
                          "NVIDIA H100 80GB HBM3, not NVIDIA H200");
  EXPECT_TRUE(other.warning.empty());

  KernelChoice none = chooseKernel(library, kGroup, 4096, nullptr, kDevice);
  EXPECT_EQ(none.source, KernelSource::Default);
  EXPECT_EQ(none.reason, "default: no tuning cache");

  KernelChoice missing = chooseKernel(library, kGroup, 100, &cache, kDevice);
  EXPECT_EQ(missing.source, KernelSource::Default);
  EXPECT_EQ(missing.reason, "default: tuning cache /lib/tuning.json has no "
                            "entry for seq_kv class <=1024");
  EXPECT_STREQ(kernelSourceName(missing.source), "default");
}

TEST(KernelChoiceTest, StaleEntryGivesTheDefaultAndAWarning) {
  KernelLibrary library = twoConfigLibrary();
  TuningCache cache = cacheWith({entry("<=4096", "removed_kernel")});
  KernelChoice choice = chooseKernel(library, kGroup, 4096, &cache, kDevice);
  EXPECT_EQ(choice.kernel->name, "attention_fwd_bf16_d128_causal_m64n64w4");
  EXPECT_EQ(choice.source, KernelSource::Default);
  EXPECT_EQ(choice.warning,
            "tuning cache /lib/tuning.json: the entry for attention_fwd bf16 "
            "head_dim=128 causal, seq_kv class <=4096 names kernel "
            "removed_kernel, which the library does not have (stale cache); "
            "using the default attention_fwd_bf16_d128_causal_m64n64w4");
  EXPECT_EQ(choice.warning.find('\n'), std::string::npos);
}

TEST(KernelChoiceTest, ViewsAndContiguousQueriesNeverMix) {
  // The default m64n64w4 and its views twin, listed after it.
  json twin = kernel("attention_fwd_bf16_d128_causal_m64n64w4_views", 64);
  twin["params"] = {{{"name", "q"},
                     {"kind", "memref"},
                     {"dtype", "bf16"},
                     {"rank", 4},
                     {"strided", true}}};
  json manifest = {
      {"format", "fa-kernel-library"},
      {"version", 1},
      {"target", "sm_90a"},
      {"kernels",
       {kernel("attention_fwd_bf16_d128_causal_m64n64w4", 64),
        kernel("attention_fwd_bf16_d128_causal_m128n64w8", 128), twin}}};
  KernelLibrary library =
      KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
  KernelQuery views = kGroup;
  views.views = true;
  EXPECT_EQ(chooseKernel(library, kGroup, 2048, nullptr, kDevice).kernel->name,
            "attention_fwd_bf16_d128_causal_m64n64w4");
  EXPECT_EQ(chooseKernel(library, views, 2048, nullptr, kDevice).kernel->name,
            "attention_fwd_bf16_d128_causal_m64n64w4_views");
  // An entry of one kind naming a kernel of the other is stale: the query
  // gets its own group's default, and a warning saying why.
  TuningCache cache = cacheWith(
      {entry("<=4096", "attention_fwd_bf16_d128_causal_m64n64w4_views")});
  KernelChoice choice = chooseKernel(library, kGroup, 4096, &cache, kDevice);
  EXPECT_EQ(choice.kernel->name, "attention_fwd_bf16_d128_causal_m64n64w4");
  EXPECT_EQ(choice.source, KernelSource::Default);
  EXPECT_EQ(choice.warning,
            "tuning cache /lib/tuning.json: the entry for attention_fwd bf16 "
            "head_dim=128 causal, seq_kv class <=4096 names kernel "
            "attention_fwd_bf16_d128_causal_m64n64w4_views, which computes "
            "attention_fwd bf16 head_dim=128 causal views (stale cache); "
            "using the default attention_fwd_bf16_d128_causal_m64n64w4");
  // The contiguous entry does not serve the views group.
  cache =
      cacheWith({entry("<=4096", "attention_fwd_bf16_d128_causal_m128n64w8")});
  choice = chooseKernel(library, views, 4096, &cache, kDevice);
  EXPECT_EQ(choice.kernel->name,
            "attention_fwd_bf16_d128_causal_m64n64w4_views");
  EXPECT_EQ(choice.reason, "default: tuning cache /lib/tuning.json has no "
                           "entry for seq_kv class <=4096");
  EXPECT_THROW(chooseNamedKernel(library, views,
                                 "attention_fwd_bf16_d128_causal_m64n64w4"),
               Error);
}

TEST(KernelChoiceTest, MissingGroupStillThrows) {
  KernelLibrary library = twoConfigLibrary();
  EXPECT_THROW(chooseKernel(library, {"attention_fwd", DType::F16, 64, false},
                            1024, nullptr, kDevice),
               Error);
}

} // namespace
