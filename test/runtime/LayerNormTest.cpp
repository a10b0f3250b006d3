//===- LayerNormTest.cpp - LayerNorm manifests, choice, grids, arguments --===//

#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/KernelArgs.h"

#include <nlohmann/json.hpp>

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

using namespace fa;
using nlohmann::json;

namespace {

/// The manifest entries of the compiler/runtime contract, one per op.
json forwardKernel(const std::string &name, std::int64_t blockCols,
                   bool resident) {
  json kernel = json::parse(R"({
    "op": "layernorm_fwd", "dtype": "bf16",
    "config": {"rows": 4, "num_warps": 4},
    "block": [128, 1, 1], "grid": ["row_tiles", "one", "one"],
    "dynamic_shared_bytes": 0,
    "params": [{"name": "x", "kind": "memref", "dtype": "bf16", "rank": 2},
               {"name": "weight", "kind": "memref", "dtype": "bf16", "rank": 1},
               {"name": "bias", "kind": "memref", "dtype": "bf16", "rank": 1},
               {"name": "y", "kind": "memref", "dtype": "bf16", "rank": 2},
               {"name": "mean", "kind": "memref", "dtype": "f32", "rank": 1},
               {"name": "rstd", "kind": "memref", "dtype": "f32", "rank": 1},
               {"name": "eps", "kind": "f32"}]
  })");
  kernel["name"] = kernel["entry"] = name;
  kernel["ptx"] = name + ".ptx";
  kernel["config"]["block_cols"] = blockCols;
  kernel["config"]["resident"] = resident ? 1 : 0;
  return kernel;
}

json backwardKernel(const std::string &name, std::int64_t blockCols,
                    bool resident,
                    const std::string &params = "layernorm_bwd_params_bf16") {
  json kernel = json::parse(R"({
    "op": "layernorm_bwd", "dtype": "bf16",
    "config": {"rows": 2, "num_warps": 8},
    "block": [256, 1, 1], "grid": ["persistent_row_tiles", "one", "one"],
    "dynamic_shared_bytes": 0,
    "params": [
      {"name": "x", "kind": "memref", "dtype": "bf16", "rank": 2},
      {"name": "weight", "kind": "memref", "dtype": "bf16", "rank": 1},
      {"name": "mean", "kind": "memref", "dtype": "f32", "rank": 1},
      {"name": "rstd", "kind": "memref", "dtype": "f32", "rank": 1},
      {"name": "dy", "kind": "memref", "dtype": "bf16", "rank": 2},
      {"name": "dx", "kind": "memref", "dtype": "bf16", "rank": 2},
      {"name": "partial_dweight", "kind": "memref", "dtype": "f32", "rank": 2},
      {"name": "partial_dbias", "kind": "memref", "dtype": "f32", "rank": 2}]
  })");
  kernel["name"] = kernel["entry"] = name;
  kernel["ptx"] = name + ".ptx";
  kernel["config"]["block_cols"] = blockCols;
  kernel["config"]["resident"] = resident ? 1 : 0;
  kernel["params_kernel"] = params;
  return kernel;
}

json paramsKernel(const std::string &name = "layernorm_bwd_params_bf16") {
  json kernel = json::parse(R"({
    "op": "layernorm_bwd_params", "dtype": "bf16",
    "config": {"rows": 32, "block_cols": 64, "num_warps": 4},
    "block": [128, 1, 1], "grid": ["column_tiles", "one", "one"],
    "dynamic_shared_bytes": 0,
    "params": [
      {"name": "partial_dweight", "kind": "memref", "dtype": "f32", "rank": 2},
      {"name": "partial_dbias", "kind": "memref", "dtype": "f32", "rank": 2},
      {"name": "dweight", "kind": "memref", "dtype": "f32", "rank": 1},
      {"name": "dbias", "kind": "memref", "dtype": "f32", "rank": 1}]
  })");
  kernel["name"] = kernel["entry"] = name;
  kernel["ptx"] = name + ".ptx";
  return kernel;
}

KernelLibrary libraryOf(std::vector<json> kernels) {
  json manifest = {{"format", "fa-kernel-library"},
                   {"version", 1},
                   {"target", "sm_90a"},
                   {"kernels", kernels}};
  return KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
}

using fa::errortest::errorOf;

/// The error for one kernel after `edit`, next to a params kernel.
template <typename Edit> std::string kernelError(json kernel, Edit edit) {
  edit(kernel);
  return errorOf([&] { libraryOf({kernel, paramsKernel()}); });
}

