//===- RendezvousTest.cpp - The world from the environment, the id over TCP
//===//
//
// worldFromEnvironment on maps of variables: each launcher's convention, their
// precedence, and every error a wrong or partial set gives. exchangeCommId
// with threads as ranks over 127.0.0.1: every rank gets rank 0's id (the
// connecting ranks start first, so they retry), and each way it can fail
// (a rank that never connects, nobody listening, rank 0 never answering,
// a stranger claiming a rank, the port taken) ends within the timeout with a
// message naming who waited for whom. Hand-made connections (RawClient, with
// the hello's bytes written out here as the wire format) check what rank 0
// does with what no rank sends: garbage, a stalled or partial hello, a rank
// out of range, another protocol version, a flood of connections. No GPU, no
// NCCL.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Rendezvous.h"

#include "fa/train/Launcher.h"

#include "TrainTesting.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
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

TEST(RendezvousEnvironmentTest, TheWorldSizeIsBounded) {
  // Rank 0 sizes its table of connections by it.
  EXPECT_EQ(errorFrom(torchrun("0", "1000000000", "0")),
            std::string(kTorchrun) +
                "WORLD_SIZE=1000000000 is more than the 65536 ranks a world "
                "may have");
  EXPECT_EQ(errorFrom(torchrun("0", "65537", "0")),
            std::string(kTorchrun) +
                "WORLD_SIZE=65537 is more than the 65536 ranks a world may "
                "have");
  EXPECT_EQ(errorFrom(torchrun("0", "-1", "0")),
            std::string(kTorchrun) + "WORLD_SIZE=-1 must be at least 1");
  EXPECT_EQ(errorFrom(torchrun("0", "abc", "0")),
            std::string(kTorchrun) + "WORLD_SIZE=\"abc\" is not an integer");
  EXPECT_EQ(worldFrom(torchrun("65535", "65536", "7")).worldSize, 65536);
}

TEST(RendezvousEnvironmentTest, TheLocalRankIsInTheWorld) {
  EXPECT_EQ(errorFrom(torchrun("1", "4", "4")),
            std::string(kTorchrun) + "LOCAL_RANK=4 must be less than "
                                     "WORLD_SIZE=4");
  EXPECT_EQ(errorFrom({{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "1"},
                       {"SLURM_LOCALID", "2147483647"}}),
            "reading the distributed world from slurm's variables: "
            "SLURM_LOCALID=2147483647 must be less than SLURM_NTASKS=1");
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
  int descriptor() const { return fd; }

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
                " (MASTER_PORT) for the other ranks: a connection from "
                "127.0.0.1 says it is rank 7 of 8, but this world has 3 ranks "
                "(is another job using the port, or WORLD_SIZE set "
                "differently on some ranks?)");
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

TEST(RendezvousExchangeTest, AWorldOutOfBoundsFailsBeforeAnyConnection) {
  const int port = freeLocalPort();
  const std::string doing = "exchanging the NCCL id: ";
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(1, 1000000000, port), CommId{},
                             milliseconds(300));
            }),
            doing + "the world size 1000000000 is not in [1, 65536]");
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(0, -1, port), CommId{}, milliseconds(300));
            }),
            doing + "the world size -1 is not in [1, 65536]");
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(3, 2, port), CommId{}, milliseconds(300));
            }),
            doing + "rank 3 is not in [0, 2)");
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(1, 2, 70000), CommId{}, milliseconds(300));
            }),
            doing + "MASTER_PORT 70000 is not a TCP port (1 to 65535)");
}

// --- What no rank sends
// --------------------------------------------------------

/// A rank's hello as bytes: "FAHI", the protocol version, the world size and
/// the rank, each 4 bytes in network order.
std::string helloBytes(std::uint32_t worldSize, std::uint32_t rank,
                       std::uint32_t version = 1) {
  std::string bytes = "FAHI";
  for (std::uint32_t word : {version, worldSize, rank}) {
    std::uint32_t wire = htonl(word);
    bytes.append(reinterpret_cast<const char *>(&wire), sizeof(wire));
  }
  return bytes;
}

/// A connection to 127.0.0.1:port made by hand, sending what it is told.
class RawClient {
public:
  /// Connects, retrying for a few seconds while rank 0 starts listening.
  explicit RawClient(int port) {
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
    do {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::connect(fd, reinterpret_cast<sockaddr *>(&address),
                    sizeof(address)) == 0)
        return;
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient &) = delete;
  RawClient &operator=(const RawClient &) = delete;

