// The rsocket rung's helper threads, without N-API: a connect thread per rsocketConnect (resolve
// the route, rconnect within the timeout, then bridge), an accept thread per rsocketListen (a
// bridge thread per accepted connection). Each reports to the loop through an OutcomeSink that
// the JS face (csrc/rdma/bridge.cc) implements over a thread-safe function.
#pragma once

#include <memory>
#include <string>

#if FASTSOCK_HAVE_RDMA
#include <sys/socket.h>
#include <unistd.h>

#include "rdma/bridge/workers.h"

namespace fastsock {
namespace bridge {

struct Endpoint {
  std::string address;
  int port = 0;
};

// What a helper thread hands to the loop: a connected socketpair end, or why not.
struct Outcome {
  int fd = -1;  // JS end of the socketpair; closed with the Outcome unless the receiver takes it (sets -1)
  Endpoint local, remote;
  std::string device;
  int err = 0;  // positive errno on failure
  std::string syscall, reason;
  bool not_offered = false;  // nobody offers rsockets there: the chain's "not offered"

  Outcome() = default;
  Outcome(const Outcome&) = delete;
  Outcome& operator=(const Outcome&) = delete;
  ~Outcome() {
    if (fd >= 0) close(fd);
  }
};

// Where a thread posts its outcomes (the loop). Destroying the sink tells the loop the thread will
// post no more.
class OutcomeSink {
 public:
  virtual ~OutcomeSink() = default;
  // Takes `o`; when the loop can no longer take it, drops it (closing its fd).
  virtual void Post(std::unique_ptr<Outcome> o) = 0;
};

struct ConnectJob {
  std::string address;
  int port = 0;
  int timeout_ms = 0;
  std::unique_ptr<OutcomeSink> sink;  // posted to once, then released
  Worker* worker = nullptr;           // registered; the thread removes it when it ends
};

struct ListenJob {
  int ls = -1;  // the listening rsocket (OpenListener)
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int backlog = 1;
  std::unique_ptr<OutcomeSink> sink;  // posted to per accepted connection, released at the end
  Worker* worker = nullptr;
};

// Starts the connect thread: it checks the route (an iWARP device or no RDMA device: declined,
// not_offered), rconnects within timeout_ms, posts one Outcome, releases the sink and then
// bridges the connection until it ends.
void SpawnConnect(std::unique_ptr<ConnectJob> job);

// Starts the accept thread of a listener: every accepted connection gets its bridge thread and
// an Outcome posted; stops (closing the listening rsocket) when its worker is stopped.
void SpawnAccept(std::unique_ptr<ListenJob> job);

// The RDMA device that owns a local address (rdma_bind_addr): true with its name and transport
// ("ib", "iwarp", "other"), false when none does.
bool DeviceForAddress(const sockaddr_storage& ss, std::string* name, std::string* transport);

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