const std::string kForwardContext =
    "kernel manifest /lib/manifest.json: kernel 'fwd': ";

TEST(LayerNormManifestTest, ParsesTheContractEntries) {
  KernelLibrary library =
      libraryOf({forwardKernel("fwd", 1024, true),
                 backwardKernel("bwd", 2048, false), paramsKernel()});
  const KernelSpec &forward = *library.named("fwd");
  EXPECT_EQ(forward.op, "layernorm_fwd");
  EXPECT_EQ(forward.dtype, DType::BF16);
  EXPECT_EQ(forward.headDim, 0);
  EXPECT_FALSE(forward.causal);
  EXPECT_EQ(forward.rowsPerTile, 4);
  EXPECT_EQ(forward.blockCols, 1024);
  EXPECT_TRUE(forward.resident);
  EXPECT_EQ(forward.params.back().name, "eps");
  EXPECT_EQ(forward.params.back().kind, ParamKind::F32);
  EXPECT_EQ(forward.grid[0].symbol, "row_tiles");
  EXPECT_EQ(forward.describe(), "layernorm_fwd bf16 cols<=1024");

  const KernelSpec &backward = *library.named("bwd");
  EXPECT_EQ(backward.rowsPerTile, 2);
  EXPECT_FALSE(backward.resident);
  EXPECT_EQ(backward.paramsKernel, "layernorm_bwd_params_bf16");
  EXPECT_EQ(backward.grid[0].symbol, "persistent_row_tiles");
  EXPECT_EQ(backward.describe(), "layernorm_bwd bf16 any cols");

  const KernelSpec &params = *library.named("layernorm_bwd_params_bf16");
  EXPECT_EQ(params.blockCols, 64);
  EXPECT_EQ(params.grid[0].symbol, "column_tiles");
  EXPECT_EQ(params.describe(), "layernorm_bwd_params bf16");
  EXPECT_EQ(params.query().describe(), "layernorm_bwd_params bf16");
}

TEST(LayerNormManifestTest, ForwardKernelsMayBePersistent) {
  json kernel = forwardKernel("fwd", 1024, true);
  kernel["grid"][0] = "persistent_row_tiles";
  EXPECT_EQ(libraryOf({kernel}).kernels()[0].grid[0].symbol,
            "persistent_row_tiles");
}

TEST(LayerNormManifestTest, AttentionFieldsAreNotRequired) {
  // The attention keys would be ignored, and their absence is no error.
  json kernel = forwardKernel("fwd", 128, true);
  EXPECT_FALSE(kernel.contains("head_dim"));
  EXPECT_FALSE(kernel["config"].contains("block_m"));
  EXPECT_NO_THROW(libraryOf({kernel}));
}

