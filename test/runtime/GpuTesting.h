//===- GpuTesting.h - What the GPU tests share ------------------*- C++ -*-===//
//
// A test fixture that skips without a GPU, random tensors, uploads, and
// running the fa-run binary the way a user would. Header-only: each GPU test
// file includes it once.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_RUNTIME_GPUTESTING_H
#define FA_TEST_RUNTIME_GPUTESTING_H

#include "fa/runtime/Context.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Stream.h"
#include "fa/runtime/Tensor.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>

namespace fa::gputest {

/// Standard normal values rounded to `dtype`.
inline HostTensor randomTensor(const Shape &shape, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<std::size_t>(elementCount(shape)));
  for (float &value : values)
    value = roundToDType(normal(rng), dtype);
  return {shape, values};
}

inline DeviceBuffer upload(const std::string &name, const HostTensor &tensor,
                           DType dtype) {
  DeviceBuffer buffer(name, tensor.values.size() * dtypeBytes(dtype));
  buffer.upload(encode(tensor.values, dtype));
  return buffer;
}

/// Holds device 0's context and a stream; skips the test without a GPU.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    try {
      context = std::make_unique<Context>(0);
    } catch (const NoDeviceError &error) {
      GTEST_SKIP() << error.what();
    }
    stream = std::make_unique<Stream>();
  }

  std::unique_ptr<Context> context;
  std::unique_ptr<Stream> stream;
};

#ifdef FA_RUN_PATH // Defined by the test binaries that run fa-run.
/// Runs fa-run on the fixture library, files in a temporary directory.
class FaRunTest : public GpuTest {
protected:
  /// A temporary file, named after the test case.
  std::string path(const std::string &name) {
    const auto *test = ::testing::UnitTest::GetInstance()->current_test_info();
    return ::testing::TempDir() + "fa_run_" + test->name() + "_" + name;
  }

  /// fa-run's exit code for `arguments` (a subcommand and its options) on
  /// the library in `kernels`; its stdout and stderr are left in
  /// path("stdout") and path("stderr").
  int faRun(const std::string &arguments,
            const std::string &kernels = FA_FIXTURE_KERNELS_DIR) {
    std::string command = std::string(FA_RUN_PATH) + " " + arguments +
                          " --kernels " + kernels + " > " + path("stdout") +
                          " 2> " + path("stderr");
    return WEXITSTATUS(std::system(command.c_str()));
  }

  std::string stdoutText() { return fileText(path("stdout")); }
  std::string stderrText() { return fileText(path("stderr")); }

private:
  static std::string fileText(const std::string &path) {
    std::ifstream file(path);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }
};
#endif // FA_RUN_PATH

} // namespace fa::gputest

#endif // FA_TEST_RUNTIME_GPUTESTING_H
