//===- Comm.h - NCCL communicators, checked and bounded in time -*- C++ -*-===//
//
// One process per GPU; a Communicator is this process's member of the
// world. NCCL is bound at run time (dlopen of libnccl.so.2, as Driver.h binds
// libcuda), so fa-run runs on machines without NCCL until a distributed run
// asks for it; the error then says which library was looked for (and that
// LD_LIBRARY_PATH can point at one).
//
// NCCL reports a failed peer only as a hang, so every wait for a collective
// goes through wait(): it polls the stream and ncclCommGetAsyncError, and
// past the timeout aborts the communicator and throws, naming the operation,
// the rank and the world, so every surviving rank ends with a clear message
// instead of hanging.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_COMM_H
#define FA_TRAIN_COMM_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Stream.h"

#include <cuda.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace fa::train {

/// NCCL's unique id (ncclUniqueId is 128 bytes), as bytes to send over TCP.
using CommId = std::array<char, 128>;

/// A new unique id (rank 0 creates it; Rendezvous.h sends it to the others).
CommId createCommId();

/// The reduction of a collective.
enum class ReduceOp { Sum, Average };

class Communicator {
public:
  /// Joins the world of `worldSize` ranks as `rank` on the current context's
  /// GPU; waits for every rank to join, at most `timeout`.
  Communicator(const CommId &id, int rank, int worldSize,
               std::chrono::milliseconds timeout);
  /// Finalises (flushing outstanding work) unless aborted; never throws.
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int rank() const { return myRank; }
  int worldSize() const { return ranks; }

  // Collectives enqueue on `stream` and return; `count` is in elements of
  // `dtype` (BF16, F16 or F32). `what` names the data in errors
  // ("gradients bucket 3").
  void allReduce(CUdeviceptr send, CUdeviceptr recv, std::int64_t count,
                 DType dtype, ReduceOp op, const Stream &stream,
                 const std::string &what);
  /// recv (count elements) = op over ranks of send[rank * count ..].
  void reduceScatter(CUdeviceptr send, CUdeviceptr recv, std::int64_t count,
                     DType dtype, ReduceOp op, const Stream &stream,
                     const std::string &what);
  /// recv[r * count ..] = rank r's send (count elements each).
  void allGather(CUdeviceptr send, CUdeviceptr recv, std::int64_t count,
                 DType dtype, const Stream &stream, const std::string &what);

  /// Waits for `stream`'s work (collectives included), at most the timeout;
  /// on an NCCL error or a timeout aborts the communicator and throws
  /// fa::Error naming `what`, this rank and the world size.
  void wait(const Stream &stream, const std::string &what);

  std::chrono::milliseconds timeout() const { return limit; }

private:
  void *comm = nullptr; // ncclComm_t, kept out of this header.
  int myRank = 0, ranks = 1;
  std::chrono::milliseconds limit;
  bool aborted = false;
};

} // namespace fa::train

#endif // FA_TRAIN_COMM_H