TEST(LayerNormManifestTest, ErrorsNameTheKernelAndKey) {
  json forward = forwardKernel("fwd", 128, true);
  // A library from before eps was a parameter: its kernels would ignore the
  // caller's eps.
  EXPECT_EQ(kernelError(forward,
                        [](json &k) {
                          k["params"].erase(k["params"].size() - 1);
                          k["eps"] = 1e-5;
                        }),
            kForwardContext +
                "a layernorm_fwd kernel takes eps as an f32 parameter named "
                "'eps', and this one has none (a library built before eps "
                "was a parameter? rebuild it)");
  EXPECT_EQ(
      kernelError(forward, [](json &k) { k["params"].back()["kind"] = "i32"; }),
      kForwardContext + "parameter 'eps' must be of kind f32");
  EXPECT_EQ(kernelError(forward, [](json &k) { k["config"].erase("rows"); }),
            kForwardContext +
                "config needs a positive integer 'rows' (rows per tile: it "
                "sizes the grid and the backward's partial sums)");
  EXPECT_EQ(
      kernelError(forward, [](json &k) { k["config"].erase("block_cols"); }),
      kForwardContext + "config needs a positive integer 'block_cols' "
                        "(the widest row a resident kernel holds)");
  EXPECT_EQ(kernelError(forward, [](json &k) { k["config"]["resident"] = 2; }),
            kForwardContext + "config needs 'resident' 0 or 1 (whether the "
                              "kernel keeps a row of at most block_cols "
                              "elements on chip)");
  EXPECT_EQ(kernelError(forward, [](json &k) { k["grid"][0] = "query_tiles"; }),
            kForwardContext + "grid[0] is the symbol 'query_tiles', which a "
                              "layernorm_fwd kernel cannot use; expected "
                              "row_tiles, persistent_row_tiles, one or a "
                              "number");
  EXPECT_EQ(kernelError(forward, [](json &k) { k["grid"][0] = "rows"; }),
            kForwardContext + "grid[0] is the unknown symbol 'rows'; expected "
                              "row_tiles, persistent_row_tiles, one or a "
                              "number");

  json backward = backwardKernel("bwd", 128, true);
  EXPECT_EQ(kernelError(backward, [](json &k) { k.erase("params_kernel"); }),
            "kernel manifest /lib/manifest.json: kernel 'bwd': missing key "
            "'params_kernel'");
  EXPECT_EQ(kernelError(backward, [](json &k) { k["grid"][0] = "row_tiles"; }),
            "kernel manifest /lib/manifest.json: kernel 'bwd': grid[0] is the "
            "symbol 'row_tiles', which a layernorm_bwd kernel cannot use; "
            "expected persistent_row_tiles, one or a number");
  EXPECT_EQ(
      errorOf([] { libraryOf({backwardKernel("bwd", 128, true, "missing")}); }),
      "kernel manifest /lib/manifest.json: kernel 'bwd': params_kernel "
      "'missing' is not in the library");
  EXPECT_EQ(errorOf([] {
              libraryOf({forwardKernel("fwd", 128, true),
                         backwardKernel("bwd", 128, true, "fwd")});
            }),
            "kernel manifest /lib/manifest.json: kernel 'bwd': params_kernel "
            "'fwd' computes layernorm_fwd, not layernorm_bwd_params");

  EXPECT_EQ(errorOf([] {
              json params = paramsKernel();
              params["config"].erase("block_cols");
              libraryOf({params});
            }),
            "kernel manifest /lib/manifest.json: kernel "
            "'layernorm_bwd_params_bf16': config needs a positive integer "
            "'block_cols' (it sizes the column_tiles grid dimension)");
}

TEST(LayerNormManifestTest, AttentionLookupsSkipLayerNormKernels) {
  KernelLibrary library = libraryOf({forwardKernel("fwd", 128, true)});
  EXPECT_EQ(
      errorOf([&] { library.find({"attention_fwd", DType::BF16, 64, false}); }),
      "no kernel for attention_fwd bf16 head_dim=64 non-causal in "
      "/lib/manifest.json; it has:\n"
      "  fwd (layernorm_fwd bf16 cols<=128)");
}

TEST(LayerNormChoiceTest, SmallestResidentKernelThatHoldsTheRow) {
  KernelLibrary library = libraryOf(
      {forwardKernel("any", 4096, false), forwardKernel("c1024", 1024, true),
       forwardKernel("c256", 256, true), forwardKernel("c256b", 256, true),
       forwardKernel("c2048", 2048, true)});
  auto chosen = [&](std::int64_t cols) {
    return chooseLayerNormKernel(library, kLayerNormForwardOp, DType::BF16,
                                 cols)
        .name;
  };
  EXPECT_EQ(chosen(1), "c256");
  EXPECT_EQ(chosen(256), "c256"); // The first of equals in manifest order.
  EXPECT_EQ(chosen(257), "c1024");
  EXPECT_EQ(chosen(1024), "c1024");
  EXPECT_EQ(chosen(2000), "c2048");
  EXPECT_EQ(chosen(2049), "any");
  EXPECT_EQ(chosen(1 << 20), "any");
}

TEST(LayerNormChoiceTest, FirstNonResidentKernelTakesLongRows) {
  KernelLibrary library = libraryOf(
      {backwardKernel("c512", 512, true), backwardKernel("any1", 256, false),
       backwardKernel("any2", 8192, false), paramsKernel()});
  EXPECT_EQ(
      chooseLayerNormKernel(library, kLayerNormBackwardOp, DType::BF16, 100)
          .name,
      "c512");
  EXPECT_EQ(
      chooseLayerNormKernel(library, kLayerNormBackwardOp, DType::BF16, 513)
          .name,
      "any1");
}

