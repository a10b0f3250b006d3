//===- CommGpuTest.cpp - NCCL communicators on the GPUs there are ---------===//
//
// Without a GPU: loading NCCL from a wrong place, or a library that is not
// NCCL, says which library and what to do; a rank outside the world is
// refused before NCCL is touched.
//
// With a GPU and NCCL: a world of one, where every collective is a copy
// (bf16, f16, f32; out of place and in place), and a rank that waits alone
// for a world of two gives up at its timeout.
//
// With two or more GPUs: a world of one thread per GPU checks each
// collective's arithmetic (small integers, so sums are exact in every
// type), and a rank whose peer stops taking part ends at its timeout with a
// message naming the data, the rank and the world, then refuses further work.
//
// Skipped without a GPU or without libnccl.so.2 on the library path.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Comm.h"

#include "Nccl.h"

#include "GpuTesting.h"
#include "TrainTesting.h"

#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace fa;
using namespace fa::gputest;
using namespace fa::train;
using std::chrono::milliseconds;

namespace {

constexpr std::uint8_t kNaNBytes = 0xFF;
constexpr std::int64_t kCount = 1001;

#define EXPECT_CONTAINS(message, text)                                         \
  EXPECT_PRED_FORMAT2(::fa::traintest::messageContains, message, text)

// --- Without a GPU -----------------------------------------------------------

TEST(NcclLoadingTest, MissingLibraryIsNamed) {
  std::string message =
      traintest::errorOf([] { loadNcclApi("/nonexistent/libnccl.so.2"); });
  EXPECT_CONTAINS(message, "loading NCCL (/nonexistent/libnccl.so.2) for a "
                           "distributed run: ");
  EXPECT_CONTAINS(message, "; put the directory holding libnccl.so.2 on "
                           "LD_LIBRARY_PATH");
}

TEST(NcclLoadingTest, LibraryWithoutNcclIsNamed) {
  EXPECT_EQ(traintest::errorOf([] { loadNcclApi("libc.so.6"); }),
            "binding NCCL (libc.so.6): it has no function ncclGetVersion; "
            "NCCL 2.14.0 or newer is needed");
}

TEST(CommunicatorTest, RankMustBeInTheWorld) {
  EXPECT_EQ(traintest::errorOf(
                [] { Communicator comm(CommId{}, 2, 2, milliseconds(1000)); }),
            "joining the NCCL world as rank 2 of 2: the rank must be in [0, "
            "world size)");
}

// --- Values ------------------------------------------------------------------

/// Rank `rank`'s values: small integers, exact in bf16 and f16 and in their
/// sums over a few ranks.
std::vector<float> rankValues(int rank, std::int64_t count) {
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 13) + static_cast<float>(rank);
  return values;
}

DeviceBuffer deviceValues(const std::string &name,
                          const std::vector<float> &values, DType dtype) {
  return upload(name, {{static_cast<std::int64_t>(values.size())}, values},
                dtype);
}

/// A buffer of `count` NaNs, so that elements a collective skips show.
DeviceBuffer poisoned(const std::string &name, std::int64_t count, DType dtype,
                      const Stream &stream) {
  DeviceBuffer buffer(name,
                      static_cast<std::size_t>(count) * dtypeBytes(dtype));
  buffer.fill(kNaNBytes, stream.get());
  return buffer;
}

std::vector<float> hostValues(const DeviceBuffer &buffer, DType dtype) {
  return decode(buffer.download(), dtype);
}

// --- A world of one ----------------------------------------------------------

/// A GPU and NCCL; skips without either.
class NcclGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    try {
      nccl();
    } catch (const Error &error) {
      GTEST_SKIP() << error.what();
    }
  }
};

class CommGpuTest : public NcclGpuTest,
                    public ::testing::WithParamInterface<DType> {};

