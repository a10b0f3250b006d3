//===- CApiGpuTest.cpp - fa.h's C API on a GPU ----------------------------===//
//
// libfa_runtime.so on the fixture kernel library: every launch's outputs,
// written over NaN, are bitwise the ones AttentionLaunch /
// AttentionBackwardLaunch / the LayerNorm launches produce from the same
// inputs with the same kernels, and match the fp64 references; GQA, the
// variants (window+softcap causal, sinks with dsinks, dropout, documents
// with ALiBi, which has no backward), workspaces too small, a forward whose
// kernel takes a tile counter (zeroed in the forward's workspace), a
// backward whose dkdv takes dq_accum and dq_semaphores (carved from its
// workspace, the semaphores zeroed), problems
// the library has no kernel for, and the caller's current context left as it
// was (a non-primary one, or none). Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Driver.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/LayerNormReference.h"
#include "fa/runtime/Reference.h"
#include "fa/runtime/TensorMap.h"
#include "fa/runtime/TuningCache.h"
#include "fa/runtime/fa.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <vector>

using namespace fa;
using namespace fa::gputest;

namespace {

std::string lastError() { return fa_last_error(); }

fa_dtype capiDtype(DType dtype) {
  return dtype == DType::F32   ? FA_DTYPE_F32
         : dtype == DType::F16 ? FA_DTYPE_F16
                               : FA_DTYPE_BF16;
}

DeviceBuffer poisoned(const std::string &name, std::size_t bytes,
                      const Stream &stream) {
  DeviceBuffer buffer(name, bytes);
  buffer.fill(kNaNBytes, stream.get());
  return buffer;
}

/// Expects `actual` (a kernel's output of `dtype`) within `tolerance` of
/// the fp64 reference, with no NaN left.
void expectClose(const DeviceBuffer &actual, DType dtype,
                 const std::vector<double> &reference, double tolerance,
                 const char *what) {
  ErrorStats stats =
      compareWithReference(decode(actual.download(), dtype), reference);
  EXPECT_TRUE(stats.passes(tolerance))
      << what << ": relative error " << stats.relative << " (tolerance "
      << tolerance << "), " << stats.nanCount << " NaN of " << stats.count;
}

void expectSameBytes(const DeviceBuffer &capi, const DeviceBuffer &launch,
                     const char *what) {
  EXPECT_TRUE(capi.download() == launch.download())
      << what << ": the C API's bytes differ from the launch's";
}

/// The library opened through the C API (device 0, no tuning cache) and
/// the same manifest for the C++ launches it is compared with.
class CApiGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    ASSERT_EQ(fa_library_open(FA_FIXTURE_KERNELS_DIR, 0, "", &library),
              FA_SUCCESS)
        << lastError();
    kernels = KernelLibrary::load(FA_FIXTURE_KERNELS_DIR);
  }
  void TearDown() override { fa_library_close(library); }

  /// A plan for `problem`, asserting success.
  fa_attention_plan attentionPlan(const fa_attention_problem &problem) {
    fa_attention_plan plan = nullptr;
    EXPECT_EQ(fa_attention_plan_create(library, &problem, &plan), FA_SUCCESS)
        << lastError();
    return plan;
  }

  /// Runs `problem` (whose values `variant` repeats for the references and
  /// the C++ launches) through the C API and through AttentionLaunch /
  /// AttentionBackwardLaunch, and compares.
  void checkAttention(const fa_attention_problem &problem,
                      const AttentionVariant &variant, DType dtype,
                      bool backward);

  fa_library library = nullptr;
  KernelLibrary kernels;
};

void CApiGpuTest::checkAttention(const fa_attention_problem &problem,
                                 const AttentionVariant &variant, DType dtype,
                                 bool backward) {
  const AttentionShape shape{problem.batch, problem.heads,  problem.kv_heads,
                             problem.seq_q, problem.seq_kv, problem.head_dim};
  fa_attention_plan plan = attentionPlan(problem);
  ASSERT_NE(plan, nullptr);
  const double scale = fa_attention_plan_scale(plan);
  EXPECT_EQ(scale, 1.0 / std::sqrt(static_cast<double>(shape.headDim)));
  const KernelSpec *forwardSpec =
      kernels.named(fa_attention_plan_forward_kernel(plan));
  ASSERT_NE(forwardSpec, nullptr);
  std::vector<const KernelSpec *> specs = {forwardSpec};
  std::optional<AttentionBackwardKernels> backwardSpecs;
  if (backward) {
    const KernelSpec *dq =
        kernels.named(fa_attention_plan_backward_kernel(plan));
    ASSERT_NE(dq, nullptr) << "no backward kernel";
    backwardSpecs = attentionBackwardKernels(kernels, *dq);
    specs.insert(specs.end(), {backwardSpecs->delta, backwardSpecs->dkdv, dq});
    if (problem.sinks)
      specs.push_back(backwardSpecs->dsinks);
  }
  // The variant's tensors on the device, shared by both paths.
  VariantArgs variantArgs(variantParams(variant, shape, specs));
  auto tensorOf = [&](const char *name) -> CUdeviceptr {
    auto found = variantArgs.bindings().find(name);
    if (found == variantArgs.bindings().end())
      return 0;
    if (auto *memref = std::get_if<MemrefArg>(&found->second))
      return memref->data;
    return std::get<I32MemrefArg>(found->second).data;
  };

  HostTensor q = randomTensor(shape.query(), dtype, 1);
  HostTensor k = randomTensor(shape.keyValue(), dtype, 2);
  HostTensor v = randomTensor(shape.keyValue(), dtype, 3);
  DeviceBuffer qDevice = upload("q", q, dtype), kDevice = upload("k", k, dtype),
               vDevice = upload("v", v, dtype);
  const std::size_t queryBytes = tensorBytes(shape.query(), dtype);
  const std::size_t keyBytes = tensorBytes(shape.keyValue(), dtype);
  const std::size_t lseBytes = tensorBytes(shape.logSumExp(), DType::F32);
  DeviceBuffer out = poisoned("out", queryBytes, *stream),
               lse = poisoned("lse", lseBytes, *stream),
               launchOut = poisoned("launch out", queryBytes, *stream),
               launchLse = poisoned("launch lse", lseBytes, *stream);

  fa_attention_tensors tensors{};
  tensors.q = qDevice.get();
  tensors.k = kDevice.get();
  tensors.v = vDevice.get();
  tensors.out = out.get();
  tensors.lse = lse.get();
  tensors.alibi_slopes = tensorOf("alibi_slopes");
  tensors.doc_ids = tensorOf("doc_ids");
  tensors.sinks = tensorOf("sinks");
  if (variant.dropout) {
    tensors.dropout_seed = variant.dropout->seed;
    tensors.dropout_offset = variant.dropout->offset;
  }
  // The fixture's forwards take no tile counter: no workspace.
  size_t forwardWorkspace = 1;
  ASSERT_EQ(fa_attention_forward_workspace_size(plan, &forwardWorkspace),
            FA_SUCCESS)
      << lastError();
  EXPECT_EQ(forwardWorkspace, 0u);
  ASSERT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  Kernel forward(*forwardSpec, context->device());
  AttentionLaunch(forward, shape,
                  {qDevice.get(), kDevice.get(), vDevice.get(), launchOut.get(),
                   launchLse.get()},
                  variantArgs.bindings())
      .enqueue(*stream);
  stream->synchronize();
  expectSameBytes(out, launchOut, "out");
  expectSameBytes(lse, launchLse, "lse");
  AttentionReference reference = referenceAttentionCpu(
      shape, q.values, k.values, v.values, scale, variant);
  expectClose(out, dtype, reference.out, defaultRelativeTolerance(dtype),
              "out");
  expectClose(lse, DType::F32, reference.lse, defaultRelativeTolerance(dtype),
              "lse");

  if (backward) {
    HostTensor dout = randomTensor(shape.query(), dtype, 4);
    DeviceBuffer doutDevice = upload("dout", dout, dtype);
    const std::size_t sinksBytes = tensorBytes({shape.heads}, DType::F32);
    DeviceBuffer dq = poisoned("dq", queryBytes, *stream),
                 dk = poisoned("dk", keyBytes, *stream),
                 dv = poisoned("dv", keyBytes, *stream),
                 dsinks = poisoned("dsinks", sinksBytes, *stream),
                 launchDq = poisoned("launch dq", queryBytes, *stream),
                 launchDk = poisoned("launch dk", keyBytes, *stream),
                 launchDv = poisoned("launch dv", keyBytes, *stream),
                 launchDsinks = poisoned("launch dsinks", sinksBytes, *stream);
    size_t workspaceBytes = 0;
    ASSERT_EQ(fa_attention_backward_workspace_size(plan, &workspaceBytes),
              FA_SUCCESS)
        << lastError();
    EXPECT_EQ(workspaceBytes, lseBytes);
    DeviceBuffer workspace = poisoned("workspace", workspaceBytes, *stream);
    tensors.dout = doutDevice.get();
    tensors.dq = dq.get();
    tensors.dk = dk.get();
    tensors.dv = dv.get();
    tensors.dsinks = problem.sinks ? dsinks.get() : 0;
    ASSERT_EQ(fa_attention_backward(plan, &tensors, workspace.get(),
                                    workspaceBytes, stream->get()),
              FA_SUCCESS)
        << lastError();
    Kernel delta(*backwardSpecs->delta, context->device()),
        dkdv(*backwardSpecs->dkdv, context->device()),
        dqKernel(*backwardSpecs->dq, context->device());
    std::optional<Kernel> dsinksKernel;
    if (problem.sinks)
      dsinksKernel.emplace(*backwardSpecs->dsinks, context->device());
    AttentionBackwardLaunch launch(
        delta, dkdv, dqKernel, shape,
        {qDevice.get(), kDevice.get(), vDevice.get(), out.get(), lse.get(),
         doutDevice.get(), launchDq.get(), launchDk.get(), launchDv.get(),
         problem.sinks ? launchDsinks.get() : 0},
        variantArgs.bindings(), dsinksKernel ? &*dsinksKernel : nullptr);
    launch.fillDelta(kNaNBytes, *stream);
    launch.enqueue(*stream);
    stream->synchronize();
    expectSameBytes(dq, launchDq, "dq");
    expectSameBytes(dk, launchDk, "dk");
    expectSameBytes(dv, launchDv, "dv");
    AttentionGradReference grad = referenceAttentionGradCpu(
        shape, q.values, k.values, v.values, dout.values, scale, variant);
    double tolerance = defaultGradientTolerance(dtype);
    expectClose(dq, dtype, grad.dq, tolerance, "dq");
    expectClose(dk, dtype, grad.dk, tolerance, "dk");
    expectClose(dv, dtype, grad.dv, tolerance, "dv");
    if (problem.sinks) {
      expectSameBytes(dsinks, launchDsinks, "dsinks");
      expectClose(dsinks, DType::F32, grad.dsinks, tolerance, "dsinks");
    }
  }
  fa_attention_plan_destroy(plan);
}

