//===- Rendezvous.cpp - Who am I, and the NCCL id from rank 0 -------------===//
//
// The exchange is a tiny TCP protocol: each rank r > 0 connects to rank 0 and
// sends a 16-byte hello (a magic number, the protocol version, its world size
// and r); once all of them have connected, rank 0 answers each with a reply
// header (another magic, the version) and the 128-byte id, and closes.
// Waiting for everyone first means that when a rank never shows up, rank 0
// fails naming it and the ranks that did connect fail too (rank 0 closes
// without answering) rather than going on into NCCL's initialisation and
// timing out there.
//
// Rank 0 trusts nothing a peer sends: a connection that is not a rank (wrong
// magic, closed or stalled before its hello is complete) is dropped and
// noted in the timeout message; one that is a rank of another world or build
// fails the exchange at once. It reads at most a hello from each, holds at
// most RendezvousLimits::pendingConnections unidentified connections, each
// for at most RendezvousLimits::helloTimeout, and sizes its table by the
// world size it was given (bounded by kMaxWorldSize), never by a peer's.
//
// Sockets are non-blocking and every wait is a poll() bounded by the one
// deadline of the whole exchange.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Rendezvous.h"

#include "TimeText.h"

#include "fa/runtime/Error.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

namespace fa::train {
namespace {

using Clock = std::chrono::steady_clock;
using Getenv = std::function<std::optional<std::string>(const std::string &)>;

/// How long a rank waits before connecting again while rank 0 starts.
constexpr std::chrono::milliseconds kConnectRetryInterval(100);

// --- The environment ---------------------------------------------------------

/// One launcher's variables.
struct Convention {
  const char *source;
  const char *rank;
  const char *worldSize;
  const char *localRank;
  /// Whether only the rank variable says the convention applies; otherwise
  /// any of the three does (and the others must then be there too).
  bool rankAlone;
};

/// In order of precedence (Rendezvous.h). Slurm sets SLURM_NTASKS in every
/// shell of an allocation, but SLURM_PROCID only in its tasks.
const Convention kConventions[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", false},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", false},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", true},
};

/// Whether `convention` describes this process.
bool applies(const Convention &convention, const Getenv &getenv) {
  if (getenv(convention.rank))
    return true;
  return !convention.rankAlone &&
         (getenv(convention.worldSize) || getenv(convention.localRank));
}

/// Reads the integer in `name`, the whole of its value; throws naming it.
int integerVariable(const Getenv &getenv, const std::string &name,
                    const std::string &doing, const std::string &missingHint) {
  std::optional<std::string> text = getenv(name);
  if (!text)
    throw Error(doing + ": " + name + " is not set" + missingHint);
  int value = 0;
  const char *end = text->data() + text->size();
  auto [parsed, error] = std::from_chars(text->data(), end, value);
  if (error == std::errc::result_out_of_range)
    throw Error(doing + ": " + name + "=\"" + *text + "\" is out of range");
  if (error != std::errc() || parsed != end)
    throw Error(doing + ": " + name + "=\"" + *text + "\" is not an integer");
  return value;
}

WorldInfo readConvention(const Convention &convention, const Getenv &getenv) {
  const std::string doing = "reading the distributed world from " +
                            std::string(convention.source) + "'s variables";
  const std::string together = std::string(" (") + convention.source +
                               " sets " + convention.rank + ", " +
                               convention.worldSize + " and " +
                               convention.localRank + " together)";
  WorldInfo world;
  world.source = convention.source;
  world.rank = integerVariable(getenv, convention.rank, doing, together);
  world.worldSize =
      integerVariable(getenv, convention.worldSize, doing, together);
  world.localRank =
      integerVariable(getenv, convention.localRank, doing, together);
  auto named = [](const char *name, int value) {
    return std::string(name) + "=" + std::to_string(value);
  };
  if (world.worldSize < 1)
    throw Error(doing + ": " + named(convention.worldSize, world.worldSize) +
                " must be at least 1");
  if (world.worldSize > kMaxWorldSize)
    throw Error(doing + ": " + named(convention.worldSize, world.worldSize) +
                " is more than the " + std::to_string(kMaxWorldSize) +
                " ranks a world may have");
  if (world.rank < 0 || world.rank >= world.worldSize)
    throw Error(doing + ": " + named(convention.rank, world.rank) +
                " must be in [0, " +
                named(convention.worldSize, world.worldSize) + ")");
  if (world.localRank < 0)
    throw Error(doing + ": " + named(convention.localRank, world.localRank) +
                " must not be negative");
  // A node holds some of the world's ranks, never more than all of them.
  if (world.localRank >= world.worldSize)
    throw Error(doing + ": " + named(convention.localRank, world.localRank) +
                " must be less than " +
                named(convention.worldSize, world.worldSize));
  if (world.worldSize == 1)
    return world;

  const std::string needed = " (rank " + std::to_string(world.rank) + " of " +
                             std::to_string(world.worldSize) +
                             " finds rank 0 at MASTER_ADDR:MASTER_PORT)";
  std::optional<std::string> address = getenv("MASTER_ADDR");
  if (!address || address->empty())
    throw Error(doing + ": MASTER_ADDR is not set" + needed);
  world.masterAddr = *address;
  world.masterPort = integerVariable(getenv, "MASTER_PORT", doing, needed);
  if (world.masterPort < 1 || world.masterPort > 65535)
    throw Error(doing + ": " + named("MASTER_PORT", world.masterPort) +
                " is not a TCP port (1 to 65535)");
  return world;
}

// --- Sockets -----------------------------------------------------------------

/// A socket, closed when it goes.
class Socket {
public:
  explicit Socket(int fd = -1) : fd(fd) {}
  ~Socket() {
    if (fd >= 0)
      ::close(fd);
  }
  Socket(Socket &&other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket &operator=(Socket &&other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;

  int get() const { return fd; }
  explicit operator bool() const { return fd >= 0; }

private:
  int fd;
};

std::string systemError(int error) { return std::strerror(error); }

/// Milliseconds left until `deadline` for poll(), rounded up, at least 0.
int msLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

/// poll() that restarts after signals; returns the number of ready
/// descriptors (0 past the deadline).
int pollUntil(std::vector<pollfd> &fds, Clock::time_point deadline,
              const std::string &doing) {
  for (;;) {
    int ready = ::poll(fds.data(), fds.size(), msLeft(deadline));
    if (ready >= 0)
      return ready;
    if (errno != EINTR)
      throw Error(doing + ": poll: " + systemError(errno));
  }
}

/// Waits until `fd` is ready for `events`; false past the deadline.
bool waitFor(int fd, short events, Clock::time_point deadline,
             const std::string &doing) {
  std::vector<pollfd> fds{{fd, events, 0}};
  return pollUntil(fds, deadline, doing) > 0;
}

/// Sends all `size` bytes; throws past the deadline or on an error.
void sendAll(int fd, const void *data, std::size_t size,
             Clock::time_point deadline, std::chrono::milliseconds timeout,
             const std::string &doing) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent > 0) {
      bytes += sent;
      size -= static_cast<std::size_t>(sent);
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      throw Error(doing + ": " + systemError(errno));
    if (!waitFor(fd, POLLOUT, deadline, doing))
      throw Error(doing + ": not done within " + secondsText(timeout));
  }
}

enum class Received { All, Closed, TimedOut };

/// Receives exactly `size` bytes unless the peer closes first or the
/// deadline passes; throws on an error.
Received receiveAll(int fd, void *data, std::size_t size,
                    Clock::time_point deadline, const std::string &doing) {
  char *bytes = static_cast<char *>(data);
  while (size > 0) {
    ssize_t received = ::recv(fd, bytes, size, 0);
    if (received > 0) {
      bytes += received;
      size -= static_cast<std::size_t>(received);
      continue;
    }
    if (received == 0)
      return Received::Closed;
    if (errno == EINTR)
      continue;
    if (errno == ECONNRESET)
      return Received::Closed;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      throw Error(doing + ": " + systemError(errno));
    if (!waitFor(fd, POLLIN, deadline, doing))
      return Received::TimedOut;
  }
  return Received::All;
}

Socket tcpSocket(int family, const std::string &doing) {
  Socket socket(
      ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket)
    throw Error(doing + ": socket: " + systemError(errno));
  return socket;
}

// --- The protocol ------------------------------------------------------------

/// Every field is a 32-bit unsigned integer in network order. A rank's hello:
/// kHelloMagic, kProtocolVersion, its world size, its rank. Rank 0's reply:
/// kReplyMagic, kProtocolVersion, then the id. The magics differ so that a
/// peer echoing the hello back is not taken for rank 0.
constexpr std::uint32_t kHelloMagic = 0x46414849; // "FAHI"
constexpr std::uint32_t kReplyMagic = 0x46414944; // "FAID"
constexpr std::uint32_t kProtocolVersion = 1;
constexpr std::size_t kWordSize = sizeof(std::uint32_t);
constexpr std::size_t kHelloSize = 4 * kWordSize;
constexpr std::size_t kReplyHeaderSize = 2 * kWordSize;

using HelloBytes = std::array<unsigned char, kHelloSize>;
using ReplyHeaderBytes = std::array<unsigned char, kReplyHeaderSize>;

void putWord(unsigned char *at, std::uint32_t value) {
  value = htonl(value);
  std::memcpy(at, &value, kWordSize);
}

std::uint32_t wordAt(const unsigned char *at) {
  std::uint32_t value = 0;
  std::memcpy(&value, at, kWordSize);
  return ntohl(value);
}

HelloBytes encodeHello(const WorldInfo &world) {
  HelloBytes hello{};
  putWord(&hello[0], kHelloMagic);
  putWord(&hello[kWordSize], kProtocolVersion);
  putWord(&hello[2 * kWordSize], static_cast<std::uint32_t>(world.worldSize));
  putWord(&hello[3 * kWordSize], static_cast<std::uint32_t>(world.rank));
  return hello;
}

ReplyHeaderBytes encodeReplyHeader() {
  ReplyHeaderBytes header{};
  putWord(&header[0], kReplyMagic);
  putWord(&header[kWordSize], kProtocolVersion);
  return header;
}

/// Throws for a world that worldFromEnvironment would have refused (size,
/// rank, port): rank 0 allocates by the size, so it is bounded first.
void checkWorld(const WorldInfo &world) {
  const std::string doing = "exchanging the NCCL id";
  if (world.worldSize < 1 || world.worldSize > kMaxWorldSize)
    throw Error(doing + ": the world size " + std::to_string(world.worldSize) +
                " is not in [1, " + std::to_string(kMaxWorldSize) + "]");
  if (world.rank < 0 || world.rank >= world.worldSize)
    throw Error(doing + ": rank " + std::to_string(world.rank) +
                " is not in [0, " + std::to_string(world.worldSize) + ")");
  if (world.worldSize > 1 && (world.masterPort < 1 || world.masterPort > 65535))
    throw Error(doing + ": MASTER_PORT " + std::to_string(world.masterPort) +
                " is not a TCP port (1 to 65535)");
}

// --- Rank 0 ------------------------------------------------------------------

Socket listenOn(int port, const std::string &doing) {
  Socket listener = tcpSocket(AF_INET, doing);
  int yes = 1;
  // A previous run's connections in TIME_WAIT must not block the port.
  if (::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &yes,
                   sizeof(yes)) != 0)
    throw Error(doing + ": setsockopt(SO_REUSEADDR): " + systemError(errno));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(listener.get(), reinterpret_cast<sockaddr *>(&address),
             sizeof(address)) != 0)
    throw Error(doing + ": bind: " + systemError(errno));
  if (::listen(listener.get(), SOMAXCONN) != 0)
    throw Error(doing + ": listen: " + systemError(errno));
  return listener;
}

