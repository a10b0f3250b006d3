//===- CApiAttention.cpp - fa.h's attention plans and launches ------------===//
//
// A plan is a problem checked once (sizes, variant values, kernels found,
// grids within CUDA's limits, every kernel parameter bound) with its
// kernels loaded and their arguments packed (PreparedLaunches); a launch
// then only checks the caller's pointers, writes them and the per-call
// scalars into the packed arguments, and launches. Nothing here allocates
// device memory: the backward's delta (and, for a dK/dV kernel that sums
// dQ, its dq_accum and dq_semaphores: attentionBackwardWorkspace), and the
// tile counter of a forward that schedules its tiles dynamically, live in
// the caller's workspace.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/KernelChoice.h"

#include <cmath>
#include <set>
#include <utility>
#include <vector>

using namespace fa;
using namespace fa::capi;

namespace {

/// The backward's kernels, loaded, and their grids.
struct BackwardPlan {
  const Kernel *delta = nullptr;
  const Kernel *dkdv = nullptr;
  const Kernel *dq = nullptr;
  const Kernel *dsinks = nullptr; // Only for a problem with sinks.
  Dim3 deltaGrid, dkdvGrid, dqGrid, dsinksGrid;
};

/// What a launch writes into the packed arguments, by parameter name
/// (kAttentionValues' order).
enum AttentionValue : std::size_t {
  kQ,
  kK,
  kV,
  kOut,
  kLse,
  kDout,
  kDq,
  kDk,
  kDv,
  kDsinks,
  kDelta,        // The backward's workspace...
  kDqAccum,      // ... with, for a dkdv kernel that sums dQ, these two.
  kDqSemaphores, //
  kTileCounter,  // The forward's workspace.
  kAlibiSlopes,
  kDocIds,
  kSinks,
  kDropoutSeed,
  kDropoutOffset,
  kAttentionValueCount
};

constexpr PerCallValue kAttentionValues[kAttentionValueCount] = {
    {"q", true},
    {"k", true},
    {"v", true},
    {"out", true},
    {"lse", true},
    {"dout", true},
    {"dq", true},
    {"dk", true},
    {"dv", true},
    {"dsinks", true},
    {"delta", true},
    {"dq_accum", true},
    {"dq_semaphores", true},
    {"tile_counter", true},
    {"alibi_slopes", true},
    {"doc_ids", true},
    {"sinks", true},
    {"dropout_seed", false},
    {"dropout_offset", false}};

} // namespace

struct fa_attention_plan_t {
  fa_library_t *library = nullptr;
  fa_attention_problem problem{};
  DType dtype = DType::BF16;
  AttentionShape shape;
  /// The forward's workspace (its tile counter, or none) size and the
  /// backward's layout (delta, and a fused dQ's scratch).
  std::size_t forwardWorkspaceBytes = 0;
  AttentionBackwardWorkspace backwardWorkspace;
  /// The problem as messages name it.
  std::string description;
  const Kernel *forward = nullptr;
  Dim3 forwardGrid;
  std::optional<BackwardPlan> backward;
  /// Why there is no backward (FA_ERROR_UNSUPPORTED's message).
  std::string noBackward;
  /// The forward kernel, and the backward's delta, dkdv, dq (and dsinks)
  /// kernels, with their arguments packed.
  PreparedLaunches forwardLaunch{kAttentionValues, kAttentionValueCount};
  PreparedLaunches backwardLaunch{kAttentionValues, kAttentionValueCount};
};

