//===- ErrorReportTest.cpp - fa-run's line and status per exception -------===//

#include "ErrorReport.h"

#include "fa/runtime/Error.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <new>
#include <sstream>
#include <stdexcept>

using namespace fa;

namespace {

struct Outcome {
  int status;
  std::string errors; // What went to stderr.
};

Outcome runAttention(const std::function<int()> &command,
                     bool skipIfNoGpu = false) {
  std::ostringstream errors;
  int status = runReportingErrors("attention", command, skipIfNoGpu, errors);
  return {status, errors.str()};
}

/// The outcome of an attention command that throws `exception`.
template <typename Exception> Outcome throwing(Exception exception) {
  return runAttention([&]() -> int { throw exception; });
}

TEST(ErrorReportTest, ACommandThatSucceedsKeepsItsStatus) {
  Outcome outcome = runAttention([] { return 0; });
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(outcome.errors, "");
}

TEST(ErrorReportTest, RuntimeErrorsAreTheirMessage) {
  Outcome outcome = throwing(Error("reading q.npy: file is truncated"));
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors, "fa-run: reading q.npy: file is truncated\n");
}

TEST(ErrorReportTest, NoGpuIsSkippedOnlyWhenAsked) {
  auto noGpu = []() -> int { throw NoDeviceError("no CUDA driver"); };
  EXPECT_EQ(runAttention(noGpu).status, 1);
  Outcome skipped = runAttention(noGpu, /*skipIfNoGpu=*/true);
  EXPECT_EQ(skipped.status, kSkippedExitCode);
  EXPECT_EQ(skipped.errors, "fa-run: no CUDA driver\n");
}

TEST(ErrorReportTest, OutOfHostMemoryIsOneLine) {
  Outcome outcome = throwing(std::bad_alloc());
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors,
            "fa-run: out of host memory while running fa-run attention\n");
  // What std::vector and std::string throw for sizes beyond any memory.
  outcome = throwing(std::length_error("vector::_M_default_append"));
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors,
            "fa-run: out of host memory while running fa-run attention: an "
            "allocation larger than any memory (vector::_M_default_append)\n");
}

TEST(ErrorReportTest, JsonErrorsAreOneLine) {
  Outcome outcome = runAttention(
      [] { return nlohmann::json::parse("{\"a\": ").size() > 0 ? 0 : 2; });
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors.rfind("fa-run: JSON error while running fa-run "
                                 "attention: [json.exception.parse_error.101]",
                                 0),
            0u)
      << outcome.errors;
  EXPECT_EQ(outcome.errors.find('\n'), outcome.errors.size() - 1);
}

TEST(ErrorReportTest, CommandLineErrorsAfterParsingAreOneLine) {
  Outcome outcome = throwing(CLI::ConversionError("abc", "--seq"));
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors.rfind("fa-run: command-line error while running "
                                 "fa-run attention: ",
                                 0),
            0u)
      << outcome.errors;
  EXPECT_NE(outcome.errors.find("--seq"), std::string::npos);
}

TEST(ErrorReportTest, AnyOtherExceptionIsOneLine) {
  Outcome outcome = throwing(std::out_of_range("map::at"));
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors,
            "fa-run: error while running fa-run attention: map::at\n");
  outcome = throwing(42);
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.errors,
            "fa-run: unknown error while running fa-run attention\n");
}

} // namespace
