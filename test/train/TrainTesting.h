//===- TrainTesting.h - What the training unit tests share ------*- C++ -*-===//
//
// Checking an fa::Error's message, a fresh directory per test and whole-file
// reads and writes. Header-only.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_TRAIN_TRAINTESTING_H
#define FA_TEST_TRAIN_TRAINTESTING_H

#include "fa/runtime/Error.h"

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fa::traintest {

using fa::errortest::errorOf;

inline ::testing::AssertionResult messageContains(const char *, const char *,
                                                  const std::string &message,
                                                  const std::string &text) {
  if (message.find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected an error containing \"" << text << "\", got \"" << message
         << "\"";
}

/// Expects `statement` to throw an fa::Error whose message contains `text`.
#define FA_EXPECT_ERROR(statement, text)                                       \
  EXPECT_PRED_FORMAT2(::fa::traintest::messageContains,                        \
                      ::fa::traintest::errorOf([&] { statement; }), text)

/// An empty directory for the running test, under ::testing::TempDir().
inline std::string testDirectory() {
  const ::testing::TestInfo *test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path directory =
      std::filesystem::path(::testing::TempDir()) / "fa-train-tests" /
      test->test_suite_name() / test->name();
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory.string();
}

inline std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace fa::traintest

#endif // FA_TEST_TRAIN_TRAINTESTING_H