namespace {

const char *causalName(fa_causal causal) {
  switch (causal) {
  case FA_CAUSAL_NONE:
    return "none";
  case FA_CAUSAL_TOP_LEFT:
    return "top-left";
  case FA_CAUSAL_BOTTOM_RIGHT:
    return "bottom-right";
  }
  return "invalid";
}

AttentionShape shapeOf(const fa_attention_problem &problem) {
  return {problem.batch, problem.heads,  problem.kv_heads,
          problem.seq_q, problem.seq_kv, problem.head_dim};
}

/// The kernels' variant name (namedVariantName); top-left causal is the
/// kernels' `causal` flag instead.
std::string variantName(const fa_attention_problem &problem) {
  return namedVariantName({problem.causal == FA_CAUSAL_BOTTOM_RIGHT,
                           problem.window != 0, problem.documents != 0,
                           problem.softcap != 0, problem.alibi != 0,
                           problem.sinks != 0, problem.dropout_p != 0});
}

/// "bf16 batch=2 heads=8 ... head_dim=64 causal=top-left variant=window".
std::string describeProblem(const fa_attention_problem &problem) {
  std::string dtype = dtypeLabel(problem.dtype);
  std::string variant = variantName(problem);
  return dtype + " " + shapeOf(problem).describe() +
         " causal=" + causalName(problem.causal) +
         (variant.empty() ? "" : " variant=" + variant);
}

void invalid(const std::string &message) {
  throw StatusError(FA_ERROR_INVALID_ARGUMENT, message);
}

/// The problem's fields, checked before any kernel is looked at: the sizes
/// (AttentionShape::validate) and the variant's rules (AttentionVariant.h).
void validateProblem(const fa_attention_problem &problem) {
  dtypeOf(problem.dtype);
  withStatus(FA_ERROR_INVALID_ARGUMENT, [&] { shapeOf(problem).validate(); });
  if (problem.causal != FA_CAUSAL_NONE &&
      problem.causal != FA_CAUSAL_TOP_LEFT &&
      problem.causal != FA_CAUSAL_BOTTOM_RIGHT)
    invalid("causal " + std::to_string(problem.causal) +
            " is not an fa_causal (0 none, 1 top-left, 2 bottom-right)");
  if (problem.window && (problem.window_left < 0 || problem.window_right < 0))
    invalid("window bounds must be non-negative, got (" +
            std::to_string(problem.window_left) + ", " +
            std::to_string(problem.window_right) + ")");
  if (problem.softcap != 0 &&
      !(problem.softcap > 0 && std::isfinite(problem.softcap)))
    invalid("softcap must be positive and finite (or 0 for none), got " +
            std::to_string(problem.softcap));
  if (!(problem.dropout_p >= 0 && problem.dropout_p < 1))
    invalid("dropout_p must be in [0, 1), got " +
            std::to_string(problem.dropout_p));
  if (problem.documents && problem.seq_q != problem.seq_kv)
    invalid("document masks need seq_q == seq_kv, got " +
            std::to_string(problem.seq_q) + " and " +
            std::to_string(problem.seq_kv));
}

KernelQuery queryOf(const fa_attention_problem &problem, const char *op) {
  return {op, dtypeOf(problem.dtype), problem.head_dim,
          problem.causal == FA_CAUSAL_TOP_LEFT, variantName(problem)};
}

std::string joined(const std::set<std::string> &values) {
  std::string text;
  for (const std::string &value : values)
    text += (text.empty() ? "" : ", ") + value;
  return text;
}

/// What the library has of `query.op` at the first field `query` misses:
/// its dtypes, its head dims for the dtype, or its (causal, variant)
/// groups for the dtype and head dim.
std::string whatLibraryHas(const KernelLibrary &library,
                           const KernelQuery &query) {
  std::set<std::string> dtypes, variants;
  std::set<std::int64_t> headDims;
  for (const KernelSpec &spec : library.kernels()) {
    if (spec.op != query.op)
      continue;
    dtypes.insert(dtypeName(spec.dtype));
    if (spec.dtype != query.dtype)
      continue;
    headDims.insert(spec.headDim);
    if (spec.headDim == query.headDim)
      variants.insert(std::string(spec.causal ? "causal" : "non-causal") +
                      (spec.variant.empty() ? "" : " " + spec.variant));
  }
  if (dtypes.empty())
    return "the library has no " + query.op + " kernels";
  if (headDims.empty())
    return "the library has dtypes " + joined(dtypes);
  if (variants.empty()) {
    std::string dims;
    for (std::int64_t dim : headDims)
      dims += (dims.empty() ? "" : ", ") + std::to_string(dim);
    return "the library has head dims " + dims + " for " +
           dtypeName(query.dtype);
  }
  return "the library has, for " + std::string(dtypeName(query.dtype)) +
         " head_dim=" + std::to_string(query.headDim) + ": " + joined(variants);
}

/// The group's kernel for the problem: the tuning cache's for its seq_kv
/// class on this GPU, else the default (KernelChoice.h).
const KernelSpec &choose(const fa_library_t &library, const KernelQuery &query,
                         std::int64_t seqKv) {
  return *chooseKernel(library.library, query, seqKv,
                       library.cache ? &*library.cache : nullptr,
                       library.device.name)
              .kernel;
}

/// The variant's values by parameter name: scalars from the problem and
/// the launch, tensors from the launch's pointers.
ArgBindings variantBindings(const fa_attention_problem &problem,
                            const AttentionShape &shape,
                            const fa_attention_tensors &tensors) {
  ArgBindings bindings;
  if (problem.window) {
    bindings["window_left"] = problem.window_left;
    bindings["window_right"] = problem.window_right;
  }
  if (problem.softcap != 0)
    bindings["softcap"] = problem.softcap;
  if (problem.alibi)
    bindings["alibi_slopes"] =
        MemrefArg{tensors.alibi_slopes, DType::F32, {shape.heads}};
  if (problem.documents)
    bindings["doc_ids"] =
        I32MemrefArg{tensors.doc_ids, {shape.batch, shape.seqQ}};
  if (problem.sinks)
    bindings["sinks"] = MemrefArg{tensors.sinks, DType::F32, {shape.heads}};
  if (problem.dropout_p != 0) {
    bindings["dropout_p"] = problem.dropout_p;
    // The kernels take the u64 seed and u32 offset as i64 and i32: the
    // same bits.
    bindings["dropout_seed"] = static_cast<std::int64_t>(tensors.dropout_seed);
    bindings["dropout_offset"] =
        static_cast<std::int32_t>(tensors.dropout_offset);
  }
  return bindings;
}

/// Binds a fused dQ's dq_accum and dq_semaphores (fusesDqIntoDkDv) at
/// `accum` and `semaphores`, shaped by `dkdv`.
void bindFusedDq(ArgBindings &bindings, const KernelSpec &dkdv,
                 const AttentionShape &shape, CUdeviceptr accum,
                 CUdeviceptr semaphores) {
  bindings["dq_accum"] = dqAccumArg(accum, shape);
  bindings["dq_semaphores"] = dqSemaphoresArg(semaphores, dkdv, shape);
}

/// Every kernel's arguments, bound from null pointers (KernelArgs checks
/// names, kinds and ranks, not addresses): a kernel that takes a value the
/// problem does not give, or the forward not taking one it gives, fails at
/// plan creation rather than at a launch.
void checkBindings(const fa_attention_plan_t &plan,
                   const std::vector<const KernelSpec *> &kernels,
                   const KernelSpec *dkdv) {
  fa_attention_tensors none{};
  ArgBindings variant = variantBindings(plan.problem, plan.shape, none);
  ArgBindings all = attentionBackwardBindings(
      plan.dtype, plan.shape, AttentionBackwardBuffers{}, 0, variant);
  all["dsinks"] = MemrefArg{0, DType::F32, {plan.shape.heads}};
  all["tile_counter"] = tileCounterArg(0);
  if (plan.backwardWorkspace.fusedDq)
    bindFusedDq(all, *dkdv, plan.shape, 0, 0);
  for (const KernelSpec *kernel : kernels)
    withStatus(FA_ERROR_LIBRARY, [&] { KernelArgs(*kernel, all); });
  const KernelSpec &forward = *kernels.front();
  for (const auto &[name, value] : variant) {
    bool taken = false;
    for (const KernelParam &param : forward.params)
      taken = taken || param.name == name;
    if (!taken)
      throw StatusError(FA_ERROR_LIBRARY, "kernel " + forward.name +
                                              " (variant " + forward.variant +
                                              ") takes no parameter '" + name +
                                              "', which the problem gives");
  }
}

/// The backward's kernel specs, or why there are none.
struct BackwardSpecs {
  std::optional<AttentionBackwardKernels> kernels;
  std::string missing;
};

BackwardSpecs chooseBackward(const fa_library_t &library,
                             const fa_attention_problem &problem,
                             const KernelSpec &forward) {
  KernelQuery query = queryOf(problem, kAttentionBackwardOp);
  if (library.library.candidates(query).empty())
    return {std::nullopt,
            "the library has no " + query.describe() +
                " kernel: " + whatLibraryHas(library.library, query)};
  AttentionBackwardKernels kernels = withStatus(FA_ERROR_LIBRARY, [&] {
    return attentionBackwardKernels(library.library,
                                    choose(library, query, problem.seq_kv));
  });
  if (problem.sinks && !kernels.dsinks)
    return {std::nullopt, "kernel " + kernels.dq->name +
                              " names no dsinks_kernel: it was compiled "
                              "without the sinks' gradient"};
  // Gradients of another scale would not be the forward's.
  if (kernels.dq->softmaxScale() != forward.softmaxScale())
    throw StatusError(FA_ERROR_LIBRARY,
                      "kernel " + kernels.dq->name + " uses softmax scale " +
                          std::to_string(kernels.dq->softmaxScale()) +
                          ", but the forward kernel " + forward.name +
                          " uses " + std::to_string(forward.softmaxScale()));
  return {kernels, ""};
}

/// Loads the backward's kernels and resolves their grids.
BackwardPlan loadBackward(fa_library_t &library,
                          const AttentionBackwardKernels &kernels,
                          const AttentionShape &shape, bool sinks) {
  BackwardPlan plan;
  plan.delta = &library.kernel(*kernels.delta);
  plan.dkdv = &library.kernel(*kernels.dkdv);
  plan.dq = &library.kernel(*kernels.dq);
  plan.deltaGrid = attentionGrid(*kernels.delta, shape);
  plan.dkdvGrid = attentionGrid(*kernels.dkdv, shape);
  plan.dqGrid = attentionGrid(*kernels.dq, shape);
  if (sinks) {
    plan.dsinks = &library.kernel(*kernels.dsinks);
    plan.dsinksGrid = attentionGrid(*kernels.dsinks, shape);
  }
  return plan;
}

std::size_t deltaBytes(const AttentionShape &shape) {
  return static_cast<std::size_t>(elementCount(shape.logSumExp())) *
         sizeof(float);
}

/// Packs every kernel's arguments as a launch binds them, from placeholder
/// pointers and scalars (kAttentionValues) that each launch overwrites. A
/// tensor map a kernel takes of one of its tensors (k_tma of k) is checked
/// here but, its tensor's pointer being the null placeholder, encoded only
/// by each launch from the caller's pointer (PreparedLaunches::patch).
void prepareLaunches(fa_attention_plan_t &plan) {
  ArgBindings variant =
      variantBindings(plan.problem, plan.shape, fa_attention_tensors{});
  ArgBindings forward =
      attentionBindings(plan.dtype, plan.shape, AttentionBuffers{}, variant);
  // The forward's workspace, for a kernel that takes a tile counter.
  forward["tile_counter"] = tileCounterArg(0);
  plan.forwardLaunch.add(*plan.forward, plan.forwardGrid, forward);
  if (!plan.backward)
    return;
  const BackwardPlan &backward = *plan.backward;
  AttentionBackwardBuffers buffers;
  // attentionBackwardBindings binds dsinks only when it is given: any
  // nonzero placeholder.
  if (backward.dsinks)
    buffers.dsinks = 1;
  ArgBindings bindings =
      attentionBackwardBindings(plan.dtype, plan.shape, buffers, 0, variant);
  // A fused dkdv's semaphores are zeroed before it by PreparedLaunches.
  if (plan.backwardWorkspace.fusedDq)
    bindFusedDq(bindings, backward.dkdv->spec(), plan.shape, 0, 0);
  // dkdv, dq and dsinks read delta: it goes first on the stream.
  plan.backwardLaunch.add(*backward.delta, backward.deltaGrid, bindings);
  plan.backwardLaunch.add(*backward.dkdv, backward.dkdvGrid, bindings);
  plan.backwardLaunch.add(*backward.dq, backward.dqGrid, bindings);
  if (backward.dsinks)
    plan.backwardLaunch.add(*backward.dsinks, backward.dsinksGrid, bindings);
}

std::unique_ptr<fa_attention_plan_t>
createPlan(fa_library_t &library, const fa_attention_problem &problem) {
  validateProblem(problem);
  auto plan = std::make_unique<fa_attention_plan_t>();
  plan->library = &library;
  plan->problem = problem;
  plan->dtype = dtypeOf(problem.dtype);
  plan->shape = shapeOf(problem);
  // Without backward kernels, delta's size (the backward is refused).
  plan->backwardWorkspace.deltaBytes = plan->backwardWorkspace.bytes =
      deltaBytes(plan->shape);
  plan->description = describeProblem(problem);
  KernelQuery query = queryOf(problem, kAttentionForwardOp);
  if (library.library.candidates(query).empty())
    throw StatusError(FA_ERROR_UNSUPPORTED,
                      "the library has no " + query.describe() +
                          " kernel: " + whatLibraryHas(library.library, query));
  const KernelSpec &forward = choose(library, query, problem.seq_kv);
  plan->forwardWorkspaceBytes = withStatus(FA_ERROR_LIBRARY, [&] {
    return takesTileCounter(forward) ? kTileCounterBytes : 0;
  });
  BackwardSpecs backward = chooseBackward(library, problem, forward);
  std::vector<const KernelSpec *> specs = {&forward};
  if (backward.kernels)
    for (const KernelSpec *spec :
         {backward.kernels->delta, backward.kernels->dkdv, backward.kernels->dq,
          problem.sinks ? backward.kernels->dsinks : nullptr})
      if (spec)
        specs.push_back(spec);
  if (backward.kernels)
    plan->backwardWorkspace = withStatus(FA_ERROR_LIBRARY, [&] {
      return attentionBackwardWorkspace(*backward.kernels->dkdv,
                                        *backward.kernels->dq, plan->shape);
    });
  checkBindings(*plan, specs,
                backward.kernels ? backward.kernels->dkdv : nullptr);
  // Grids beyond CUDA's limits are problems too big for the kernels.
  withStatus(FA_ERROR_UNSUPPORTED, [&] {
    for (const KernelSpec *spec : specs)
      attentionGrid(*spec, plan->shape);
  });
  ContextScope scope(library.context);
  plan->forward = &library.kernel(forward);
  // A persistent forward's grid needs the loaded kernel's occupancy.
  plan->forwardGrid = attentionGrid(*plan->forward, plan->shape);
  if (backward.kernels)
    plan->backward = loadBackward(library, *backward.kernels, plan->shape,
                                  problem.sinks != 0);
  plan->noBackward = backward.missing;
  prepareLaunches(*plan);
  return plan;
}

/// The variant's tensors the problem asks for must be given.
void requireVariantPointers(const fa_attention_problem &problem,
                            const fa_attention_tensors &tensors) {
  if (problem.alibi)
    requirePointers("tensors->", {{"alibi_slopes", tensors.alibi_slopes}});
  if (problem.documents)
    requirePointers("tensors->", {{"doc_ids", tensors.doc_ids}});
  if (problem.sinks)
    requirePointers("tensors->", {{"sinks", tensors.sinks}});
}

/// The plan's problem, for a launch's message.
std::string describePlan(const fa_attention_plan_t *plan) {
  return plan ? plan->description : std::string("(null plan)");
}

/// The launch's values in kAttentionValues' order (KernelArgs' slot bits),
/// those in the workspace (delta, dq_accum, dq_semaphores, tile_counter) 0
/// for the caller to set. The kernels take the u64 seed and u32 offset as
/// i64 and i32: the same bits.
void launchValues(const fa_attention_tensors &tensors,
                  std::uint64_t (&values)[kAttentionValueCount]) {
  values[kQ] = tensors.q;
  values[kK] = tensors.k;
  values[kV] = tensors.v;
  values[kOut] = tensors.out;
  values[kLse] = tensors.lse;
  values[kDout] = tensors.dout;
  values[kDq] = tensors.dq;
  values[kDk] = tensors.dk;
  values[kDv] = tensors.dv;
  values[kDsinks] = tensors.dsinks;
  values[kDelta] = 0;
  values[kDqAccum] = 0;
  values[kDqSemaphores] = 0;
  values[kTileCounter] = 0;
  values[kAlibiSlopes] = tensors.alibi_slopes;
  values[kDocIds] = tensors.doc_ids;
  values[kSinks] = tensors.sinks;
  values[kDropoutSeed] =
      KernelArgs::slotValue(static_cast<std::int64_t>(tensors.dropout_seed));
  values[kDropoutOffset] =
      KernelArgs::slotValue(static_cast<std::int32_t>(tensors.dropout_offset));
}

void launchForward(fa_attention_plan_t &plan,
                   const fa_attention_tensors &tensors, CUdeviceptr workspace,
                   std::size_t workspaceBytes, CUstream stream) {
  requirePointers("tensors->", {{"q", tensors.q},
                                {"k", tensors.k},
                                {"v", tensors.v},
                                {"out", tensors.out},
                                {"lse", tensors.lse}});
  requireVariantPointers(plan.problem, tensors);
  // A forward without a tile counter needs no workspace (it may be 0).
  if (plan.forwardWorkspaceBytes)
    requireWorkspace(workspace, workspaceBytes, plan.forwardWorkspaceBytes,
                     "the forward", "fa_attention_forward_workspace_size");
  std::uint64_t values[kAttentionValueCount];
  launchValues(tensors, values);
  values[kTileCounter] = workspace;
  plan.forwardLaunch.launch(plan.library->context, values, stream);
}

void launchBackward(fa_attention_plan_t &plan,
                    const fa_attention_tensors &tensors, CUdeviceptr workspace,
                    std::size_t workspaceBytes, CUstream stream) {
  if (!plan.backward)
    throw StatusError(FA_ERROR_UNSUPPORTED, plan.noBackward);
  const BackwardPlan &backward = *plan.backward;
  requirePointers("tensors->", {{"q", tensors.q},
                                {"k", tensors.k},
                                {"v", tensors.v},
                                {"out", tensors.out},
                                {"lse", tensors.lse},
                                {"dout", tensors.dout},
                                {"dq", tensors.dq},
                                {"dk", tensors.dk},
                                {"dv", tensors.dv}});
  requireVariantPointers(plan.problem, tensors);
  if (backward.dsinks)
    requirePointers("tensors->", {{"dsinks", tensors.dsinks}});
  const AttentionBackwardWorkspace &layout = plan.backwardWorkspace;
  requireWorkspace(workspace, workspaceBytes, layout.bytes, "the backward",
                   "fa_attention_backward_workspace_size");
  std::uint64_t values[kAttentionValueCount];
  launchValues(tensors, values);
  values[kDelta] = workspace;
  // The dkdv kernel's semaphores are zeroed on the stream before it
  // (PreparedLaunches); dq_accum needs no initialisation.
  if (layout.fusedDq) {
    values[kDqAccum] = workspace + layout.dqAccumOffset;
    values[kDqSemaphores] = workspace + layout.dqSemaphoresOffset;
  }
  plan.backwardLaunch.launch(plan.library->context, values, stream);
}

} // namespace