TEST_P(CommGpuTest, WorldOfOneCopies) {
  const DType dtype = GetParam();
  Communicator comm(createCommId(), 0, 1, milliseconds(30000));
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.worldSize(), 1);
  const std::vector<float> values = rankValues(0, kCount);
  DeviceBuffer send = deviceValues("send", values, dtype);
  DeviceBuffer recv = poisoned("recv", kCount, dtype, *stream);
  // Waits, expects recv to hold `values` and poisons it again.
  auto expectCopy = [&](const char *what) {
    comm.wait(*stream, what);
    EXPECT_EQ(hostValues(recv, dtype), values) << what;
    recv.fill(kNaNBytes, stream->get());
  };

  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average}) {
    comm.allReduce(send.get(), recv.get(), kCount, dtype, op, *stream,
                   "test values");
    expectCopy("the all-reduce");
    comm.reduceScatter(send.get(), recv.get(), kCount, dtype, op, *stream,
                       "test values");
    expectCopy("the reduce-scatter");
  }
  comm.allGather(send.get(), recv.get(), kCount, dtype, *stream, "test values");
  expectCopy("the all-gather");

  // In place.
  comm.allReduce(send.get(), send.get(), kCount, dtype, ReduceOp::Sum, *stream,
                 "test values");
  comm.wait(*stream, "the in-place all-reduce");
  EXPECT_EQ(hostValues(send, dtype), values);
}

INSTANTIATE_TEST_SUITE_P(Types, CommGpuTest,
                         ::testing::Values(DType::BF16, DType::F16, DType::F32),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

TEST_F(NcclGpuTest, NegativeCountIsNamed) {
  Communicator comm(createCommId(), 0, 1, milliseconds(30000));
  FA_EXPECT_ERROR(comm.allReduce(0, 0, -1, DType::F32, ReduceOp::Sum, *stream,
                                 "test values"),
                  "all-reduce of test values (-1 elements) on rank 0 of 1: "
                  "the element count is negative");
}

TEST_F(NcclGpuTest, RankAloneInAWorldOfTwoGivesUp) {
  auto start = std::chrono::steady_clock::now();
  FA_EXPECT_ERROR(Communicator(createCommId(), 0, 2, milliseconds(500)),
                  "joining the NCCL world as rank 0 of 2: no answer from the "
                  "other ranks within 0.5 s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(10000));
}

// --- One rank per GPU --------------------------------------------------------

/// Runs `body` as every rank of a world of `worldSize` threads, one GPU
/// each; returns each rank's error message ("" for none).
std::vector<std::string>
runWorld(int worldSize, milliseconds timeout,
         const std::function<void(int, Communicator &, const Stream &)> &body) {
  const CommId id = createCommId();
  std::vector<std::string> errors(static_cast<std::size_t>(worldSize));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < worldSize; ++rank)
    ranks.emplace_back([&, rank] {
      errors[static_cast<std::size_t>(rank)] = traintest::errorOf([&] {
        Context context(rank);
        Stream stream;
        Communicator comm(id, rank, worldSize, timeout);
        body(rank, comm, stream);
      });
      if (errors[static_cast<std::size_t>(rank)] == "no error")
        errors[static_cast<std::size_t>(rank)].clear();
    });
  for (std::thread &rank : ranks)
    rank.join();
  return errors;
}

/// Skips with fewer than two GPUs; otherwise their number.
class MultiGpuTest : public NcclGpuTest {
protected:
  void SetUp() override {
    NcclGpuTest::SetUp();
    if (IsSkipped())
      return;
    gpus = static_cast<int>(listDevices().size());
    if (gpus < 2)
      GTEST_SKIP() << "needs two GPUs, found " << gpus;
  }

  int gpus = 0;
};

class MultiGpuCommTest : public MultiGpuTest,
                         public ::testing::WithParamInterface<DType> {};

/// |got - expected| within the rounding of `dtype` (averages divide).
void expectNear(const std::vector<float> &got,
                const std::vector<double> &expected, DType dtype, int rank,
                const char *what) {
  const double relative = dtype == DType::BF16  ? 1.0 / 256
                          : dtype == DType::F16 ? 1.0 / 2048
                                                : 1e-6;
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - expected[i]),
              relative * std::fabs(expected[i]))
        << what << " on rank " << rank << ", element " << i << ": got "
        << got[i] << ", expected " << expected[i];
}

