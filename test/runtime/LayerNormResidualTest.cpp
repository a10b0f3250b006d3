//===- LayerNormResidualTest.cpp - Residual LayerNorm kernels, runtime ----===//
//
// The runtime's side of the residual LayerNorm kernels (issue 23): telling
// them from plain ones by their parameters, choosing among the kind asked
// for, the buffers each kind needs, and the arguments they are given.
//
//===----------------------------------------------------------------------===//

#include "fa/runtime/Error.h"
#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/LayerNorm.h"

#include <nlohmann/json.hpp>

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

using namespace fa;
using fa::errortest::errorOf;
using nlohmann::json;

namespace {

json memrefParam(const std::string &name, const std::string &dtype, int rank) {
  return {{"name", name}, {"kind", "memref"}, {"dtype", dtype}, {"rank", rank}};
}

/// A layernorm_fwd entry as the compiler writes it; with `residual`, the
/// residual and sum parameters come after rstd (eps stays last).
json forwardKernel(const std::string &name, std::int64_t blockCols,
                   bool resident, bool residual) {
  json params = {
      memrefParam("x", "bf16", 2),    memrefParam("weight", "bf16", 1),
      memrefParam("bias", "bf16", 1), memrefParam("y", "bf16", 2),
      memrefParam("mean", "f32", 1),  memrefParam("rstd", "f32", 1)};
  if (residual) {
    params.push_back(memrefParam("residual", "bf16", 2));
    params.push_back(memrefParam("sum", "bf16", 2));
  }
  params.push_back({{"name", "eps"}, {"kind", "f32"}});
  return {{"name", name},
          {"entry", name},
          {"ptx", name + ".ptx"},
          {"op", "layernorm_fwd"},
          {"dtype", "bf16"},
          {"config",
           {{"rows", 4},
            {"num_warps", 4},
            {"block_cols", blockCols},
            {"resident", resident ? 1 : 0}}},
          {"block", {128, 1, 1}},
          {"grid", {"row_tiles", "one", "one"}},
          {"dynamic_shared_bytes", 0},
          {"params", params}};
}

/// A layernorm_bwd entry; with `residual`, dresidual after the partials.
json backwardKernel(const std::string &name, std::int64_t blockCols,
                    bool resident, bool residual) {
  json params = {memrefParam("x", "bf16", 2),
                 memrefParam("weight", "bf16", 1),
                 memrefParam("mean", "f32", 1),
                 memrefParam("rstd", "f32", 1),
                 memrefParam("dy", "bf16", 2),
                 memrefParam("dx", "bf16", 2),
                 memrefParam("partial_dweight", "f32", 2),
                 memrefParam("partial_dbias", "f32", 2)};
  if (residual)
    params.push_back(memrefParam("dresidual", "bf16", 2));
  return {{"name", name},
          {"entry", name},
          {"ptx", name + ".ptx"},
          {"op", "layernorm_bwd"},
          {"dtype", "bf16"},
          {"config",
           {{"rows", 1},
            {"num_warps", 4},
            {"block_cols", blockCols},
            {"resident", resident ? 1 : 0}}},
          {"block", {128, 1, 1}},
          {"grid", {"persistent_row_tiles", "one", "one"}},
          {"dynamic_shared_bytes", 0},
          {"params_kernel", "params"},
          {"params", params}};
}

json paramsKernel() {
  return {{"name", "params"},
          {"entry", "params"},
          {"ptx", "params.ptx"},
          {"op", "layernorm_bwd_params"},
          {"dtype", "bf16"},
          {"config", {{"rows", 32}, {"block_cols", 64}, {"num_warps", 4}}},
          {"block", {128, 1, 1}},
          {"grid", {"column_tiles", "one", "one"}},
          {"dynamic_shared_bytes", 0},
          {"params",
           {memrefParam("partial_dweight", "f32", 2),
            memrefParam("partial_dbias", "f32", 2),
            memrefParam("dweight", "f32", 1), memrefParam("dbias", "f32", 1)}}};
}

KernelLibrary libraryOf(std::vector<json> kernels) {
  json manifest = {{"format", "fa-kernel-library"},
                   {"version", 1},
                   {"target", "sm_90a"},
                   {"kernels", kernels}};
  return KernelLibrary::parse(manifest.dump(), "/lib/manifest.json");
}

/// Plain and residual kernels interleaved, so that neither kind is chosen
/// for coming first.
KernelLibrary mixedLibrary() {
  return libraryOf({forwardKernel("res_c256", 256, true, true),
                    forwardKernel("c256", 256, true, false),
                    forwardKernel("c1024", 1024, true, false),
                    forwardKernel("res_any", 4096, false, true),
                    forwardKernel("res_c1024", 1024, true, true),
                    forwardKernel("any", 4096, false, false),
                    backwardKernel("res_bwd", 1024, true, true),
                    backwardKernel("bwd", 1024, true, false),
                    backwardKernel("bwd_any", 4096, false, false),
                    backwardKernel("res_bwd_any", 4096, false, true),
                    paramsKernel()});
}

TEST(LayerNormResidualTest, KernelsAreResidualByTheirParameters) {
  KernelLibrary library = mixedLibrary();
  for (const char *name : {"res_c256", "res_any", "res_bwd", "res_bwd_any"})
    EXPECT_TRUE(isResidualLayerNormKernel(*library.named(name))) << name;
  for (const char *name : {"c256", "any", "bwd", "bwd_any", "params"})
    EXPECT_FALSE(isResidualLayerNormKernel(*library.named(name))) << name;

  json halfResidual = forwardKernel("half", 256, true, false);
  halfResidual["params"].insert(halfResidual["params"].end() - 1,
                                memrefParam("residual", "bf16", 2));
  KernelLibrary broken = libraryOf({halfResidual});
  EXPECT_EQ(errorOf([&] { isResidualLayerNormKernel(*broken.named("half")); }),
            "kernel half takes 'residual' but not 'sum': a residual "
            "layernorm_fwd kernel takes both");
}

TEST(LayerNormResidualTest, ChoiceStaysWithinTheKindAskedFor) {
  KernelLibrary library = mixedLibrary();
  auto chosen = [&](const char *op, std::int64_t cols, bool residual) {
    return chooseLayerNormKernel(library, op, DType::BF16, cols, residual).name;
  };
  // Plain callers (the default) never get a residual kernel.
  EXPECT_EQ(
      chooseLayerNormKernel(library, kLayerNormForwardOp, DType::BF16, 100)
          .name,
      "c256");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 300, false), "c1024");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 2000, false), "any");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 100, true), "res_c256");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 300, true), "res_c1024");
  EXPECT_EQ(chosen(kLayerNormForwardOp, 2000, true), "res_any");
  EXPECT_EQ(chosen(kLayerNormBackwardOp, 768, false), "bwd");
  EXPECT_EQ(chosen(kLayerNormBackwardOp, 768, true), "res_bwd");
  EXPECT_EQ(chosen(kLayerNormBackwardOp, 1025, false), "bwd_any");
  EXPECT_EQ(chosen(kLayerNormBackwardOp, 1025, true), "res_bwd_any");
}

