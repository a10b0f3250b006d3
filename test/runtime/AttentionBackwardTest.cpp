//===- AttentionBackwardTest.cpp - Backward manifests, grids, arguments ---===//

#include "fa/runtime/Attention.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/KernelArgs.h"

#include <nlohmann/json.hpp>

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

using namespace fa;
using nlohmann::json;

namespace {

/// The fields every attention kernel of the contract has.
json attentionKernel(const std::string &name, const std::string &op,
                     const json &grid) {
  json kernel = json::parse(R"({
    "dtype": "bf16", "head_dim": 64, "causal": true, "scale": null,
    "config": {"block_m": 64, "block_n": 32, "num_warps": 4},
    "block": [128, 1, 1], "dynamic_shared_bytes": 0
  })");
  kernel["name"] = kernel["entry"] = name;
  kernel["ptx"] = name + ".ptx";
  kernel["op"] = op;
  kernel["grid"] = grid;
  return kernel;
}

json memref(const std::string &name, const std::string &dtype, int rank) {
  return {{"name", name}, {"kind", "memref"}, {"dtype", dtype}, {"rank", rank}};
}

/// The three entries the compiler emits for one fa.attention_grad function
/// @bwd, in its order: bwd_delta, bwd_dkdv, bwd.
std::vector<json> backwardEntries(const std::string &name = "bwd") {
  json delta = attentionKernel(name + "_delta", "attention_bwd_delta",
                               {"query_tiles", "batch_heads", "one"});
  delta["params"] = {memref("out", "bf16", 4), memref("dout", "bf16", 4),
                     memref("delta", "f32", 3)};
  json dkdv = attentionKernel(name + "_dkdv", "attention_bwd_dkdv",
                              {"key_tiles", "batch_kv_heads", "one"});
  dkdv["params"] = {memref("q", "bf16", 4),  memref("k", "bf16", 4),
                    memref("v", "bf16", 4),  memref("dout", "bf16", 4),
                    memref("lse", "f32", 3), memref("delta", "f32", 3),
                    memref("dk", "bf16", 4), memref("dv", "bf16", 4)};
  json dq = attentionKernel(name, "attention_bwd",
                            {"query_tiles", "batch_heads", "one"});
  dq["params"] = {memref("q", "bf16", 4),  memref("k", "bf16", 4),
                  memref("v", "bf16", 4),  memref("dout", "bf16", 4),
                  memref("lse", "f32", 3), memref("delta", "f32", 3),
                  memref("dq", "bf16", 4)};
  dq["delta_kernel"] = name + "_delta";
  dq["dkdv_kernel"] = name + "_dkdv";
  return {delta, dkdv, dq};
}

KernelLibrary libraryOf(const std::vector<json> &kernels) {
  json manifest = {{"format", "fa-kernel-library"},
                   {"version", 1},
                   {"target", "sm_90a"},
                   {"kernels", kernels}};
  return KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
}

using fa::errortest::errorOf;

/// The error for the backward entries after `edit(delta, dkdv, dq)`.
template <typename Edit> std::string entriesError(Edit edit) {
  std::vector<json> entries = backwardEntries();
  edit(entries[0], entries[1], entries[2]);
  return errorOf([&] { libraryOf(entries); });
}

const std::string kManifest = "kernel manifest /lib/manifest.json: ";