/// Makes sure rank 0 may hold a connection from every rank plus the pending
/// ones: raises the soft open-file limit as far as the hard one allows.
void ensureOpenFiles(const WorldInfo &world, const RendezvousLimits &limits,
                     const std::string &doing) {
  // The connections, the listener, and room for what the process has open.
  const rlim_t needed = static_cast<rlim_t>(world.worldSize) +
                        static_cast<rlim_t>(limits.pendingConnections) + 64;
  rlimit limit = {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error(doing + ": getrlimit(RLIMIT_NOFILE): " + systemError(errno));
  if (limit.rlim_cur >= needed)
    return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed)
    throw Error(doing + ": a world of " + std::to_string(world.worldSize) +
                " ranks needs about " + std::to_string(needed) +
                " open files on rank 0, but the hard limit is " +
                std::to_string(limit.rlim_max) + " (raise it: ulimit -Hn)");
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error(doing + ": raising the open-file limit to " +
                std::to_string(needed) + ": " + systemError(errno));
}

/// "2, 3" for the ranks in 1..world-1 without a connection; past a few,
/// "2, 3, ... and 997 more".
std::string missingRanks(const std::vector<Socket> &byRank) {
  constexpr int kListed = 8;
  std::string list;
  int missing = 0;
  for (std::size_t rank = 1; rank < byRank.size(); ++rank) {
    if (byRank[rank])
      continue;
    if (missing++ < kListed)
      list += (list.empty() ? "" : ", ") + std::to_string(rank);
  }
  if (missing > kListed)
    list += " and " + std::to_string(missing - kListed) + " more";
  return list;
}

