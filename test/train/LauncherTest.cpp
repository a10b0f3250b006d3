//===- LauncherTest.cpp - Ranks started, watched and stopped together -----===//
//
// The ranks are fa-launcher-test-child (launcher_child.cpp), which reports
// what it saw to a file and then exits, kills itself or sleeps as told.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Launcher.h"

#include "TrainTesting.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

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

TEST(LauncherTest, AMissingProgramIsAnError) {
  FA_EXPECT_ERROR(launchLocalRanks("/nonexistent/fa-no-such-program", {}, 2),
                  "starting rank 0 of 2 (/nonexistent/fa-no-such-program): "
                  "No such file or directory");
}

TEST(LauncherTest, TheProcessCountMustBePositive) {
  FA_EXPECT_ERROR(launchLocalRanks(child, {}, 0),
                  "the number of processes must be positive, got 0");
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