TEST(LayerNormChoiceTest, NamedKernelIsCheckedLikeAChosenOne) {
  KernelLibrary library = libraryOf(
      {forwardKernel("c256", 256, true), forwardKernel("any", 4096, false),
       backwardKernel("bwd", 1024, true), paramsKernel()});
  auto named = [&](std::int64_t cols, const std::string &name) {
    return namedLayerNormKernel(library, kLayerNormForwardOp, DType::BF16, cols,
                                name)
        .name;
  };
  EXPECT_EQ(named(100, "c256"), "c256");
  // Not the one the row length picks, but it holds the row.
  EXPECT_EQ(named(100, "any"), "any");
  EXPECT_EQ(named(5000, "any"), "any");
  EXPECT_EQ(errorOf([&] { named(300, "c256"); }),
            "kernel c256 holds rows of at most 256 elements, not 300");
  // A kernel of another op: not one of this problem's kernels.
  EXPECT_EQ(errorOf([&] { named(100, "bwd"); }),
            "no layernorm_fwd bf16 kernel named bwd in /lib/manifest.json; it "
            "has:\n"
            "  c256 (layernorm_fwd bf16 cols<=256)\n"
            "  any (layernorm_fwd bf16 any cols)");
}

TEST(LayerNormChoiceTest, ErrorsSayWhatTheLibraryHas) {
  KernelLibrary residentOnly = libraryOf(
      {forwardKernel("c128", 128, true), forwardKernel("c1024", 1024, true)});
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(residentOnly, kLayerNormForwardOp,
                                    DType::BF16, 1025);
            }),
            "no layernorm_fwd bf16 kernel for cols=1025 in /lib/manifest.json: "
            "its resident kernels hold rows of at most 1024 elements and it "
            "has no non-resident one; it has:\n"
            "  c128 (layernorm_fwd bf16 cols<=128)\n"
            "  c1024 (layernorm_fwd bf16 cols<=1024)");
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(residentOnly, kLayerNormForwardOp,
                                    DType::F16, 64);
            }),
            "no layernorm_fwd f16 kernel in /lib/manifest.json; it has:\n"
            "  c128 (layernorm_fwd bf16 cols<=128)\n"
            "  c1024 (layernorm_fwd bf16 cols<=1024)");
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(residentOnly, kLayerNormBackwardOp,
                                    DType::BF16, 64);
            }),
            "no layernorm_bwd bf16 kernel in /lib/manifest.json; it has:\n"
            "  c128 (layernorm_fwd bf16 cols<=128)\n"
            "  c1024 (layernorm_fwd bf16 cols<=1024)");
  EXPECT_EQ(errorOf([] {
              chooseLayerNormKernel(libraryOf({}), kLayerNormForwardOp,
                                    DType::BF16, 64);
            }),
            "no layernorm_fwd bf16 kernel in /lib/manifest.json; the library "
            "is empty");
}

TEST(LayerNormEpsTest, AnyEpsUsableInF32IsAccepted) {
  EXPECT_EQ(layerNormEps(1e-5), 1e-5f);
  EXPECT_EQ(layerNormEps(1e-6), 1e-6f);
  EXPECT_EQ(layerNormEps(1e-12), 1e-12f);
  EXPECT_EQ(layerNormEps(0.5), 0.5f);
}

TEST(LayerNormEpsTest, UnusableEpsIsAClearError) {
  auto refused = [](double eps) { return errorOf([&] { layerNormEps(eps); }); };
  const std::string rule = "layernorm eps must be positive and finite";
  EXPECT_EQ(refused(0), rule + ", got 0");
  EXPECT_EQ(refused(-1e-5), rule + ", got -1e-05");
  EXPECT_EQ(refused(std::numeric_limits<double>::quiet_NaN()),
            rule + ", got nan");
  EXPECT_EQ(refused(std::numeric_limits<double>::infinity()),
            rule + ", got inf");
  // Usable doubles that f32, in which the kernels add eps, cannot hold.
  EXPECT_EQ(refused(1e-50), rule + " in f32, as the kernels add it, got 1e-50");
  EXPECT_EQ(refused(1e39), rule + " in f32, as the kernels add it, got 1e+39");
}

TEST(LayerNormChoiceTest, ParamsKernelOfABackwardKernel) {
  KernelLibrary library =
      libraryOf({backwardKernel("bwd", 128, true, "sum"), paramsKernel("sum"),
                 paramsKernel("other")});
  EXPECT_EQ(layerNormParamsKernel(library, *library.named("bwd")).name, "sum");
}

