//===- CApiLayerNorm.cpp - fa.h's LayerNorm plans and launches ------------===//
//
// A plan holds the forward kernel and, when the library has one for the
// rows, the backward kernel and its params kernel, loaded, with their grids:
// a persistent kernel's block count depends on its occupancy, which needs
// the loaded kernel. The backward's partial sums live in the caller's
// workspace (LayerNorm.h: two f32 [G * rows per tile, cols] arrays). The
// kernels' arguments are packed at plan creation (PreparedLaunches): a
// launch checks the caller's pointers, writes them and eps into the packed
// arguments, and launches.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/LayerNorm.h"

using namespace fa;
using namespace fa::capi;

namespace {

/// The backward's kernels, loaded, their grids and partial-sum sizes.
struct LayerNormBackwardPlan {
  const Kernel *backward = nullptr;
  const Kernel *params = nullptr;
  std::int64_t blocks = 0; // G.
  Dim3 backwardGrid, paramsGrid;
  /// Bytes of one partial array, rounded up to 256 so that the second one
  /// starts aligned.
  std::size_t partialBytes = 0;
};

/// What a launch writes into the packed arguments, by parameter name
/// (kLayerNormValues' order).
enum LayerNormValue : std::size_t {
  kX,
  kWeight,
  kBias,
  kY,
  kMean,
  kRstd,
  kEps,
  kDy,
  kDx,
  kDweight,
  kDbias,
  kPartialDweight, // The workspace's first half.
  kPartialDbias,   // Its second half.
  kLayerNormValueCount
};

constexpr PerCallValue kLayerNormValues[kLayerNormValueCount] = {
    {"x", true},
    {"weight", true},
    {"bias", true},
    {"y", true},
    {"mean", true},
    {"rstd", true},
    {"eps", false},
    {"dy", true},
    {"dx", true},
    {"dweight", true},
    {"dbias", true},
    {"partial_dweight", true},
    {"partial_dbias", true}};

} // namespace

struct fa_layer_norm_plan_t {
  fa_library_t *library = nullptr;
  DType dtype = DType::BF16;
  LayerNormShape shape;
  std::string description;
  const Kernel *forward = nullptr;
  Dim3 forwardGrid;
  std::optional<LayerNormBackwardPlan> backward;
  std::string noBackward; // Why there is no backward.
  /// The forward kernel, and the backward and params kernels, with their
  /// arguments packed.
  PreparedLaunches forwardLaunch{kLayerNormValues, kLayerNormValueCount};
  PreparedLaunches backwardLaunch{kLayerNormValues, kLayerNormValueCount};
};

namespace {

/// chooseLayerNormKernel's kernel of `op` and `dtype` for rows of `cols`,
/// or null with its error (what the library has) in `reason`.
const KernelSpec *chooseOrExplain(const KernelLibrary &library, const char *op,
                                  DType dtype, std::int64_t cols,
                                  std::string &reason) {
  try {
    return &chooseLayerNormKernel(library, op, dtype, cols);
  } catch (const Error &error) {
    reason = error.what();
    return nullptr;
  }
}

LayerNormBackwardPlan loadBackward(fa_library_t &library,
                                   const KernelSpec &backwardSpec,
                                   const LayerNormShape &shape) {
  const KernelSpec &paramsSpec = withStatus(FA_ERROR_LIBRARY, [&]() -> auto & {
    return layerNormParamsKernel(library.library, backwardSpec);
  });
  LayerNormBackwardPlan plan;
  plan.backward = &library.kernel(backwardSpec);
  plan.params = &library.kernel(paramsSpec);
  plan.blocks = layerNormBackwardBlocks(*plan.backward, shape);
  plan.backwardGrid =
      resolveGrid(backwardSpec, {{"persistent_row_tiles", plan.blocks}});
  plan.paramsGrid = layerNormParamsGrid(*plan.params, backwardSpec, shape);
  plan.partialBytes =
      roundUp(layerNormPartialBytes(backwardSpec, plan.blocks, shape),
              kWorkspaceAlignment);
  return plan;
}

/// Packs the kernels' arguments as a launch binds them, from placeholder
/// pointers and eps (kLayerNormValues) that each launch overwrites.
void prepareLaunches(fa_layer_norm_plan_t &plan) {
  // Any valid eps: every launch writes its own.
  plan.forwardLaunch.add(*plan.forward, plan.forwardGrid,
                         layerNormForwardBindings(plan.dtype, plan.shape,
                                                  LayerNormForwardBuffers{},
                                                  1e-5f));
  if (!plan.backward)
    return;
  const LayerNormBackwardPlan &backward = *plan.backward;
  LayerNormPartials partials{
      0, 0, backward.blocks * backward.backward->spec().rowsPerTile};
  // The params kernel sums the partials the backward kernel writes.
  plan.backwardLaunch.add(*backward.backward, backward.backwardGrid,
                          layerNormBackwardBindings(plan.dtype, plan.shape,
                                                    LayerNormBackwardBuffers{},
                                                    partials));
  plan.backwardLaunch.add(*backward.params, backward.paramsGrid,
                          layerNormParamsBindings(plan.shape,
                                                  LayerNormBackwardBuffers{},
                                                  partials));
}

std::unique_ptr<fa_layer_norm_plan_t> createPlan(fa_library_t &library,
                                                 fa_dtype dtype,
                                                 std::int64_t rows,
                                                 std::int64_t cols) {
  auto plan = std::make_unique<fa_layer_norm_plan_t>();
  plan->library = &library;
  plan->dtype = dtypeOf(dtype);
  plan->shape = {rows, cols};
  withStatus(FA_ERROR_INVALID_ARGUMENT, [&] { plan->shape.validate(); });
  std::string noForward;
  const KernelSpec *forward = chooseOrExplain(
      library.library, kLayerNormForwardOp, plan->dtype, cols, noForward);
  if (!forward)
    throw StatusError(FA_ERROR_UNSUPPORTED, noForward);
  const KernelSpec *backward =
      chooseOrExplain(library.library, kLayerNormBackwardOp, plan->dtype, cols,
                      plan->noBackward);
  ContextScope scope(library.context);
  plan->forward = &library.kernel(*forward);
  plan->forwardGrid = layerNormForwardGrid(*plan->forward, plan->shape);
  if (backward)
    plan->backward = loadBackward(library, *backward, plan->shape);
  prepareLaunches(*plan);
  return plan;
}

std::string describe(fa_dtype dtype, std::int64_t rows, std::int64_t cols) {
  return dtypeLabel(dtype) + " rows=" + std::to_string(rows) +
         " cols=" + std::to_string(cols);
}

std::string describePlan(const fa_layer_norm_plan_t *plan) {
  return plan ? plan->description : std::string("(null plan)");
}

const LayerNormBackwardPlan &backwardOf(const fa_layer_norm_plan_t &plan) {
  if (!plan.backward)
    throw StatusError(FA_ERROR_UNSUPPORTED, plan.noBackward);
  return *plan.backward;
}

} // namespace