extern "C" {

fa_status fa_attention_plan_create(fa_library library,
                                   const fa_attention_problem *problem,
                                   fa_attention_plan *plan) {
  auto doing = [&] {
    return "creating an attention plan for " +
           (problem ? describeProblem(*problem) : std::string("(null)"));
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan (where the handle goes)");
    *plan = nullptr;
    requireNonNull(library, "library");
    requireNonNull(problem, "problem");
    *plan = createPlan(*library, *problem).release();
  });
}

void fa_attention_plan_destroy(fa_attention_plan plan) { delete plan; }

const char *fa_attention_plan_forward_kernel(fa_attention_plan plan) {
  return plan ? plan->forward->spec().name.c_str() : "";
}

const char *fa_attention_plan_backward_kernel(fa_attention_plan plan) {
  return plan && plan->backward ? plan->backward->dq->spec().name.c_str() : "";
}

double fa_attention_plan_scale(fa_attention_plan plan) {
  return plan ? plan->forward->spec().softmaxScale() : 0.0;
}

fa_status fa_attention_forward_workspace_size(fa_attention_plan plan,
                                              size_t *bytes) {
  auto doing = [&] {
    return "sizing the attention forward's workspace for " + describePlan(plan);
  };
  return guard(doing, FA_ERROR_INTERNAL, [&] {
    requireNonNull(plan, "plan");
    requireNonNull(bytes, "bytes");
    *bytes = plan->forwardWorkspaceBytes;
  });
}