TEST(AttentionBackwardManifestTest, ParsesTheContractEntries) {
  KernelLibrary library = libraryOf(backwardEntries());
  const KernelSpec &dq =
      library.find({kAttentionBackwardOp, DType::BF16, 64, true});
  EXPECT_EQ(dq.name, "bwd");
  EXPECT_EQ(dq.deltaKernel, "bwd_delta");
  EXPECT_EQ(dq.dkdvKernel, "bwd_dkdv");
  EXPECT_EQ(dq.blockM, 64);
  EXPECT_EQ(dq.describe(), "attention_bwd bf16 head_dim=64 causal");
  EXPECT_DOUBLE_EQ(dq.softmaxScale(), 0.125);

  const KernelSpec &dkdv = *library.named("bwd_dkdv");
  EXPECT_EQ(dkdv.op, kAttentionDkDvOp);
  EXPECT_EQ(dkdv.grid[0].symbol, "key_tiles");
  EXPECT_EQ(dkdv.grid[1].symbol, "batch_kv_heads");
  EXPECT_TRUE(dkdv.deltaKernel.empty());
  EXPECT_EQ(dkdv.params.size(), 8u);

  AttentionBackwardKernels kernels = attentionBackwardKernels(library, dq);
  EXPECT_EQ(kernels.delta, library.named("bwd_delta"));
  EXPECT_EQ(kernels.dkdv, &dkdv);
  EXPECT_EQ(kernels.dq, &dq);
}

TEST(AttentionBackwardManifestTest, ForwardLookupsSkipBackwardKernels) {
  KernelLibrary library = libraryOf(backwardEntries());
  EXPECT_TRUE(
      library.candidates({kAttentionForwardOp, DType::BF16, 64, true}).empty());
  EXPECT_EQ(library.groups().size(), 3u);
}

TEST(AttentionBackwardManifestTest, ErrorsNameTheKernelAndKey) {
  EXPECT_EQ(
      entriesError([](json &, json &, json &dq) { dq.erase("delta_kernel"); }),
      kManifest + "kernel 'bwd': missing key 'delta_kernel'");
  EXPECT_EQ(
      entriesError([](json &, json &, json &dq) { dq["dkdv_kernel"] = 7; }),
      kManifest + "kernel 'bwd': key 'dkdv_kernel' must be a string, "
                  "got 7");
  EXPECT_EQ(entriesError([](json &, json &, json &dq) {
              dq["delta_kernel"] = "missing";
            }),
            kManifest + "kernel 'bwd': delta_kernel 'missing' is not in the "
                        "library");
  EXPECT_EQ(entriesError([](json &, json &, json &dq) {
              dq["dkdv_kernel"] = "bwd_delta";
            }),
            kManifest + "kernel 'bwd': dkdv_kernel 'bwd_delta' computes "
                        "attention_bwd_delta, not attention_bwd_dkdv");
  EXPECT_EQ(
      entriesError([](json &, json &dkdv, json &) { dkdv["causal"] = false; }),
      kManifest + "kernel 'bwd': dkdv_kernel 'bwd_dkdv' is "
                  "attention_bwd_dkdv bf16 head_dim=64 non-causal, "
                  "expected attention_bwd_dkdv bf16 head_dim=64 causal");
  EXPECT_EQ(
      entriesError([](json &delta, json &, json &) { delta["scale"] = 0.5; }),
      kManifest + "kernel 'bwd': delta_kernel 'bwd_delta' has scale "
                  "0.5, expected 1/sqrt(head_dim)");
  EXPECT_EQ(entriesError([](json &, json &dkdv, json &) {
              dkdv["config"].erase("block_m");
            }),
            kManifest + "kernel 'bwd_dkdv': config needs a positive integer "
                        "'block_m' (keys per block: it sizes the key_tiles "
                        "grid dimension)");
  EXPECT_EQ(entriesError(
                [](json &delta, json &, json &) { delta.erase("head_dim"); }),
            kManifest + "kernel 'bwd_delta': missing key 'head_dim'");
}

TEST(AttentionBackwardManifestTest, KeyGridSymbolsAreForAttentionOnly) {
  json layerNorm = json::parse(R"({
    "name": "ln", "op": "layernorm_bwd_params", "ptx": "ln.ptx",
    "entry": "ln", "dtype": "f32",
    "config": {"rows": 32, "block_cols": 64},
    "block": [128, 1, 1], "grid": ["key_tiles", "one", "one"],
    "dynamic_shared_bytes": 0, "params": []
  })");
  EXPECT_EQ(errorOf([&] { libraryOf({layerNorm}); }),
            kManifest + "kernel 'ln': grid[0] is the symbol 'key_tiles', "
                        "which a layernorm_bwd_params kernel cannot use; "
                        "expected column_tiles, one or a number");
  json forward = attentionKernel("fwd", "attention_fwd",
                                 {"key_tiles", "batch_kv_heads", "one"});
  forward["params"] = json::array();
  EXPECT_NO_THROW(libraryOf({forward}));
}