TEST(LayerNormChoiceTest, TheFixtureLibraryCoversEveryRowLength) {
  // The GPU tests rely on these choices: cols 1 and 100 take the smallest
  // resident kernels, 300 the persistent forward, 4096 the non-resident
  // ones.
  KernelLibrary library = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  auto chosen = [&](const char *op, std::int64_t cols) {
    return chooseLayerNormKernel(library, op, DType::F16, cols).name;
  };
  EXPECT_EQ(chosen(kLayerNormForwardOp, 1), "fixture_layernorm_fwd_f16_c128");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 100), "fixture_layernorm_fwd_f16_c128");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 300),
            "fixture_layernorm_fwd_f16_c512_persistent");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 1000),
            "fixture_layernorm_fwd_f16_c1024");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 4096), "fixture_layernorm_fwd_f16_any");
  EXPECT_EQ(chosen(kLayerNormBackwardOp, 100),
            "fixture_layernorm_bwd_f16_c1024");
  const KernelSpec &backward =
      chooseLayerNormKernel(library, kLayerNormBackwardOp, DType::F16, 4096);
  EXPECT_EQ(backward.name, "fixture_layernorm_bwd_f16_any");
  EXPECT_EQ(layerNormParamsKernel(library, backward).name,
            "fixture_layernorm_bwd_params_f16_c128");
}

KernelSpec specOf(const json &kernel, const std::vector<json> &others = {}) {
  std::vector<json> kernels = others;
  kernels.push_back(kernel);
  KernelLibrary library = libraryOf(kernels);
  return *library.named(kernel["name"].get<std::string>());
}

TEST(LayerNormGridTest, RowTilesAndPersistentBlocks) {
  KernelSpec forward = specOf(forwardKernel("fwd", 128, true)); // 4 rows.
  EXPECT_EQ(layerNormRowTiles(forward, {37, 100}), 10);
  EXPECT_EQ(layerNormRowTiles(forward, {36, 100}), 9);
  EXPECT_EQ(layerNormRowTiles(forward, {1, 100}), 1);
  Dim3 grid = resolveGrid(forward, {{"row_tiles", 10}});
  EXPECT_EQ(grid.x, 10u);
  EXPECT_EQ(grid.y, 1u);
  EXPECT_EQ(grid.z, 1u);

  KernelSpec backward =
      specOf(backwardKernel("bwd", 128, true), {paramsKernel()}); // 2 rows.
  // As many blocks as the GPU runs at once, but no more than row tiles.
  EXPECT_EQ(persistentBlocks(backward, {32768, 1024}, 132 * 2), 264);
  EXPECT_EQ(persistentBlocks(backward, {37, 1024}, 264), 19);
  EXPECT_EQ(persistentBlocks(backward, {1, 1024}, 264), 1);
  EXPECT_EQ(errorOf([&] { persistentBlocks(backward, {37, 1024}, 0); }),
            "kernel bwd: not one block of 256 threads fits on this GPU "
            "(occupancy 0)");
}

TEST(LayerNormGridTest, SymbolsWithoutValuesAreErrors) {
  KernelSpec params = specOf(paramsKernel());
  EXPECT_EQ(resolveGrid(params, {{"column_tiles", 3}}).x, 3u);
  EXPECT_EQ(errorOf([&] { resolveGrid(params, {{"row_tiles", 3}}); }),
            "kernel layernorm_bwd_params_bf16: grid symbol 'column_tiles' has "
            "no value in this launch (op layernorm_bwd_params)");
}

TEST(LayerNormShapeTest, TensorsOfAnyRankAreRowsOfTheirLastDimension) {
  LayerNormShape shape = LayerNormShape::ofTensor({2, 3, 5, 7});
  EXPECT_EQ(shape.rows, 30);
  EXPECT_EQ(shape.cols, 7);
  EXPECT_EQ(LayerNormShape::ofTensor({7}).rows, 1);
  EXPECT_THROW(LayerNormShape::ofTensor({}), Error);
  EXPECT_EQ(shape.matrix(), (Shape{30, 7}));
  EXPECT_EQ(shape.row(), (Shape{7}));
  EXPECT_EQ(shape.perRow(), (Shape{30}));
  EXPECT_EQ(shape.describe(), "rows=30 cols=7");
}

