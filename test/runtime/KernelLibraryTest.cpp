//===- KernelLibraryTest.cpp - Parsing manifests, choosing kernels --------===//

#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Attention.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Kernel.h"

#include <nlohmann/json.hpp>

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

using namespace fa;
using nlohmann::json;

namespace {

/// The manifest sample from the compiler/runtime contract, one kernel.
json sampleKernel() {
  return json::parse(R"({
    "name": "attention_fwd_bf16_d64_causal", "op": "attention_fwd",
    "ptx": "attention_fwd_bf16_d64_causal.ptx",
    "entry": "attention_fwd_bf16_d64_causal",
    "dtype": "bf16", "head_dim": 64, "causal": true, "scale": null,
    "config": {"block_m": 64, "block_n": 64, "num_warps": 4, "num_stages": 1},
    "block": [128, 1, 1], "grid": ["query_tiles", "batch_heads", "one"],
    "dynamic_shared_bytes": 0,
    "params": [{"name": "q", "kind": "memref", "dtype": "bf16", "rank": 4},
               {"name": "k", "kind": "memref", "dtype": "bf16", "rank": 4},
               {"name": "v", "kind": "memref", "dtype": "bf16", "rank": 4},
               {"name": "out", "kind": "memref", "dtype": "bf16", "rank": 4},
               {"name": "lse", "kind": "memref", "dtype": "f32", "rank": 3}]
  })");
}

json manifestWith(std::vector<json> kernels) {
  return {{"format", "fa-kernel-library"},
          {"version", 1},
          {"target", "sm_90a"},
          {"kernels", kernels}};
}

KernelLibrary parseManifest(const json &manifest) {
  return KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
}