TEST(AttentionBackwardManifestTest, LookupOfTheCompanions) {
  KernelLibrary library = libraryOf(backwardEntries());
  EXPECT_EQ(errorOf([&] {
              attentionBackwardKernels(library, *library.named("bwd_dkdv"));
            }),
            "kernel bwd_dkdv computes attention_bwd_dkdv, not attention_bwd");
  KernelSpec renamed = *library.named("bwd");
  renamed.dkdvKernel = "bwd_delta";
  EXPECT_EQ(errorOf([&] { attentionBackwardKernels(library, renamed); }),
            "kernel bwd: its dkdv_kernel 'bwd_delta' is not an "
            "attention_bwd_dkdv kernel of /lib/manifest.json");
}

TEST(AttentionBackwardManifestTest, TheFixtureLibraryHasEveryGroup) {
  KernelLibrary library = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (std::int64_t headDim : {64, 128})
      for (bool causal : {false, true}) {
        const KernelSpec &dq =
            library.find({kAttentionBackwardOp, dtype, headDim, causal});
        AttentionBackwardKernels kernels =
            attentionBackwardKernels(library, dq);
        EXPECT_EQ(kernels.delta->name, dq.name + "_delta");
        EXPECT_EQ(kernels.dkdv->name, dq.name + "_dkdv");
      }
}

TEST(AttentionBackwardGridTest, QueryTilesAndKeyTiles) {
  KernelLibrary library = libraryOf(backwardEntries()); // block_m 64.
  AttentionShape shape{3, 8, 2, 129, 300, 64};
  Dim3 delta = attentionGrid(*library.named("bwd_delta"), shape);
  EXPECT_EQ(delta.x, 3u); // ceil(129 / 64)
  EXPECT_EQ(delta.y, 24u);
  EXPECT_EQ(delta.z, 1u);
  Dim3 dkdv = attentionGrid(*library.named("bwd_dkdv"), shape);
  EXPECT_EQ(dkdv.x, 5u); // ceil(300 / 64)
  EXPECT_EQ(dkdv.y, 6u); // batch * kv_heads
  EXPECT_EQ(dkdv.z, 1u);
  Dim3 dq = attentionGrid(*library.named("bwd"), shape);
  EXPECT_EQ(dq.x, 3u);
  EXPECT_EQ(dq.y, 24u);

  shape.seqKv = 1;
  EXPECT_EQ(attentionGrid(*library.named("bwd_dkdv"), shape).x, 1u);
}

TEST(AttentionBackwardBindingsTest, EveryContractParameterGetsItsTensor) {
  // Packing the contract's entries checks names, kinds, dtypes and ranks.
  KernelLibrary library = libraryOf(backwardEntries());
  AttentionShape shape{2, 4, 2, 10, 20, 64};
  AttentionBackwardBuffers buffers{1, 2, 3, 4, 5, 6, 7, 8, 9};
  ArgBindings bindings =
      attentionBackwardBindings(DType::BF16, shape, buffers, 10);

  // Rank-4 memrefs take 11 slots, rank-3 ones 9.
  EXPECT_EQ(KernelArgs(*library.named("bwd_delta"), bindings).count(),
            2u * 11 + 9);
  KernelArgs dkdv(*library.named("bwd_dkdv"), bindings);
  EXPECT_EQ(dkdv.count(), 6u * 11 + 2 * 9);
  // delta follows q, k, v, dout and lse; dk follows delta, and its sizes
  // are k's.
  EXPECT_EQ(dkdv.slot(4 * 11 + 9), 10u);
  EXPECT_EQ(dkdv.slot(4 * 11 + 2 * 9), 8u);
  EXPECT_EQ(dkdv.slot(4 * 11 + 2 * 9 + 3 + 1), 2u);  // kv_heads
  EXPECT_EQ(dkdv.slot(4 * 11 + 2 * 9 + 3 + 2), 20u); // seq_kv
  KernelArgs dq(*library.named("bwd"), bindings);
  EXPECT_EQ(dq.count(), 5u * 11 + 2 * 9);
  EXPECT_EQ(dq.slot(4 * 11 + 2 * 9), 7u);

  const auto &delta = std::get<MemrefArg>(bindings.at("delta"));
  EXPECT_EQ(delta.dtype, DType::F32);
  EXPECT_EQ(delta.shape, shape.logSumExp());
  EXPECT_EQ(std::get<MemrefArg>(bindings.at("dv")).shape, shape.keyValue());
  EXPECT_EQ(std::get<MemrefArg>(bindings.at("dout")).data, 6u);
  EXPECT_EQ(std::get<MemrefArg>(bindings.at("out")).data, 4u);
}

