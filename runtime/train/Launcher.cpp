//===- Launcher.cpp - One process per GPU, stopped together ---------------===//
//
// Each rank runs in its own process group, so a terminal's Ctrl-C reaches the
// launcher alone (which forwards it) and stopping a rank also stops whatever
// it started. The launcher polls the ranks with waitpid(WNOHANG): that one
// loop notices a failed rank, a signal sent to the launcher and the end of
// the grace period, without SIGCHLD handling or timers.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Launcher.h"

#include "fa/runtime/Error.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

extern char **environ;

namespace fa::train {

namespace {

using Clock = std::chrono::steady_clock;

/// How often the launcher looks at its ranks: short next to any grace period,
/// long enough that waiting costs no CPU worth measuring.
constexpr std::chrono::milliseconds pollInterval(5);

/// The signal the launcher received (SIGINT or SIGTERM), or 0. A signal
/// handler can only record; the wait loop acts on it.
volatile sig_atomic_t receivedSignal = 0;

void recordSignal(int signal) { receivedSignal = signal; }

/// Catches SIGINT and SIGTERM while the ranks run; restores what was there.
class ForwardedSignals {
public:
  ForwardedSignals() {
    receivedSignal = 0;
    struct sigaction action = {};
    action.sa_handler = recordSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previousInt);
    sigaction(SIGTERM, &action, &previousTerm);
  }
  ~ForwardedSignals() {
    sigaction(SIGINT, &previousInt, nullptr);
    sigaction(SIGTERM, &previousTerm, nullptr);
  }
  ForwardedSignals(const ForwardedSignals &) = delete;
  ForwardedSignals &operator=(const ForwardedSignals &) = delete;

private:
  struct sigaction previousInt = {};
  struct sigaction previousTerm = {};
};

std::string signalName(int signal) {
  const char *description = strsignal(signal);
  return std::to_string(signal) + " (" +
         (description ? description : "unknown signal") + ")";
}

/// The parent's environment without the variables the launcher sets, then
/// the launcher's (a stale RANK from the parent must not win).
std::vector<std::string> rankEnvironment(int rank, int processes, int port) {
  const std::vector<std::pair<std::string, std::string>> variables = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(processes)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(port)}};
  std::vector<std::string> environment;
  for (char **entry = environ; *entry; ++entry) {
    std::string text = *entry;
    std::string name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto &variable : variables)
      replaced |= name == variable.first;
    if (!replaced)
      environment.push_back(std::move(text));
  }
  for (const auto &[name, value] : variables)
    environment.push_back(name + "=" + value);
  return environment;
}