std::string parseTextError(const std::string &text) {
  try {
    KernelLibrary::parse(text, "/lib/manifest.json");
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

std::string parseError(const json &manifest) {
  return parseTextError(manifest.dump());
}

std::string findError(const KernelLibrary &library, const KernelQuery &query) {
  try {
    library.find(query);
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

/// The error for the sample kernel after `edit`.
template <typename Edit> std::string kernelError(Edit edit) {
  json kernel = sampleKernel();
  edit(kernel);
  return parseError(manifestWith({kernel}));
}

const std::string kKernelContext = "kernel manifest /lib/manifest.json: kernel "
                                   "'attention_fwd_bf16_d64_causal': ";

TEST(KernelLibraryTest, ParsesTheSample) {
  KernelLibrary library = parseManifest(manifestWith({sampleKernel()}));
  ASSERT_EQ(library.kernels().size(), 1u);
  const KernelSpec &spec = library.kernels()[0];
  EXPECT_EQ(spec.name, "attention_fwd_bf16_d64_causal");
  EXPECT_EQ(spec.op, "attention_fwd");
  EXPECT_EQ(spec.ptxPath, "/lib/attention_fwd_bf16_d64_causal.ptx");
  EXPECT_EQ(spec.entry, "attention_fwd_bf16_d64_causal");
  EXPECT_EQ(spec.target, "sm_90a");
  EXPECT_EQ(spec.dtype, DType::BF16);
  EXPECT_EQ(spec.headDim, 64);
  EXPECT_TRUE(spec.causal);
  EXPECT_FALSE(spec.scale.has_value());
  EXPECT_DOUBLE_EQ(spec.softmaxScale(), 0.125);
  EXPECT_EQ(spec.blockM, 64);
  EXPECT_EQ(spec.config.at("num_warps"), 4);
  EXPECT_EQ(spec.block.x, 128u);
  EXPECT_EQ(spec.grid[0].symbol, "query_tiles");
  EXPECT_EQ(spec.grid[2].symbol, "one");
  EXPECT_EQ(spec.dynamicSharedBytes, 0u);
  ASSERT_EQ(spec.params.size(), 5u);
  EXPECT_EQ(spec.params[4].name, "lse");
  EXPECT_EQ(spec.params[4].kind, ParamKind::Memref);
  EXPECT_EQ(spec.params[4].dtype, DType::F32);
  EXPECT_EQ(spec.params[4].rank, 3);
}

TEST(KernelLibraryTest, StridedParamsAreMarkedAndOthersContiguous) {
  // The sample has no "strided" key (manifests before strided parameters):
  // every parameter is contiguous.
  for (const KernelParam &param :
       parseManifest(manifestWith({sampleKernel()})).kernels()[0].params)
    EXPECT_FALSE(param.strided) << param.name;
  json kernel = sampleKernel();
  kernel["params"][0]["strided"] = true;
  kernel["params"][4]["strided"] = false;
  KernelLibrary library = parseManifest(manifestWith({kernel}));
  const std::vector<KernelParam> &params = library.kernels()[0].params;
  EXPECT_TRUE(params[0].strided);
  EXPECT_FALSE(params[1].strided);
  EXPECT_FALSE(params[4].strided);
  kernel["params"][0]["strided"] = 1;
  EXPECT_EQ(parseError(manifestWith({kernel})),
            kKernelContext + "params[0]: key 'strided' must be true or false, "
                             "got 1");
}

/// The sample with k_tma and v_tma, the tensor maps a warp-specialised
/// forward reads k and v through, after its memref parameters (as
/// fa-export-kernels writes them).
json tensorMapKernel() {
  json kernel = sampleKernel();
  for (const char *tensor : {"k", "v"})
    kernel["params"].push_back({{"name", std::string(tensor) + "_tma"},
                                {"kind", "tensormap"},
                                {"tensor", tensor},
                                {"dtype", "bf16"},
                                {"box", {1, 1, 128, 64}},
                                {"swizzle", "128b"}});
  return kernel;
}

TEST(KernelLibraryTest, TensorMapsNameTheTensorTheyMap) {
  KernelLibrary library = parseManifest(manifestWith({tensorMapKernel()}));
  const std::vector<KernelParam> &params = library.kernels()[0].params;
  ASSERT_EQ(params.size(), 7u);
  const KernelParam &map = params[6];
  EXPECT_EQ(map.name, "v_tma");
  EXPECT_EQ(map.kind, ParamKind::TensorMap);
  EXPECT_EQ(map.tensor, "v");
  EXPECT_EQ(map.dtype, DType::BF16);
  EXPECT_EQ(map.box, (Shape{1, 1, 128, 64}));
  EXPECT_EQ(map.swizzle, TensorMapSwizzle::Bytes128);
  for (const char *swizzle : {"none", "32b", "64b"}) {
    json kernel = tensorMapKernel();
    kernel["params"][5]["swizzle"] = swizzle;
    EXPECT_STREQ(tensorMapSwizzleName(parseManifest(manifestWith({kernel}))
                                          .kernels()[0]
                                          .params[5]
                                          .swizzle),
                 swizzle);
  }
}

TEST(KernelLibraryTest, TensorMapsWithoutATensorAreTheCallers) {
  // A manifest written before tensor maps named their tensor: the caller
  // binds the map (TensorMapArg).
  json kernel = sampleKernel();
  kernel["params"].push_back({{"name", "k_map"}, {"kind", "tensormap"}});
  const KernelParam &map =
      parseManifest(manifestWith({kernel})).kernels()[0].params[5];
  EXPECT_EQ(map.kind, ParamKind::TensorMap);
  EXPECT_EQ(map.tensor, "");
  EXPECT_TRUE(map.box.empty());
  kernel["params"][5]["box"] = {1, 1, 128, 64};
  EXPECT_EQ(parseError(manifestWith({kernel})),
            kKernelContext + "params[5]: tensor map parameter 'k_map' has "
                             "'box' but no 'tensor' (the memref parameter "
                             "it maps)");
}

TEST(KernelLibraryTest, TensorMapErrorsNameTheKernelAndParameter) {
  auto mapError = [](auto edit) {
    json kernel = tensorMapKernel();
    edit(kernel["params"][5]);
    return parseError(manifestWith({kernel}));
  };
  const std::string param = kKernelContext + "params[5]: ";
  EXPECT_EQ(mapError([](json &p) { p.erase("swizzle"); }),
            param + "missing key 'swizzle'");
  EXPECT_EQ(mapError([](json &p) { p["swizzle"] = "256b"; }),
            param + "tensor map parameter 'k_tma' has unknown swizzle "
                    "'256b'; expected none, 32b, 64b or 128b");
  EXPECT_EQ(mapError([](json &p) { p["dtype"] = "i32"; }),
            param + "key 'dtype': unknown element type 'i32'; expected bf16, "
                    "f16 or f32");
  EXPECT_EQ(mapError([](json &p) { p["box"] = json::array(); }),
            param + "tensor map parameter 'k_tma' has a box of 0 "
                    "dimensions; a tensor map has 1 to 5");
  EXPECT_EQ(mapError([](json &p) { p["box"] = {1, 1, 512, 64}; }),
            param + "box[2] must be at most 256, got 512");
  EXPECT_EQ(mapError([](json &p) { p["tensor"] = ""; }),
            param + "tensor map parameter 'k_tma' must name another "
                    "parameter as its 'tensor'");
  // What the named tensor must be: a memref parameter of the kernel, of the
  // map's dtype and rank.
  EXPECT_EQ(mapError([](json &p) { p["tensor"] = "kv"; }),
            kKernelContext + "tensor map parameter 'k_tma' maps 'kv', which "
                             "is not a memref parameter of the kernel");
  EXPECT_EQ(mapError([](json &p) { p["tensor"] = "v_tma"; }),
            kKernelContext + "tensor map parameter 'k_tma' maps 'v_tma', "
                             "which is not a memref parameter of the kernel");
  EXPECT_EQ(mapError([](json &p) { p["dtype"] = "f16"; }),
            kKernelContext + "tensor map parameter 'k_tma' maps 'k' as f16, "
                             "but 'k' holds bf16");
  EXPECT_EQ(mapError([](json &p) { p["box"] = {128, 64}; }),
            kKernelContext + "tensor map parameter 'k_tma' maps 'k' with the "
                             "box [128, 64], but 'k' is a rank-4 memref");
}

TEST(KernelLibraryTest, ScaleNumbersAndFixedGridCounts) {
  json kernel = sampleKernel();
  kernel["scale"] = 0.5;
  kernel["grid"] = {132, "batch_heads", 1};
  kernel["params"].push_back({{"name", "n"}, {"kind", "i32"}});
  KernelLibrary library = parseManifest(manifestWith({kernel}));
  const KernelSpec &spec = library.kernels()[0];
  EXPECT_DOUBLE_EQ(spec.softmaxScale(), 0.5);
  EXPECT_TRUE(spec.grid[0].symbol.empty());
  EXPECT_EQ(spec.grid[0].count, 132u);
  EXPECT_EQ(spec.params.back().kind, ParamKind::I32);
}

TEST(KernelLibraryTest, FindPicksByOpDtypeHeadDimAndCausal) {
  json other = sampleKernel();
  other["name"] = "attention_fwd_f16_d128";
  other["dtype"] = "f16";
  other["head_dim"] = 128;
  other["causal"] = false;
  KernelLibrary library = parseManifest(manifestWith({sampleKernel(), other}));
  EXPECT_EQ(library.find({"attention_fwd", DType::F16, 128, false}).name,
            "attention_fwd_f16_d128");
  EXPECT_EQ(library.find({"attention_fwd", DType::BF16, 64, true}).name,
            "attention_fwd_bf16_d64_causal");
}

TEST(KernelLibraryTest, FindSaysWhatIsAvailable) {
  EXPECT_EQ(findError(parseManifest(manifestWith({sampleKernel()})),
                      {"attention_fwd", DType::BF16, 96, true}),
            "no kernel for attention_fwd bf16 head_dim=96 causal in "
            "/lib/manifest.json; it has:\n"
            "  attention_fwd_bf16_d64_causal (attention_fwd bf16 head_dim=64 "
            "causal)");
  EXPECT_EQ(findError(parseManifest(manifestWith({})),
                      {"attention_fwd", DType::F16, 64, false}),
            "no kernel for attention_fwd f16 head_dim=64 non-causal in "
            "/lib/manifest.json; the library is empty");
}

/// The sample kernel as a variant's, with the variant's extra parameters.
json variantKernel(const std::string &name, const std::string &variant) {
  json kernel = sampleKernel();
  kernel["name"] = name;
  kernel["causal"] = false;
  kernel["variant"] = variant;
  kernel["params"].push_back({{"name", "window_left"}, {"kind", "i64"}});
  kernel["params"].push_back(
      {{"name", "doc_ids"}, {"kind", "memref"}, {"dtype", "i32"}, {"rank", 2}});
  return kernel;
}

TEST(KernelLibraryTest, VariantKernelsFormTheirOwnGroups) {
  json plain = sampleKernel();
  plain["causal"] = false;
  plain["name"] = "plain";
  json emptyVariant = sampleKernel();
  emptyVariant["name"] = "plain_too";
  emptyVariant["causal"] = false;
  emptyVariant["variant"] = "";
  KernelLibrary library = parseManifest(
      manifestWith({variantKernel("window_first", "window"), plain,
                    variantKernel("document", "document"), emptyVariant}));
  const KernelSpec &window = *library.named("window_first");
  EXPECT_EQ(window.variant, "window");
  EXPECT_EQ(window.params[5].kind, ParamKind::I64);
  EXPECT_EQ(window.params[6].kind, ParamKind::I32Memref);
  EXPECT_EQ(window.params[6].rank, 2);
  EXPECT_EQ(window.describe(),
            "attention_fwd bf16 head_dim=64 non-causal variant=window");
  // An absent and an empty variant are both plain; a plain query never finds
  // a variant kernel, nor a variant query a plain one.
  EXPECT_EQ(library.named("plain_too")->variant, "");
  EXPECT_EQ(library.find({"attention_fwd", DType::BF16, 64, false}).name,
            "plain");
  EXPECT_EQ(
      library.candidates({"attention_fwd", DType::BF16, 64, false}).size(), 2u);
  EXPECT_EQ(
      library.find({"attention_fwd", DType::BF16, 64, false, "document"}).name,
      "document");
  ASSERT_EQ(library.groups().size(), 3u);
  EXPECT_EQ(library.groups()[0].variant, "window");
  EXPECT_EQ(library.groups()[1].variant, "");
  EXPECT_EQ(library.variants("attention_fwd"),
            (std::vector<std::string>{"window", "", "document"}));
}

TEST(KernelLibraryTest, LibraryOfVariantsOnlyLoadsAndNamesItsVariants) {
  KernelLibrary library =
      parseManifest(manifestWith({variantKernel("window", "window")}));
  EXPECT_EQ(findError(library, {"attention_fwd", DType::BF16, 64, false,
                                "window+softcap"}),
            "no kernel for attention_fwd bf16 head_dim=64 non-causal "
            "variant=window+softcap in /lib/manifest.json; its attention_fwd "
            "kernels have the variants: window");
  json causalWindow = variantKernel("causal_window", "window");
  causalWindow["causal"] = true;
  EXPECT_EQ(findError(parseManifest(manifestWith(
                          {causalWindow, variantKernel("window", "window")})),
                      {"attention_fwd", DType::BF16, 64, false, "softcap"}),
            "no kernel for attention_fwd bf16 head_dim=64 non-causal "
            "variant=softcap in /lib/manifest.json; its attention_fwd "
            "kernels have the variants: window (causal), window");
  EXPECT_EQ(findError(library, {"attention_fwd", DType::BF16, 64, false}),
            "no kernel for attention_fwd bf16 head_dim=64 non-causal in "
            "/lib/manifest.json; it has:\n"
            "  window (attention_fwd bf16 head_dim=64 non-causal "
            "variant=window)");
}

/// `kernel` with every rank-4 memref parameter (the attention tensors)
/// strided, as the library's views twins are.
json withViews(json kernel, const std::string &name) {
  kernel["name"] = kernel["entry"] = name;
  kernel["ptx"] = name + ".ptx";
  for (json &param : kernel["params"])
    if (param["kind"] == "memref" && param["rank"] == 4)
      param["strided"] = true;
  return kernel;
}

/// The three kernels of a contiguous attention backward @name (bf16,
/// head_dim 64, causal), as the compiler emits them.
std::vector<json> backwardKernels(const std::string &name) {
  auto kernel = [](const std::string &kernelName, const std::string &op,
                   const json &grid, const json &params) {
    json k = sampleKernel();
    k["name"] = k["entry"] = kernelName;
    k["ptx"] = kernelName + ".ptx";
    k["op"] = op;
    k["grid"] = grid;
    k["params"] = params;
    return k;
  };
  auto memref = [](const std::string &param, const std::string &dtype,
                   int rank) {
    return json{
        {"name", param}, {"kind", "memref"}, {"dtype", dtype}, {"rank", rank}};
  };
  json delta = kernel(name + "_delta", kAttentionDeltaOp,
                      {"query_tiles", "batch_heads", "one"},
                      {memref("out", "bf16", 4), memref("dout", "bf16", 4),
                       memref("delta", "f32", 3)});
  json dkdv = kernel(name + "_dkdv", kAttentionDkDvOp,
                     {"key_tiles", "batch_kv_heads", "one"},
                     {memref("q", "bf16", 4), memref("k", "bf16", 4),
                      memref("v", "bf16", 4), memref("dout", "bf16", 4),
                      memref("lse", "f32", 3), memref("delta", "f32", 3),
                      memref("dk", "bf16", 4), memref("dv", "bf16", 4)});
  json dq = kernel(
      name, kAttentionBackwardOp, {"query_tiles", "batch_heads", "one"},
      {memref("q", "bf16", 4), memref("k", "bf16", 4), memref("v", "bf16", 4),
       memref("dout", "bf16", 4), memref("lse", "f32", 3),
       memref("delta", "f32", 3), memref("dq", "bf16", 4)});
  dq["delta_kernel"] = name + "_delta";
  dq["dkdv_kernel"] = name + "_dkdv";
  return {delta, dkdv, dq};
}

/// The same with every attention tensor strided, named <name>_views (the
/// companions <name>_views_delta and <name>_views_dkdv), as
/// kernels/CMakeLists.txt names the twins.
std::vector<json> backwardViewsKernels(const std::string &name) {
  std::vector<json> kernels = backwardKernels(name + "_views");
  for (json &kernel : kernels)
    kernel = withViews(kernel, kernel["name"].get<std::string>());
  return kernels;
}

/// A library like the generated one: a contiguous default and candidate of
/// the causal bf16 head_dim=64 forward, the default's views twin (after
/// them), a dropout forward and its twin, and a contiguous backward and its
/// twin.
std::vector<json> viewsLibraryKernels() {
  json candidate = sampleKernel();
  candidate["name"] = candidate["entry"] = "fwd_m128";
  candidate["config"]["block_m"] = 128;
  json dropout = sampleKernel();
  dropout["name"] = dropout["entry"] = "fwd_dropout";
  dropout["variant"] = "dropout";
  std::vector<json> kernels = {sampleKernel(), candidate,
                               withViews(sampleKernel(), "fwd_views"), dropout,
                               withViews(dropout, "fwd_dropout_views")};
  for (const std::vector<json> &backward :
       {backwardKernels("bwd"), backwardViewsKernels("bwd")})
    kernels.insert(kernels.end(), backward.begin(), backward.end());
  return kernels;
}

TEST(KernelLibraryTest, ViewsKernelsFormTheirOwnGroups) {
  KernelLibrary library = parseManifest(manifestWith(viewsLibraryKernels()));
  // A kernel takes views when its q (the delta kernel, without q: its out)
  // is strided; ops without attention tensors never do.
  for (const char *name : {"fwd_views", "fwd_dropout_views", "bwd_views",
                           "bwd_views_delta", "bwd_views_dkdv"})
    EXPECT_TRUE(library.named(name)->views) << name;
  for (const char *name : {"attention_fwd_bf16_d64_causal", "fwd_m128",
                           "fwd_dropout", "bwd", "bwd_delta", "bwd_dkdv"})
    EXPECT_FALSE(library.named(name)->views) << name;
  EXPECT_EQ(library.named("fwd_views")->describe(),
            "attention_fwd bf16 head_dim=64 causal views");
  EXPECT_EQ(library.named("fwd_dropout_views")->query(),
            (KernelQuery{kAttentionForwardOp, DType::BF16, 64, true, "dropout",
                         true}));

  // A plain query (views = false, the default) never finds a kernel taking
  // views, though the twin is of the same op, dtype, head_dim and causal;
  // a views query finds only the twins.
  for (const std::string &variant : {std::string(), std::string("dropout")})
    for (const char *op : {kAttentionForwardOp, kAttentionBackwardOp,
                           kAttentionDeltaOp, kAttentionDkDvOp})
      for (bool views : {false, true}) {
        KernelQuery query{op, DType::BF16, 64, true, variant, views};
        SCOPED_TRACE(query.describe());
        std::vector<const KernelSpec *> found = library.candidates(query);
        for (const KernelSpec *spec : found) {
          EXPECT_EQ(spec->views, views) << spec->name;
          EXPECT_EQ(spec->variant, variant) << spec->name;
        }
        bool hasGroup = variant.empty() || op == kAttentionForwardOp;
        EXPECT_EQ(found.empty(), !hasGroup);
      }
  KernelQuery forward{kAttentionForwardOp, DType::BF16, 64, true};
  EXPECT_EQ(library.find(forward).name, "attention_fwd_bf16_d64_causal");
  ASSERT_EQ(library.candidates(forward).size(), 2u);
  EXPECT_EQ(library.candidates(forward)[1]->name, "fwd_m128");
  forward.views = true;
  EXPECT_EQ(library.find(forward).name, "fwd_views");
  EXPECT_EQ(library.candidates(forward).size(), 1u);
  EXPECT_EQ(
      library
          .find({kAttentionForwardOp, DType::BF16, 64, true, "dropout", true})
          .name,
      "fwd_dropout_views");
  const KernelSpec &backward =
      library.find({kAttentionBackwardOp, DType::BF16, 64, true, "", true});
  EXPECT_EQ(backward.name, "bwd_views");
  AttentionBackwardKernels kernels =
      attentionBackwardKernels(library, backward);
  EXPECT_EQ(kernels.delta->name, "bwd_views_delta");
  EXPECT_EQ(kernels.dkdv->name, "bwd_views_dkdv");
  EXPECT_EQ(
      library.find({kAttentionBackwardOp, DType::BF16, 64, true}).deltaKernel,
      "bwd_delta");

  // The groups: each (op, dtype, head_dim, causal, variant) twice, contiguous
  // first (the order of their first kernels).
  std::vector<KernelQuery> groups = library.groups();
  ASSERT_EQ(groups.size(), 10u);
  EXPECT_EQ(groups[0], (KernelQuery{kAttentionForwardOp, DType::BF16, 64, true,
                                    "", false}));
  EXPECT_EQ(groups[1], (KernelQuery{kAttentionForwardOp, DType::BF16, 64, true,
                                    "", true}));
  EXPECT_FALSE(groups[0] == groups[1]);
}

TEST(KernelLibraryTest, ViewsQueriesSayWhatIsMissing) {
  KernelLibrary contiguous = parseManifest(manifestWith({sampleKernel()}));
  EXPECT_EQ(findError(contiguous,
                      {kAttentionForwardOp, DType::BF16, 64, true, "", true}),
            "no kernel for attention_fwd bf16 head_dim=64 causal views in "
            "/lib/manifest.json; it has:\n"
            "  attention_fwd_bf16_d64_causal (attention_fwd bf16 head_dim=64 "
            "causal)");
  KernelLibrary views = parseManifest(
      manifestWith({withViews(sampleKernel(), "attention_fwd_views")}));
  EXPECT_EQ(findError(views, {kAttentionForwardOp, DType::BF16, 64, true}),
            "no kernel for attention_fwd bf16 head_dim=64 causal in "
            "/lib/manifest.json; it has:\n"
            "  attention_fwd_views (attention_fwd bf16 head_dim=64 causal "
            "views)");
  KernelLibrary library = parseManifest(manifestWith(viewsLibraryKernels()));
  EXPECT_EQ(findError(library, {kAttentionForwardOp, DType::BF16, 64, false,
                                "dropout", true}),
            "no kernel for attention_fwd bf16 head_dim=64 non-causal "
            "variant=dropout views in /lib/manifest.json; its attention_fwd "
            "kernels have the variants: plain (causal), plain (causal, "
            "views), dropout (causal), dropout (causal, views)");
}

TEST(KernelLibraryTest, BackwardCompanionsTakeViewsWhenTheBackwardDoes) {
  // A twin naming the contiguous companions (or the reverse) would launch
  // them on views they cannot read.
  std::vector<json> kernels = backwardKernels("bwd");
  std::vector<json> twin = backwardViewsKernels("bwd");
  twin[2]["delta_kernel"] = "bwd_delta";
  kernels.insert(kernels.end(), twin.begin(), twin.end());
  EXPECT_EQ(parseError(manifestWith(kernels)),
            "kernel manifest /lib/manifest.json: kernel 'bwd_views': "
            "delta_kernel 'bwd_delta' is attention_bwd_delta bf16 head_dim=64 "
            "causal, expected attention_bwd_delta bf16 head_dim=64 causal "
            "views");
  kernels = backwardKernels("bwd");
  kernels[2]["dkdv_kernel"] = "bwd_views_dkdv";
  twin = backwardViewsKernels("bwd");
  kernels.insert(kernels.end(), twin.begin(), twin.end());
  EXPECT_EQ(parseError(manifestWith(kernels)),
            "kernel manifest /lib/manifest.json: kernel 'bwd': dkdv_kernel "
            "'bwd_views_dkdv' is attention_bwd_dkdv bf16 head_dim=64 causal "
            "views, expected attention_bwd_dkdv bf16 head_dim=64 causal");
}

TEST(KernelLibraryTest, VariantMustBeAString) {
  EXPECT_EQ(kernelError([](json &k) { k["variant"] = 1; }),
            kKernelContext + "key 'variant' must be a string, got 1");
}

TEST(KernelLibraryTest, RejectsMalformedManifests) {
  EXPECT_EQ(
      parseError(json("not an object")),
      "kernel manifest /lib/manifest.json: expected an object, got string");
  EXPECT_EQ(parseTextError("{\"format\": "),
            "kernel manifest /lib/manifest.json: not valid JSON");

  json manifest = manifestWith({sampleKernel()});
  manifest["format"] = "something-else";
  EXPECT_EQ(parseError(manifest), "kernel manifest /lib/manifest.json: "
                                  "'format' must be \"fa-kernel-library\"");
  manifest = manifestWith({sampleKernel()});
  manifest["version"] = 2;
  EXPECT_EQ(parseError(manifest), "kernel manifest /lib/manifest.json: "
                                  "unsupported version 2; this runtime reads "
                                  "version 1");
  manifest = manifestWith({sampleKernel()});
  manifest.erase("kernels");
  EXPECT_EQ(parseError(manifest),
            "kernel manifest /lib/manifest.json: missing key 'kernels'");
  EXPECT_EQ(parseError(manifestWith({sampleKernel(), sampleKernel()})),
            "kernel manifest /lib/manifest.json: kernel name "
            "'attention_fwd_bf16_d64_causal' appears twice");
}

TEST(KernelLibraryTest, KernelErrorsNameTheKernelAndKey) {
  EXPECT_EQ(
      kernelError([](json &k) { k.erase("name"); }),
      "kernel manifest /lib/manifest.json: kernels[0]: missing key 'name'");
  EXPECT_EQ(kernelError([](json &k) { k.erase("head_dim"); }),
            kKernelContext + "missing key 'head_dim'");
  EXPECT_EQ(kernelError([](json &k) { k["head_dim"] = "64"; }),
            kKernelContext + "'head_dim' must be an integer, got \"64\"");
  EXPECT_EQ(kernelError([](json &k) { k["head_dim"] = 0; }),
            kKernelContext + "'head_dim' must be at least 1, got 0");
  EXPECT_EQ(kernelError([](json &k) { k["causal"] = 1; }),
            kKernelContext + "key 'causal' must be true or false, got 1");
  EXPECT_EQ(kernelError([](json &k) { k["scale"] = "auto"; }),
            kKernelContext +
                "key 'scale' must be a number or null, got \"auto\"");
  EXPECT_EQ(kernelError([](json &k) { k["dtype"] = "fp8"; }),
            kKernelContext + "key 'dtype': unknown element type 'fp8'; "
                             "expected bf16, f16 or f32");
  EXPECT_EQ(kernelError([](json &k) { k["config"].erase("block_m"); }),
            kKernelContext + "config needs a positive integer 'block_m' (it "
                             "sizes the query_tiles grid dimension)");
  EXPECT_EQ(kernelError([](json &k) { k["block"] = {128, 1}; }),
            kKernelContext + "key 'block' must be an array of 3, got [128,1]");
  EXPECT_EQ(kernelError([](json &k) { k["grid"][1] = "blocks"; }),
            kKernelContext + "grid[1] is the unknown symbol 'blocks'; expected "
                             "query_tiles, persistent_query_tiles, "
                             "batch_heads, key_tiles, batch_kv_heads, one or "
                             "a number");
  // The dsinks kernel's symbol, which other attention kernels cannot use.
  EXPECT_EQ(kernelError([](json &k) { k["grid"][1] = "heads"; }),
            kKernelContext + "grid[1] is the symbol 'heads', which a "
                             "attention_fwd kernel cannot use; expected "
                             "query_tiles, persistent_query_tiles, "
                             "batch_heads, key_tiles, batch_kv_heads, one or "
                             "a number");
  EXPECT_EQ(kernelError([](json &k) { k["params"][0]["kind"] = "tensor"; }),
            kKernelContext +
                "params[0]: parameter 'q' has unknown kind "
                "'tensor'; expected memref, i32, i64, f32 or tensormap");
  EXPECT_EQ(kernelError([](json &k) { k["params"][1].erase("rank"); }),
            kKernelContext + "params[1]: missing key 'rank'");
  EXPECT_EQ(kernelError([](json &k) { k["config"]["num_warps"] = 4.5; }),
            "kernel manifest /lib/manifest.json: kernel "
            "'attention_fwd_bf16_d64_causal': config: 'num_warps' must be an "
            "integer, got 4.5");
}

/// A D=256 dK/dV kernel split over grid z (config split_dkdv): dV in the
/// blocks of z 0, dK in those of z 1.
json splitDkdvKernel() {
  return json::parse(R"({
    "name": "attention_bwd_bf16_d256_dkdv", "op": "attention_bwd_dkdv",
    "ptx": "attention_bwd_bf16_d256_dkdv.ptx",
    "entry": "attention_bwd_bf16_d256_dkdv",
    "dtype": "bf16", "head_dim": 256, "causal": false, "scale": null,
    "config": {"block_m": 128, "block_n": 32, "num_warps": 8,
               "num_stages": 2, "split_dkdv": 1, "wgmma": 1},
    "block": [256, 1, 1],
    "grid": ["key_tiles", "batch_kv_heads", "dkdv_parts"],
    "dynamic_shared_bytes": 0,
    "params": [{"name": "q", "kind": "memref", "dtype": "bf16", "rank": 4}]
  })");
}

TEST(KernelLibraryTest, SplitDkdvKernelsLaunchTwoPartsOverGridZ) {
  KernelLibrary library = parseManifest(manifestWith({splitDkdvKernel()}));
  const KernelSpec &spec = library.kernels()[0];
  EXPECT_EQ(spec.grid[2].symbol, "dkdv_parts");
  EXPECT_EQ(spec.config.at("split_dkdv"), 1);
  // batch 3, heads 8 on 2 kv heads, 300 queries on 1000 keys.
  Dim3 grid = attentionGrid(spec, AttentionShape{3, 8, 2, 300, 1000, 256});
  EXPECT_EQ(grid.x, 8u); // ceil(1000 / 128) key tiles
  EXPECT_EQ(grid.y, 6u); // batch * kv_heads
  EXPECT_EQ(grid.z, 2u); // dV, then dK
}

TEST(KernelLibraryTest, DkdvPartsGoWithSplitDkdvOnly) {
  const std::string context = "kernel manifest /lib/manifest.json: kernel "
                              "'attention_bwd_bf16_d256_dkdv': ";
  auto splitError = [](auto edit) {
    json kernel = splitDkdvKernel();
    edit(kernel);
    return parseError(manifestWith({kernel}));
  };
  EXPECT_EQ(splitError([](json &k) { k["grid"][2] = "one"; }),
            context + "config split_dkdv = 1 needs grid[2] = dkdv_parts (dV "
                      "in blocks of z 0, dK in blocks of z 1)");
  EXPECT_EQ(splitError([](json &k) { k["config"].erase("split_dkdv"); }),
            context + "grid[2] is dkdv_parts, which only a kernel with config "
                      "split_dkdv = 1 may use");
  EXPECT_EQ(splitError([](json &k) { k["config"]["split_dkdv"] = 0; }),
            context + "grid[2] is dkdv_parts, which only a kernel with config "
                      "split_dkdv = 1 may use");
  EXPECT_EQ(splitError([](json &k) { k["config"]["split_dkdv"] = 2; }),
            context + "config 'split_dkdv' must be 0 or 1, got 2");
  // Only the dK/dV kernel may use the symbol.
  EXPECT_EQ(kernelError([](json &k) { k["grid"][2] = "dkdv_parts"; }),
            kKernelContext + "grid[2] is the symbol 'dkdv_parts', which a "
                             "attention_fwd kernel cannot use; expected "
                             "query_tiles, persistent_query_tiles, "
                             "batch_heads, key_tiles, batch_kv_heads, one or "
                             "a number");
}

TEST(KernelLibraryTest, PersistentQueryTilesAreTheForwardsOnly) {
  json kernel = sampleKernel();
  kernel["grid"] = {"persistent_query_tiles", "one", "one"};
  KernelLibrary library = parseManifest(manifestWith({kernel}));
  const KernelSpec &spec = library.kernels()[0];
  EXPECT_EQ(spec.grid[0].symbol, "persistent_query_tiles");
  EXPECT_EQ(spec.grid[1].symbol, "one");
  // Without the loaded kernel, one block per tile: 3 query tiles of 64 rows
  // for each of batch 2 * heads 4.
  Dim3 grid = attentionGrid(spec, AttentionShape{2, 4, 4, 130, 130, 64});
  EXPECT_EQ(grid.x, 24u);
  EXPECT_EQ(grid.y, 1u);
  EXPECT_EQ(grid.z, 1u);

  // The backward's kernels never loop over tiles.
  const std::string dkdvContext = "kernel manifest /lib/manifest.json: kernel "
                                  "'attention_bwd_bf16_d256_dkdv': ";
  json dkdv = splitDkdvKernel();
  dkdv["grid"][0] = "persistent_query_tiles";
  EXPECT_EQ(parseError(manifestWith({dkdv})),
            dkdvContext + "grid[0] is the symbol 'persistent_query_tiles', "
                          "which a attention_bwd_dkdv kernel cannot use; "
                          "expected query_tiles, batch_heads, key_tiles, "
                          "batch_kv_heads, dkdv_parts, one or a number");
  json delta = sampleKernel();
  delta["op"] = "attention_bwd_delta";
  delta["grid"][0] = "persistent_query_tiles";
  EXPECT_EQ(parseError(manifestWith({delta})),
            kKernelContext + "grid[0] is the symbol 'persistent_query_tiles', "
                             "which a attention_bwd_delta kernel cannot use; "
                             "expected query_tiles, batch_heads, key_tiles, "
                             "batch_kv_heads, one or a number");
  EXPECT_EQ(
      gridSymbolsOf("layernorm_fwd"),
      (std::vector<std::string>{"row_tiles", "persistent_row_tiles", "one"}));
}

TEST(KernelLibraryTest, ATileCounterIsAnI32MemrefOfRankOne) {
  // As fa-export-kernels lists a dynamically scheduled forward's counter:
  // after the other parameters.
  json kernel = sampleKernel();
  kernel["grid"] = {"persistent_query_tiles", "one", "one"};
  kernel["params"].push_back({{"dtype", "i32"},
                              {"kind", "memref"},
                              {"name", "tile_counter"},
                              {"rank", 1}});
  KernelLibrary library = parseManifest(manifestWith({kernel}));
  const KernelSpec &spec = library.kernels()[0];
  ASSERT_EQ(spec.params.size(), 6u);
  EXPECT_EQ(spec.params[5].name, "tile_counter");
  EXPECT_EQ(spec.params[5].kind, ParamKind::I32Memref);
  EXPECT_EQ(spec.params[5].rank, 1);
  EXPECT_TRUE(takesTileCounter(spec));
  EXPECT_FALSE(takesTileCounter(
      parseManifest(manifestWith({sampleKernel()})).kernels()[0]));
  // Another rank parses (a manifest says what the kernel takes) but is no
  // counter the runtime can bind.
  kernel["params"][5]["rank"] = 2;
  KernelLibrary wrongRank = parseManifest(manifestWith({kernel}));
  EXPECT_EQ(
      errortest::errorOf([&] { takesTileCounter(wrongRank.kernels()[0]); }),
      "kernel attention_fwd_bf16_d64_causal: parameter 'tile_counter' "
      "is memref<i32> of rank 2; a tile counter is memref<i32> of rank "
      "1 (memref<1xi32>)");
}

/// A fresh library directory holding `text` as its manifest.json.
std::string libraryWithManifest(const std::string &name,
                                const std::string &text) {
  std::filesystem::path directory =
      std::filesystem::path(testing::TempDir()) / ("fa-library-" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "manifest.json", std::ios::binary) << text;
  return directory.string();
}

std::string loadError(const std::string &directory) {
  return errortest::errorOf([&] { KernelLibrary::load(directory); });
}

/// `text` with its first `placeholder` replaced by `value`.
std::string replaced(std::string text, const std::string &placeholder,
                     const std::string &value) {
  return text.replace(text.find(placeholder), placeholder.size(), value);
}

TEST(KernelLibraryTest, DeeplyNestedValuesAreRejected) {
  // Printing such a value for an error message, or copying it, recursed once
  // per level and overflowed the stack.
  const std::string nested =
      std::string(100000, '[') + std::string(100000, ']');
  json manifest = manifestWith({sampleKernel()});
  manifest["kernels"][0]["config"]["block_m"] = "BLOCK_M";
  std::string text = manifest.dump();
  for (const std::string &hostile :
       {nested, replaced(text, "\"fa-kernel-library\"", nested),
        replaced(text, "\"BLOCK_M\"", nested),
        replaced(text, "\"BLOCK_M\"",
                 std::string(61, '[') + "1" + std::string(61, ']'))}) {
    std::string directory = libraryWithManifest("nested", hostile);
    EXPECT_EQ(loadError(directory), "kernel manifest " + directory +
                                        "/manifest.json: values nested "
                                        "deeper than 64 levels");
  }
  // 64 levels are fine: the manifest, "kernels", the kernel, "config" and 60
  // arrays (which are then not an integer).
  std::string directory = libraryWithManifest(
      "nested", replaced(text, "\"BLOCK_M\"",
                         std::string(60, '[') + "1" + std::string(60, ']')));
  EXPECT_NE(loadError(directory).find("'block_m' must be an integer"),
            std::string::npos);
}

TEST(KernelLibraryTest, IntegersBeyondTheirTypeAreRejected) {
  // Each used to be narrowed silently: a 2^40 grid or block extent became 0.
  const std::int64_t tooWide = 1ll << 40;
  const std::uint64_t largest = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::pair<std::function<void(json &)>, std::string>> cases = {
      {[&](json &k) { k["grid"][2] = tooWide; },
       "grid[2] must be at most 4294967295, got 1099511627776"},
      {[&](json &k) { k["block"][0] = tooWide; },
       "block[0] must be at most 4294967295, got 1099511627776"},
      {[&](json &k) { k["dynamic_shared_bytes"] = 1ll << 32; },
       "'dynamic_shared_bytes' must be at most 4294967295, got 4294967296"},
      {[&](json &k) { k["params"][0]["rank"] = 1ll << 31; },
       "params[0]: 'rank' must be at most 2147483647, got 2147483648"},
      {[&](json &k) { k["config"]["block_n"] = largest; },
       "config: 'block_n' must be at most 9223372036854775807, got "
       "18446744073709551615"},
      {[&](json &k) { k["head_dim"] = largest; },
       "'head_dim' must be at most 9223372036854775807, got "
       "18446744073709551615"}};
  for (const auto &[edit, message] : cases) {
    json kernel = sampleKernel();
    edit(kernel);
    std::string directory =
        libraryWithManifest("wide", manifestWith({kernel}).dump());
    EXPECT_EQ(loadError(directory),
              "kernel manifest " + directory +
                  "/manifest.json: kernel 'attention_fwd_bf16_d64_causal': " +
                  message);
  }
}

TEST(KernelLibraryTest, ManifestsThatAreNotSmallRegularFilesAreRejected) {
  // 200 MiB of zeros (a sparse file) was read whole before it was parsed.
  std::string directory = libraryWithManifest("large", "");
  std::string manifest = directory + "/manifest.json";
  std::filesystem::resize_file(manifest, 200 << 20);
  EXPECT_EQ(loadError(directory),
            "reading the kernel library: " + manifest +
                " has 209715200 bytes, more than the 67108864 the runtime "
                "reads from one file");
  // A directory (or a device, or a pipe) is no manifest either.
  std::filesystem::remove(manifest);
  std::filesystem::create_directory(manifest);
  EXPECT_EQ(loadError(directory), "reading the kernel library: " + manifest +
                                      " is not a regular file");
}

TEST(KernelLibraryTest, LoadsTheFixtureLibrary) {
  KernelLibrary library = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  // 12 attention forward kernels, 12 groups of 3 backward kernels, 5
  // variant forward kernels, three variants' 3 backward kernels and the
  // sinks' dsinks kernel, and 7 LayerNorm kernels per dtype.
  EXPECT_EQ(library.kernels().size(), 12u + 12 * 3 + 5 + 3 * 3 + 1 + 3 * 7);
  EXPECT_EQ(
      library
          .find({kAttentionBackwardOp, DType::BF16, 64, true, "window+softcap"})
          .params.back()
          .name,
      "softcap");
  EXPECT_EQ(library.variants("attention_fwd"),
            (std::vector<std::string>{"", "window+softcap",
                                      "causal_bottom_right+document+alibi",
                                      "prefix_lm", "sinks", "dropout"}));
  // The sinks backward names its dsinks kernel, which the library parsed.
  const KernelSpec &sinks =
      library.find({kAttentionBackwardOp, DType::BF16, 64, false, "sinks"});
  ASSERT_NE(library.named(sinks.dsinksKernel), nullptr);
  EXPECT_EQ(library.named(sinks.dsinksKernel)->grid[0].symbol, "heads");
  const KernelSpec &spec =
      library.find({"attention_fwd", DType::F32, 128, true});
  EXPECT_EQ(spec.name, "fixture_attention_fwd_f32_d128_causal");
  EXPECT_EQ(spec.dynamicSharedBytes, 2u * 64 * 128 * 4);
}

TEST(KernelLibraryTest, MissingLibrarySaysWhere) {
  try {
    KernelLibrary::load("/nonexistent/kernels");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "reading the kernel library: cannot open "
                               "/nonexistent/kernels/manifest.json");
  }
}

DeviceInfo deviceWithArch(int major, int minor) {
  DeviceInfo device;
  device.name = "GPU";
  device.computeMajor = major;
  device.computeMinor = minor;
  return device;
}

TEST(KernelTargetTest, ArchSpecificTargetsNeedThatExactGpu) {
  EXPECT_NO_THROW(checkTargetRunsOn("sm_90a", deviceWithArch(9, 0), "k"));
  EXPECT_THROW(checkTargetRunsOn("sm_90a", deviceWithArch(10, 0), "k"), Error);
  try {
    checkTargetRunsOn("sm_90a", deviceWithArch(8, 0), "k");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "kernel k is built for sm_90a, which cannot "
                               "run on device 0 (GPU, sm_80)");
  }
}

TEST(KernelTargetTest, PlainTargetsRunOnNewerGpus) {
  EXPECT_NO_THROW(checkTargetRunsOn("sm_80", deviceWithArch(9, 0), "k"));
  EXPECT_NO_THROW(checkTargetRunsOn("sm_90", deviceWithArch(9, 0), "k"));
  EXPECT_THROW(checkTargetRunsOn("sm_90", deviceWithArch(8, 6), "k"), Error);
  EXPECT_THROW(checkTargetRunsOn("gfx90a", deviceWithArch(9, 0), "k"), Error);
}

} // namespace