fa_attention_problem problemOf(DType dtype, const AttentionShape &shape,
                               fa_causal causal) {
  fa_attention_problem problem{};
  problem.dtype = capiDtype(dtype);
  problem.batch = shape.batch;
  problem.heads = shape.heads;
  problem.kv_heads = shape.kvHeads;
  problem.seq_q = shape.seqQ;
  problem.seq_kv = shape.seqKv;
  problem.head_dim = shape.headDim;
  problem.causal = causal;
  return problem;
}

TEST_F(CApiGpuTest, PlainAttentionMatchesTheLaunchesAndTheReference) {
  struct Case {
    DType dtype;
    AttentionShape shape;
    bool causal;
  };
  for (const Case &c : {Case{DType::BF16, {2, 4, 2, 37, 50, 64}, true},
                        Case{DType::F16, {1, 3, 1, 20, 70, 128}, false},
                        Case{DType::F32, {2, 2, 2, 65, 65, 64}, false}}) {
    SCOPED_TRACE(std::string(dtypeName(c.dtype)) + " " + c.shape.describe() +
                 (c.causal ? " causal" : ""));
    AttentionVariant variant;
    if (c.causal)
      variant.causal = CausalAlignment::TopLeft;
    checkAttention(problemOf(c.dtype, c.shape,
                             c.causal ? FA_CAUSAL_TOP_LEFT : FA_CAUSAL_NONE),
                   variant, c.dtype, /*backward=*/true);
  }
}

TEST_F(CApiGpuTest, WindowSoftcapCausalMatchesTheLaunchesAndTheReference) {
  const AttentionShape shape{1, 4, 2, 40, 40, 64};
  fa_attention_problem problem =
      problemOf(DType::BF16, shape, FA_CAUSAL_TOP_LEFT);
  problem.window = 1;
  problem.window_left = 9;
  problem.window_right = 3;
  problem.softcap = 20.0f;
  AttentionVariant variant;
  variant.causal = CausalAlignment::TopLeft;
  variant.window = AttentionWindow{9, 3};
  variant.softcap = 20.0f;
  checkAttention(problem, variant, DType::BF16, /*backward=*/true);
}

TEST_F(CApiGpuTest, SinksWithDsinksMatchTheLaunchesAndTheReference) {
  const AttentionShape shape{2, 4, 2, 37, 50, 64};
  fa_attention_problem problem = problemOf(DType::BF16, shape, FA_CAUSAL_NONE);
  problem.sinks = 1;
  AttentionVariant variant;
  variant.sinks = randomSinks(shape.heads, shape.seqKv, 1);
  checkAttention(problem, variant, DType::BF16, /*backward=*/true);
}

TEST_F(CApiGpuTest, DropoutMatchesTheLaunchesAndTheReference) {
  const AttentionShape shape{2, 4, 2, 45, 45, 64};
  fa_attention_problem problem =
      problemOf(DType::BF16, shape, FA_CAUSAL_TOP_LEFT);
  problem.dropout_p = 0.3f;
  AttentionVariant variant;
  variant.causal = CausalAlignment::TopLeft;
  // Both words of the seed and an offset past i32's range, so that every
  // bit of their binding shows.
  variant.dropout = AttentionDropout{0.3f, 0xfedcba9876543210ULL, 3000000000u};
  checkAttention(problem, variant, DType::BF16, /*backward=*/true);
}

