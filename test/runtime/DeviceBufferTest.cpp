//===- DeviceBufferTest.cpp - Counting device memory, no GPU --------------===//

#include "fa/runtime/DeviceBuffer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace fa;

namespace {

TEST(ByteHighWaterTest, PeakIsTheMostLiveAtOnce) {
  ByteHighWater bytes;
  EXPECT_TRUE(bytes.add(100));
  EXPECT_TRUE(bytes.add(50));
  bytes.subtract(100);
  EXPECT_EQ(bytes.live(), 50u);
  EXPECT_EQ(bytes.peak(), 150u);
  // Back up to 150 is not above the peak; 151 is.
  EXPECT_FALSE(bytes.add(100));
  EXPECT_EQ(bytes.peak(), 150u);
  EXPECT_TRUE(bytes.add(1));
  EXPECT_EQ(bytes.peak(), 151u);
  bytes.subtract(151);
  EXPECT_EQ(bytes.live(), 0u);
  EXPECT_EQ(bytes.peak(), 151u);
}

TEST(ByteHighWaterTest, CountsFromManyThreads) {
  ByteHighWater bytes;
  constexpr int kThreads = 8, kRounds = 10000;
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread)
    threads.emplace_back([&bytes] {
      for (int round = 0; round < kRounds; ++round) {
        bytes.add(3);
        bytes.subtract(3);
      }
      bytes.add(1);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(bytes.live(), std::size_t(kThreads));
  // Every thread holds at most 3 bytes at a time, or 1 at its end.
  EXPECT_GE(bytes.peak(), std::size_t(3));
  EXPECT_LE(bytes.peak(), std::size_t(3 * kThreads));
}

TEST(DeviceBufferTest, EmptyBufferAllocatesAndCountsNothing) {
  // A zero-byte buffer never calls the driver, so this runs without a GPU.
  std::size_t live = DeviceBuffer::allocated().live();
  {
    DeviceBuffer empty("empty", 0);
    DeviceBuffer moved(std::move(empty));
    EXPECT_EQ(moved.get(), CUdeviceptr(0));
  }
  EXPECT_EQ(DeviceBuffer::allocated().live(), live);
}

} // namespace
