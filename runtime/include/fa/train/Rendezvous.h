//===- Rendezvous.h - Who am I, and the NCCL id from rank 0 -----*- C++ -*-===//
//
// The conventions users already know, in this order:
//   torchrun:  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//   mpirun:    OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//              OMPI_COMM_WORLD_LOCAL_RANK (MASTER_ADDR/MASTER_PORT still
//              needed for the TCP exchange)
//   Slurm:     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (likewise)
// No variables at all is a single-process run (rank 0 of 1). A partial or
// inconsistent set (RANK without WORLD_SIZE, RANK >= WORLD_SIZE, a world of
// more than kMaxWorldSize ranks, LOCAL_RANK >= WORLD_SIZE, a port that is
// not a number) is a clear error naming the variable.
//
// Rank 0 listens on MASTER_PORT and sends the NCCL unique id to each of the
// other ranks, which connect to MASTER_ADDR:MASTER_PORT (retrying while rank 0
// starts) and introduce themselves (protocol, world size, rank; see
// Rendezvous.cpp). Rank 0 drops a connection that is not a rank (a port
// probe, one that stalls) and goes on waiting; a rank that disagrees about
// the world (another job on the port, a different WORLD_SIZE or build) fails
// the exchange. Everything is bounded by a timeout and fails with a message
// that says who was waiting for whom.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_RENDEZVOUS_H
#define FA_TRAIN_RENDEZVOUS_H

#include "fa/train/Comm.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace fa::train {

/// The most ranks a world may have: rank 0 holds a connection to each during
/// the exchange (and raises its open-file limit to do so).
constexpr int kMaxWorldSize = 65536;

struct WorldInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr; // Empty when worldSize == 1.
  int masterPort = 0;
  /// "torchrun", "mpirun", "slurm" or "single process".
  std::string source = "single process";
};

/// Reads the variables through `getenv` (tests pass a map's lookup); throws
/// fa::Error naming the variable for a bad or missing one.
WorldInfo worldFromEnvironment(
    const std::function<std::optional<std::string>(const std::string &)>
        &getenv);
/// The same, from the process's environment.
WorldInfo worldFromEnvironment();

/// How rank 0 treats connections that have not yet said which rank they are.
struct RendezvousLimits {
  /// A connection that has not sent its whole hello by then is dropped (a
  /// rank sends it as soon as it has connected).
  std::chrono::milliseconds helloTimeout = std::chrono::seconds(5);
  /// At most this many wait for their hello at once; further connections
  /// wait in the listen backlog until one is identified or dropped.
  int pendingConnections = 64;
};

/// Rank 0: sends `id` to every other rank; others: receive it. Throws
/// fa::Error after `timeout` (naming the address and the missing ranks), or
/// at once for a world that is not valid (as worldFromEnvironment checks).
CommId exchangeCommId(const WorldInfo &world, const CommId &id,
                      std::chrono::milliseconds timeout,
                      const RendezvousLimits &limits = {});

} // namespace fa::train

#endif // FA_TRAIN_RENDEZVOUS_H