TEST(LayerNormShapeTest, ValidationAndBytes) {
  EXPECT_NO_THROW((LayerNormShape{1, 1}.validate()));
  EXPECT_EQ(errorOf([] { LayerNormShape{0, 8}.validate(); }),
            "layernorm shape rows=0 cols=8: rows must be positive");
  EXPECT_EQ(errorOf([] { LayerNormShape{4, -1}.validate(); }),
            "layernorm shape rows=4 cols=-1: cols must be positive");
  LayerNormShape shape{32768, 4096};
  EXPECT_DOUBLE_EQ(shape.forwardBytes(DType::BF16), 2.0 * 32768 * 4096 * 2);
  EXPECT_DOUBLE_EQ(shape.backwardBytes(DType::BF16), 3.0 * 32768 * 4096 * 2);
  EXPECT_DOUBLE_EQ(shape.forwardBytes(DType::F32), 2.0 * 32768 * 4096 * 4);
}

TEST(LayerNormBindingsTest, EveryContractParameterGetsItsTensor) {
  // Packing the contract's entries checks names, kinds, dtypes and ranks.
  KernelSpec forward = specOf(forwardKernel("fwd", 128, true));
  KernelSpec backward =
      specOf(backwardKernel("bwd", 128, true), {paramsKernel()});
  KernelSpec params = specOf(paramsKernel());
  LayerNormShape shape{37, 100};
  LayerNormForwardBuffers forwardBuffers{1, 2, 3, 4, 5, 6};
  LayerNormBackwardBuffers backwardBuffers{1, 2, 3, 4, 5, 6, 7, 8};
  LayerNormPartials partials{9, 10, 38};

  ArgBindings forwardArgs =
      layerNormForwardBindings(DType::BF16, shape, forwardBuffers, 1e-12f);
  // 2 rank-2 memrefs of 7 slots and 4 rank-1 memrefs of 5, then eps, whose
  // f32 bits fill the low half of the last slot.
  KernelArgs forwardPacked(forward, forwardArgs);
  EXPECT_EQ(forwardPacked.count(), 2u * 7 + 4 * 5 + 1);
  float eps = 0;
  std::uint64_t epsSlot = forwardPacked.slot(2 * 7 + 4 * 5);
  std::memcpy(&eps, &epsSlot, sizeof(eps));
  EXPECT_EQ(eps, 1e-12f);
  EXPECT_EQ(epsSlot >> 32, 0u);
  const auto &y = std::get<MemrefArg>(forwardArgs.at("y"));
  EXPECT_EQ(y.data, 4u);
  EXPECT_EQ(y.shape, (Shape{37, 100}));
  EXPECT_EQ(std::get<MemrefArg>(forwardArgs.at("rstd")).dtype, DType::F32);

  ArgBindings backwardArgs =
      layerNormBackwardBindings(DType::BF16, shape, backwardBuffers, partials);
  KernelArgs packed(backward, backwardArgs);
  // x, dy, dx and the partials are rank 2; weight, mean and rstd rank 1.
  EXPECT_EQ(packed.count(), 5u * 7 + 3 * 5);
  const auto &partial = std::get<MemrefArg>(backwardArgs.at("partial_dbias"));
  EXPECT_EQ(partial.data, 10u);
  EXPECT_EQ(partial.dtype, DType::F32);
  EXPECT_EQ(partial.shape, (Shape{38, 100}));
  // partial_dweight, the last memref but one, starts at slot 36: its
  // sizes[0] is slot 39 and strides[0] slot 41.
  EXPECT_EQ(packed.slot(39), 38u);
  EXPECT_EQ(packed.slot(41), 100u);

  ArgBindings paramsArgs =
      layerNormParamsBindings(shape, backwardBuffers, partials);
  EXPECT_EQ(KernelArgs(params, paramsArgs).count(), 2u * 7 + 2 * 5);
  EXPECT_EQ(std::get<MemrefArg>(paramsArgs.at("dweight")).data, 7u);
  EXPECT_EQ(std::get<MemrefArg>(paramsArgs.at("dweight")).shape, (Shape{100}));
}

TEST(LayerNormBindingsTest, KernelsOfAnotherDtypeAreRejected) {
  KernelSpec forward = specOf(forwardKernel("fwd", 128, true)); // bf16.
  EXPECT_EQ(errorOf([&] {
              KernelArgs(forward,
                         layerNormForwardBindings(DType::F16, {4, 8},
                                                  {1, 2, 3, 4, 5, 6}, 1e-5f));
            }),
            "passing arguments to kernel fwd: parameter 'x' holds bf16 but "
            "was given a f16 tensor");
}

} // namespace