TEST_F(CApiGpuTest, DocumentsWithAlibiRunForwardAndHaveNoBackward) {
  const AttentionShape shape{2, 4, 4, 60, 60, 64};
  fa_attention_problem problem =
      problemOf(DType::BF16, shape, FA_CAUSAL_BOTTOM_RIGHT);
  problem.documents = 1;
  problem.alibi = 1;
  AttentionVariant variant;
  variant.causal = CausalAlignment::BottomRight;
  variant.docIds = documentIdsFromLengths({7, 30}, shape.batch, shape.seqQ);
  variant.alibiSlopes = alibiSlopes(shape.heads);
  checkAttention(problem, variant, DType::BF16, /*backward=*/false);

  fa_attention_plan plan = attentionPlan(problem);
  ASSERT_NE(plan, nullptr);
  EXPECT_STREQ(fa_attention_plan_backward_kernel(plan), "");
  fa_attention_tensors tensors{};
  EXPECT_EQ(fa_attention_backward(plan, &tensors, 0, 0, stream->get()),
            FA_ERROR_UNSUPPORTED);
  EXPECT_NE(lastError().find("no attention_bwd bf16 head_dim=64 non-causal "
                             "variant=causal_bottom_right+document+alibi"),
            std::string::npos)
      << lastError();
  // The forward's variant tensors must be given.
  EXPECT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  fa_attention_plan_destroy(plan);
}

TEST_F(CApiGpuTest, ProblemsWithoutKernelsAreUnsupportedSayingWhatThereIs) {
  fa_attention_problem problem =
      problemOf(DType::BF16, {1, 2, 2, 16, 16, 48}, FA_CAUSAL_NONE);
  fa_attention_plan plan = nullptr;
  EXPECT_EQ(fa_attention_plan_create(library, &problem, &plan),
            FA_ERROR_UNSUPPORTED);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(lastError().find("creating an attention plan for bf16 batch=1 "
                             "heads=2"),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("the library has head dims 64, 128 for bf16"),
            std::string::npos)
      << lastError();
  // A variant the library lacks lists the groups it has.
  problem.head_dim = 64;
  problem.softcap = 30.0f;
  EXPECT_EQ(fa_attention_plan_create(library, &problem, &plan),
            FA_ERROR_UNSUPPORTED);
  EXPECT_NE(lastError().find("causal window+softcap"), std::string::npos)
      << lastError();
}

TEST_F(CApiGpuTest, BadProblemsAreInvalidBeforeAnyKernel) {
  fa_attention_problem good =
      problemOf(DType::BF16, {1, 4, 2, 16, 16, 64}, FA_CAUSAL_NONE);
  auto expectInvalid = [&](fa_attention_problem problem, const char *message) {
    fa_attention_plan plan = nullptr;
    EXPECT_EQ(fa_attention_plan_create(library, &problem, &plan),
              FA_ERROR_INVALID_ARGUMENT)
        << message;
    EXPECT_NE(lastError().find(message), std::string::npos) << lastError();
  };
  fa_attention_problem problem = good;
  problem.kv_heads = 3;
  expectInvalid(problem, "heads (4) must be a multiple of kv_heads (3)");
  problem = good;
  problem.seq_q = 0;
  expectInvalid(problem, "seq_q must be positive");
  problem = good;
  problem.window = 1;
  problem.window_left = -1;
  expectInvalid(problem, "window bounds must be non-negative");
  problem = good;
  problem.softcap = -1.0f;
  expectInvalid(problem, "softcap must be positive");
  problem = good;
  problem.dropout_p = 1.0f;
  expectInvalid(problem, "dropout_p must be in [0, 1)");
  problem = good;
  problem.documents = 1;
  problem.seq_kv = 32;
  expectInvalid(problem, "document masks need seq_q == seq_kv");
  problem = good;
  problem.dtype = static_cast<fa_dtype>(9);
  expectInvalid(problem, "dtype 9 is not an fa_dtype");
  problem = good;
  problem.causal = static_cast<fa_causal>(5);
  expectInvalid(problem, "causal 5 is not an fa_causal");
}

