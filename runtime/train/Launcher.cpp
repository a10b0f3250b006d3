//===- Launcher.cpp - One process per GPU, stopped together ---------------===//
//
// Each rank runs in its own process group, so a terminal's Ctrl-C reaches the
// launcher alone (which forwards it) and stopping a rank also stops whatever
// it started. Each rank is also tied to the launcher's life
// (PR_SET_PDEATHSIG): a launcher killed with SIGKILL, which it cannot
// forward, leaves no rank holding a GPU. The launcher polls the ranks with
// waitpid(WNOHANG): that one loop notices a failed rank, a signal sent to the
// launcher and the end of the grace period, without SIGCHLD handling or
// timers.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Launcher.h"

#include "fa/runtime/Error.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
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

/// Ctrl-C, kill's default and a closed terminal: the signals the launcher
/// passes on to the ranks.
constexpr std::array<int, 3> kForwardedSignals = {SIGINT, SIGTERM, SIGHUP};

/// At most this many ranks on one node: more GPUs than any node has, few
/// enough that a typo cannot fork thousands of processes.
constexpr int kMaxProcesses = 1024;

/// How a rank's process ends when the launcher was gone before the rank
/// could tie its life to the launcher's (it never runs the program).
constexpr int kOrphanedExitCode = 126;

/// The signal the launcher received (one of kForwardedSignals), or 0. A
/// signal handler can only record; the wait loop acts on it.
volatile sig_atomic_t receivedSignal = 0;

void recordSignal(int signal) { receivedSignal = signal; }

/// Catches the forwarded signals while the ranks run; restores what was
/// there. A signal the launcher was started ignoring (nohup's SIGHUP, a
/// background job's SIGINT) stays ignored, and the ranks inherit that.
class ForwardedSignals {
public:
  ForwardedSignals() {
    receivedSignal = 0;
    struct sigaction action = {};
    action.sa_handler = recordSignal;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], nullptr, &previous[i]);
      if (previous[i].sa_handler != SIG_IGN)
        sigaction(kForwardedSignals[i], &action, nullptr);
    }
  }
  ~ForwardedSignals() {
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i)
      sigaction(kForwardedSignals[i], &previous[i], nullptr);
  }
  ForwardedSignals(const ForwardedSignals &) = delete;
  ForwardedSignals &operator=(const ForwardedSignals &) = delete;

private:
  std::array<struct sigaction, kForwardedSignals.size()> previous = {};
};

/// A file descriptor, closed when it goes.
class Descriptor {
public:
  explicit Descriptor(int fd = -1) : fd(fd) {}
  ~Descriptor() { reset(); }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;

  int get() const { return fd; }
  void reset() {
    if (fd >= 0)
      close(fd);
    fd = -1;
  }

private:
  int fd;
};

/// Blocks every signal for its lifetime (around fork, so that the new
/// process runs none of the launcher's handlers), then restores the mask.
class AllSignalsBlocked {
public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
  }
  ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked &) = delete;
  AllSignalsBlocked &operator=(const AllSignalsBlocked &) = delete;

private:
  sigset_t previous;
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

/// The new process's side of spawnRank, between fork and exec: it may only
/// make async-signal-safe calls (the launcher may have other threads), on
/// data prepared before the fork. Starts with every signal blocked.
[[noreturn]] void becomeRank(const char *program, char *const argv[],
                             char *const envp[], pid_t launcher,
                             int execErrorFd) {
  // A process group of its own: a terminal's Ctrl-C reaches the launcher
  // alone, and stopping the rank stops whatever it started.
  setpgid(0, 0);
  // Dies with the launcher however the launcher ends, SIGKILL included: a
  // rank left running would hold its GPU. (The kernel sends it when the
  // thread that forked ends; launchLocalRanks waits on that thread.)
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before prctl; then nothing will be sent.
  if (getppid() != launcher)
    _exit(kOrphanedExitCode);
  // The launcher's handlers mean nothing here; a forwarded signal already
  // pending must stop the rank, as after exec.
  struct sigaction defaultAction = {};
  defaultAction.sa_handler = SIG_DFL;
  for (int signal : kForwardedSignals) {
    struct sigaction current = {};
    sigaction(signal, nullptr, &current);
    if (current.sa_handler != SIG_IGN)
      sigaction(signal, &defaultAction, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(program, argv, envp);
  const int error = errno;
  ssize_t written = write(execErrorFd, &error, sizeof error);
  (void)written; // The launcher sees the exit status either way.
  _exit(127);
}

/// Reads the errno a rank's process sent when exec failed; 0 once exec
/// closed the pipe (or the process ended before trying).
int execError(int readFd) {
  int error = 0;
  for (;;) {
    ssize_t got = read(readFd, &error, sizeof error);
    if (got == static_cast<ssize_t>(sizeof error))
      return error;
    if (got < 0 && errno == EINTR)
      continue;
    return 0;
  }
}

/// Starts one rank: in a process group of its own, killed if the launcher
/// dies, with default handling of the forwarded signals (unless ignored) and
/// no blocked signals, whatever the launcher had.
pid_t spawnRank(const std::string &program,
                const std::vector<std::string> &arguments, int rank,
                int processes, int port) {
  const std::string doing = "starting rank " + std::to_string(rank) + " of " +
                            std::to_string(processes) + " (" + program + ")";
  std::vector<std::string> argvStrings = {program};
  argvStrings.insert(argvStrings.end(), arguments.begin(), arguments.end());
  std::vector<std::string> environment = rankEnvironment(rank, processes, port);
  std::vector<char *> argv = nullTerminated(argvStrings);
  std::vector<char *> envp = nullTerminated(environment);

  // The new process reports a failed exec through this pipe, which exec
  // closes when it succeeds.
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0)
    throw Error(doing + ": pipe: " + std::strerror(errno));
  Descriptor readEnd(pipeFds[0]), writeEnd(pipeFds[1]);
  const pid_t launcher = getpid();
  pid_t pid = 0;
  {
    AllSignalsBlocked blocked;
    pid = fork();
    if (pid == 0)
      becomeRank(program.c_str(), argv.data(), envp.data(), launcher,
                 writeEnd.get());
  }
  if (pid < 0)
    throw Error(doing + ": fork: " + std::strerror(errno));
  // Also here, so that the group exists before the launcher may signal it
  // (fails harmlessly once the rank has done it and exec'd).
  setpgid(pid, pid);
  writeEnd.reset();
  if (int error = execError(readEnd.get())) {
    waitpid(pid, nullptr, 0);
    throw Error(doing + ": " + std::strerror(error));
  }
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
  if (processes > kMaxProcesses)
    throw Error(
        "launching " + program + ": at most " + std::to_string(kMaxProcesses) +
        " processes per node (one per GPU), got " + std::to_string(processes));
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
    // A signal to the launcher goes on to the ranks as it came (a rank
    // may treat a hang-up unlike a termination); a failed rank's peers
    // get SIGTERM.
    int stopSignal = SIGTERM;
    if (!killAt && !failure && signal != 0) {
      failure = LaunchResult{128 + signal, "the launcher received signal " +
                                               signalName(signal) +
                                               " and stopped the ranks"};
      stopSignal = signal;
    }
    if (!killAt && failure) {
      result = *failure;
      ranks.signalAll(stopSignal);
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
  Descriptor socketHolder(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int socketFd = socketHolder.get();
  if (socketFd < 0)
    fail("socket");
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