/// The connections rank 0 dropped as not being ranks, for the message when
/// a rank is missing: how many, and what the first one did.
class DroppedConnections {
public:
  void add(const std::string &peer, const std::string &what) {
    if (count++ == 0)
      first = "from " + peer + ": " + what;
  }

  /// "", or "; 1 connection was not a rank (from 10.0.0.7: ...)".
  std::string note() const {
    if (count == 0)
      return "";
    return "; " + std::to_string(count) +
           (count == 1 ? " connection was not a rank ("
                       : " connections were not ranks (the first ") +
           first + ")";
  }

private:
  int count = 0;
  std::string first;
};

/// A connection that has not yet said which rank it is.
struct Unidentified {
  Socket socket;
  std::string peer; // Its IPv4 address, for messages.
  Clock::time_point helloDeadline;
  HelloBytes hello{};
  std::size_t received = 0;
};

std::string helloProgress(const Unidentified &connection) {
  return std::to_string(connection.received) + " of the " +
         std::to_string(kHelloSize) + " bytes of a rank's hello";
}

/// Rank 0's side: accepts connections until every other rank has introduced
/// itself, keeping each rank's socket for the reply. Bounded in everything a
/// peer controls: the connections waiting for their hello (count and time),
/// what is read from each (the hello's size) and the ranks (the world's).
class RankZero {
public:
  RankZero(const WorldInfo &world, const RendezvousLimits &limits,
           std::string doing)
      : world(world), limits(limits), doing(std::move(doing)),
        byRank(static_cast<std::size_t>(world.worldSize)) {}