/// execve's view of `strings`: pointers into them, then a null.
std::vector<char *> nullTerminated(std::vector<std::string> &strings) {
  std::vector<char *> pointers;
  for (std::string &text : strings)
    pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

/// Starts one rank in a process group of its own, with default SIGINT and
/// SIGTERM handling and no blocked signals, whatever the launcher had.
pid_t spawnRank(const std::string &program,
                const std::vector<std::string> &arguments, int rank,
                int processes, int port) {
  std::vector<std::string> argvStrings = {program};
  argvStrings.insert(argvStrings.end(), arguments.begin(), arguments.end());
  std::vector<std::string> environment = rankEnvironment(rank, processes, port);
  std::vector<char *> argv = nullTerminated(argvStrings);
  std::vector<char *> envp = nullTerminated(environment);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigemptyset(&empty);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP |
                                            POSIX_SPAWN_SETSIGDEF |
                                            POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &empty);
  pid_t pid = 0;
  int status = posix_spawn(&pid, program.c_str(), nullptr, &attributes,
                           argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  if (status != 0)
    throw Error("starting rank " + std::to_string(rank) + " of " +
                std::to_string(processes) + " (" + program +
                "): " + std::strerror(status));
  return pid;
}

/// The ranks still running, by rank; a reaped rank's pid is cleared so that
/// it is never signalled again (its pid may belong to someone else by then).
class Ranks {
public:
  explicit Ranks(int processes) : pids(processes) {}

  /// Stops and reaps what was started when the launch throws.
  ~Ranks() { killAll(); }
  Ranks(const Ranks &) = delete;
  Ranks &operator=(const Ranks &) = delete;

  void started(int rank, pid_t pid) { pids[rank] = pid; }

  int running() const {
    int count = 0;
    for (const std::optional<pid_t> &pid : pids)
      count += pid.has_value();
    return count;
  }

  /// Signals the process group of every rank still running.
  void signalAll(int signal) const {
    for (const std::optional<pid_t> &pid : pids)
      if (pid)
        kill(-*pid, signal);
  }

  /// SIGKILL to every rank still running, then waits until all are reaped.
  void killAll() {
    signalAll(SIGKILL);
    while (running() > 0)
      reapExited(true);
  }

  /// Reaps the ranks that have ended (waiting for one when `block`) and
  /// returns how the first of them to fail failed, if one did.
  std::optional<LaunchResult> reapExited(bool block) {
    std::optional<LaunchResult> failure;
    for (int rank = 0; rank < static_cast<int>(pids.size()); ++rank) {
      if (!pids[rank])
        continue;
      int status = 0;
      pid_t reaped = waitpid(*pids[rank], &status, block ? 0 : WNOHANG);
      const int waitError = errno;
      if (reaped == 0 || (reaped < 0 && waitError == EINTR))
        continue;
      pids[rank].reset();
      block = false;
      std::optional<LaunchResult> result =
          reaped < 0 ? lost(rank, waitError) : describe(rank, status);
      if (result && !failure)
        failure = result;
    }
    return failure;
  }

private:
  static std::optional<LaunchResult> describe(int rank, int status) {
    std::string name = "rank " + std::to_string(rank);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      return LaunchResult{WEXITSTATUS(status),
                          name + " exited with status " +
                              std::to_string(WEXITSTATUS(status))};
    if (WIFSIGNALED(status))
      return LaunchResult{128 + WTERMSIG(status),
                          name + " was killed by signal " +
                              signalName(WTERMSIG(status))};
    return std::nullopt;
  }

  /// waitpid failed for a rank we started (someone else reaped it).
  static LaunchResult lost(int rank, int waitError) {
    return {1, "rank " + std::to_string(rank) +
                   " could not be waited for: " + std::strerror(waitError)};
  }

  std::vector<std::optional<pid_t>> pids;
};

} // namespace

LaunchResult launchLocalRanks(const std::string &program,
                              const std::vector<std::string> &arguments,
                              int processes,
                              std::chrono::milliseconds gracePeriod) {
  if (processes < 1)
    throw Error("launching " + program +
                ": the number of processes must be positive, got " +
                std::to_string(processes));
  if (gracePeriod.count() < 0)
    throw Error("launching " + program +
                ": the grace period must not be negative, got " +
                std::to_string(gracePeriod.count()) + " ms");

  ForwardedSignals forwarded;
  const int port = freeLocalPort();
  Ranks ranks(processes);
  for (int rank = 0; rank < processes; ++rank)
    ranks.started(rank, spawnRank(program, arguments, rank, processes, port));

  LaunchResult result;
  std::optional<Clock::time_point> killAt;
  while (ranks.running() > 0) {
    std::optional<LaunchResult> failure = ranks.reapExited(false);
    const int signal = receivedSignal;
    if (!killAt && !failure && signal != 0)
      failure = LaunchResult{128 + signal, "the launcher received signal " +
                                               signalName(signal) +
                                               " and stopped the ranks"};
    if (!killAt && failure) {
      result = *failure;
      ranks.signalAll(SIGTERM);
      killAt = Clock::now() + gracePeriod;
    }
    if (killAt && Clock::now() >= *killAt)
      ranks.killAll();
    else if (ranks.running() > 0)
      std::this_thread::sleep_for(pollInterval);
  }
  return result;
}

int freeLocalPort() {
  auto fail = [](const std::string &step) {
    throw Error("finding a free TCP port on 127.0.0.1: " + step + ": " +
                std::strerror(errno));
  };
  int socketFd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socketFd < 0)
    fail("socket");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{socketFd};
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (bind(socketFd, reinterpret_cast<sockaddr *>(&address), sizeof address) !=
      0)
    fail("bind");
  socklen_t length = sizeof address;
  if (getsockname(socketFd, reinterpret_cast<sockaddr *>(&address), &length) !=
      0)
    fail("getsockname");
  return ntohs(address.sin_port);
}

} // namespace fa::train
