//===- Rendezvous.cpp - Who am I, and the NCCL id from rank 0 -------------===//
//
// The exchange is a tiny TCP protocol: each rank r > 0 connects to rank 0 and
// sends r (4 bytes, network order); once all of them have connected, rank 0
// answers each with the 128-byte id and closes. Waiting for everyone first
// means that when a rank never shows up, rank 0 fails naming it and the ranks
// that did connect fail too (rank 0 closes without answering) rather than
// going on into NCCL's initialisation and timing out there.
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
  if (world.rank < 0 || world.rank >= world.worldSize)
    throw Error(doing + ": " + named(convention.rank, world.rank) +
                " must be in [0, " +
                named(convention.worldSize, world.worldSize) + ")");
  if (world.localRank < 0)
    throw Error(doing + ": " + named(convention.localRank, world.localRank) +
                " must not be negative");
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

/// "60 s", "0.3 s".
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

/// A connection that has not yet said which rank it is.
struct Unidentified {
  Socket socket;
  std::array<unsigned char, 4> rank{};
  std::size_t received = 0;
};

/// "2, 3" for the ranks in 1..world-1 without a connection.
std::string missingRanks(const std::vector<Socket> &byRank) {
  std::string list;
  for (std::size_t rank = 1; rank < byRank.size(); ++rank)
    if (!byRank[rank])
      list += (list.empty() ? "" : ", ") + std::to_string(rank);
  return list;
}

/// Accepts every pending connection on `listener`.
void acceptAll(const Socket &listener, std::vector<Unidentified> &connections,
               const std::string &doing) {
  for (;;) {
    int fd = ::accept4(listener.get(), nullptr, nullptr,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      connections.push_back(Unidentified{Socket(fd)});
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return;
    throw Error(doing + ": accept: " + systemError(errno));
  }
}

/// Reads what `connection` has sent of its rank; true once it is complete,
/// or when the peer went away (then `connection.socket` is closed).
bool readRank(Unidentified &connection, const std::string &doing) {
  for (;;) {
    ssize_t received = ::recv(connection.socket.get(),
                              connection.rank.data() + connection.received,
                              connection.rank.size() - connection.received, 0);
    if (received > 0) {
      connection.received += static_cast<std::size_t>(received);
      return connection.received == connection.rank.size();
    }
    if (received < 0 && errno == EINTR)
      continue;
    if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return false;
    if (received == 0 || errno == ECONNRESET) {
      // Gone before saying who it was (a port probe, or a rank that died):
      // a restarted rank may connect again.
      connection.socket = Socket();
      return true;
    }
    throw Error(doing + ": recv: " + systemError(errno));
  }
}

void serveCommId(const WorldInfo &world, const CommId &id,
                 Clock::time_point deadline,
                 std::chrono::milliseconds timeout) {
  const std::string doing =
      "rank 0 of " + std::to_string(world.worldSize) + " listening on port " +
      std::to_string(world.masterPort) + " (MASTER_PORT) for the other ranks";
  Socket listener = listenOn(world.masterPort, doing);
  std::vector<Socket> byRank(static_cast<std::size_t>(world.worldSize));
  std::vector<Unidentified> connections;
  for (int connected = 1; connected < world.worldSize;) {
    if (Clock::now() >= deadline)
      throw Error(doing + ": rank" +
                  (world.worldSize - connected > 1 ? "s " : " ") +
                  missingRanks(byRank) + " did not connect within " +
                  secondsText(timeout));
    std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
    for (const Unidentified &connection : connections)
      fds.push_back({connection.socket.get(), POLLIN, 0});
    if (pollUntil(fds, deadline, doing) == 0)
      continue;
    for (std::size_t i = connections.size(); i-- > 0;) {
      Unidentified &connection = connections[i];
      if (fds[i + 1].revents == 0 || !readRank(connection, doing))
        continue;
      if (connection.socket) {
        std::uint32_t wire = 0;
        std::memcpy(&wire, connection.rank.data(), sizeof(wire));
        std::uint32_t rank = ntohl(wire);
        if (rank < 1 || rank >= static_cast<std::uint32_t>(world.worldSize))
          throw Error(doing + ": a connection says it is rank " +
                      std::to_string(rank) + ", not one of 1 to " +
                      std::to_string(world.worldSize - 1) +
                      " (is another job using the port?)");
        if (byRank[rank])
          throw Error(doing + ": two connections say they are rank " +
                      std::to_string(rank) +
                      " (is another job using the port?)");
        byRank[rank] = std::move(connection.socket);
        ++connected;
      }
      connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (fds[0].revents != 0)
      acceptAll(listener, connections, doing);
  }
  for (int rank = 1; rank < world.worldSize; ++rank)
    sendAll(byRank[rank].get(), id.data(), id.size(), deadline, timeout,
            doing + ": sending the NCCL id to rank " + std::to_string(rank));
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

CommId fetchCommId(const WorldInfo &world, Clock::time_point deadline,
                   std::chrono::milliseconds timeout) {
  const std::string self = "rank " + std::to_string(world.rank) + " of " +
                           std::to_string(world.worldSize);
  const std::string rankZero =
      "rank 0 at " + world.masterAddr + ":" + std::to_string(world.masterPort);
  Socket socket = connectToRankZero(world, deadline, timeout,
                                    self + " connecting to " + rankZero +
                                        " (MASTER_ADDR:MASTER_PORT)");
  std::uint32_t wire = htonl(static_cast<std::uint32_t>(world.rank));
  sendAll(socket.get(), &wire, sizeof(wire), deadline, timeout,
          self + " sending its rank to " + rankZero);
  const std::string doing = self + " waiting for the NCCL id from " + rankZero;
  CommId id;
  switch (receiveAll(socket.get(), id.data(), id.size(), deadline, doing)) {
  case Received::All:
    return id;
  case Received::Closed:
    throw Error(doing + ": rank 0 closed the connection (it may have given "
                        "up waiting for another rank, or failed)");
  case Received::TimedOut:
    break;
  }
  throw Error(doing + ": nothing within " + secondsText(timeout) +
              " (rank 0 sends it once every rank has connected)");
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
                      std::chrono::milliseconds timeout) {
  if (world.worldSize == 1)
    return id;
  Clock::time_point deadline = Clock::now() + timeout;
  if (world.rank == 0) {
    serveCommId(world, id, deadline, timeout);
    return id;
  }
  return fetchCommId(world, deadline, timeout);
}

} // namespace fa::train
