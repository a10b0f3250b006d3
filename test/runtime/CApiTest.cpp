//===- CApiTest.cpp - fa.h's C API without a GPU --------------------------===//
//
// What libfa_runtime.so must get right before a GPU is involved: status
// names, null arguments answered with FA_ERROR_INVALID_ARGUMENT (never a
// crash), bad kernel directories and tuning caches failing with
// FA_ERROR_LIBRARY and a message naming the file, and the last error being
// per thread and replaced by each call.
//
//===----------------------------------------------------------------------===//

#include "fa/runtime/fa.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

std::string lastError() { return fa_last_error(); }

/// A fresh directory under the test's temporary directory.
std::string tempDirectory(const std::string &name) {
  std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / ("fa_capi_" + name);
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path) << text;
}

TEST(CApi, ReportsItsVersion) { EXPECT_EQ(fa_api_version(), FA_API_VERSION); }

TEST(CApi, NamesEveryStatus) {
  EXPECT_STREQ(fa_status_name(FA_SUCCESS), "FA_SUCCESS");
  EXPECT_STREQ(fa_status_name(FA_ERROR_INVALID_ARGUMENT),
               "FA_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(fa_status_name(FA_ERROR_UNSUPPORTED), "FA_ERROR_UNSUPPORTED");
  EXPECT_STREQ(fa_status_name(FA_ERROR_LIBRARY), "FA_ERROR_LIBRARY");
  EXPECT_STREQ(fa_status_name(FA_ERROR_NO_DEVICE), "FA_ERROR_NO_DEVICE");
  EXPECT_STREQ(fa_status_name(FA_ERROR_CUDA), "FA_ERROR_CUDA");
  EXPECT_STREQ(fa_status_name(FA_ERROR_WORKSPACE), "FA_ERROR_WORKSPACE");
  EXPECT_STREQ(fa_status_name(FA_ERROR_INTERNAL), "FA_ERROR_INTERNAL");
  EXPECT_STREQ(fa_status_name(static_cast<fa_status>(42)), "FA_STATUS_UNKNOWN");
}

TEST(CApi, OpeningWithNullArgumentsIsAnInvalidArgument) {
  fa_library library = reinterpret_cast<fa_library>(0x1);
  EXPECT_EQ(fa_library_open(nullptr, 0, nullptr, &library),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(library, nullptr) << "the handle is cleared on failure";
  EXPECT_NE(lastError().find("kernel_dir is null"), std::string::npos)
      << lastError();
  EXPECT_EQ(fa_library_open(FA_FIXTURE_KERNELS_DIR, 0, nullptr, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("library (where the handle goes) is null"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_library_open(FA_FIXTURE_KERNELS_DIR, -1, nullptr, &library),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("device_ordinal must be >= 0, got -1"),
            std::string::npos)
      << lastError();
}

TEST(CApi, EveryEntryPointRejectsNullHandles) {
  fa_attention_problem problem{};
  fa_attention_tensors tensors{};
  fa_attention_plan attention = nullptr;
  fa_layer_norm_plan layerNorm = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(fa_attention_plan_create(nullptr, &problem, &attention),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("creating an attention plan"), std::string::npos)
      << lastError();
  EXPECT_EQ(fa_attention_plan_create(nullptr, nullptr, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fa_attention_forward(nullptr, &tensors, 0, 0, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("launching the attention forward for (null "
                             "plan): plan is null"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(fa_attention_backward(nullptr, &tensors, 0, 0, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  bytes = 7;
  EXPECT_EQ(fa_attention_forward_workspace_size(nullptr, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("sizing the attention forward's workspace for "
                             "(null plan): plan is null"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(bytes, 7u) << "a failed query writes nothing";
  EXPECT_EQ(fa_attention_backward_workspace_size(nullptr, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      fa_layer_norm_plan_create(nullptr, FA_DTYPE_BF16, 4, 128, &layerNorm),
      FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fa_layer_norm_forward(nullptr, 1, 1, 1, 1, 1, 1, 1e-5, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fa_layer_norm_backward_workspace_size(nullptr, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fa_layer_norm_backward(nullptr, 1, 1, 1, 1, 1, 1, 1, 1, 256, 256,
                                   nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("launching the LayerNorm backward for (null "
                             "plan): plan is null"),
            std::string::npos)
      << lastError();
  // What returns no status answers null with an empty value.
  EXPECT_STREQ(fa_attention_plan_forward_kernel(nullptr), "");
  EXPECT_STREQ(fa_attention_plan_backward_kernel(nullptr), "");
  EXPECT_EQ(fa_attention_plan_scale(nullptr), 0.0);
  fa_attention_plan_destroy(nullptr);
  fa_layer_norm_plan_destroy(nullptr);
  fa_library_close(nullptr);
}

TEST(CApi, AMissingKernelDirectoryIsALibraryErrorNamingIt) {
  std::string missing = tempDirectory("missing") + "/no-such-dir";
  fa_library library = nullptr;
  EXPECT_EQ(fa_library_open(missing.c_str(), 0, nullptr, &library),
            FA_ERROR_LIBRARY);
  EXPECT_EQ(library, nullptr);
  EXPECT_NE(lastError().find("opening the kernel library " + missing),
            std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find(missing + "/manifest.json"), std::string::npos)
      << lastError();
}

TEST(CApi, AMalformedManifestIsALibraryErrorNamingIt) {
  std::string directory = tempDirectory("malformed");
  writeFile(directory + "/manifest.json", "{\"format\": \"fa-kernel-lib");
  fa_library library = nullptr;
  EXPECT_EQ(fa_library_open(directory.c_str(), 0, nullptr, &library),
            FA_ERROR_LIBRARY);
  EXPECT_NE(lastError().find(directory + "/manifest.json"), std::string::npos)
      << lastError();
}

TEST(CApi, AMissingOrMalformedTuningCacheIsALibraryErrorNamingIt) {
  std::string directory = tempDirectory("tuning");
  std::string missing = directory + "/missing.json";
  fa_library library = nullptr;
  EXPECT_EQ(
      fa_library_open(FA_FIXTURE_KERNELS_DIR, 0, missing.c_str(), &library),
      FA_ERROR_LIBRARY);
  EXPECT_NE(lastError().find(missing), std::string::npos) << lastError();
  std::string malformed = directory + "/tuning.json";
  writeFile(malformed, "{\"format\": \"fa-tuning-cache\", \"version\": 1}");
  EXPECT_EQ(
      fa_library_open(FA_FIXTURE_KERNELS_DIR, 0, malformed.c_str(), &library),
      FA_ERROR_LIBRARY);
  EXPECT_NE(lastError().find(malformed), std::string::npos) << lastError();
}

TEST(CApi, AGoodLibraryOpensOrReportsNoDevice) {
  fa_library library = nullptr;
  fa_status status = fa_library_open(FA_FIXTURE_KERNELS_DIR, 0, "", &library);
  if (status == FA_ERROR_NO_DEVICE) {
    EXPECT_NE(lastError().find("no CUDA device"), std::string::npos)
        << lastError();
    EXPECT_EQ(library, nullptr);
    return;
  }
  ASSERT_EQ(status, FA_SUCCESS) << lastError();
  EXPECT_EQ(lastError(), "");
  fa_library_close(library);
}

TEST(CApi, TheLastErrorIsPerThreadAndReplacedByEachCall) {
  EXPECT_EQ(fa_library_open(nullptr, 0, nullptr, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  std::string first = lastError();
  EXPECT_NE(first.find("library (where the handle goes) is null"),
            std::string::npos)
      << first;
  std::string otherThread = "unset";
  std::thread([&] { otherThread = fa_last_error(); }).join();
  EXPECT_EQ(otherThread, "") << "another thread has no error of its own";
  std::thread([] {
    fa_attention_forward(nullptr, nullptr, 0, 0, nullptr);
  }).join();
  EXPECT_EQ(lastError(), first) << "another thread's failure is its own";
  size_t bytes = 0;
  EXPECT_EQ(fa_layer_norm_backward_workspace_size(nullptr, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError().find("library (where"), std::string::npos)
      << "the next call replaces the message: " << lastError();
  EXPECT_NE(lastError().find("sizing the LayerNorm backward's workspace"),
            std::string::npos)
      << lastError();
}

} // namespace
