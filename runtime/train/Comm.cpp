//===- Comm.cpp - NCCL communicators, checked and bounded in time ---------===//
//
// Communicators are non-blocking (config.blocking = 0): every NCCL call
// returns at once, possibly with ncclInProgress, and the work finishes in the
// background. That is what lets joining the world and enqueueing a collective
// (whose first call sets up connections to its peers) be bounded by the
// timeout: we poll ncclCommGetAsyncError until the call is no longer in
// progress, as NCCL's documentation asks before the next call, and abort the
// communicator past the deadline.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Comm.h"

#include "TimeText.h"

#include "Nccl.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

#include <cstdint>
#include <cstring>
#include <iostream>
#include <sstream>
#include <thread>

namespace fa::train {
namespace {

using Clock = std::chrono::steady_clock;

/// How often a wait polls the stream and the communicator: short beside any
/// collective worth waiting for, long enough not to hog a core.
constexpr std::chrono::microseconds kPollInterval(100);

static_assert(sizeof(ncclUniqueId) == std::tuple_size<CommId>::value,
              "CommId must hold an ncclUniqueId");

ncclComm_t handle(void *comm) { return static_cast<ncclComm_t>(comm); }

void *devicePointer(CUdeviceptr pointer) {
  return reinterpret_cast<void *>(static_cast<std::uintptr_t>(pointer));
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::F32:
    return ncclFloat32;
  }
  throw Error("no NCCL type for element type " +
              std::to_string(static_cast<int>(dtype)));
}

ncclRedOp_t ncclOp(ReduceOp op) {
  return op == ReduceOp::Sum ? ncclSum : ncclAvg;
}

/// "60 s", "0.3 s".
std::string rankText(int rank, int worldSize) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize);
}

/// "unhandled system error (<NCCL's last message>)".
std::string describe(ncclResult_t result) {
  const NcclApi &api = nccl();
  std::string text = api.ncclGetErrorString(result);
  // The last error is per thread; the argument is unused.
  const char *last = api.ncclGetLastError(nullptr);
  if (last && *last)
    text += std::string(" (") + last + ")";
  return text;
}

/// Polls `comm` after a call on it returned `result` until the call is no
/// longer in progress: its final result, or ncclInProgress when `deadline`
/// passed first.
ncclResult_t settle(ncclComm_t comm, ncclResult_t result,
                    Clock::time_point deadline) {
  if (result != ncclSuccess && result != ncclInProgress)
    return result;
  const NcclApi &api = nccl();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t query = api.ncclCommGetAsyncError(comm, &state);
    if (query != ncclSuccess)
      return query;
    if (state != ncclInProgress || Clock::now() >= deadline)
      return state;
    std::this_thread::sleep_for(kPollInterval);
  }
}

/// Aborts `comm` (which frees it, and makes the kernels of its collectives
/// return) and throws Error("<doing>: <reason>").
[[noreturn]] void abortAndThrow(void *&comm, bool &aborted,
                                const std::string &doing,
                                const std::string &reason) {
  nccl().ncclCommAbort(handle(comm));
  comm = nullptr;
  aborted = true;
  throw Error(doing + ": " + reason);
}

/// The reason a rank gives when its peers stop answering.
std::string noProgress(std::chrono::milliseconds limit) {
  return "no progress within " + secondsText(limit) +
         "; a peer may have died or stopped";
}

void requireUsable(bool aborted, const std::string &doing) {
  if (aborted)
    throw Error(doing +
                ": the communicator was aborted after an earlier error");
}

/// Runs `call` (a collective on the communicator) and waits, at most `limit`,
/// until NCCL has taken it; aborts and throws on an error or past the limit.
template <typename Call>
void enqueue(void *&comm, bool &aborted, std::chrono::milliseconds limit,
             const std::string &doing, std::int64_t count, Call call) {
  requireUsable(aborted, doing);
  if (count < 0)
    throw Error(doing + ": the element count is negative");
  Clock::time_point deadline = Clock::now() + limit;
  ncclResult_t result =
      settle(handle(comm), call(static_cast<std::size_t>(count)), deadline);
  if (result == ncclInProgress)
    abortAndThrow(comm, aborted, doing, noProgress(limit));
  if (result != ncclSuccess)
    abortAndThrow(comm, aborted, doing, describe(result));
}

std::string collectiveText(const char *op, const std::string &what,
                           std::int64_t count, int rank, int worldSize) {
  return std::string(op) + " of " + what + " (" + std::to_string(count) +
         " elements) on " + rankText(rank, worldSize);
}

} // namespace

