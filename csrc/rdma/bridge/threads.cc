#include "rdma/bridge/threads.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>

#include <algorithm>
#include <thread>

#include "ip_addr.h"
#include "rdma/bridge/pump.h"
#include "rdma/bridge/svc.h"
#include "rdma/lib.h"

namespace fastsock {
namespace bridge {
namespace {

Endpoint FromSockaddr(const sockaddr_storage& ss) {
  Endpoint e;
  e.address = IpName(reinterpret_cast<const sockaddr*>(&ss), &e.port);
  return e;
}

const char* TransportOf(ibv_context* verbs) {
  if (verbs == nullptr) return "none";
  return verbs->device->transport_type == IBV_TRANSPORT_IWARP ? "iwarp"
         : verbs->device->transport_type == IBV_TRANSPORT_IB  ? "ib"
                                                               : "other";
}

// Options every bridged rsocket gets. TCP_NODELAY: rsockets accept it (they never delay a send
// anyway); set for the record so rgetsockopt reports what a TCP socket with noDelay would.
void SetOptions(int rs) {
  int on = 1;
  Rdma()->rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

void Names(int rs, Outcome* o) {
  const RdmaLib* L = Rdma();
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (L->rgetsockname(rs, reinterpret_cast<sockaddr*>(&ss), &len) == 0) o->local = FromSockaddr(ss);
  len = sizeof ss;
  memset(&ss, 0, sizeof ss);
  if (L->rgetpeername(rs, reinterpret_cast<sockaddr*>(&ss), &len) == 0) o->remote = FromSockaddr(ss);
}

// ---------------------------------------------------------------------------------------------
// Client

// rdma_resolve_addr for `dst`: the device that would carry the connection. Returns 0 and the
// transport ("ib", "iwarp", "other") with the device name, or -errno with a reason.
int ResolveDevice(const sockaddr* dst, int timeout_ms, int stop_efd, std::string* transport, std::string* device,
                  sockaddr_storage* src, std::string* reason) {
  const RdmaLib* L = Rdma();
  rdma_event_channel* ch = L->rdma_create_event_channel();
  if (!ch) {
    *reason = std::string("rdma_create_event_channel: ") + strerror(errno);
    return -errno;
  }
  int fl = fcntl(ch->fd, F_GETFL);
  fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
  rdma_cm_id* id = nullptr;
  int ret = 0;
  if (L->rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) {
    ret = -errno;
    *reason = std::string("rdma_create_id: ") + strerror(errno);
    L->rdma_destroy_event_channel(ch);
    return ret;
  }
  if (L->rdma_resolve_addr(id, nullptr, const_cast<sockaddr*>(dst), timeout_ms) != 0) {
    ret = -errno;
    *reason = std::string("no RDMA route (rdma_resolve_addr: ") + strerror(errno) + ")";
  } else {
    int64_t deadline = NowMs() + timeout_ms;
    ret = -ETIMEDOUT;
    *reason = "address resolution timed out";
    for (;;) {
      int left = static_cast<int>(deadline - NowMs());
      if (left <= 0) break;
      pollfd p[2] = {{ch->fd, POLLIN, 0}, {stop_efd, POLLIN, 0}};
      int n = poll(p, 2, left);
      if (n < 0 && errno == EINTR) continue;
      if (p[1].revents) {
        ret = -ECANCELED;
        *reason = "stopped";
        break;
      }
      if (n <= 0) continue;
      rdma_cm_event* ev = nullptr;
      if (L->rdma_get_cm_event(ch, &ev) != 0) continue;
      rdma_cm_event_type type = ev->event;
      int status = ev->status;
      L->rdma_ack_cm_event(ev);
      if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
        memcpy(src, &id->route.addr.src_storage, sizeof *src);
        *transport = TransportOf(id->verbs);
        if (id->verbs) *device = L->ibv_get_device_name(id->verbs->device);
        ret = 0;
      } else {
        ret = status < 0 ? status : -EHOSTUNREACH;
        *reason = std::string("no RDMA route (") + L->rdma_event_str(type) + ")";
      }
      break;
    }
  }
  L->rdma_destroy_id(id);
  L->rdma_destroy_event_channel(ch);
  return ret;
}

// Connects within the job's timeout. Returns the connected, non-blocking rsocket, or -1 with
// `o` describing the failure.
int Connect(ConnectJob* job, Outcome* o) {
  const RdmaLib* L = Rdma();
  int64_t deadline = NowMs() + job->timeout_ms;
  auto left = [&] { return static_cast<int>(std::max<int64_t>(1, deadline - NowMs())); };
  auto fail = [&](int err, const char* syscall, std::string reason, bool not_offered) {
    o->err = err;
    o->syscall = syscall;
    o->reason = std::move(reason);
    o->not_offered = not_offered;
    return -1;
  };
  sockaddr_storage ss;
  socklen_t sslen;
  if (!ParseIpAddr(job->address, job->port, &ss, &sslen)) return fail(EINVAL, "rconnect", "not an IP address", true);
  std::string transport, reason;
  sockaddr_storage src{};
  int r = ResolveDevice(reinterpret_cast<sockaddr*>(&ss), left(), job->worker->stop_efd, &transport, &o->device, &src, &reason);
  if (r != 0) return fail(-r, "rdma_resolve_addr", reason, r != -ECANCELED && r != -ETIMEDOUT);
  if (transport == "iwarp") {
    // iWARP's rdma_cm connection is a kernel TCP connection to the same port: it would reach the
    // peer's TCP listener, not an rsocket one (docs/transports.md, "rsocket").
    return fail(EPROTONOSUPPORT, "rconnect",
                "the route is over an iWARP device (" + o->device + "): its connections are TCP ones to the TCP listener",
                true);
  }
  PrewarmServiceThreads(src, ss);
  // A non-blocking rconnect puts the rsocket in connect_svc until rclose.
  if (!TakeConnectSlot())
    return fail(EMFILE, "rconnect", "librdmacm " + L->rdmacm_version + " holds at most " + std::to_string(ConnectCapacity()) +
                                        " rsocket connections per process (rsocket service thread bug, fixed in rdma-core 53)", true);
  int rs = L->rsocket(ss.ss_family, SOCK_STREAM, 0);
  if (rs < 0) {
    ReleaseConnectSlot();
    return fail(errno, "rsocket", strerror(errno), false);
  }
  SetOptions(rs);
  SetNonblocking(rs);
  int err = 0;
  if (L->rconnect(rs, reinterpret_cast<sockaddr*>(&ss), sslen) != 0) err = errno;
  while (err == EINPROGRESS || err == EALREADY) {
    pollfd p[2] = {{rs, POLLOUT, 0}, {job->worker->stop_efd, POLLIN, 0}};
    int n = L->rpoll(p, 2, left());
    if (n < 0 && errno == EINTR) continue;
    if (p[1].revents) {
      err = ECANCELED;
      break;
    }
    if (deadline - NowMs() <= 0 && n == 0) {
      err = ETIMEDOUT;
      break;
    }
    if (n <= 0) continue;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (L->rgetsockopt(rs, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
    if (soerr == 0 && (p[0].revents & (POLLERR | POLLHUP))) soerr = ECONNREFUSED;
    err = soerr;
    if (err == 0 && !(p[0].revents & POLLOUT)) err = EINPROGRESS;  // not there yet
  }
  if (err != 0) {
    L->rclose(rs);
    ReleaseConnectSlot();
    bool refused = err == ECONNREFUSED;
    return fail(err, "rconnect",
                refused ? "nobody listens with rsockets there (rdma_cm REJECTED)" : std::string(strerror(err)), refused);
  }
  return rs;
}

void ConnectThread(ConnectJob* job) {
  auto o = std::make_unique<Outcome>();
  int rs = Connect(job, o.get());
  SocketpairEnds ends;
  if (rs >= 0) {
    int sv[2] = {-1, -1};
    int r = MakeSocketpair(sv);
    if (r < 0) {
      Rdma()->rclose(rs);
      ReleaseConnectSlot();
      rs = -1;
      o->err = -r;
      o->syscall = "socketpair";
      o->reason = strerror(-r);
    } else {
      Names(rs, o.get());
      o->fd = sv[0];
      ends = Ends(sv);  // before JS owns (and may close) sv[0]
    }
  }
  job->sink->Post(std::move(o));
  job->sink.reset();  // the connection no longer keeps the loop alive
  if (rs >= 0) {
    Bridge(rs, ends, job->worker->stop_efd);  // rcloses rs
    ReleaseConnectSlot();
  }
  Registry::Get()->Remove(job->worker);
  delete job;
}

// ---------------------------------------------------------------------------------------------
// Server

void BridgeThread(int rs, SocketpairEnds ends, Worker* w) {
  Bridge(rs, ends, w->stop_efd);  // rcloses rs
  ReleaseConnectSlot();
  Registry::Get()->Remove(w);
}

// Waits (checking every 100 ms) until an accepted slot and a listener slot are free, then listens
// again; false when stopped meanwhile.
bool Relisten(ListenJob* job) {
  for (;;) {
    pollfd p = {job->worker->stop_efd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) return false;
    if (ConnectSlotsFull()) continue;
    const char* syscall = nullptr;
    job->ls = OpenListener(job->addr, job->addr_len, job->backlog, &syscall);
    if (job->ls >= 0) return true;
  }
}

void AcceptThread(ListenJob* job) {
  const RdmaLib* L = Rdma();
  for (;;) {
    pollfd p[2] = {{job->ls, POLLIN, 0}, {job->worker->stop_efd, POLLIN, 0}};
    int n = L->rpoll(p, 2, -1);
    if (n < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    if (n <= 0 || !p[0].revents) continue;
    if (!TakeConnectSlot()) {
      CloseListener(job->ls);
      job->ls = -1;
      if (!Relisten(job)) break;
      continue;
    }
    int rs = L->raccept(job->ls, nullptr, nullptr);
    if (rs < 0) {
      int err = errno;
      ReleaseConnectSlot();
      if (Transient(err) || err == ECONNABORTED) continue;
      break;
    }
    if (ConnectSlotsFull()) {
      // No more rsockets in connect_svc (svc.h): stop listening until one ends.
      CloseListener(job->ls);
      job->ls = -1;
    }
    SetOptions(rs);
    SetNonblocking(rs);
    int sv[2] = {-1, -1};
    Worker* w = nullptr;
    if (MakeSocketpair(sv) == 0 && (w = Registry::Get()->Add(job->worker->owner)) != nullptr) {
      auto o = std::make_unique<Outcome>();
      Names(rs, o.get());
      o->fd = sv[0];
      std::thread(BridgeThread, rs, Ends(sv), w).detach();
      job->sink->Post(std::move(o));
    } else {
      if (sv[0] >= 0) close(sv[0]);
      if (sv[1] >= 0) close(sv[1]);
      L->rclose(rs);
      ReleaseConnectSlot();
    }
    if (job->ls < 0 && !Relisten(job)) break;
  }
  if (job->ls >= 0) CloseListener(job->ls);
  job->sink.reset();
  Registry::Get()->Remove(job->worker);
  delete job;
}

}  // namespace

void SpawnConnect(std::unique_ptr<ConnectJob> job) { std::thread(ConnectThread, job.release()).detach(); }

void SpawnAccept(std::unique_ptr<ListenJob> job) { std::thread(AcceptThread, job.release()).detach(); }

bool DeviceForAddress(const sockaddr_storage& addr, std::string* name, std::string* transport) {
  const RdmaLib* L = Rdma();
  sockaddr_storage ss = addr;
  rdma_event_channel* ch = L->rdma_create_event_channel();
  if (!ch) return false;
  rdma_cm_id* id = nullptr;
  bool found = false;
  if (L->rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0) {
    if (L->rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&ss)) == 0 && id->verbs) {
      *name = L->ibv_get_device_name(id->verbs->device);
      *transport = TransportOf(id->verbs);
      found = true;
    }
    L->rdma_destroy_id(id);
  }
  L->rdma_destroy_event_channel(ch);
  return found;
}

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