TEST_F(CApiGpuTest, ASmallWorkspaceIsAWorkspaceErrorAndSuccessClearsIt) {
  const AttentionShape shape{1, 2, 2, 16, 16, 64};
  fa_attention_plan plan =
      attentionPlan(problemOf(DType::BF16, shape, FA_CAUSAL_NONE));
  ASSERT_NE(plan, nullptr);
  size_t bytes = 0;
  ASSERT_EQ(fa_attention_backward_workspace_size(plan, &bytes), FA_SUCCESS);
  DeviceBuffer any("any", 4096);
  fa_attention_tensors tensors{any.get(), any.get(), any.get(), any.get(),
                               any.get(), any.get(), any.get(), any.get(),
                               any.get(), 0,         0,         0,
                               0,         0,         0};
  EXPECT_EQ(fa_attention_backward(plan, &tensors, any.get(), bytes - 1,
                                  stream->get()),
            FA_ERROR_WORKSPACE);
  EXPECT_NE(lastError().find("the workspace has " + std::to_string(bytes - 1) +
                             " bytes; the backward needs " +
                             std::to_string(bytes)),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_attention_backward(plan, &tensors, any.get() + 4, bytes,
                                  stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  // A call that succeeds leaves no error behind.
  EXPECT_EQ(fa_attention_backward_workspace_size(plan, &bytes), FA_SUCCESS);
  EXPECT_EQ(lastError(), "");
  fa_attention_plan_destroy(plan);
}

/// A copy of the fixture library's manifest in a fresh directory `name`
/// (its PTX read where it is), each kernel entry first passed to
/// `editKernel`; returns the directory.
std::string
editedFixtureLibrary(const std::string &name,
                     const std::function<void(nlohmann::json &)> &editKernel) {
  const std::filesystem::path fixture = FA_FIXTURE_KERNELS_DIR;
  nlohmann::json manifest =
      nlohmann::json::parse(std::ifstream(fixture / "manifest.json"));
  for (nlohmann::json &kernel : manifest["kernels"]) {
    kernel["ptx"] = (fixture / kernel["ptx"].get<std::string>()).string();
    editKernel(kernel);
  }
  std::filesystem::path directory =
      std::filesystem::path(::testing::TempDir()) / ("fa_capi_" + name);
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "manifest.json") << manifest.dump(2);
  return directory.string();
}

/// A copy of the fixture library in a fresh directory `name` whose
/// forwards also take a tile counter of rank `rank` (the last parameter, as
/// the compiler lists a dynamically scheduled forward's). The fixture
/// kernels ignore the extra arguments (the driver reads only the parameters
/// a kernel declares), so their results are the plain library's, while the
/// runtime must handle the counter as it would for such a kernel.
std::string tileCounterLibrary(const std::string &name, int rank) {
  return editedFixtureLibrary(name, [&](nlohmann::json &kernel) {
    if (kernel["op"] == kAttentionForwardOp)
      kernel["params"].push_back({{"dtype", "i32"},
                                  {"kind", "memref"},
                                  {"name", "tile_counter"},
                                  {"rank", rank}});
  });
}

TEST_F(CApiGpuTest, AForwardWithATileCounterZeroesItInTheWorkspace) {
  const AttentionShape shape{1, 2, 2, 40, 40, 64};
  const fa_attention_problem problem =
      problemOf(DType::BF16, shape, FA_CAUSAL_NONE);
  const std::string directory = tileCounterLibrary("tile_counter", 1);
  fa_library counterLibrary = nullptr;
  ASSERT_EQ(fa_library_open(directory.c_str(), 0, "", &counterLibrary),
            FA_SUCCESS)
      << lastError();
  fa_attention_plan plain = attentionPlan(problem), counted = nullptr;
  ASSERT_EQ(fa_attention_plan_create(counterLibrary, &problem, &counted),
            FA_SUCCESS)
      << lastError();
  ASSERT_NE(plain, nullptr);
  ASSERT_STREQ(fa_attention_plan_forward_kernel(counted),
               fa_attention_plan_forward_kernel(plain));
  size_t bytes = 0;
  ASSERT_EQ(fa_attention_forward_workspace_size(plain, &bytes), FA_SUCCESS);
  EXPECT_EQ(bytes, 0u);
  ASSERT_EQ(fa_attention_forward_workspace_size(counted, &bytes), FA_SUCCESS);
  EXPECT_EQ(bytes, kTileCounterBytes);

  HostTensor q = randomTensor(shape.query(), DType::BF16, 1);
  HostTensor k = randomTensor(shape.keyValue(), DType::BF16, 2);
  DeviceBuffer qDevice = upload("q", q, DType::BF16),
               kDevice = upload("k", k, DType::BF16);
  const std::size_t queryBytes = tensorBytes(shape.query(), DType::BF16);
  const std::size_t lseBytes = tensorBytes(shape.logSumExp(), DType::F32);
  DeviceBuffer plainOut = poisoned("plain out", queryBytes, *stream),
               plainLse = poisoned("plain lse", lseBytes, *stream),
               out = poisoned("out", queryBytes, *stream),
               lse = poisoned("lse", lseBytes, *stream),
               workspace = poisoned("workspace", 256, *stream);
  fa_attention_tensors tensors{};
  tensors.q = qDevice.get();
  tensors.k = tensors.v = kDevice.get();
  tensors.out = plainOut.get();
  tensors.lse = plainLse.get();
  ASSERT_EQ(fa_attention_forward(plain, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();

  // Workspaces the counter does not fit are refused, nothing launched.
  tensors.out = out.get();
  tensors.lse = lse.get();
  EXPECT_EQ(fa_attention_forward(counted, &tensors, 0, 0, stream->get()),
            FA_ERROR_WORKSPACE);
  EXPECT_NE(lastError().find("launching the attention forward for bf16 "),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("the workspace has 0 bytes; the forward needs 4 "
                             "(fa_attention_forward_workspace_size)"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_attention_forward(counted, &tensors, workspace.get(), 3,
                                 stream->get()),
            FA_ERROR_WORKSPACE);
  EXPECT_EQ(fa_attention_forward(counted, &tensors, 0, 4, stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the workspace must be a device pointer aligned "
                             "to 256 bytes"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_attention_forward(counted, &tensors, workspace.get() + 4, 4,
                                 stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  stream->synchronize();
  const Bytes poison(256, kNaNBytes);
  EXPECT_TRUE(workspace.download() == poison);
  EXPECT_TRUE(out.download() == Bytes(queryBytes, kNaNBytes));

  // The launch zeroes the counter (the workspace's first 4 bytes, nothing
  // past them), then runs the kernel.
  ASSERT_EQ(fa_attention_forward(counted, &tensors, workspace.get(), bytes,
                                 stream->get()),
            FA_SUCCESS)
      << lastError();
  stream->synchronize();
  Bytes expected = poison;
  std::fill_n(expected.begin(), kTileCounterBytes, 0);
  EXPECT_TRUE(workspace.download() == expected);
  expectSameBytes(out, plainOut, "out");
  expectSameBytes(lse, plainLse, "lse");

  // AttentionLaunch owns a counter for such a kernel (and allocates nothing
  // for the plain one); launches kept in a vector, as fa-run keeps them.
  KernelLibrary counterKernels = KernelLibrary::load(directory);
  const KernelSpec *counterSpec =
      counterKernels.named(fa_attention_plan_forward_kernel(counted));
  ASSERT_NE(counterSpec, nullptr);
  ASSERT_TRUE(takesTileCounter(*counterSpec));
  Kernel counterKernel(*counterSpec, context->device());
  Kernel plainKernel(*kernels.named(fa_attention_plan_forward_kernel(plain)),
                     context->device());
  DeviceBuffer launchOut = poisoned("launch out", queryBytes, *stream),
               launchLse = poisoned("launch lse", lseBytes, *stream);
  const AttentionBuffers buffers{qDevice.get(), kDevice.get(), kDevice.get(),
                                 launchOut.get(), launchLse.get()};
  const std::size_t live = DeviceBuffer::allocated().live();
  std::vector<AttentionLaunch> launches;
  launches.emplace_back(plainKernel, shape, buffers);
  EXPECT_EQ(DeviceBuffer::allocated().live(), live);
  launches.emplace_back(counterKernel, shape, buffers);
  EXPECT_EQ(DeviceBuffer::allocated().live(), live + kTileCounterBytes);
  launches.emplace_back(counterKernel, shape, buffers);
  EXPECT_EQ(DeviceBuffer::allocated().live(), live + 2 * kTileCounterBytes);
  for (AttentionLaunch &launch : launches)
    launch.enqueue(*stream);
  stream->synchronize();
  expectSameBytes(launchOut, plainOut, "launch out");
  expectSameBytes(launchLse, plainLse, "launch lse");
  launches.clear();
  EXPECT_EQ(DeviceBuffer::allocated().live(), live);

  fa_attention_plan_destroy(plain);
  fa_attention_plan_destroy(counted);
  fa_library_close(counterLibrary);
}

TEST_F(CApiGpuTest, ATileCounterOfAnotherRankIsALibraryError) {
  const std::string directory = tileCounterLibrary("tile_counter_rank2", 2);
  fa_library counterLibrary = nullptr;
  ASSERT_EQ(fa_library_open(directory.c_str(), 0, "", &counterLibrary),
            FA_SUCCESS)
      << lastError();
  const fa_attention_problem problem =
      problemOf(DType::BF16, {1, 2, 2, 40, 40, 64}, FA_CAUSAL_NONE);
  fa_attention_plan plan = nullptr;
  EXPECT_EQ(fa_attention_plan_create(counterLibrary, &problem, &plan),
            FA_ERROR_LIBRARY);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(lastError().find(": parameter 'tile_counter' is memref<i32> of "
                             "rank 2; a tile counter is memref<i32> of rank 1 "
                             "(memref<1xi32>)"),
            std::string::npos)
      << lastError();
  fa_library_close(counterLibrary);
}

/// A copy of the fixture library in a fresh directory `name` whose
/// backwards fuse dQ into dK/dV as the runtime sees it: each dkdv kernel
/// also takes dq_accum and dq_semaphores (of rank `semaphoreRank`), each
/// attention_bwd kernel dq_accum, as their last parameters. The fixture
/// kernels ignore them (they still compute dq in attention_bwd), so the
/// gradients are the plain library's, while the runtime must carve, bind
/// and zero the scratch as for a fused backward.
std::string fusedDqLibrary(const std::string &name, int semaphoreRank) {
  const nlohmann::json accum = {
      {"dtype", "f32"}, {"kind", "memref"}, {"name", "dq_accum"}, {"rank", 4}};
  return editedFixtureLibrary(name, [&](nlohmann::json &kernel) {
    if (kernel["op"] == kAttentionDkDvOp) {
      kernel["params"].push_back(accum);
      kernel["params"].push_back({{"dtype", "i32"},
                                  {"kind", "memref"},
                                  {"name", "dq_semaphores"},
                                  {"rank", semaphoreRank}});
    }
    if (kernel["op"] == kAttentionBackwardOp)
      kernel["params"].push_back(accum);
  });
}

TEST_F(CApiGpuTest, AFusedDqBackwardCarvesItsScratchFromTheWorkspace) {
  // seq_q 40 in the fixture dkdv's block_n 32: 2 semaphore tiles per head.
  const AttentionShape shape{1, 2, 2, 40, 40, 64};
  const fa_attention_problem problem =
      problemOf(DType::BF16, shape, FA_CAUSAL_NONE);
  const std::string directory = fusedDqLibrary("fused_dq", 3);
  fa_library fusedLibrary = nullptr;
  ASSERT_EQ(fa_library_open(directory.c_str(), 0, "", &fusedLibrary),
            FA_SUCCESS)
      << lastError();
  fa_attention_plan plain = attentionPlan(problem), fused = nullptr;
  ASSERT_EQ(fa_attention_plan_create(fusedLibrary, &problem, &fused),
            FA_SUCCESS)
      << lastError();
  ASSERT_NE(plain, nullptr);

  // delta 320 bytes (padded to 512), dq_accum 2 * 40 * 64 f32 = 20480,
  // dq_semaphores 2 * 2 i32 = 16 (padded to 256).
  const std::size_t lseBytes = tensorBytes(shape.logSumExp(), DType::F32);
  size_t plainBytes = 0, bytes = 0;
  ASSERT_EQ(fa_attention_backward_workspace_size(plain, &plainBytes),
            FA_SUCCESS);
  EXPECT_EQ(plainBytes, lseBytes);
  ASSERT_EQ(fa_attention_backward_workspace_size(fused, &bytes), FA_SUCCESS);
  EXPECT_EQ(bytes, plainBytes + (512 - 320) + 20480 + 256);
  const std::size_t semaphores = 512 + 20480;

  HostTensor q = randomTensor(shape.query(), DType::BF16, 1);
  HostTensor k = randomTensor(shape.keyValue(), DType::BF16, 2);
  HostTensor dout = randomTensor(shape.query(), DType::BF16, 3);
  DeviceBuffer qDevice = upload("q", q, DType::BF16),
               kDevice = upload("k", k, DType::BF16),
               doutDevice = upload("dout", dout, DType::BF16);
  const std::size_t queryBytes = tensorBytes(shape.query(), DType::BF16);
  const std::size_t keyBytes = tensorBytes(shape.keyValue(), DType::BF16);
  DeviceBuffer out = poisoned("out", queryBytes, *stream),
               lse = poisoned("lse", lseBytes, *stream),
               plainDq = poisoned("plain dq", queryBytes, *stream),
               plainDk = poisoned("plain dk", keyBytes, *stream),
               plainDv = poisoned("plain dv", keyBytes, *stream),
               dq = poisoned("dq", queryBytes, *stream),
               dk = poisoned("dk", keyBytes, *stream),
               dv = poisoned("dv", keyBytes, *stream),
               plainWorkspace =
                   poisoned("plain workspace", plainBytes, *stream),
               workspace = poisoned("workspace", bytes, *stream);
  fa_attention_tensors tensors{};
  tensors.q = qDevice.get();
  tensors.k = tensors.v = kDevice.get();
  tensors.out = out.get();
  tensors.lse = lse.get();
  tensors.dout = doutDevice.get();
  ASSERT_EQ(fa_attention_forward(plain, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  tensors.dq = plainDq.get();
  tensors.dk = plainDk.get();
  tensors.dv = plainDv.get();
  ASSERT_EQ(fa_attention_backward(plain, &tensors, plainWorkspace.get(),
                                  plainBytes, stream->get()),
            FA_SUCCESS)
      << lastError();

  // The plain size is too small for the fused backward.
  tensors.dq = dq.get();
  tensors.dk = dk.get();
  tensors.dv = dv.get();
  EXPECT_EQ(fa_attention_backward(fused, &tensors, workspace.get(), bytes - 1,
                                  stream->get()),
            FA_ERROR_WORKSPACE);
  ASSERT_EQ(fa_attention_backward(fused, &tensors, workspace.get(), bytes,
                                  stream->get()),
            FA_SUCCESS)
      << lastError();
  stream->synchronize();
  expectSameBytes(dq, plainDq, "dq");
  expectSameBytes(dk, plainDk, "dk");
  expectSameBytes(dv, plainDv, "dv");
  // The launch zeroed the semaphores (the fixture's dkdv leaves them) and
  // nothing past them; dq_accum, which no fixture kernel writes, stays
  // poisoned.
  Bytes after = workspace.download();
  EXPECT_TRUE(std::all_of(after.begin() + semaphores,
                          after.begin() + semaphores + 16,
                          [](std::uint8_t byte) { return byte == 0; }));
  EXPECT_TRUE(std::all_of(after.begin() + semaphores + 16, after.end(),
                          [](std::uint8_t byte) { return byte == kNaNBytes; }));
  EXPECT_TRUE(std::all_of(after.begin() + 512, after.begin() + semaphores,
                          [](std::uint8_t byte) { return byte == kNaNBytes; }));

  // AttentionBackwardLaunch owns the scratch of a fused backward only.
  KernelLibrary fusedKernels = KernelLibrary::load(directory);
  AttentionBackwardKernels specs = attentionBackwardKernels(
      fusedKernels,
      *fusedKernels.named(fa_attention_plan_backward_kernel(fused)));
  Kernel delta(*specs.delta, context->device()),
      dkdv(*specs.dkdv, context->device()),
      dqKernel(*specs.dq, context->device());
  DeviceBuffer launchDq = poisoned("launch dq", queryBytes, *stream),
               launchDk = poisoned("launch dk", keyBytes, *stream),
               launchDv = poisoned("launch dv", keyBytes, *stream);
  const std::size_t live = DeviceBuffer::allocated().live();
  AttentionBackwardLaunch launch(
      delta, dkdv, dqKernel, shape,
      {qDevice.get(), kDevice.get(), kDevice.get(), out.get(), lse.get(),
       doutDevice.get(), launchDq.get(), launchDk.get(), launchDv.get()});
  EXPECT_TRUE(launch.fusesDq());
  EXPECT_EQ(DeviceBuffer::allocated().live(), live + lseBytes + 20480 + 16);
  launch.enqueue(*stream);
  launch.enqueue(AttentionBackwardStage::DkDv, *stream);
  stream->synchronize();
  expectSameBytes(launchDq, plainDq, "launch dq");
  expectSameBytes(launchDk, plainDk, "launch dk");
  expectSameBytes(launchDv, plainDv, "launch dv");

  fa_attention_plan_destroy(plain);
  fa_attention_plan_destroy(fused);
  fa_library_close(fusedLibrary);
}

TEST_F(CApiGpuTest, FusedDqSemaphoresOfAnotherRankAreALibraryError) {
  const std::string directory = fusedDqLibrary("fused_dq_rank2", 2);
  fa_library fusedLibrary = nullptr;
  ASSERT_EQ(fa_library_open(directory.c_str(), 0, "", &fusedLibrary),
            FA_SUCCESS)
      << lastError();
  const fa_attention_problem problem =
      problemOf(DType::BF16, {1, 2, 2, 40, 40, 64}, FA_CAUSAL_NONE);
  fa_attention_plan plan = nullptr;
  EXPECT_EQ(fa_attention_plan_create(fusedLibrary, &problem, &plan),
            FA_ERROR_LIBRARY);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(lastError().find(": parameter 'dq_semaphores' is memref<i32> of "
                             "rank 2; dq_semaphores is memref<i32> of rank 3 "
                             "([batch, heads, dq_tiles])"),
            std::string::npos)
      << lastError();
  fa_library_close(fusedLibrary);
}

/// cuCtxCreate and cuCtxDestroy, which the runtime never needs: looked up
/// here, by the symbols every driver since CUDA 4 has.
struct ContextFunctions {
  using Create = CUresult (*)(CUcontext *, unsigned, CUdevice);
  using Destroy = CUresult (*)(CUcontext);
  Create create = nullptr;
  Destroy destroy = nullptr;

  ContextFunctions() {
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!libcuda)
      return;
    create = reinterpret_cast<Create>(dlsym(libcuda, "cuCtxCreate_v2"));
    destroy = reinterpret_cast<Destroy>(dlsym(libcuda, "cuCtxDestroy_v2"));
  }
};

CUcontext currentContext() {
  CUcontext current = nullptr;
  checkCu(driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  return current;
}

TEST_F(CApiGpuTest, TheCallersCurrentContextIsLeftAsItWas) {
  ContextFunctions functions;
  ASSERT_TRUE(functions.create && functions.destroy);
  const AttentionShape shape{1, 2, 2, 33, 33, 64};
  fa_attention_problem problem = problemOf(DType::BF16, shape, FA_CAUSAL_NONE);
  HostTensor q = randomTensor(shape.query(), DType::BF16, 1);
  DeviceBuffer qDevice = upload("q", q, DType::BF16);
  const std::size_t queryBytes = tensorBytes(shape.query(), DType::BF16);
  const std::size_t lseBytes = tensorBytes(shape.logSumExp(), DType::F32);
  // Every buffer in the primary context, before another one is current: a
  // kernel there cannot reach another context's memory.
  DeviceBuffer first("first out", queryBytes), second("second out", queryBytes),
      third("third out", queryBytes), lse("lse", lseBytes);
  fa_attention_tensors tensors{};
  tensors.q = tensors.k = tensors.v = qDevice.get();
  tensors.out = first.get();
  tensors.lse = lse.get();
  // The primary context current (the GpuTest's): the reference run.
  const CUcontext primary = currentContext();
  fa_attention_plan plan = attentionPlan(problem);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  EXPECT_EQ(currentContext(), primary);

  // Another context current (pushed over the primary one): the plan, whose
  // kernels load now, and the launch run in the primary context, and the
  // caller's stays current.
  CUdevice device = 0;
  checkCu(driver().cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext other = nullptr;
  checkCu(functions.create(&other, 0, device), "cuCtxCreate");
  ASSERT_EQ(currentContext(), other);
  fa_layer_norm_plan layerNorm = nullptr;
  EXPECT_EQ(
      fa_layer_norm_plan_create(library, FA_DTYPE_F16, 5, 300, &layerNorm),
      FA_SUCCESS)
      << lastError();
  EXPECT_EQ(currentContext(), other);
  tensors.out = second.get();
  EXPECT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  EXPECT_EQ(currentContext(), other);
  CUcontext popped = nullptr;
  checkCu(driver().cuCtxPopCurrent(&popped), "popping the other context");
  EXPECT_EQ(popped, other);
  checkCu(functions.destroy(other), "cuCtxDestroy");

  // No context current (the primary one popped too): it stays that way.
  checkCu(driver().cuCtxSetCurrent(nullptr), "clearing the current context");
  ASSERT_EQ(currentContext(), nullptr);
  tensors.out = third.get();
  EXPECT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  EXPECT_EQ(currentContext(), nullptr);
  fa_attention_plan_destroy(plan);
  fa_layer_norm_plan_destroy(layerNorm);

  checkCu(driver().cuCtxSetCurrent(primary), "restoring the primary context");
  stream->synchronize();
  EXPECT_TRUE(second.download() == first.download());
  EXPECT_TRUE(third.download() == first.download());
}

TEST_F(CApiGpuTest, LayerNormMatchesTheLaunchesAndTheReference) {
  const double eps = 1e-5;
  struct Case {
    DType dtype;
    LayerNormShape shape;
  };
  // Rows for the c128 kernel, the persistent c512 forward, and the
  // non-resident kernels; 37 rows, off every tile.
  for (const Case &c :
       {Case{DType::BF16, {37, 100}}, Case{DType::F16, {37, 500}},
        Case{DType::F32, {37, 3000}}}) {
    SCOPED_TRACE(std::string(dtypeName(c.dtype)) + " " + c.shape.describe());
    const DType dtype = c.dtype;
    const LayerNormShape &shape = c.shape;
    fa_layer_norm_plan plan = nullptr;
    ASSERT_EQ(fa_layer_norm_plan_create(library, capiDtype(dtype), shape.rows,
                                        shape.cols, &plan),
              FA_SUCCESS)
        << lastError();
    HostTensor x = randomTensor(shape.matrix(), dtype, 1);
    HostTensor weight = randomTensor(shape.row(), dtype, 2);
    HostTensor bias = randomTensor(shape.row(), dtype, 3);
    HostTensor dy = randomTensor(shape.matrix(), dtype, 4);
    DeviceBuffer xDevice = upload("x", x, dtype),
                 weightDevice = upload("weight", weight, dtype),
                 biasDevice = upload("bias", bias, dtype),
                 dyDevice = upload("dy", dy, dtype);
    const std::size_t matrixBytes = tensorBytes(shape.matrix(), dtype);
    const std::size_t rowBytes = tensorBytes(shape.perRow(), DType::F32);
    const std::size_t colBytes = tensorBytes(shape.row(), DType::F32);
    DeviceBuffer y = poisoned("y", matrixBytes, *stream),
                 mean = poisoned("mean", rowBytes, *stream),
                 rstd = poisoned("rstd", rowBytes, *stream),
                 launchY = poisoned("launch y", matrixBytes, *stream),
                 launchMean = poisoned("launch mean", rowBytes, *stream),
                 launchRstd = poisoned("launch rstd", rowBytes, *stream);
    ASSERT_EQ(fa_layer_norm_forward(plan, xDevice.get(), weightDevice.get(),
                                    biasDevice.get(), y.get(), mean.get(),
                                    rstd.get(), eps, stream->get()),
              FA_SUCCESS)
        << lastError();
    Kernel forward(
        chooseLayerNormKernel(kernels, kLayerNormForwardOp, dtype, shape.cols),
        context->device());
    LayerNormForwardLaunch(forward, shape,
                           {xDevice.get(), weightDevice.get(), biasDevice.get(),
                            launchY.get(), launchMean.get(), launchRstd.get()},
                           eps)
        .enqueue(*stream);
    stream->synchronize();
    expectSameBytes(y, launchY, "y");
    expectSameBytes(mean, launchMean, "mean");
    expectSameBytes(rstd, launchRstd, "rstd");
    LayerNormForwardReference reference = referenceLayerNormForward(
        shape, x.values, weight.values, bias.values, eps);
    expectClose(y, dtype, reference.y, defaultLayerNormTolerance(dtype), "y");
    expectClose(mean, DType::F32, reference.mean,
                defaultLayerNormTolerance(DType::F32), "mean");
    expectClose(rstd, DType::F32, reference.rstd,
                defaultLayerNormTolerance(DType::F32), "rstd");

    size_t workspaceBytes = 0;
    ASSERT_EQ(fa_layer_norm_backward_workspace_size(plan, &workspaceBytes),
              FA_SUCCESS)
        << lastError();
    DeviceBuffer workspace = poisoned("workspace", workspaceBytes, *stream);
    DeviceBuffer dx = poisoned("dx", matrixBytes, *stream),
                 dweight = poisoned("dweight", colBytes, *stream),
                 dbias = poisoned("dbias", colBytes, *stream),
                 launchDx = poisoned("launch dx", matrixBytes, *stream),
                 launchDweight = poisoned("launch dweight", colBytes, *stream),
                 launchDbias = poisoned("launch dbias", colBytes, *stream);
    EXPECT_EQ(fa_layer_norm_backward(plan, xDevice.get(), weightDevice.get(),
                                     mean.get(), rstd.get(), dyDevice.get(),
                                     dx.get(), dweight.get(), dbias.get(),
                                     workspace.get(), workspaceBytes - 1,
                                     stream->get()),
              FA_ERROR_WORKSPACE);
    ASSERT_EQ(fa_layer_norm_backward(
                  plan, xDevice.get(), weightDevice.get(), mean.get(),
                  rstd.get(), dyDevice.get(), dx.get(), dweight.get(),
                  dbias.get(), workspace.get(), workspaceBytes, stream->get()),
              FA_SUCCESS)
        << lastError();
    const KernelSpec &backwardSpec =
        chooseLayerNormKernel(kernels, kLayerNormBackwardOp, dtype, shape.cols);
    Kernel backward(backwardSpec, context->device());
    Kernel params(layerNormParamsKernel(kernels, backwardSpec),
                  context->device());
    LayerNormBackwardLaunch launch(backward, params, shape,
                                   {xDevice.get(), weightDevice.get(),
                                    mean.get(), rstd.get(), dyDevice.get(),
                                    launchDx.get(), launchDweight.get(),
                                    launchDbias.get()});
    EXPECT_EQ(
        workspaceBytes,
        2 * ((layerNormPartialBytes(backwardSpec, launch.blocks(), shape) +
              255) /
             256 * 256));
    launch.fillPartials(kNaNBytes, *stream);
    launch.enqueue(*stream);
    stream->synchronize();
    expectSameBytes(dx, launchDx, "dx");
    expectSameBytes(dweight, launchDweight, "dweight");
    expectSameBytes(dbias, launchDbias, "dbias");
    LayerNormBackwardReference grad = referenceLayerNormBackward(
        shape, x.values, weight.values, dy.values, eps);
    expectClose(dx, dtype, grad.dx, defaultLayerNormTolerance(dtype), "dx");
    expectClose(dweight, DType::F32, grad.dweight,
                defaultLayerNormTolerance(DType::F32), "dweight");
    expectClose(dbias, DType::F32, grad.dbias,
                defaultLayerNormTolerance(DType::F32), "dbias");
    fa_layer_norm_plan_destroy(plan);
  }
}

TEST_F(CApiGpuTest, LayerNormRejectsBadEpsAndSizes) {
  fa_layer_norm_plan plan = nullptr;
  EXPECT_EQ(fa_layer_norm_plan_create(library, FA_DTYPE_BF16, 0, 128, &plan),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  ASSERT_EQ(fa_layer_norm_plan_create(library, FA_DTYPE_BF16, 4, 128, &plan),
            FA_SUCCESS)
      << lastError();
  DeviceBuffer any("any", 4096);
  EXPECT_EQ(fa_layer_norm_forward(plan, any.get(), any.get(), any.get(),
                                  any.get(), any.get(), any.get(), 1e-50,
                                  stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("eps must be positive and finite"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_layer_norm_forward(plan, 0, any.get(), any.get(), any.get(),
                                  any.get(), any.get(), 1e-5, stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("x is 0"), std::string::npos) << lastError();
  fa_layer_norm_plan_destroy(plan);
}

/// KernelArgs' tensor maps encoded from their tensors (derived maps), with
/// the driver: packed from a null placeholder they are refused until
/// refreshTensorMaps encodes them from the pointer patched in, exactly as
/// encodeTiledTensorMap encodes that address, in copies independently.
class DerivedTensorMapGpuTest : public GpuTest {};

TEST_F(DerivedTensorMapGpuTest, RefreshEncodesTheTensorsCurrentAddress) {
  KernelParam kMap{"k_tma", ParamKind::TensorMap, DType::BF16};
  kMap.tensor = "k";
  kMap.box = {1, 1, 128, 64};
  kMap.swizzle = TensorMapSwizzle::Bytes128;
  KernelSpec spec;
  spec.name = "derived_maps";
  spec.params = {{"k", ParamKind::Memref, DType::BF16, 4}, kMap};
  const Shape shape{1, 2, 300, 64};
  DeviceBuffer first("first k", tensorBytes(shape, DType::BF16)),
      second("second k", tensorBytes(shape, DType::BF16));
  auto encoded = [&](CUdeviceptr address) {
    return encodeTiledTensorMap(
        tensorMapSpecOf(kMap, MemrefArg{address, DType::BF16, shape}));
  };
  auto point = [](KernelArgs &args, CUdeviceptr address) {
    args.setSlot(args.slotOf("k"), address);
    args.setSlot(args.slotOf("k") + 1, address);
    args.refreshTensorMaps();
  };
  const std::size_t mapSlot = 11; // After k's 3 + 2 * 4 slots.
  auto mapOf = [&](KernelArgs &args) {
    CUtensorMap map;
    std::memcpy(&map, args.pointers()[mapSlot], sizeof(map));
    return map;
  };
  auto same = [](const CUtensorMap &a, const CUtensorMap &b) {
    return std::memcmp(&a, &b, sizeof(CUtensorMap)) == 0;
  };

  KernelArgs args(spec, {{"k", MemrefArg{0, DType::BF16, shape}}});
  EXPECT_FALSE(args.ready());
  EXPECT_THROW(args.pointers(), Error);
  point(args, first.get());
  ASSERT_TRUE(args.ready());
  const CUtensorMap firstMap = encoded(first.get()),
                    secondMap = encoded(second.get());
  ASSERT_FALSE(same(firstMap, secondMap));
  EXPECT_TRUE(same(mapOf(args), firstMap));

  // A copy follows its own pointer; the original keeps its map.
  KernelArgs copy(args);
  EXPECT_NE(copy.pointers()[mapSlot], args.pointers()[mapSlot]);
  point(copy, second.get());
  ASSERT_TRUE(copy.ready());
  EXPECT_TRUE(same(mapOf(copy), secondMap));
  EXPECT_TRUE(same(mapOf(args), firstMap));
  // Patched without a refresh, the map is stale and refused.
  copy.setSlot(copy.slotOf("k") + 1, first.get());
  EXPECT_EQ(copy.staleTensorMaps(), std::vector<std::string>{"k_tma"});
  EXPECT_THROW(copy.pointers(), Error);
  copy.refreshTensorMaps();
  EXPECT_TRUE(same(mapOf(copy), firstMap));

  // Packed from a real pointer, a map is encoded at once.
  KernelArgs direct(spec, {{"k", MemrefArg{second.get(), DType::BF16, shape}}});
  EXPECT_TRUE(direct.ready());
  EXPECT_TRUE(same(mapOf(direct), secondMap));
  // Back to the placeholder: refused again.
  point(direct, 0);
  EXPECT_FALSE(direct.ready());
  EXPECT_THROW(direct.pointers(), Error);
}

#ifdef FA_GENERATED_KERNELS_DIR
/// The generated library through the C API, its bf16 D=128 non-causal
/// forward chosen through a tuning cache written here: the warp-specialised
/// kernel, whose k_tma and v_tma KernelArgs encodes from k and v. A plan
/// packs its arguments once from null placeholders, so each launch must
/// encode the maps of its own k and v.
class CApiDerivedTensorMapGpuTest : public GpuTest {
protected:
  static constexpr const char *kKernel =
      "attention_fwd_bf16_d128_m128n128w8qs2gop";

  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    // The library's kernels are compiled for sm_90a.
    const DeviceInfo &device = context->device();
    if (device.computeMajor != 9 || device.computeMinor != 0)
      GTEST_SKIP() << "the generated library's kernels need sm_90a; "
                   << device.name << " is " << device.smName();
    KernelLibrary generated = KernelLibrary::load(FA_GENERATED_KERNELS_DIR);
    const KernelSpec *spec = generated.named(kKernel);
    ASSERT_NE(spec, nullptr)
        << FA_GENERATED_KERNELS_DIR << " has no " << kKernel;
    bool derived = false;
    for (const KernelParam &param : spec->params)
      derived = derived || (param.kind == ParamKind::TensorMap &&
                            param.tensor == "k" && param.name == "k_tma");
    ASSERT_TRUE(derived) << kKernel << " takes no k_tma encoded from k";
    TuningCache cache;
    cache.device = device.name;
    for (const SeqClass &seqClass : kSeqClasses) {
      TuningEntry entry;
      entry.group =
          KernelQuery(kAttentionForwardOp, DType::BF16, 128, /*causal=*/false);
      entry.seqClass = seqClass.name;
      entry.kernel = kKernel;
      entry.tflops = 1;
      entry.candidates = {{kKernel, 1.0}};
      cache.record(entry);
    }
    cachePath = ::testing::TempDir() + "fa_capi_derived_maps_tuning.json";
    cache.save(cachePath);
    ASSERT_EQ(fa_library_open(FA_GENERATED_KERNELS_DIR, 0, cachePath.c_str(),
                              &library),
              FA_SUCCESS)
        << lastError();
  }
  void TearDown() override {
    fa_library_close(library);
    if (!cachePath.empty())
      std::remove(cachePath.c_str());
  }

  fa_library library = nullptr;
  std::string cachePath;
};

/// One launch's tensors on the device, from inputs of seed `seed`.
struct ForwardTensors {
  ForwardTensors(const AttentionShape &shape, unsigned seed,
                 const Stream &stream)
      : q(randomTensor(shape.query(), DType::BF16, seed)),
        k(randomTensor(shape.keyValue(), DType::BF16, seed + 1)),
        v(randomTensor(shape.keyValue(), DType::BF16, seed + 2)),
        qDevice(upload("q", q, DType::BF16)),
        kDevice(upload("k", k, DType::BF16)),
        vDevice(upload("v", v, DType::BF16)),
        out(poisoned("out", tensorBytes(shape.query(), DType::BF16), stream)),
        lse(poisoned("lse", tensorBytes(shape.logSumExp(), DType::F32),
                     stream)) {}

  fa_attention_tensors tensors() const {
    fa_attention_tensors tensors{};
    tensors.q = qDevice.get();
    tensors.k = kDevice.get();
    tensors.v = vDevice.get();
    tensors.out = out.get();
    tensors.lse = lse.get();
    return tensors;
  }

  HostTensor q, k, v;
  DeviceBuffer qDevice, kDevice, vDevice, out, lse;
};

TEST_F(CApiDerivedTensorMapGpuTest, EachLaunchReadsItsOwnKeysAndValues) {
  // A key tail (300 = 2 * 128 + 44) and grouped-query heads.
  const AttentionShape shape{2, 4, 2, 200, 300, 128};
  fa_attention_problem problem = problemOf(DType::BF16, shape, FA_CAUSAL_NONE);
  fa_attention_plan plan = nullptr;
  ASSERT_EQ(fa_attention_plan_create(library, &problem, &plan), FA_SUCCESS)
      << lastError();
  ASSERT_STREQ(fa_attention_plan_forward_kernel(plan), kKernel);
  // The launches below pass no workspace: the kernel takes no tile counter.
  size_t workspaceBytes = 1;
  ASSERT_EQ(fa_attention_forward_workspace_size(plan, &workspaceBytes),
            FA_SUCCESS)
      << lastError();
  ASSERT_EQ(workspaceBytes, 0u);
  const double scale = fa_attention_plan_scale(plan);
  // Two launches of one plan on different buffers: were the maps those of
  // the first launch's k and v (or of the placeholder), the second's
  // output would not match its own reference.
  ForwardTensors first(shape, 10, *stream), second(shape, 20, *stream);
  for (ForwardTensors *run : {&first, &second}) {
    fa_attention_tensors tensors = run->tensors();
    ASSERT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
              FA_SUCCESS)
        << lastError();
  }
  // The first buffers again, into a fresh output: the maps follow back.
  DeviceBuffer again =
      poisoned("out again", tensorBytes(shape.query(), DType::BF16), *stream);
  fa_attention_tensors tensors = first.tensors();
  tensors.out = again.get();
  ASSERT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  stream->synchronize();
  const double tolerance = defaultRelativeTolerance(DType::BF16);
  for (ForwardTensors *run : {&first, &second}) {
    SCOPED_TRACE(run == &first ? "first buffers" : "second buffers");
    AttentionReference reference = referenceAttentionCpu(
        shape, run->q.values, run->k.values, run->v.values, scale, {});
    expectClose(run->out, DType::BF16, reference.out, tolerance, "out");
    expectClose(run->lse, DType::F32, reference.lse, tolerance, "lse");
  }
  EXPECT_FALSE(first.out.download() == second.out.download());
  EXPECT_TRUE(again.download() == first.out.download());

  // A k no TMA map can take (8 bytes past a 16-byte boundary) is the
  // caller's invalid argument, refused before anything is launched.
  DeviceBuffer untouched = poisoned(
      "untouched out", tensorBytes(shape.query(), DType::BF16), *stream);
  stream->synchronize();
  const Bytes poison = untouched.download();
  tensors = second.tensors();
  tensors.k += 8;
  tensors.out = untouched.get();
  EXPECT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("must be a multiple of 16 bytes"),
            std::string::npos)
      << lastError();
  stream->synchronize();
  EXPECT_TRUE(untouched.download() == poison);
  // The plan still works after the refusal.
  tensors.k -= 8;
  ASSERT_EQ(fa_attention_forward(plan, &tensors, 0, 0, stream->get()),
            FA_SUCCESS)
      << lastError();
  stream->synchronize();
  EXPECT_TRUE(untouched.download() == second.out.download());
  fa_attention_plan_destroy(plan);
}
#endif // FA_GENERATED_KERNELS_DIR

} // namespace