TEST(LayerNormResidualTest, ALibraryWithoutResidualKernelsSaysSo) {
  KernelLibrary plain =
      libraryOf({forwardKernel("c256", 256, true, false),
                 backwardKernel("bwd", 1024, true, false), paramsKernel()});
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(plain, kLayerNormForwardOp, DType::BF16,
                                    100, true);
            }),
            "no layernorm_fwd bf16 residual kernel in /lib/manifest.json (one "
            "taking 'residual' and 'sum'; a library built before residual "
            "kernels existed has none: rebuild it); it has:\n"
            "  c256 (layernorm_fwd bf16 cols<=256)\n"
            "  bwd (layernorm_bwd bf16 cols<=1024)\n"
            "  params (layernorm_bwd_params bf16)");
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(plain, kLayerNormBackwardOp, DType::BF16,
                                    100, true);
            }).substr(0, 98),
            "no layernorm_bwd bf16 residual kernel in /lib/manifest.json (one "
            "taking 'dresidual'; a library bui");
  // Residual kernels that do not hold the row and no looped one.
  KernelLibrary residentOnly =
      libraryOf({forwardKernel("res_c256", 256, true, true)});
  EXPECT_EQ(errorOf([&] {
              chooseLayerNormKernel(residentOnly, kLayerNormForwardOp,
                                    DType::BF16, 300, true);
            }),
            "no layernorm_fwd bf16 residual kernel for cols=300 in "
            "/lib/manifest.json: its resident kernels hold rows of at most "
            "256 elements and it has no non-resident one; it has:\n"
            "  res_c256 (layernorm_fwd bf16 cols<=256)");
}