/// A sinks backward compiled with dsinks: the three entries of variant
/// "sinks" (dkdv and dq take the sinks), dq naming its dsinks kernel, and
/// that kernel as the contract has it (a rows config, grid over the heads).
std::vector<json> sinksBackwardEntries() {
  std::vector<json> entries = backwardEntries();
  for (json &entry : entries) {
    entry["variant"] = "sinks";
    if (entry["op"] != kAttentionDeltaOp)
      entry["params"].push_back(memref("sinks", "f32", 1));
  }
  entries[2]["dsinks_kernel"] = "bwd_dsinks";
  json dsinks = json::parse(R"({
    "name": "bwd_dsinks", "entry": "bwd_dsinks", "ptx": "bwd_dsinks.ptx",
    "op": "attention_bwd_dsinks", "dtype": "bf16",
    "config": {"rows": 1, "block_cols": 128, "num_warps": 4},
    "block": [128, 1, 1], "grid": ["heads", "one", "one"],
    "dynamic_shared_bytes": 0
  })");
  dsinks["params"] = {memref("lse", "f32", 3), memref("delta", "f32", 3),
                      memref("sinks", "f32", 1), memref("dsinks", "f32", 1)};
  entries.push_back(dsinks);
  return entries;
}

/// The error for the sinks entries after `edit(dq, dsinks)`.
template <typename Edit> std::string sinksEntriesError(Edit edit) {
  std::vector<json> entries = sinksBackwardEntries();
  edit(entries[2], entries[3]);
  return errorOf([&] { libraryOf(entries); });
}

TEST(AttentionDsinksManifestTest, ParsesTheDsinksCompanion) {
  KernelLibrary library = libraryOf(sinksBackwardEntries());
  const KernelSpec &dq =
      library.find({kAttentionBackwardOp, DType::BF16, 64, true, "sinks"});
  EXPECT_EQ(dq.dsinksKernel, "bwd_dsinks");
  const KernelSpec &dsinks = *library.named("bwd_dsinks");
  EXPECT_EQ(dsinks.op, kAttentionDsinksOp);
  // A row-wise kernel: none of the attention tile's fields.
  EXPECT_EQ(dsinks.headDim, 0);
  EXPECT_EQ(dsinks.blockM, 0);
  EXPECT_FALSE(dsinks.causal);
  EXPECT_EQ(dsinks.variant, "");
  EXPECT_EQ(dsinks.describe(), "attention_bwd_dsinks bf16");
  EXPECT_EQ(dsinks.grid[0].symbol, "heads");

  AttentionBackwardKernels kernels = attentionBackwardKernels(library, dq);
  EXPECT_EQ(kernels.dsinks, &dsinks);
  EXPECT_EQ(kernels.dkdv, library.named("bwd_dkdv"));
  // A backward without sinks has none.
  KernelLibrary plain = libraryOf(backwardEntries());
  EXPECT_EQ(attentionBackwardKernels(plain, *plain.named("bwd")).dsinks,
            nullptr);

  // One block per query head.
  AttentionShape shape{3, 8, 2, 129, 300, 64};
  Dim3 grid = attentionGrid(dsinks, shape);
  EXPECT_EQ(grid.x, 8u);
  EXPECT_EQ(grid.y, 1u);
  EXPECT_EQ(grid.z, 1u);
}