  /// Every other rank's connection, by rank (none for rank 0); throws past
  /// `deadline`.
  std::vector<Socket> collect(Clock::time_point deadline,
                              std::chrono::milliseconds timeout) {
    Socket listener = listenOn(world.masterPort, doing);
    while (connected < world.worldSize) {
      const Clock::time_point now = Clock::now();
      if (now >= deadline)
        throwMissing(timeout);
      dropStalled(now);
      // Past the limit, new connections wait in the listen backlog.
      const bool accepting =
          static_cast<int>(pending.size()) < limits.pendingConnections;
      const short listenerEvents = accepting ? POLLIN : 0;
      std::vector<pollfd> fds{{listener.get(), listenerEvents, 0}};
      for (const Unidentified &connection : pending)
        fds.push_back({connection.socket.get(), POLLIN, 0});
      if (pollUntil(fds, nextWake(deadline), doing) == 0)
        continue;
      readHellos(fds);
      if (fds[0].revents != 0)
        acceptPending(listener);
    }
    return std::move(byRank);
  }

private:
  Clock::time_point nextWake(Clock::time_point deadline) const {
    for (const Unidentified &connection : pending)
      deadline = std::min(deadline, connection.helloDeadline);
    return deadline;
  }

  [[noreturn]] void throwMissing(std::chrono::milliseconds timeout) {
    for (const Unidentified &connection : pending)
      dropped.add(connection.peer,
                  "sent " + helloProgress(connection) + ", then nothing");
    const int missing = world.worldSize - connected;
    throw Error(doing + ": rank" + (missing > 1 ? "s " : " ") +
                missingRanks(byRank) + " did not connect within " +
                secondsText(timeout) + dropped.note());
  }