TEST(LayerNormResidualTest, BuffersMustSuitTheKernel) {
  KernelLibrary library = mixedLibrary();
  const KernelSpec &plain = *library.named("c256");
  const KernelSpec &residual = *library.named("res_c256");
  LayerNormForwardBuffers none{1, 2, 3, 4, 5, 6};
  LayerNormForwardBuffers both = none;
  both.residual = 7;
  both.sum = 8;
  EXPECT_NO_THROW(checkLayerNormBuffers(plain, none));
  EXPECT_NO_THROW(checkLayerNormBuffers(residual, both));
  // sum may be x: the residual stream updated in place.
  LayerNormForwardBuffers inPlace = both;
  inPlace.sum = inPlace.x;
  EXPECT_NO_THROW(checkLayerNormBuffers(residual, inPlace));
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(residual, none); }),
            "kernel res_c256 is a residual kernel (sum = x + residual): give "
            "it the residual and sum buffers, or choose a plain kernel");
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(plain, both); }),
            "kernel c256 has no residual add, but residual and sum buffers "
            "are given: choose a residual kernel (chooseLayerNormKernel with "
            "residual = true)");
  LayerNormForwardBuffers noSum = both;
  noSum.sum = 0;
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(residual, noSum); }),
            "layernorm forward: residual and sum are given together (sum "
            "receives x + residual), got residual without sum");
  LayerNormForwardBuffers noResidual = both;
  noResidual.residual = 0;
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(plain, noResidual); }),
            "layernorm forward: residual and sum are given together (sum "
            "receives x + residual), got sum without residual");

  const KernelSpec &plainBackward = *library.named("bwd");
  const KernelSpec &residualBackward = *library.named("res_bwd");
  LayerNormBackwardBuffers backward{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_NO_THROW(checkLayerNormBuffers(plainBackward, backward));
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(residualBackward, backward); }),
            "kernel res_bwd is a residual kernel (dx += dresidual): give it "
            "the dresidual buffer (it may be dx), or choose a plain kernel");
  backward.dresidual = backward.dx; // In place.
  EXPECT_NO_THROW(checkLayerNormBuffers(residualBackward, backward));
  EXPECT_EQ(errorOf([&] { checkLayerNormBuffers(plainBackward, backward); }),
            "kernel bwd adds no dresidual to dx, but a dresidual buffer is "
            "given: choose a residual kernel (chooseLayerNormKernel with "
            "residual = true)");
}

TEST(LayerNormResidualTest, ResidualParametersGetTheirTensors) {
  KernelLibrary library = mixedLibrary();
  LayerNormShape shape{37, 100};
  LayerNormForwardBuffers forwardBuffers{1, 2, 3, 4, 5, 6, 7, 8};
  ArgBindings forwardArgs =
      layerNormForwardBindings(DType::BF16, shape, forwardBuffers, 1e-5f);
  for (auto [name, data] : {std::pair{"residual", 7u}, std::pair{"sum", 8u}}) {
    const auto &arg = std::get<MemrefArg>(forwardArgs.at(name));
    EXPECT_EQ(arg.data, data) << name;
    EXPECT_EQ(arg.dtype, DType::BF16) << name;
    EXPECT_EQ(arg.shape, (Shape{37, 100})) << name;
  }
  // x, y, residual, sum: 4 rank-2 memrefs of 7 slots (allocated, aligned
  // pointer, offset, sizes, strides); weight, bias, mean, rstd: 4 rank-1 of
  // 5; then eps. residual and sum follow rstd (x 0-6, weight 7-11, bias
  // 12-16, y 17-23, mean 24-28, rstd 29-33): residual 34-40, sum 41-47.
  KernelArgs forwardPacked(*library.named("res_c256"), forwardArgs);
  EXPECT_EQ(forwardPacked.count(), 4u * 7 + 4 * 5 + 1);
  EXPECT_EQ(forwardPacked.slot(35), 7u);
  EXPECT_EQ(forwardPacked.slot(42), 8u);
  EXPECT_EQ(forwardPacked.slot(44), 37u); // sum's sizes[0]
  // A plain kernel takes the same bindings and ignores the residual ones.
  LayerNormForwardBuffers plainBuffers{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(KernelArgs(*library.named("c256"),
                       layerNormForwardBindings(DType::BF16, shape,
                                                plainBuffers, 1e-5f))
                .count(),
            2u * 7 + 4 * 5 + 1);

  LayerNormBackwardBuffers backwardBuffers{1, 2, 3, 4, 5, 6, 7, 8, 9};
  LayerNormPartials partials{10, 11, 4};
  ArgBindings backwardArgs =
      layerNormBackwardBindings(DType::BF16, shape, backwardBuffers, partials);
  const auto &dresidual = std::get<MemrefArg>(backwardArgs.at("dresidual"));
  EXPECT_EQ(dresidual.data, 9u);
  EXPECT_EQ(dresidual.shape, (Shape{37, 100}));
  // The last parameter: after x, weight, mean, rstd, dy, dx and the partials
  // (5 of 7 slots, 3 of 5), its aligned pointer is slot 51.
  KernelArgs backwardPacked(*library.named("res_bwd"), backwardArgs);
  EXPECT_EQ(backwardPacked.count(), 6u * 7 + 3 * 5);
  EXPECT_EQ(backwardPacked.slot(51), 9u);
}

} // namespace
