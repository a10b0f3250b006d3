//===- Launcher.h - A single-node launcher: one process per GPU -*- C++ -*-===//
//
// `fa-run train --nproc-per-node N ...` starts N copies of itself with the
// torchrun variables set (RANK = LOCAL_RANK = i, WORLD_SIZE = N,
// MASTER_ADDR = 127.0.0.1, MASTER_PORT = a free port), without
// --nproc-per-node, and waits for them. When one fails (non-zero exit or a
// signal), the others are stopped (SIGTERM, then SIGKILL after a grace
// period) and the launcher returns non-zero, saying which rank failed how.
// SIGINT, SIGTERM and SIGHUP to the launcher go on to the ranks (then SIGKILL
// after the grace period) and make it return 128 + the signal; a launcher
// that dies, even of SIGKILL, takes its ranks with it.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_LAUNCHER_H
#define FA_TRAIN_LAUNCHER_H

#include <chrono>
#include <string>
#include <vector>

namespace fa::train {

struct LaunchResult {
  int exitCode = 0;    // 0 when every rank succeeded.
  std::string failure; // "rank 1 exited with status 1", or empty.
};

/// Runs `program` with `arguments` (argv[1..]) as `processes` ranks (1 to
/// 1024) and waits; each rank gets the parent's environment plus the five
/// torchrun variables above (replacing any it had). The ranks die with the
/// calling thread, so call it from one that lives until it returns.
LaunchResult launchLocalRanks(
    const std::string &program, const std::vector<std::string> &arguments,
    int processes,
    std::chrono::milliseconds gracePeriod = std::chrono::seconds(10));

/// A TCP port on 127.0.0.1 that was free when asked (bind to port 0).
int freeLocalPort();

} // namespace fa::train

#endif // FA_TRAIN_LAUNCHER_H