TEST(AttentionDsinksManifestTest, ErrorsNameTheKernelAndKey) {
  EXPECT_EQ(sinksEntriesError(
                [](json &dq, json &) { dq["dsinks_kernel"] = "missing"; }),
            kManifest + "kernel 'bwd': dsinks_kernel 'missing' is not in the "
                        "library");
  EXPECT_EQ(sinksEntriesError(
                [](json &dq, json &) { dq["dsinks_kernel"] = "bwd_dkdv"; }),
            kManifest + "kernel 'bwd': dsinks_kernel 'bwd_dkdv' computes "
                        "attention_bwd_dkdv, not attention_bwd_dsinks");
  EXPECT_EQ(sinksEntriesError(
                [](json &dq, json &) { dq["dsinks_kernel"] = json::array(); }),
            kManifest + "kernel 'bwd': key 'dsinks_kernel' must be a string, "
                        "got []");
  EXPECT_EQ(sinksEntriesError([](json &, json &dsinks) {
              dsinks["grid"][0] = "query_tiles";
            }),
            kManifest + "kernel 'bwd_dsinks': grid[0] is the symbol "
                        "'query_tiles', which a attention_bwd_dsinks kernel "
                        "cannot use; expected heads, one or a number");
  EXPECT_EQ(sinksEntriesError(
                [](json &, json &dsinks) { dsinks["params"].erase(1); }),
            kManifest + "kernel 'bwd_dsinks': an attention_bwd_dsinks kernel "
                        "takes 'delta', and this one has no such parameter");
  EXPECT_EQ(sinksEntriesError([](json &, json &dsinks) {
              dsinks["params"][3]["dtype"] = "bf16";
            }),
            kManifest + "kernel 'bwd_dsinks': parameter 'dsinks' must be an "
                        "f32 memref");
  // Only a sinks backward has a dsinks kernel.
  std::vector<json> entries = sinksBackwardEntries();
  for (json &entry : entries)
    entry.erase("variant");
  EXPECT_EQ(errorOf([&] { libraryOf(entries); }),
            kManifest + "kernel 'bwd' names a dsinks_kernel, but its variant "
                        "'' has no sinks");
  // The heads symbol is the dsinks kernel's alone.
  entries = sinksBackwardEntries();
  entries[1]["grid"][1] = "heads";
  EXPECT_EQ(errorOf([&] { libraryOf(entries); }),
            kManifest + "kernel 'bwd_dkdv': grid[1] is the symbol 'heads', "
                        "which a attention_bwd_dkdv kernel cannot use; "
                        "expected query_tiles, batch_heads, key_tiles, "
                        "batch_kv_heads, dkdv_parts, one or a number");
}

TEST(AttentionDsinksManifestTest, TheDsinksKernelGetsItsTensorsByName) {
  KernelLibrary library = libraryOf(sinksBackwardEntries());
  AttentionShape shape{2, 4, 2, 10, 20, 64};
  AttentionBackwardBuffers buffers{1, 2, 3, 4, 5, 6, 7, 8, 9, 11};
  ArgBindings variant = {{"sinks", MemrefArg{12, DType::F32, {4}}}};
  ArgBindings bindings =
      attentionBackwardBindings(DType::BF16, shape, buffers, 10, variant);
  const auto &dsinks = std::get<MemrefArg>(bindings.at("dsinks"));
  EXPECT_EQ(dsinks.data, 11u);
  EXPECT_EQ(dsinks.dtype, DType::F32);
  EXPECT_EQ(dsinks.shape, (Shape{4}));

  // lse and delta (9 slots each), sinks and dsinks (5 each), in that order.
  KernelArgs args(*library.named("bwd_dsinks"), bindings);
  EXPECT_EQ(args.count(), 2u * 9 + 2 * 5);
  EXPECT_EQ(args.slot(0), 5u);      // lse
  EXPECT_EQ(args.slot(9), 10u);     // delta
  EXPECT_EQ(args.slot(18), 12u);    // sinks
  EXPECT_EQ(args.slot(18 + 3), 4u); // its size: the heads
  EXPECT_EQ(args.slot(23), 11u);    // dsinks
  // Without a dsinks buffer nothing is bound to it.
  buffers.dsinks = 0;
  EXPECT_EQ(attentionBackwardBindings(DType::BF16, shape, buffers, 10, variant)
                .count("dsinks"),
            0u);
}