CommId createCommId() {
  ncclUniqueId unique;
  ncclResult_t result = nccl().ncclGetUniqueId(&unique);
  if (result != ncclSuccess)
    throw Error("creating the NCCL unique id (ncclGetUniqueId): " +
                describe(result));
  CommId id;
  std::memcpy(id.data(), unique.internal, id.size());
  return id;
}

Communicator::Communicator(const CommId &id, int rank, int worldSize,
                           std::chrono::milliseconds timeout)
    : myRank(rank), ranks(worldSize), limit(timeout) {
  std::string doing = "joining the NCCL world as " + rankText(rank, worldSize);
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw Error(doing + ": the rank must be in [0, world size)");
  const NcclApi &api = nccl();
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), id.size());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  Clock::time_point deadline = Clock::now() + timeout;
  ncclComm_t created = nullptr;
  ncclResult_t result =
      api.ncclCommInitRankConfig(&created, worldSize, unique, rank, &config);
  if (!created)
    throw Error(doing + ": " + describe(result));
  comm = created;
  result = settle(created, result, deadline);
  if (result == ncclInProgress)
    abortAndThrow(comm, aborted, doing,
                  "no answer from the other ranks within " +
                      secondsText(timeout));
  if (result != ncclSuccess)
    abortAndThrow(comm, aborted, doing, describe(result));
}

Communicator::~Communicator() {
  if (aborted || !comm)
    return;
  // The constructor loaded NCCL, so this cannot throw.
  const NcclApi &api = nccl();
  ncclResult_t result = settle(handle(comm), api.ncclCommFinalize(handle(comm)),
                               Clock::now() + limit);
  if (result == ncclSuccess) {
    // In-progress is fine too: the communicator is gone either way.
    result = api.ncclCommDestroy(handle(comm));
    if (result != ncclSuccess && result != ncclInProgress)
      std::cerr << "warning: destroying the NCCL communicator of "
                << rankText(myRank, ranks) << ": " << describe(result) << "\n";
    return;
  }
  std::cerr << "warning: finalising the NCCL communicator of "
            << rankText(myRank, ranks) << ": "
            << (result == ncclInProgress ? noProgress(limit) : describe(result))
            << "; aborting it\n";
  api.ncclCommAbort(handle(comm));
}

void Communicator::allReduce(CUdeviceptr send, CUdeviceptr recv,
                             std::int64_t count, DType dtype, ReduceOp op,
                             const Stream &stream, const std::string &what) {
  enqueue(comm, aborted, limit,
          collectiveText("all-reduce", what, count, myRank, ranks), count,
          [&](std::size_t elements) {
            return nccl().ncclAllReduce(
                devicePointer(send), devicePointer(recv), elements,
                ncclType(dtype), ncclOp(op), handle(comm), stream.get());
          });
}

void Communicator::reduceScatter(CUdeviceptr send, CUdeviceptr recv,
                                 std::int64_t count, DType dtype, ReduceOp op,
                                 const Stream &stream,
                                 const std::string &what) {
  enqueue(comm, aborted, limit,
          collectiveText("reduce-scatter", what, count, myRank, ranks), count,
          [&](std::size_t elements) {
            return nccl().ncclReduceScatter(
                devicePointer(send), devicePointer(recv), elements,
                ncclType(dtype), ncclOp(op), handle(comm), stream.get());
          });
}

void Communicator::allGather(CUdeviceptr send, CUdeviceptr recv,
                             std::int64_t count, DType dtype,
                             const Stream &stream, const std::string &what) {
  enqueue(comm, aborted, limit,
          collectiveText("all-gather", what, count, myRank, ranks), count,
          [&](std::size_t elements) {
            return nccl().ncclAllGather(
                devicePointer(send), devicePointer(recv), elements,
                ncclType(dtype), handle(comm), stream.get());
          });
}

void Communicator::wait(const Stream &stream, const std::string &what) {
  std::string doing = "waiting for " + what + " on " + rankText(myRank, ranks);
  requireUsable(aborted, doing);
  const DriverApi &cu = driver();
  const NcclApi &api = nccl();
  Clock::time_point deadline = Clock::now() + limit;
  for (;;) {
    CUresult done = cu.cuStreamQuery(stream.get());
    if (done == CUDA_SUCCESS)
      return;
    if (done != CUDA_ERROR_NOT_READY)
      checkCu(done, doing);
    ncclResult_t state = ncclSuccess;
    ncclResult_t query = api.ncclCommGetAsyncError(handle(comm), &state);
    if (query != ncclSuccess)
      state = query;
    if (state != ncclSuccess && state != ncclInProgress)
      abortAndThrow(comm, aborted, doing, describe(state));
    if (Clock::now() >= deadline)
      abortAndThrow(comm, aborted, doing, noProgress(limit));
    std::this_thread::sleep_for(kPollInterval);
  }
}

} // namespace fa::train