  /// Drops the connections whose hello is overdue.
  void dropStalled(Clock::time_point now) {
    std::vector<Unidentified> waiting;
    for (Unidentified &connection : pending) {
      if (now < connection.helloDeadline)
        waiting.push_back(std::move(connection));
      else
        dropped.add(connection.peer, "sent " + helloProgress(connection) +
                                         " in " +
                                         secondsText(limits.helloTimeout));
    }
    pending = std::move(waiting);
  }

  /// Accepts pending connections up to the limit.
  void acceptPending(const Socket &listener) {
    while (static_cast<int>(pending.size()) < limits.pendingConnections) {
      sockaddr_in address = {};
      socklen_t length = sizeof(address);
      int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr *>(&address),
                         &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED)
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          return;
        throw Error(doing + ": accept: " + systemError(errno));
      }
      char text[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
      pending.push_back(
          Unidentified{Socket(fd), text, Clock::now() + limits.helloTimeout});
    }
  }

  /// Reads from the connections `fds` says are ready; identifies those whose
  /// hello is complete and drops those that are not ranks.
  void readHellos(const std::vector<pollfd> &fds) {
    std::vector<Unidentified> waiting;
    for (std::size_t i = 0; i < pending.size(); ++i)
      if (fds[i + 1].revents == 0 || !readHello(pending[i]))
        waiting.push_back(std::move(pending[i]));
    pending = std::move(waiting);
  }

  /// Reads what `connection` has sent of its hello; true once it is done
  /// with (identified as a rank, or dropped).
  bool readHello(Unidentified &connection) {
    for (;;) {
      ssize_t received = ::recv(connection.socket.get(),
                                connection.hello.data() + connection.received,
                                kHelloSize - connection.received, 0);
      if (received < 0 && errno == EINTR)
        continue;
      if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
      if (received == 0 || (received < 0 && errno == ECONNRESET)) {
        // A port probe, or a rank that died: a restarted rank may connect
        // again.
        dropped.add(connection.peer,
                    "closed after " + helloProgress(connection));
        return true;
      }
      if (received < 0)
        throw Error(doing + ": recv: " + systemError(errno));
      const std::size_t before = connection.received;
      connection.received += static_cast<std::size_t>(received);
      if (before < kWordSize && connection.received >= kWordSize &&
          wordAt(&connection.hello[0]) != kHelloMagic) {
        dropped.add(connection.peer, "its first bytes are not a rank's hello");
        return true;
      }
      if (connection.received == kHelloSize) {
        identify(connection);
        return true;
      }
    }
  }

  /// Takes a connection whose hello is complete as its rank's, or fails the
  /// exchange: it is a rank, but of another world or build.
  void identify(Unidentified &connection) {
    const std::uint32_t version = wordAt(&connection.hello[kWordSize]);
    const std::uint32_t worldSize = wordAt(&connection.hello[2 * kWordSize]);
    const std::uint32_t rank = wordAt(&connection.hello[3 * kWordSize]);
    const std::string from = ": a connection from " + connection.peer;
    if (version != kProtocolVersion)
      throw Error(doing + from + " speaks rendezvous protocol version " +
                  std::to_string(version) + ", rank 0 speaks " +
                  std::to_string(kProtocolVersion) +
                  " (do all ranks run the same fa-run?)");
    if (worldSize != static_cast<std::uint32_t>(world.worldSize))
      throw Error(doing + from + " says it is rank " + std::to_string(rank) +
                  " of " + std::to_string(worldSize) + ", but this world has " +
                  std::to_string(world.worldSize) +
                  " ranks (is another job using the port, or WORLD_SIZE set "
                  "differently on some ranks?)");
    if (rank < 1 || rank >= worldSize)
      throw Error(doing + from + " says it is rank " + std::to_string(rank) +
                  ", not one of 1 to " + std::to_string(world.worldSize - 1) +
                  " (is another job using the port?)");
    if (byRank[rank])
      throw Error(doing + ": two connections say they are rank " +
                  std::to_string(rank) + " (is another job using the port?)");
    byRank[rank] = std::move(connection.socket);
    ++connected;
  }

  const WorldInfo &world;
  const RendezvousLimits &limits;
  const std::string doing;
  std::vector<Socket> byRank;
  int connected = 1; // Rank 0 itself.
  std::vector<Unidentified> pending;
  DroppedConnections dropped;
};