/// The entries of a backward that fuses dQ into dK/dV: dkdv takes dq_accum
/// and dq_semaphores after dv; the dq kernel only dq_accum and dq.
std::vector<json> fusedDqEntries() {
  std::vector<json> entries = backwardEntries();
  entries[1]["params"].push_back(memref("dq_accum", "f32", 4));
  entries[1]["params"].push_back(memref("dq_semaphores", "i32", 3));
  entries[2]["params"] = {memref("dq_accum", "f32", 4),
                          memref("dq", "bf16", 4)};
  return entries;
}

/// The error of fusesDqIntoDkDv for the fused entries after `edit(dkdv, dq)`.
template <typename Edit> std::string fusedDqError(Edit edit) {
  std::vector<json> entries = fusedDqEntries();
  edit(entries[1], entries[2]);
  KernelLibrary library = libraryOf(entries);
  return errorOf([&] {
    fusesDqIntoDkDv(*library.named("bwd_dkdv"), *library.named("bwd"));
  });
}

TEST(AttentionFusedDqTest, OnlyKernelsWithTheParametersFuseDq) {
  KernelLibrary plain = libraryOf(backwardEntries());
  const KernelSpec &plainDkdv = *plain.named("bwd_dkdv");
  EXPECT_FALSE(takesDqAccum(plainDkdv));
  EXPECT_FALSE(takesDqSemaphores(plainDkdv));
  EXPECT_FALSE(fusesDqIntoDkDv(plainDkdv, *plain.named("bwd")));

  KernelLibrary fused = libraryOf(fusedDqEntries());
  const KernelSpec &dkdv = *fused.named("bwd_dkdv");
  EXPECT_TRUE(takesDqAccum(dkdv));
  EXPECT_TRUE(takesDqSemaphores(dkdv));
  EXPECT_TRUE(takesDqAccum(*fused.named("bwd")));
  EXPECT_TRUE(fusesDqIntoDkDv(dkdv, *fused.named("bwd")));
}

TEST(AttentionFusedDqTest, SizesCountQueryTilesInTheDkDvBlockN) {
  KernelLibrary library = libraryOf(fusedDqEntries());
  const KernelSpec &dkdv = *library.named("bwd_dkdv");
  // seq_q 1000 in block_n 32 queries: 31 full tiles and one of 8.
  AttentionShape shape{2, 4, 2, 1000, 700, 64};
  EXPECT_EQ(dqSemaphoreTiles(dkdv, shape), 32);
  EXPECT_EQ(dqSemaphoreBytes(dkdv, shape), 2u * 4 * 32 * 4);
  EXPECT_EQ(dqAccumBytes(shape), 2u * 4 * 1000 * 64 * 4);
  EXPECT_EQ(dqSemaphoreTiles(dkdv, {1, 1, 1, 32, 32, 64}), 1);
  EXPECT_EQ(dqSemaphoreTiles(dkdv, {1, 1, 1, 33, 32, 64}), 2);

  KernelSpec noBlockN = dkdv;
  noBlockN.config.erase("block_n");
  EXPECT_EQ(errorOf([&] { dqSemaphoreTiles(noBlockN, shape); }),
            "kernel bwd_dkdv (attention_bwd_dkdv) has no block_n to count "
            "its dq_semaphores' query tiles in");
}