TEST_P(MultiGpuCommTest, CollectivesCombineEveryRank) {
  const DType dtype = GetParam();
  const int world = gpus;
  std::vector<std::string> errors = runWorld(
      world, milliseconds(60000),
      [&](int rank, Communicator &comm, const Stream &stream) {
        // What each collective gives: the sum and mean of every rank's
        // values, this rank's slice of the sum of every rank's world * kCount
        // values, and every rank's values one after the other.
        std::vector<double> sum(kCount, 0.0), slice(kCount, 0.0), gathered;
        for (int r = 0; r < world; ++r) {
          std::vector<float> values = rankValues(r, kCount);
          std::vector<float> whole = rankValues(r, world * kCount);
          for (std::int64_t i = 0; i < kCount; ++i) {
            sum[i] += values[i];
            slice[i] += whole[rank * kCount + i];
          }
          gathered.insert(gathered.end(), values.begin(), values.end());
        }
        std::vector<double> mean = sum;
        for (double &value : mean)
          value /= world;

        DeviceBuffer send =
            deviceValues("send", rankValues(rank, kCount), dtype);
        DeviceBuffer recv = poisoned("recv", kCount, dtype, stream);
        comm.allReduce(send.get(), recv.get(), kCount, dtype, ReduceOp::Sum,
                       stream, "test values");
        comm.wait(stream, "the all-reduce");
        expectNear(hostValues(recv, dtype), sum, dtype, rank, "sum");
        comm.allReduce(send.get(), recv.get(), kCount, dtype, ReduceOp::Average,
                       stream, "test values");
        comm.wait(stream, "the averaging all-reduce");
        expectNear(hostValues(recv, dtype), mean, dtype, rank, "mean");

        // reduce-scatter: this rank's slice of the sum of world * kCount.
        DeviceBuffer whole =
            deviceValues("whole", rankValues(rank, world * kCount), dtype);
        DeviceBuffer part = poisoned("part", kCount, dtype, stream);
        comm.reduceScatter(whole.get(), part.get(), kCount, dtype,
                           ReduceOp::Sum, stream, "test values");
        comm.wait(stream, "the reduce-scatter");
        expectNear(hostValues(part, dtype), slice, dtype, rank,
                   "reduce-scatter");

        // all-gather: rank r's values at r * kCount.
        DeviceBuffer all = poisoned("all", world * kCount, dtype, stream);
        comm.allGather(send.get(), all.get(), kCount, dtype, stream,
                       "test values");
        comm.wait(stream, "the all-gather");
        expectNear(hostValues(all, dtype), gathered, dtype, rank, "all-gather");
      });
  for (int rank = 0; rank < world; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(Types, MultiGpuCommTest,
                         ::testing::Values(DType::BF16, DType::F16, DType::F32),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

TEST_F(MultiGpuTest, PeerThatStopsEndsTheWaitAtTheTimeout) {
  const std::int64_t count = 1 << 20;
  std::string stalled, afterwards;
  std::vector<std::string> errors = runWorld(
      2, milliseconds(1000),
      [&](int rank, Communicator &comm, const Stream &stream) {
        DeviceBuffer buffer("gradients", count * sizeof(float));
        buffer.fill(0, stream.get());
        // Once together, so the connections are up.
        comm.allReduce(buffer.get(), buffer.get(), count, DType::F32,
                       ReduceOp::Sum, stream, "warm-up values");
        comm.wait(stream, "the warm-up");
        if (rank == 1)
          return; // Stops taking part, as a dead or stuck process would.
        stalled = traintest::errorOf([&] {
          comm.allReduce(buffer.get(), buffer.get(), count, DType::F32,
                         ReduceOp::Sum, stream, "gradients bucket 3");
          comm.wait(stream, "gradients bucket 3");
        });
        afterwards =
            traintest::errorOf([&] { comm.wait(stream, "the next step"); });
      });
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  // The enqueue or the wait notices, depending on when NCCL gives up.
  EXPECT_CONTAINS(stalled, "gradients bucket 3");
  EXPECT_CONTAINS(stalled, " on rank 0 of 2: no progress within 1 s; a peer "
                           "may have died or stopped");
  EXPECT_EQ(afterwards, "waiting for the next step on rank 0 of 2: the "
                        "communicator was aborted after an earlier error");
}

} // namespace
