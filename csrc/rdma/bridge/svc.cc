#include "rdma/bridge/svc.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>

#include <atomic>
#include <mutex>

#include "ip_addr.h"
#include "rdma/lib.h"

namespace fastsock {
namespace bridge {
namespace {

constexpr int kSvcPrewarmCycles = 16;
std::atomic<int> g_listening{0};
std::atomic<int> g_connected{0};
std::atomic<int> g_listen_capacity{kRsocketSvcSafeSlots};
std::atomic<int> g_connect_capacity{kRsocketSvcSafeSlots};
std::mutex g_connect_mu;  // several listeners and clients: one capacity

bool SvcFull(const std::atomic<int>& n, const std::atomic<int>& capacity) {
  return Rdma()->rsocket_svc_bug && n.load() >= capacity.load();
}

}  // namespace

void SetNonblocking(int rs) {
  const RdmaLib* L = Rdma();
  int fl = L->rfcntl(rs, F_GETFL);
  L->rfcntl(rs, F_SETFL, (fl < 0 ? 0 : fl) | O_NONBLOCK);
}

void PrewarmServiceThreads(const sockaddr_storage& local, const sockaddr_storage& remote) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const RdmaLib* L = Rdma();
    if (!L->rsocket_svc_bug) return;
    sockaddr_storage l = local, r = remote;
    socklen_t llen = SetIpPort(&l, 0), rlen = SetIpPort(&r, 1);
    int listen_cycles = 0, connect_cycles = 0;
    for (int i = 0; i < kSvcPrewarmCycles; i++) {
      int ls = L->rsocket(l.ss_family, SOCK_STREAM, 0);
      if (ls >= 0 && L->rbind(ls, reinterpret_cast<sockaddr*>(&l), llen) == 0 && L->rlisten(ls, 1) == 0) listen_cycles++;
      if (ls >= 0) L->rclose(ls);
      int cs = L->rsocket(r.ss_family, SOCK_STREAM, 0);
      if (cs < 0) continue;
      SetNonblocking(cs);
      if (L->rconnect(cs, reinterpret_cast<sockaddr*>(&r), rlen) != 0 && errno == EINPROGRESS) connect_cycles++;
      L->rclose(cs);
    }
    g_listen_capacity = 4 * (listen_cycles + 1) - 1;
    g_connect_capacity = 4 * (connect_cycles + 1) - 1;
  });
}

bool TakeConnectSlot() {
  std::lock_guard<std::mutex> lock(g_connect_mu);
  if (SvcFull(g_connected, g_connect_capacity)) return false;
  g_connected++;
  return true;
}

void ReleaseConnectSlot() { g_connected--; }

bool ConnectSlotsFull() { return SvcFull(g_connected, g_connect_capacity); }

int ConnectCapacity() { return g_connect_capacity.load(); }

int ListenCapacity() { return g_listen_capacity.load(); }

int OpenListener(const sockaddr_storage& ss, socklen_t len, int backlog, const char** syscall) {
  const RdmaLib* L = Rdma();
  if (SvcFull(g_listening, g_listen_capacity)) {
    *syscall = "rlisten";
    errno = EMFILE;
    return -1;
  }
  *syscall = "rsocket";
  int ls = L->rsocket(ss.ss_family, SOCK_STREAM, 0);
  if (ls < 0) return -1;
  int on = 1;
  L->rsetsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (ss.ss_family == AF_INET6) L->rsetsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  int rc = L->rbind(ls, reinterpret_cast<const sockaddr*>(&ss), len);
  if (rc != 0) *syscall = "rbind";
  if (rc == 0 && (rc = L->rlisten(ls, backlog)) != 0) *syscall = "rlisten";
  if (rc != 0) {
    int err = errno;
    L->rclose(ls);
    errno = err;
    return -1;
  }
  SetNonblocking(ls);
  g_listening++;
  return ls;
}

void CloseListener(int ls) {
  Rdma()->rclose(ls);
  g_listening--;
}

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
