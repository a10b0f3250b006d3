//===- LauncherTest.cpp - Ranks started, watched and stopped together -----===//
//
// The ranks are fa-launcher-test-child (launcher_child.cpp), which reports
// what it saw to a file and then exits, kills itself or sleeps as told. The
// tests that kill the launcher run it in a forked copy of this process, which
// is then the ranks' parent; this process reaps the orphans (it is their
// subreaper), so that a rank left behind is seen alive, not as a zombie of
// init's, and is killed at the end.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Launcher.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

using namespace fa::train;
using namespace fa::traintest;
using namespace std::chrono_literals;

namespace {

const std::string child = FA_LAUNCHER_CHILD;

/// Sets an environment variable for one test, then puts back what was there.
class ScopedVariable {
public:
  ScopedVariable(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (previous)
      setenv(name, previous->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> previous;
};

/// The NAME=value lines a rank wrote.
std::map<std::string, std::string> report(const std::string &directory,
                                          int rank) {
  std::istringstream lines(
      readBytes(directory + "/rank-" + std::to_string(rank) + ".txt"));
  std::map<std::string, std::string> values;
  for (std::string line; std::getline(lines, line);)
    values[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  return values;
}

/// Runs the launch and measures how long it took.
struct TimedLaunch {
  LaunchResult result;
  std::chrono::milliseconds elapsed;
};
TimedLaunch launchTimed(const std::vector<std::string> &arguments,
                        int processes, std::chrono::milliseconds gracePeriod) {
  auto start = std::chrono::steady_clock::now();
  LaunchResult result =
      launchLocalRanks(child, arguments, processes, gracePeriod);
  return {result, std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)};
}

TEST(LauncherTest, EveryRankSeesItsVariablesAndTheParentsEnvironment) {
  std::string directory = testDirectory();
  ScopedVariable mark("FA_LAUNCHER_TEST_MARK", "inherited");
  ScopedVariable staleRank("RANK", "7"); // Must not reach the ranks.
  LaunchResult result =
      launchLocalRanks(child, {"--write", directory, "--note", "two words"}, 3);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.failure, "");

  const std::string port = report(directory, 0)["MASTER_PORT"];
  EXPECT_GT(std::atoi(port.c_str()), 0);
  EXPECT_LT(std::atoi(port.c_str()), 65536);
  for (int rank = 0; rank < 3; ++rank) {
    std::map<std::string, std::string> seen = report(directory, rank);
    EXPECT_EQ(seen["RANK"], std::to_string(rank));
    EXPECT_EQ(seen["LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(seen["WORLD_SIZE"], "3");
    EXPECT_EQ(seen["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(seen["MASTER_PORT"], port) << "rank " << rank;
    EXPECT_EQ(seen["FA_LAUNCHER_TEST_MARK"], "inherited");
    EXPECT_EQ(seen["OWN_PROCESS_GROUP"], "1");
    EXPECT_EQ(seen["ARGS"], "[--write][" + directory + "][--note][two words]");
  }
}

TEST(LauncherTest, AFailingRankIsReportedAndTheOthersAreStopped) {
  std::string directory = testDirectory();
  // Ranks 0 and 2 sleep until stopped; SIGTERM stops them well before the
  // 5 s grace period, and their SIGTERM deaths are not the failure reported.
  TimedLaunch launch = launchTimed(
      {"--write", directory, "--wait-for-all", "sleep", "exit:3", "sleep"}, 3,
      5s);
  EXPECT_EQ(launch.result.exitCode, 3);
  EXPECT_EQ(launch.result.failure, "rank 1 exited with status 3");
  EXPECT_LT(launch.elapsed, 2s);
}

TEST(LauncherTest, ARankKilledByASignalIsReported) {
  std::string directory = testDirectory();
  TimedLaunch launch = launchTimed(
      {"--write", directory, "--wait-for-all", "sleep", "signal:9"}, 2, 5s);
  EXPECT_EQ(launch.result.exitCode, 128 + 9);
  EXPECT_EQ(launch.result.failure, "rank 1 was killed by signal 9 (Killed)");
  EXPECT_LT(launch.elapsed, 2s);
}

TEST(LauncherTest, ARankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  std::string directory = testDirectory();
  TimedLaunch launch = launchTimed({"--write", directory, "--wait-for-all",
                                    "--ignore-sigterm", "sleep", "exit:1"},
                                   2, 300ms);
  EXPECT_EQ(launch.result.exitCode, 1);
  EXPECT_EQ(launch.result.failure, "rank 1 exited with status 1");
  EXPECT_GE(launch.elapsed, 300ms);
  EXPECT_LT(launch.elapsed, 3s);
}

TEST(LauncherTest, ASigintToTheLauncherStopsTheRanks) {
  std::string directory = testDirectory();
  struct sigaction before = {}, after = {};
  sigaction(SIGINT, nullptr, &before);
  // Rank 0 sends SIGINT to its parent, the launcher (this test).
  TimedLaunch launch = launchTimed(
      {"--write", directory, "--wait-for-all", "interrupt-launcher", "sleep"},
      2, 5s);
  EXPECT_EQ(launch.result.exitCode, 128 + SIGINT);
  EXPECT_EQ(launch.result.failure,
            "the launcher received signal 2 (Interrupt) and stopped the ranks");
  EXPECT_LT(launch.elapsed, 2s);
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler); // The handler is put back.
}

/// Makes this process the one that reaps the orphans among its descendants
/// (instead of init) for one test, so that it can wait for the ranks of a
/// launcher it killed.
class ScopedSubreaper {
public:
  ScopedSubreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~ScopedSubreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  ScopedSubreaper(const ScopedSubreaper &) = delete;
  ScopedSubreaper &operator=(const ScopedSubreaper &) = delete;
};

/// launchLocalRanks in a forked copy of this process: it writes the failure
/// to DIRECTORY/launcher.txt and exits with the launch's exit code.
pid_t forkLauncher(const std::string &directory,
                   const std::vector<std::string> &arguments, int processes) {
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  int exitCode = 1;
  try {
    LaunchResult result = launchLocalRanks(child, arguments, processes, 5s);
    writeBytes(directory + "/launcher.txt", result.failure);
    exitCode = result.exitCode;
  } catch (const std::exception &error) {
    writeBytes(directory + "/launcher.txt", error.what());
  }
  _exit(exitCode);
}

/// The pids the first `processes` ranks reported, once all have (10 s at
/// most; none if they did not).
std::vector<pid_t> rankPids(const std::string &directory, int processes) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < processes; ++rank) {
    while (!std::filesystem::exists(directory + "/rank-" +
                                    std::to_string(rank) + ".txt")) {
      if (std::chrono::steady_clock::now() > deadline)
        return {};
      std::this_thread::sleep_for(1ms);
    }
    pids.push_back(std::atoi(report(directory, rank)["PID"].c_str()));
  }
  return pids;
}

/// Whether the process `pid`, a rank of a launcher that is gone, has ended
/// by `deadline`: reaped here (it was orphaned, and this process is its
/// subreaper) or no longer there (the launcher reaped it).
bool endsBy(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    pid_t reaped = waitpid(pid, nullptr, WNOHANG);
    if (reaped == pid ||
        (reaped < 0 && errno == ECHILD && kill(pid, 0) != 0 && errno == ESRCH))
      return true;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
}

/// Expects every rank in `pids` to end within 5 s (a deadline for being
/// alive at all, not a measure of speed); kills and reaps those that do not.
void expectRanksEnd(const std::vector<pid_t> &pids) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  for (pid_t pid : pids) {
    if (endsBy(pid, deadline))
      continue;
    ADD_FAILURE() << "rank process " << pid << " outlived its launcher by 5 s";
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

/// A launcher of two sleeping ranks that was sent a signal and reaped.
struct SignalledLauncher {
  std::string directory;
  std::vector<pid_t> ranks;
  int status = 0; // The launcher's, from waitpid.
};

/// Starts a launcher of two ranks that sleep, sends it `signal` once both
/// have started, and reaps it (the caller holds a ScopedSubreaper, so the
/// ranks it orphans are this process's to wait for).
SignalledLauncher signalLauncher(int signal) {
  SignalledLauncher result{testDirectory(), {}, 0};
  pid_t launcher = forkLauncher(
      result.directory,
      {"--write", result.directory, "--wait-for-all", "sleep", "sleep"}, 2);
  EXPECT_GT(launcher, 0);
  result.ranks = rankPids(result.directory, 2);
  kill(launcher, signal);
  EXPECT_EQ(waitpid(launcher, &result.status, 0), launcher);
  return result;
}

TEST(LauncherTest, RanksDieWithAKilledLauncher) {
  ScopedSubreaper subreaper;
  SignalledLauncher killed = signalLauncher(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(killed.status) && WTERMSIG(killed.status) == SIGKILL);
  ASSERT_EQ(killed.ranks.size(), 2u) << "the ranks did not start";
  expectRanksEnd(killed.ranks);
}

/// SIGHUP (the terminal closed), SIGTERM and SIGINT to the launcher.
class LauncherSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(LauncherSignalTest, StopsTheRanksAndSaysSo) {
  const int signal = GetParam();
  ScopedSubreaper subreaper;
  SignalledLauncher signalled = signalLauncher(signal);
  ASSERT_EQ(signalled.ranks.size(), 2u) << "the ranks did not start";
  expectRanksEnd(signalled.ranks);
  ASSERT_TRUE(WIFEXITED(signalled.status)) << "the launcher died of the signal";
  EXPECT_EQ(WEXITSTATUS(signalled.status), 128 + signal);
  EXPECT_EQ(readBytes(signalled.directory + "/launcher.txt"),
            "the launcher received signal " + std::to_string(signal) + " (" +
                strsignal(signal) + ") and stopped the ranks");
}

INSTANTIATE_TEST_SUITE_P(Signals, LauncherSignalTest,
                         ::testing::Values(SIGHUP, SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return std::string(sigabbrev_np(info.param));
                         });

TEST(LauncherTest, ASignalIgnoredByTheLauncherStaysIgnored) {
  // nohup: the launcher and its ranks ignore SIGHUP, so it is not caught.
  std::string directory = testDirectory();
  struct sigaction ignore = {}, before = {}, after = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGHUP, &ignore, &before);
  LaunchResult result = launchLocalRanks(child, {"--write", directory}, 1);
  sigaction(SIGHUP, &before, &after);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
  EXPECT_EQ(report(directory, 0)["SIGHUP_IGNORED"], "1");
  // Without nohup, neither ignores it.
  launchLocalRanks(child, {"--write", directory}, 1);
  EXPECT_EQ(report(directory, 0)["SIGHUP_IGNORED"], "0");
}

TEST(LauncherTest, AMissingProgramIsAnError) {
  FA_EXPECT_ERROR(launchLocalRanks("/nonexistent/fa-no-such-program", {}, 2),
                  "starting rank 0 of 2 (/nonexistent/fa-no-such-program): "
                  "No such file or directory");
}

TEST(LauncherTest, TheProcessCountMustBePositive) {
  FA_EXPECT_ERROR(launchLocalRanks(child, {}, 0),
                  "the number of processes must be positive, got 0");
  // A typo must not fork thousands of processes.
  FA_EXPECT_ERROR(launchLocalRanks(child, {}, 1025),
                  "at most 1024 processes per node (one per GPU), got 1025");
}

TEST(LauncherTest, FreeLocalPortCanBeBound) {
  int port = freeLocalPort();
  ASSERT_GT(port, 0);
  ASSERT_LT(port, 65536);
  int socketFd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(socketFd, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(
      bind(socketFd, reinterpret_cast<sockaddr *>(&address), sizeof address),
      0);
  EXPECT_EQ(listen(socketFd, 1), 0);
  close(socketFd);
}

} // namespace