  void send(const std::string &bytes) {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  void close() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }

  /// Whether rank 0 closes the connection within `deadline` (a deadline for
  /// doing it at all, not a measure of speed); what it sent goes to `sent`.
  bool closedWithin(milliseconds deadline, std::string *sent = nullptr) {
    auto end = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(
          end - std::chrono::steady_clock::now());
      pollfd ready{fd, POLLIN, 0};
      if (left.count() <= 0 ||
          ::poll(&ready, 1, static_cast<int>(left.count())) <= 0)
        return false;
      char buffer[256];
      ssize_t received = ::recv(fd, buffer, sizeof(buffer), 0);
      if (received <= 0)
        return true;
      if (sent)
        sent->append(buffer, static_cast<std::size_t>(received));
    }
  }

private:
  int fd = -1;
};

std::string rankZeroDoing(int worldSize, int port) {
  return "rank 0 of " + std::to_string(worldSize) + " listening on port " +
         portText(port) + " (MASTER_PORT) for the other ranks: ";
}

TEST(RendezvousExchangeTest, RankZeroDropsAConnectionThatIsNotARank) {
  // An HTTP probe, and the 4 bytes that were "I am rank 1" before the hello.
  for (const std::string garbage :
       {std::string("GET "), std::string("\0\0\0\1", 4)}) {
    SCOPED_TRACE("sent " + std::to_string(garbage.size()) + " bytes");
    const int port = freeLocalPort();
    const CommId id = patternId(1);
    auto rank0 = startRank(rankOf(0, 2, port), id, milliseconds(10000));
    RawClient rogue(port);
    rogue.send(garbage);
    std::string answer;
    EXPECT_TRUE(rogue.closedWithin(milliseconds(5000), &answer));
    EXPECT_EQ(answer, "") << "the rogue got an answer";
    // Rank 0 went on waiting for its rank.
    auto rank1 = startRank(rankOf(1, 2, port), CommId{}, milliseconds(10000));
    EXPECT_EQ(rank1.get(), id);
    EXPECT_EQ(rank0.get(), id);
  }
}

TEST(RendezvousExchangeTest, RankZeroNamesWhatWasNotARankWhenOneIsMissing) {
  const int port = freeLocalPort();
  auto rank0 = startRank(rankOf(0, 2, port), patternId(1), milliseconds(1000));
  RawClient stalled(port);
  stalled.send("FAH"); // Part of a hello, then nothing.
  EXPECT_EQ(errorOf(rank0),
            rankZeroDoing(2, port) +
                "rank 1 did not connect within 1 s; 1 connection was not a "
                "rank (from 127.0.0.1: sent 3 of the 16 bytes of a rank's "
                "hello, then nothing)");
}

TEST(RendezvousExchangeTest, AStalledConnectionIsDroppedAndRankZeroGoesOn) {
  const int port = freeLocalPort();
  const CommId id = patternId(1);
  RendezvousLimits limits;
  limits.helloTimeout = milliseconds(200);
  auto rank0 = std::async(std::launch::async, [&] {
    return exchangeCommId(rankOf(0, 2, port), id, milliseconds(20000), limits);
  });
  RawClient stalled(port);
  stalled.send("FAHI");
  EXPECT_TRUE(stalled.closedWithin(milliseconds(5000)))
      << "rank 0 kept a stalled connection";
  auto rank1 = startRank(rankOf(1, 2, port), CommId{}, milliseconds(20000));
  EXPECT_EQ(rank1.get(), id);
  EXPECT_EQ(rank0.get(), id);
}

/// The number of file descriptors this process has open.
int openDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto &entry :
       std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

TEST(RendezvousExchangeTest, RankZeroHoldsAtMostTheLimitOfUnidentified) {
  const int port = freeLocalPort();
  const CommId id = patternId(1);
  RendezvousLimits limits;
  limits.pendingConnections = 4;
  const int before = openDescriptors();
  auto rank0 = std::async(std::launch::async, [&] {
    return exchangeCommId(rankOf(0, 2, port), id, milliseconds(20000), limits);
  });
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 40; ++i)
    flood.push_back(std::make_unique<RawClient>(port));
  std::this_thread::sleep_for(
      milliseconds(200)); // Rank 0 accepts what it will.
  // The 40 clients, rank 0's listener and at most 4 accepted connections.
  EXPECT_LE(openDescriptors(), before + 40 + 1 + 4);
  flood.clear();
  // Rank 0 drops them as they close, and reaches the rank behind them.
  auto rank1 = startRank(rankOf(1, 2, port), CommId{}, milliseconds(20000));
  EXPECT_EQ(rank1.get(), id);
  EXPECT_EQ(rank0.get(), id);
}

