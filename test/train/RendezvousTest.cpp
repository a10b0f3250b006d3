//===- RendezvousTest.cpp - The world from the environment, the id over TCP
//===//
//
// worldFromEnvironment on maps of variables: each launcher's convention, their
// precedence, and every error a wrong or partial set gives. exchangeCommId
// with threads as ranks over 127.0.0.1: every rank gets rank 0's id (the
// connecting ranks start first, so they retry), and each way it can fail
// (a rank that never connects, nobody listening, rank 0 never answering,
// a stranger claiming a rank, the port taken) ends within the timeout with a
// message naming who waited for whom. No GPU, no NCCL.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Rendezvous.h"

#include "fa/train/Launcher.h"

#include "TrainTesting.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace fa;
using namespace fa::train;

namespace {

using Variables = std::map<std::string, std::string>;
using std::chrono::milliseconds;

WorldInfo worldFrom(const Variables &variables) {
  return worldFromEnvironment(
      [&](const std::string &name) -> std::optional<std::string> {
        auto found = variables.find(name);
        if (found == variables.end())
          return std::nullopt;
        return found->second;
      });
}

/// The message worldFrom(variables) fails with.
std::string errorFrom(const Variables &variables) {
  return traintest::errorOf([&] { worldFrom(variables); });
}

const Variables kMaster{{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}};

Variables with(Variables variables, const Variables &more) {
  for (const auto &[name, value] : more)
    variables[name] = value;
  return variables;
}

Variables torchrun(const std::string &rank, const std::string &worldSize,
                   const std::string &localRank) {
  return with(
      kMaster,
      {{"RANK", rank}, {"WORLD_SIZE", worldSize}, {"LOCAL_RANK", localRank}});
}

const char *const kTorchrun =
    "reading the distributed world from torchrun's variables: ";

// --- The environment ---------------------------------------------------------

TEST(RendezvousEnvironmentTest, NoVariablesIsOneProcess) {
  WorldInfo world = worldFrom({});
  EXPECT_EQ(world.rank, 0);
  EXPECT_EQ(world.worldSize, 1);
  EXPECT_EQ(world.localRank, 0);
  EXPECT_EQ(world.masterAddr, "");
  EXPECT_EQ(world.source, "single process");
  // MASTER_* alone say nothing about this process.
  EXPECT_EQ(worldFrom(kMaster).worldSize, 1);
}

TEST(RendezvousEnvironmentTest, Torchrun) {
  WorldInfo world = worldFrom(torchrun("5", "8", "1"));
  EXPECT_EQ(world.rank, 5);
  EXPECT_EQ(world.worldSize, 8);
  EXPECT_EQ(world.localRank, 1);
  EXPECT_EQ(world.masterAddr, "node0");
  EXPECT_EQ(world.masterPort, 29500);
  EXPECT_EQ(world.source, "torchrun");
}

TEST(RendezvousEnvironmentTest, Mpirun) {
  WorldInfo world =
      worldFrom(with(kMaster, {{"OMPI_COMM_WORLD_RANK", "3"},
                               {"OMPI_COMM_WORLD_SIZE", "4"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(world.rank, 3);
  EXPECT_EQ(world.worldSize, 4);
  EXPECT_EQ(world.localRank, 1);
  EXPECT_EQ(world.masterAddr, "node0");
  EXPECT_EQ(world.masterPort, 29500);
  EXPECT_EQ(world.source, "mpirun");
}

TEST(RendezvousEnvironmentTest, Slurm) {
  WorldInfo world = worldFrom(with(
      kMaster,
      {{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "2"}}));
  EXPECT_EQ(world.rank, 6);
  EXPECT_EQ(world.worldSize, 16);
  EXPECT_EQ(world.localRank, 2);
  EXPECT_EQ(world.source, "slurm");
}

TEST(RendezvousEnvironmentTest, SlurmAllocationWithoutTaskIsOneProcess) {
  // An salloc shell: the allocation's variables, but no task of a step.
  WorldInfo world = worldFrom({{"SLURM_NTASKS", "16"}});
  EXPECT_EQ(world.worldSize, 1);
  EXPECT_EQ(world.source, "single process");
}

TEST(RendezvousEnvironmentTest, TorchrunThenMpirunThenSlurm) {
  const Variables slurm{
      {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_LOCALID", "2"}};
  const Variables mpirun{{"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "3"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}};
  WorldInfo world =
      worldFrom(with(with(torchrun("0", "3", "0"), mpirun), slurm));
  EXPECT_EQ(world.source, "torchrun");
  EXPECT_EQ(world.rank, 0);
  world = worldFrom(with(with(kMaster, mpirun), slurm));
  EXPECT_EQ(world.source, "mpirun");
  EXPECT_EQ(world.rank, 1);
  // Any torchrun variable selects torchrun, so a partial set is an error
  // rather than a silent fall back to mpirun's.
  FA_EXPECT_ERROR(worldFrom(with(with(kMaster, mpirun), {{"RANK", "1"}})),
                  std::string(kTorchrun) + "WORLD_SIZE is not set");
}

TEST(RendezvousEnvironmentTest, WorldOfOneNeedsNoMaster) {
  WorldInfo world = worldFrom({{"RANK", "0"},
                               {"WORLD_SIZE", "1"},
                               {"LOCAL_RANK", "0"},
                               {"MASTER_PORT", "not a port"}});
  EXPECT_EQ(world.worldSize, 1);
  EXPECT_EQ(world.masterAddr, "");
  EXPECT_EQ(world.masterPort, 0);
  EXPECT_EQ(world.source, "torchrun");
}

TEST(RendezvousEnvironmentTest, PartialSetsNameTheMissingVariable) {
  const std::string together =
      " is not set (torchrun sets RANK, WORLD_SIZE and LOCAL_RANK together)";
  EXPECT_EQ(errorFrom({{"RANK", "1"}}),
            std::string(kTorchrun) + "WORLD_SIZE" + together);
  EXPECT_EQ(errorFrom({{"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}),
            std::string(kTorchrun) + "RANK" + together);
  EXPECT_EQ(errorFrom({{"RANK", "1"}, {"WORLD_SIZE", "2"}}),
            std::string(kTorchrun) + "LOCAL_RANK" + together);
  EXPECT_EQ(errorFrom({{"OMPI_COMM_WORLD_RANK", "1"}}),
            "reading the distributed world from mpirun's variables: "
            "OMPI_COMM_WORLD_SIZE is not set (mpirun sets "
            "OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE and "
            "OMPI_COMM_WORLD_LOCAL_RANK together)");
  EXPECT_EQ(errorFrom({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}),
            "reading the distributed world from slurm's variables: "
            "SLURM_LOCALID is not set (slurm sets SLURM_PROCID, "
            "SLURM_NTASKS and SLURM_LOCALID together)");
}

TEST(RendezvousEnvironmentTest, IntegersMustBeWholeValues) {
  for (const char *bad : {"", "1x", " 1", "1 ", "+1", "0x1", "1.0", "one"})
    EXPECT_EQ(errorFrom(torchrun(bad, "2", "0")),
              std::string(kTorchrun) + "RANK=\"" + bad + "\" is not an integer")
        << "RANK=\"" << bad << "\"";
  EXPECT_EQ(errorFrom(torchrun("0", "99999999999", "0")),
            std::string(kTorchrun) +
                "WORLD_SIZE=\"99999999999\" is out of range");
}

TEST(RendezvousEnvironmentTest, RanksMustBeInTheWorld) {
  EXPECT_EQ(errorFrom(torchrun("2", "2", "0")),
            std::string(kTorchrun) + "RANK=2 must be in [0, WORLD_SIZE=2)");
  EXPECT_EQ(errorFrom(torchrun("-1", "2", "0")),
            std::string(kTorchrun) + "RANK=-1 must be in [0, WORLD_SIZE=2)");
  EXPECT_EQ(errorFrom(torchrun("0", "0", "0")),
            std::string(kTorchrun) + "WORLD_SIZE=0 must be at least 1");
  EXPECT_EQ(errorFrom(torchrun("1", "2", "-1")),
            std::string(kTorchrun) + "LOCAL_RANK=-1 must not be negative");
  EXPECT_EQ(errorFrom({{"SLURM_PROCID", "4"},
                       {"SLURM_NTASKS", "4"},
                       {"SLURM_LOCALID", "0"}}),
            "reading the distributed world from slurm's variables: "
            "SLURM_PROCID=4 must be in [0, SLURM_NTASKS=4)");
}

TEST(RendezvousEnvironmentTest, WorldsOfSeveralNeedMasterAddressAndPort) {
  const Variables ranks{{"OMPI_COMM_WORLD_RANK", "1"},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}};
  const std::string mpirun =
      "reading the distributed world from mpirun's variables: ";
  const std::string needed =
      " (rank 1 of 2 finds rank 0 at MASTER_ADDR:MASTER_PORT)";
  EXPECT_EQ(errorFrom(with(ranks, {{"MASTER_PORT", "29500"}})),
            mpirun + "MASTER_ADDR is not set" + needed);
  EXPECT_EQ(errorFrom(with(ranks, {{"MASTER_ADDR", ""}, {"MASTER_PORT", "1"}})),
            mpirun + "MASTER_ADDR is not set" + needed);
  EXPECT_EQ(errorFrom(with(ranks, {{"MASTER_ADDR", "node0"}})),
            mpirun + "MASTER_PORT is not set" + needed);
  EXPECT_EQ(errorFrom(with(
                ranks, {{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "http"}})),
            mpirun + "MASTER_PORT=\"http\" is not an integer");
  for (const char *port : {"0", "65536", "-80"})
    EXPECT_EQ(
        errorFrom(
            with(ranks, {{"MASTER_ADDR", "node0"}, {"MASTER_PORT", port}})),
        mpirun + "MASTER_PORT=" + port + " is not a TCP port (1 to 65535)");
}

/// Sets environment variables for a test and restores them after.
class ScopedEnvironment {
public:
  explicit ScopedEnvironment(const Variables &variables) {
    for (const auto &[name, value] : variables) {
      const char *old = std::getenv(name.c_str());
      saved.emplace_back(name,
                         old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (const auto &[name, value] : saved)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
};

TEST(RendezvousEnvironmentTest, ReadsTheProcessEnvironment) {
  ScopedEnvironment environment(
      with(torchrun("3", "4", "3"),
           {{"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "1234"}}));
  WorldInfo world = worldFromEnvironment();
  EXPECT_EQ(world.rank, 3);
  EXPECT_EQ(world.worldSize, 4);
  EXPECT_EQ(world.localRank, 3);
  EXPECT_EQ(world.masterAddr, "10.0.0.7");
  EXPECT_EQ(world.masterPort, 1234);
}

// --- The exchange ------------------------------------------------------------

WorldInfo rankOf(int rank, int worldSize, int port,
                 const std::string &address = "127.0.0.1") {
  WorldInfo world;
  world.rank = rank;
  world.worldSize = worldSize;
  world.localRank = rank;
  world.masterAddr = address;
  world.masterPort = port;
  world.source = "torchrun";
  return world;
}

CommId patternId(char seed) {
  CommId id;
  for (std::size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<char>(seed + i * 7);
  return id;
}

/// Runs exchangeCommId as `world` on a thread.
std::future<CommId> startRank(const WorldInfo &world, const CommId &id,
                              milliseconds timeout) {
  return std::async(std::launch::async,
                    [=] { return exchangeCommId(world, id, timeout); });
}

/// The message the exchange on `rank` failed with.
std::string errorOf(std::future<CommId> &rank) {
  return traintest::errorOf([&] { rank.get(); });
}

std::string portText(int port) { return std::to_string(port); }

TEST(RendezvousExchangeTest, WorldOfOneKeepsItsId) {
  WorldInfo world;
  CommId id = patternId(3);
  EXPECT_EQ(exchangeCommId(world, id, milliseconds(1)), id);
}

TEST(RendezvousExchangeTest, EveryRankGetsRankZerosId) {
  const int port = freeLocalPort();
  const CommId id = patternId(1);
  const milliseconds timeout(10000);
  // The others start first, so they retry until rank 0 listens; rank 3
  // finds it by name.
  std::vector<std::future<CommId>> others;
  for (int rank = 1; rank < 4; ++rank)
    others.push_back(
        startRank(rankOf(rank, 4, port, rank == 3 ? "localhost" : "127.0.0.1"),
                  patternId(static_cast<char>(rank * 40)), timeout));
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(exchangeCommId(rankOf(0, 4, port), id, timeout), id);
  for (std::future<CommId> &rank : others)
    EXPECT_EQ(rank.get(), id);
}

TEST(RendezvousExchangeTest, RankZeroNamesTheRankThatNeverConnects) {
  const int port = freeLocalPort();
  auto rank0 = startRank(rankOf(0, 4, port), patternId(1), milliseconds(300));
  auto rank1 = startRank(rankOf(1, 4, port), CommId{}, milliseconds(5000));
  auto rank3 = startRank(rankOf(3, 4, port), CommId{}, milliseconds(5000));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(errorOf(rank0), "rank 0 of 4 listening on port " + portText(port) +
                                " (MASTER_PORT) for the other ranks: rank 2 "
                                "did not connect within 0.3 s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  // The ranks that did connect fail at once too, rather than at their own
  // timeout or later in NCCL.
  const std::string closed =
      " waiting for the NCCL id from rank 0 at 127.0.0.1:" + portText(port) +
      ": rank 0 closed the connection (it may have given up waiting for "
      "another rank, or failed)";
  EXPECT_EQ(errorOf(rank1), "rank 1 of 4" + closed);
  EXPECT_EQ(errorOf(rank3), "rank 3 of 4" + closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
}

TEST(RendezvousExchangeTest, RankZeroNamesEveryMissingRank) {
  const int port = freeLocalPort();
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(0, 3, port), patternId(1),
                             milliseconds(200));
            }),
            "rank 0 of 3 listening on port " + portText(port) +
                " (MASTER_PORT) for the other ranks: ranks 1, 2 did not "
                "connect within 0.2 s");
}

TEST(RendezvousExchangeTest, ConnectingRankTimesOutWhenNobodyListens) {
  const int port = freeLocalPort();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(1, 2, port), CommId{}, milliseconds(300));
            }),
            "rank 1 of 2 connecting to rank 0 at 127.0.0.1:" + portText(port) +
                " (MASTER_ADDR:MASTER_PORT): no answer within 0.3 s (last "
                "error: Connection refused); is rank 0 running, with the same "
                "MASTER_ADDR and MASTER_PORT?");
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(300));
  EXPECT_LT(elapsed, milliseconds(2000));
}

TEST(RendezvousExchangeTest, UnknownHostIsNamed) {
  FA_EXPECT_ERROR(exchangeCommId(rankOf(1, 2, 29500, "no-such-host.invalid"),
                                 CommId{}, milliseconds(300)),
                  "rank 1 of 2 connecting to rank 0 at "
                  "no-such-host.invalid:29500 (MASTER_ADDR:MASTER_PORT): ");
}

/// A listening socket on 127.0.0.1 that never answers; port 0 picks a port.
class SilentListener {
public:
  explicit SilentListener(int port = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    socklen_t length = sizeof(address);
    if (fd < 0 ||
        ::bind(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
        ::listen(fd, 16) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0)
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    boundPort = ntohs(address.sin_port);
  }
  ~SilentListener() {
    if (fd >= 0)
      ::close(fd);
  }
  SilentListener(const SilentListener &) = delete;
  SilentListener &operator=(const SilentListener &) = delete;

  int port() const { return boundPort; }

private:
  int fd = -1;
  int boundPort = 0;
};

TEST(RendezvousExchangeTest, ConnectedRankTimesOutWhenRankZeroNeverAnswers) {
  SilentListener listener;
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(1, 2, listener.port()), CommId{},
                             milliseconds(300));
            }),
            "rank 1 of 2 waiting for the NCCL id from rank 0 at 127.0.0.1:" +
                portText(listener.port()) +
                ": nothing within 0.3 s (rank 0 sends it once every rank has "
                "connected)");
}

TEST(RendezvousExchangeTest, RankZeroReportsATakenPort) {
  SilentListener listener;
  FA_EXPECT_ERROR(exchangeCommId(rankOf(0, 2, listener.port()), CommId{},
                                 milliseconds(300)),
                  "rank 0 of 2 listening on port " + portText(listener.port()) +
                      " (MASTER_PORT) for the other ranks: bind: Address "
                      "already in use");
}

TEST(RendezvousExchangeTest, RankZeroRejectsARankOutsideTheWorld) {
  const int port = freeLocalPort();
  auto rank0 = startRank(rankOf(0, 3, port), patternId(1), milliseconds(5000));
  // A rank of a larger world on the same port: another job.
  auto stranger = startRank(rankOf(7, 8, port), CommId{}, milliseconds(5000));
  EXPECT_EQ(errorOf(rank0),
            "rank 0 of 3 listening on port " + portText(port) +
                " (MASTER_PORT) for the other ranks: a connection says it is "
                "rank 7, not one of 1 to 2 (is another job using the port?)");
  EXPECT_PRED_FORMAT2(traintest::messageContains, errorOf(stranger),
                      "rank 0 closed the connection");
}

TEST(RendezvousExchangeTest, RankZeroRejectsTwoConnectionsOfOneRank) {
  const int port = freeLocalPort();
  auto rank0 = startRank(rankOf(0, 3, port), patternId(1), milliseconds(5000));
  auto first = startRank(rankOf(1, 3, port), CommId{}, milliseconds(5000));
  auto second = startRank(rankOf(1, 3, port), CommId{}, milliseconds(5000));
  EXPECT_EQ(errorOf(rank0),
            "rank 0 of 3 listening on port " + portText(port) +
                " (MASTER_PORT) for the other ranks: two connections say they "
                "are rank 1 (is another job using the port?)");
  for (std::future<CommId> *rank : {&first, &second})
    EXPECT_PRED_FORMAT2(traintest::messageContains, errorOf(*rank),
                        "rank 0 closed the connection");
}

} // namespace