extern "C" {

fa_status fa_layer_norm_plan_create(fa_library library, fa_dtype dtype,
                                    int64_t rows, int64_t cols,
                                    fa_layer_norm_plan *plan) {
  auto doing = [&] {
    return "creating a LayerNorm plan for " + describe(dtype, rows, cols);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan (where the handle goes)");
    *plan = nullptr;
    requireNonNull(library, "library");
    auto created = createPlan(*library, dtype, rows, cols);
    created->description = describe(dtype, rows, cols);
    *plan = created.release();
  });
}

void fa_layer_norm_plan_destroy(fa_layer_norm_plan plan) { delete plan; }

fa_status fa_layer_norm_forward(fa_layer_norm_plan plan, CUdeviceptr x,
                                CUdeviceptr weight, CUdeviceptr bias,
                                CUdeviceptr y, CUdeviceptr mean,
                                CUdeviceptr rstd, double eps, CUstream stream) {
  auto doing = [&] {
    return "launching the LayerNorm forward for " + describePlan(plan);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan");
    requirePointers("", {{"x", x},
                         {"weight", weight},
                         {"bias", bias},
                         {"y", y},
                         {"mean", mean},
                         {"rstd", rstd}});
    float epsF32 = withStatus(FA_ERROR_INVALID_ARGUMENT,
                              [&] { return layerNormEps(eps); });
    std::uint64_t values[kLayerNormValueCount] = {};
    values[kX] = x;
    values[kWeight] = weight;
    values[kBias] = bias;
    values[kY] = y;
    values[kMean] = mean;
    values[kRstd] = rstd;
    values[kEps] = KernelArgs::slotValue(epsF32);
    plan->forwardLaunch.launch(plan->library->context, values, stream);
  });
}

fa_status fa_layer_norm_backward_workspace_size(fa_layer_norm_plan plan,
                                                size_t *bytes) {
  auto doing = [&] {
    return "sizing the LayerNorm backward's workspace for " +
           describePlan(plan);
  };
  return guard(doing, FA_ERROR_INTERNAL, [&] {
    requireNonNull(plan, "plan");
    requireNonNull(bytes, "bytes");
    *bytes = 2 * backwardOf(*plan).partialBytes;
  });
}

fa_status fa_layer_norm_backward(fa_layer_norm_plan plan, CUdeviceptr x,
                                 CUdeviceptr weight, CUdeviceptr mean,
                                 CUdeviceptr rstd, CUdeviceptr dy,
                                 CUdeviceptr dx, CUdeviceptr dweight,
                                 CUdeviceptr dbias, CUdeviceptr workspace,
                                 size_t workspace_bytes, CUstream stream) {
  auto doing = [&] {
    return "launching the LayerNorm backward for " + describePlan(plan);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan");
    const LayerNormBackwardPlan &backward = backwardOf(*plan);
    requirePointers("", {{"x", x},
                         {"weight", weight},
                         {"mean", mean},
                         {"rstd", rstd},
                         {"dy", dy},
                         {"dx", dx},
                         {"dweight", dweight},
                         {"dbias", dbias}});
    requireWorkspace(workspace, workspace_bytes, 2 * backward.partialBytes,
                     "the backward", "fa_layer_norm_backward_workspace_size");
    std::uint64_t values[kLayerNormValueCount] = {};
    values[kX] = x;
    values[kWeight] = weight;
    values[kMean] = mean;
    values[kRstd] = rstd;
    values[kDy] = dy;
    values[kDx] = dx;
    values[kDweight] = dweight;
    values[kDbias] = dbias;
    values[kPartialDweight] = workspace;
    values[kPartialDbias] = workspace + backward.partialBytes;
    plan->backwardLaunch.launch(plan->library->context, values, stream);
  });
}

} // extern "C"
