//===- launcher_child.cpp - A rank for LauncherTest -----------------------===//
//
// fa-launcher-test-child [--write DIR] [--wait-for-all] [--ignore-sigterm]
//                        [--note TEXT] [ACTION...]
//
// --write DIR       writes DIR/rank-<RANK>.txt: the launcher's variables, the
//                   arguments, whether the rank leads its own process group,
//                   FA_LAUNCHER_TEST_MARK, its pid and whether it ignores
//                   SIGHUP (written whole, by rename)
// --wait-for-all    then waits until every rank of WORLD_SIZE has written
//                   (exits 99 after 10 s), so a failing rank fails only once
//                   all are set up
// --ignore-sigterm  ignores SIGTERM (set up before writing)
// --note TEXT       nothing but an argument to see in the report
// ACTION            the i-th applies to rank i; ranks past the list exit 0:
//                   exit:N, signal:N (kills itself), sleep (forever), or
//                   interrupt-launcher (SIGINT to its parent, then sleep)
//
//===----------------------------------------------------------------------===//

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string variable(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "(unset)";
}

std::string rankFile(const std::string &directory, int rank) {
  return directory + "/rank-" + std::to_string(rank) + ".txt";
}

void writeReport(const std::string &directory, int rank,
                 const std::vector<std::string> &arguments) {
  std::string path = rankFile(directory, rank);
  {
    std::ofstream file(path + ".tmp");
    for (const char *name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR",
                             "MASTER_PORT", "FA_LAUNCHER_TEST_MARK"})
      file << name << "=" << variable(name) << "\n";
    file << "OWN_PROCESS_GROUP=" << (getpgrp() == getpid()) << "\n";
    file << "PID=" << getpid() << "\n";
    struct sigaction hangup = {};
    sigaction(SIGHUP, nullptr, &hangup);
    file << "SIGHUP_IGNORED=" << (hangup.sa_handler == SIG_IGN) << "\n";
    file << "ARGS=";
    for (const std::string &argument : arguments)
      file << "[" << argument << "]";
    file << "\n";
  }
  std::filesystem::rename(path + ".tmp", path);
}

bool waitForAll(const std::string &directory, int worldSize) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int rank = 0; rank < worldSize; ++rank)
    while (!std::filesystem::exists(rankFile(directory, rank))) {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  return true;
}

[[noreturn]] void sleepForever() {
  for (;;)
    pause();
}

int run(const std::string &action) {
  if (action.rfind("exit:", 0) == 0)
    return std::atoi(action.c_str() + 5);
  if (action.rfind("signal:", 0) == 0) {
    kill(getpid(), std::atoi(action.c_str() + 7));
    sleepForever();
  }
  if (action == "interrupt-launcher")
    kill(getppid(), SIGINT);
  if (action == "sleep" || action == "interrupt-launcher")
    sleepForever();
  std::fprintf(stderr, "fa-launcher-test-child: unknown action %s\n",
               action.c_str());
  return 98;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  std::string directory;
  bool waitForOthers = false;
  std::vector<std::string> actions;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--write" && i + 1 < arguments.size())
      directory = arguments[++i];
    else if (arguments[i] == "--note" && i + 1 < arguments.size())
      ++i;
    else if (arguments[i] == "--wait-for-all")
      waitForOthers = true;
    else if (arguments[i] == "--ignore-sigterm")
      signal(SIGTERM, SIG_IGN);
    else
      actions.push_back(arguments[i]);
  }
  const int rank = std::atoi(variable("RANK").c_str());
  const int worldSize = std::atoi(variable("WORLD_SIZE").c_str());
  if (!directory.empty())
    writeReport(directory, rank, arguments);
  if (waitForOthers && !waitForAll(directory, worldSize))
    return 99;
  return rank < static_cast<int>(actions.size()) ? run(actions[rank]) : 0;
}