fa_status fa_attention_backward_workspace_size(fa_attention_plan plan,
                                               size_t *bytes) {
  auto doing = [&] {
    return "sizing the attention backward's workspace for " +
           describePlan(plan);
  };
  return guard(doing, FA_ERROR_INTERNAL, [&] {
    requireNonNull(plan, "plan");
    requireNonNull(bytes, "bytes");
    *bytes = plan->backwardWorkspace.bytes;
  });
}

fa_status fa_attention_forward(fa_attention_plan plan,
                               const fa_attention_tensors *tensors,
                               CUdeviceptr workspace, size_t workspace_bytes,
                               CUstream stream) {
  auto doing = [&] {
    return "launching the attention forward for " + describePlan(plan);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan");
    requireNonNull(tensors, "tensors");
    launchForward(*plan, *tensors, workspace, workspace_bytes, stream);
  });
}

fa_status fa_attention_backward(fa_attention_plan plan,
                                const fa_attention_tensors *tensors,
                                CUdeviceptr workspace, size_t workspace_bytes,
                                CUstream stream) {
  auto doing = [&] {
    return "launching the attention backward for " + describePlan(plan);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(plan, "plan");
    requireNonNull(tensors, "tensors");
    launchBackward(*plan, *tensors, workspace, workspace_bytes, stream);
  });
}

} // extern "C"