TEST(AttentionFusedDqTest, TheWorkspaceGrowsByTheAlignedScratch) {
  // delta: 3 * 1000 f32 = 12000 bytes, dq_accum 3 * 1000 * 64 f32 = 768000
  // (a multiple of 256), the semaphores 3 * 32 i32 = 384 bytes.
  AttentionShape shape{1, 3, 3, 1000, 1000, 64};
  KernelLibrary plain = libraryOf(backwardEntries());
  AttentionBackwardWorkspace unfused = attentionBackwardWorkspace(
      *plain.named("bwd_dkdv"), *plain.named("bwd"), shape);
  EXPECT_FALSE(unfused.fusedDq);
  EXPECT_EQ(unfused.deltaBytes, 12000u);
  EXPECT_EQ(unfused.bytes, 12000u); // As before fusion: delta alone.
  EXPECT_EQ(unfused.dqAccumBytes, 0u);
  EXPECT_EQ(unfused.dqSemaphoreBytes, 0u);

  KernelLibrary library = libraryOf(fusedDqEntries());
  AttentionBackwardWorkspace fused = attentionBackwardWorkspace(
      *library.named("bwd_dkdv"), *library.named("bwd"), shape);
  EXPECT_TRUE(fused.fusedDq);
  EXPECT_EQ(fused.deltaBytes, 12000u);
  EXPECT_EQ(fused.dqAccumOffset, 12032u); // 47 * 256
  EXPECT_EQ(fused.dqAccumBytes, 768000u);
  EXPECT_EQ(fused.dqSemaphoresOffset, 12032u + 768000u);
  EXPECT_EQ(fused.dqSemaphoreBytes, 384u);
  EXPECT_EQ(fused.bytes, 12032u + 768000u + 512u);
  EXPECT_EQ(fused.bytes - unfused.bytes, 32u + 768000u + 512u);
  for (std::size_t offset :
       {fused.dqAccumOffset, fused.dqSemaphoresOffset, fused.bytes})
    EXPECT_EQ(offset % kBackwardWorkspaceAlignment, 0u) << offset;
}

TEST(AttentionFusedDqTest, ScratchOfAnotherKindOrRankIsRefused) {
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) {
              dkdv["params"][8] = memref("dq_accum", "bf16", 4);
            }),
            "kernel bwd_dkdv: parameter 'dq_accum' is memref<bf16> of rank "
            "4; dq_accum is memref<f32> of rank 4 ([batch, heads, seq_q, "
            "head_dim])");
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) {
              dkdv["params"][8] = memref("dq_accum", "f32", 3);
            }),
            "kernel bwd_dkdv: parameter 'dq_accum' is memref<f32> of rank "
            "3; dq_accum is memref<f32> of rank 4 ([batch, heads, seq_q, "
            "head_dim])");
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) {
              dkdv["params"][9] = memref("dq_semaphores", "i32", 2);
            }),
            "kernel bwd_dkdv: parameter 'dq_semaphores' is memref<i32> of "
            "rank 2; dq_semaphores is memref<i32> of rank 3 ([batch, heads, "
            "dq_tiles])");
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) {
              dkdv["params"][9] = memref("dq_semaphores", "f32", 3);
            }),
            "kernel bwd_dkdv: parameter 'dq_semaphores' is memref<f32> of "
            "rank 3; dq_semaphores is memref<i32> of rank 3 ([batch, heads, "
            "dq_tiles])");
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) {
              dkdv["params"][9] = {{"name", "dq_semaphores"}, {"kind", "i32"}};
            }),
            "kernel bwd_dkdv: parameter 'dq_semaphores' is i32; "
            "dq_semaphores is memref<i32> of rank 3 ([batch, heads, "
            "dq_tiles])");
}