TEST(RendezvousExchangeTest, RankZeroRejectsAHelloWithARankOutOfRange) {
  for (std::uint32_t rank : {5u, 0u, 0xffffffffu}) {
    const int port = freeLocalPort();
    auto rank0 =
        startRank(rankOf(0, 3, port), patternId(1), milliseconds(5000));
    RawClient stranger(port);
    stranger.send(helloBytes(3, rank));
    EXPECT_EQ(errorOf(rank0),
              rankZeroDoing(3, port) +
                  "a connection from 127.0.0.1 says it "
                  "is rank " +
                  std::to_string(rank) +
                  ", not one of 1 to 2 (is another job using the port?)");
    EXPECT_TRUE(stranger.closedWithin(milliseconds(5000)));
  }
}

TEST(RendezvousExchangeTest, RankZeroRejectsAnotherProtocolVersion) {
  const int port = freeLocalPort();
  auto rank0 = startRank(rankOf(0, 2, port), patternId(1), milliseconds(5000));
  RawClient newer(port);
  newer.send(helloBytes(2, 1, /*version=*/2));
  EXPECT_EQ(errorOf(rank0),
            rankZeroDoing(2, port) +
                "a connection from 127.0.0.1 speaks rendezvous protocol "
                "version 2, rank 0 speaks 1 (do all ranks run the same "
                "fa-run?)");
}

TEST(RendezvousExchangeTest, ARankRejectsAnAnswerThatIsNotRankZeros) {
  // Another program on MASTER_PORT answers whatever it is sent.
  SilentListener listener;
  const int listenerFd = listener.descriptor();
  auto impostor = std::async(std::launch::async, [&] {
    pollfd ready{listenerFd, POLLIN, 0};
    if (::poll(&ready, 1, 5000) <= 0)
      return;
    int fd = ::accept(listenerFd, nullptr, nullptr);
    char hello[16];
    ::recv(fd, hello, sizeof(hello), MSG_WAITALL);
    const std::string answer(136, 'x');
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(milliseconds(500));
    ::close(fd);
  });
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(1, 2, listener.port()), CommId{},
                             milliseconds(5000));
            }),
            "rank 1 of 2 waiting for the NCCL id from rank 0 at 127.0.0.1:" +
                portText(listener.port()) +
                ": the answer is not a fa-run rendezvous reply (is another "
                "program listening on MASTER_PORT?)");
  impostor.get();
}

TEST(RendezvousExchangeTest, RankZeroRaisesItsOpenFileLimitForALargeWorld) {
  rlimit before = {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < 2000)
    GTEST_SKIP() << "the hard open-file limit is below 2000";
  rlimit low = before;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const int port = freeLocalPort();
  // A world of 1000 on a soft limit of 256: rank 0 raises it, and names the
  // first few missing ranks.
  EXPECT_EQ(traintest::errorOf([&] {
              exchangeCommId(rankOf(0, 1000, port), patternId(1),
                             milliseconds(100));
            }),
            rankZeroDoing(1000, port) +
                "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 991 more did not connect "
                "within 0.1 s");
  rlimit after = {};
  ::getrlimit(RLIMIT_NOFILE, &after);
  EXPECT_GE(after.rlim_cur, 1000u);
  ::setrlimit(RLIMIT_NOFILE, &before);
}

TEST(RendezvousExchangeTest, RankZeroNamesAHardOpenFileLimitTooLow) {
  // In a child: a hard limit, once lowered, stays lowered.
  const std::string messageFile = traintest::testDirectory() + "/message.txt";
  const int port = freeLocalPort();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit low = {64, 64};
    ::setrlimit(RLIMIT_NOFILE, &low);
    traintest::writeBytes(messageFile, traintest::errorOf([&] {
                            exchangeCommId(rankOf(0, 1000, port), patternId(1),
                                           milliseconds(100));
                          }));
    _exit(0);
  }
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(traintest::readBytes(messageFile),
            rankZeroDoing(1000, port) +
                "a world of 1000 ranks needs about 1128 open files on rank 0, "
                "but the hard limit is 64 (raise it: ulimit -Hn)");
}

} // namespace