void serveCommId(const WorldInfo &world, const CommId &id,
                 const RendezvousLimits &limits, Clock::time_point deadline,
                 std::chrono::milliseconds timeout) {
  const std::string doing =
      "rank 0 of " + std::to_string(world.worldSize) + " listening on port " +
      std::to_string(world.masterPort) + " (MASTER_PORT) for the other ranks";
  ensureOpenFiles(world, limits, doing);
  std::vector<Socket> byRank =
      RankZero(world, limits, doing).collect(deadline, timeout);
  const ReplyHeaderBytes header = encodeReplyHeader();
  for (int rank = 1; rank < world.worldSize; ++rank) {
    const std::string sending =
        doing + ": sending the NCCL id to rank " + std::to_string(rank);
    sendAll(byRank[rank].get(), header.data(), header.size(), deadline, timeout,
            sending);
    sendAll(byRank[rank].get(), id.data(), id.size(), deadline, timeout,
            sending);
  }
}

// --- The other ranks ---------------------------------------------------------

/// Whether a failed connect() may succeed later: rank 0 not listening yet,
/// or its host not up yet.
bool worthRetrying(int error) {
  return error == ECONNREFUSED || error == ETIMEDOUT || error == EHOSTUNREACH ||
         error == ENETUNREACH || error == ECONNRESET || error == ECONNABORTED;
}

/// One attempt to connect to `address`: the socket, or none with `error` set
/// to why not (ETIMEDOUT past the deadline).
Socket tryConnect(const addrinfo &address, Clock::time_point deadline,
                  int &error, const std::string &doing) {
  Socket socket = tcpSocket(address.ai_family, doing);
  if (::connect(socket.get(), address.ai_addr, address.ai_addrlen) == 0)
    return socket;
  // Interrupted or not, a non-blocking connect goes on in the background.
  if (errno != EINPROGRESS && errno != EINTR) {
    error = errno;
    return Socket();
  }
  if (!waitFor(socket.get(), POLLOUT, deadline, doing)) {
    error = ETIMEDOUT;
    return Socket();
  }
  socklen_t length = sizeof(error);
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0)
    error = errno;
  return error == 0 ? std::move(socket) : Socket();
}

/// Connects to MASTER_ADDR:MASTER_PORT, retrying until the deadline.
Socket connectToRankZero(const WorldInfo &world, Clock::time_point deadline,
                         std::chrono::milliseconds timeout,
                         const std::string &doing) {
  // Rank 0 listens on IPv4 only, so a name must resolve to IPv4 here.
  addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(world.masterPort);
  std::string lastError;
  for (;;) {
    addrinfo *addresses = nullptr;
    int resolved = ::getaddrinfo(world.masterAddr.c_str(), port.c_str(), &hints,
                                 &addresses);
    if (resolved == 0) {
      std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(
          addresses, &::freeaddrinfo);
      for (const addrinfo *address = addresses; address;
           address = address->ai_next) {
        int error = 0;
        Socket socket = tryConnect(*address, deadline, error, doing);
        if (socket)
          return socket;
        if (!worthRetrying(error))
          throw Error(doing + ": " + systemError(error));
        lastError = systemError(error);
      }
    } else if (resolved == EAI_AGAIN) {
      lastError = ::gai_strerror(resolved);
    } else {
      throw Error(doing + ": cannot resolve MASTER_ADDR=" + world.masterAddr +
                  ": " +
                  (resolved == EAI_SYSTEM ? systemError(errno)
                                          : ::gai_strerror(resolved)));
    }
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero())
      throw Error(doing + ": no answer within " + secondsText(timeout) +
                  " (last error: " + lastError +
                  "); is rank 0 running, with the same MASTER_ADDR and "
                  "MASTER_PORT?");
    std::this_thread::sleep_for(
        std::min<Clock::duration>(left, kConnectRetryInterval));
  }
}