TEST(AttentionFusedDqTest, HalfAFusionIsRefusedNamingTheKernel) {
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) { dkdv["params"].erase(9); }),
            "kernel bwd_dkdv takes dq_accum but not dq_semaphores: a dkdv "
            "kernel that sums dQ takes both");
  EXPECT_EQ(fusedDqError([](json &dkdv, json &) { dkdv["params"].erase(8); }),
            "kernel bwd_dkdv takes dq_semaphores but not dq_accum: a dkdv "
            "kernel that sums dQ takes both");
  EXPECT_EQ(fusedDqError([](json &, json &dq) { dq["params"].erase(0); }),
            "kernel bwd takes no dq_accum, but its dkdv kernel bwd_dkdv sums "
            "dQ into one");
  EXPECT_EQ(fusedDqError([](json &, json &dq) {
              dq["params"].push_back(memref("dq_semaphores", "i32", 3));
            }),
            "kernel bwd takes dq_semaphores, which only its dkdv kernel uses");
  // A dq kernel reading a dq_accum that a plain dkdv never writes.
  std::vector<json> entries = backwardEntries();
  entries[2]["params"].push_back(memref("dq_accum", "f32", 4));
  KernelLibrary library = libraryOf(entries);
  EXPECT_EQ(errorOf([&] {
              attentionBackwardWorkspace(*library.named("bwd_dkdv"),
                                         *library.named("bwd"),
                                         {1, 1, 1, 64, 64, 64});
            }),
            "kernel bwd takes dq_accum, but its dkdv kernel bwd_dkdv writes "
            "none");
}

TEST(AttentionFusedDqTest, TheScratchIsBoundByName) {
  KernelLibrary library = libraryOf(fusedDqEntries());
  const KernelSpec &dkdvSpec = *library.named("bwd_dkdv");
  AttentionShape shape{2, 4, 2, 1000, 700, 64};
  ArgBindings bindings = attentionBackwardBindings(
      DType::BF16, shape, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 10);
  bindings["dq_accum"] = dqAccumArg(0x1000, shape);
  bindings["dq_semaphores"] = dqSemaphoresArg(0x2000, dkdvSpec, shape);

  // After q, k, v, dout, lse, delta, dk and dv: dq_accum (11 slots), then
  // the rank-3 i32 dq_semaphores (9 slots) with its tiles.
  KernelArgs dkdv(dkdvSpec, bindings);
  const std::size_t accum = 6 * 11 + 2 * 9;
  ASSERT_EQ(dkdv.count(), accum + 11 + 9);
  EXPECT_EQ(dkdv.slotOf("dq_accum"), accum);
  EXPECT_EQ(dkdv.slot(accum + 1), 0x1000u);
  EXPECT_EQ(dkdv.slot(accum + 3 + 2), 1000u); // seq_q
  EXPECT_EQ(dkdv.slot(accum + 3 + 3), 64u);   // head_dim
  const std::size_t semaphores = accum + 11;
  EXPECT_EQ(dkdv.slotOf("dq_semaphores"), semaphores);
  EXPECT_EQ(dkdv.slot(semaphores + 1), 0x2000u);
  EXPECT_EQ(dkdv.slot(semaphores + 3 + 0), 2u);          // batch
  EXPECT_EQ(dkdv.slot(semaphores + 3 + 1), 4u);          // heads
  EXPECT_EQ(dkdv.slot(semaphores + 3 + 2), 32u);         // dq_tiles
  EXPECT_EQ(dkdv.slot(semaphores + 3 + 3 + 0), 4u * 32); // row-major
  EXPECT_EQ(dkdv.slot(semaphores + 3 + 3 + 2), 1u);

  // The dq kernel reads dq_accum and writes dq, nothing else.
  KernelArgs dq(*library.named("bwd"), bindings);
  ASSERT_EQ(dq.count(), 2u * 11);
  EXPECT_EQ(dq.slot(1), 0x1000u);
  EXPECT_EQ(dq.slot(11 + 1), 7u);
}

TEST(AttentionBackwardShapeTest, FlopsAreTwoAndAHalfTimesTheForwards) {
  AttentionShape shape{2, 16, 8, 4096, 4096, 128};
  double forward = 4.0 * 2 * 16 * 4096.0 * 4096.0 * 128;
  EXPECT_DOUBLE_EQ(shape.backwardFlops(false), 2.5 * forward);
  EXPECT_DOUBLE_EQ(shape.backwardFlops(true), 2.5 * forward / 2);
}

} // namespace