/// Checks the header of rank 0's reply: throws unless it is one.
void checkReplyHeader(const ReplyHeaderBytes &header,
                      const std::string &doing) {
  if (wordAt(&header[0]) != kReplyMagic)
    throw Error(doing + ": the answer is not a fa-run rendezvous reply (is "
                        "another program listening on MASTER_PORT?)");
  const std::uint32_t version = wordAt(&header[kWordSize]);
  if (version != kProtocolVersion)
    throw Error(doing + ": rank 0 speaks rendezvous protocol version " +
                std::to_string(version) + ", this rank speaks " +
                std::to_string(kProtocolVersion) +
                " (do all ranks run the same fa-run?)");
}

/// Receives exactly `size` bytes of rank 0's reply; throws if they do not
/// come.
void receiveReply(int fd, void *data, std::size_t size,
                  Clock::time_point deadline, std::chrono::milliseconds timeout,
                  const std::string &doing) {
  switch (receiveAll(fd, data, size, deadline, doing)) {
  case Received::All:
    return;
  case Received::Closed:
    throw Error(doing + ": rank 0 closed the connection (it may have given "
                        "up waiting for another rank, or failed)");
  case Received::TimedOut:
    break;
  }
  throw Error(doing + ": nothing within " + secondsText(timeout) +
              " (rank 0 sends it once every rank has connected)");
}

CommId fetchCommId(const WorldInfo &world, Clock::time_point deadline,
                   std::chrono::milliseconds timeout) {
  const std::string self = "rank " + std::to_string(world.rank) + " of " +
                           std::to_string(world.worldSize);
  const std::string rankZero =
      "rank 0 at " + world.masterAddr + ":" + std::to_string(world.masterPort);
  Socket socket = connectToRankZero(world, deadline, timeout,
                                    self + " connecting to " + rankZero +
                                        " (MASTER_ADDR:MASTER_PORT)");
  const HelloBytes hello = encodeHello(world);
  sendAll(socket.get(), hello.data(), hello.size(), deadline, timeout,
          self + " sending its rank to " + rankZero);
  const std::string doing = self + " waiting for the NCCL id from " + rankZero;
  ReplyHeaderBytes header{};
  receiveReply(socket.get(), header.data(), header.size(), deadline, timeout,
               doing);
  checkReplyHeader(header, doing);
  CommId id;
  receiveReply(socket.get(), id.data(), id.size(), deadline, timeout, doing);
  return id;
}

} // namespace

WorldInfo worldFromEnvironment(const Getenv &getenv) {
  for (const Convention &convention : kConventions)
    if (applies(convention, getenv))
      return readConvention(convention, getenv);
  return WorldInfo();
}

WorldInfo worldFromEnvironment() {
  return worldFromEnvironment(
      [](const std::string &name) -> std::optional<std::string> {
        const char *value = std::getenv(name.c_str());
        if (!value)
          return std::nullopt;
        return std::string(value);
      });
}

CommId exchangeCommId(const WorldInfo &world, const CommId &id,
                      std::chrono::milliseconds timeout,
                      const RendezvousLimits &limits) {
  checkWorld(world);
  if (limits.helloTimeout.count() <= 0 || limits.pendingConnections < 1)
    throw Error("exchanging the NCCL id: the hello timeout and the pending "
                "connections must be positive");
  if (world.worldSize == 1)
    return id;
  Clock::time_point deadline = Clock::now() + timeout;
  if (world.rank == 0) {
    serveCommId(world, id, limits, deadline, timeout);
    return id;
  }
  return fetchCommId(world, deadline, timeout);
}

} // namespace fa::train
