#include "rdma/bridge.h"

#include "ip_addr.h"
#include "rdma/lib.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fastsock {
namespace {

// Bytes the bridge holds per direction between a read on one side and the write on the other.
// The kernel socketpair buffers (kSocketpairBufferBytes) and rsockets' own buffers sit on either
// side of it, so it only has to keep both sides busy, not to absorb bursts.
constexpr size_t kBridgeBufferBytes = 256 << 10;
// SO_SNDBUF/SO_RCVBUF of both socketpair ends: about what loopback TCP autotunes to, as on the
// unix rung, so that patterns that work over TCP (an echo nobody reads for 1 MB) work here too.
constexpr int kSocketpairBufferBytes = 4 << 20;
// How long environment teardown and process exit wait for the helper threads to end, in ms.
constexpr int kStopWaitMs = 2000;

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// ---------------------------------------------------------------------------------------------
// Registry: every helper thread, so that a listener (or anything) can be stopped by id, and
// environment teardown / process exit can stop the threads of an env and wait for them.

struct Worker {
  int id = 0;
  int stop_efd = -1;  // readable once the thread must stop
  napi_env env = nullptr;
};

class Registry {
 public:
  // Registers a worker with a fresh stop eventfd; nullptr when no eventfd can be made.
  Worker* Add(napi_env env) {
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto* w = new Worker();
    w->id = ++next_id_;
    w->stop_efd = efd;
    w->env = env;
    live_[w->id] = w;
    if (env != nullptr && hooked_.insert(env).second) napi_add_env_cleanup_hook(env, EnvCleanup, env);
    return w;
  }

  // Called by the thread as its last step: the worker and its eventfd go.
  void Remove(Worker* w) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(w->id);
      close(w->stop_efd);
      delete w;
    }
    cv_.notify_all();
  }

  bool Stop(int id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    Signal(it->second);
    return true;
  }

  // Stops the workers of `env` (every worker when env is null) and waits up to kStopWaitMs.
  void StopAndWait(napi_env env) {
    std::unique_lock<std::mutex> lock(mu_);
    if (env != nullptr) hooked_.erase(env);
    auto mine = [&] {
      for (auto& kv : live_)
        if (env == nullptr || kv.second->env == env) return true;
      return false;
    };
    for (auto& kv : live_)
      if (env == nullptr || kv.second->env == env) Signal(kv.second);
    cv_.wait_for(lock, std::chrono::milliseconds(kStopWaitMs), [&] { return !mine(); });
  }

  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }

  static Registry* Get() {
    // Never destroyed: detached threads may still touch it while static destructors run.
    static Registry* r = [] {
      auto* reg = new Registry();
      std::atexit([] { Get()->StopAndWait(nullptr); });
      return reg;
    }();
    return r;
  }

 private:
  static void Signal(Worker* w) {
    uint64_t one = 1;
    ssize_t n = write(w->stop_efd, &one, sizeof one);
    (void)n;
  }
  static void EnvCleanup(void* arg) { Get()->StopAndWait(static_cast<napi_env>(arg)); }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Worker*> live_;
  std::set<napi_env> hooked_;
  int next_id_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Addresses

struct Endpoint {
  std::string address;
  int port = 0;
};

Endpoint FromSockaddr(const sockaddr_storage& ss) {
  Endpoint e;
  e.address = IpName(reinterpret_cast<const sockaddr*>(&ss), &e.port);
  return e;
}

#if FASTSOCK_HAVE_RDMA

// ---------------------------------------------------------------------------------------------
// What a helper thread hands to the loop: a connected socketpair end, or why not.

struct Outcome {
  int fd = -1;  // JS end of the socketpair, owned by the receiver
  Endpoint local, remote;
  std::string device;
  int err = 0;  // positive errno on failure
  std::string syscall, reason;
  bool not_offered = false;
};

void DeliverJs(Napi::Env env, Napi::Function cb, std::nullptr_t*, Outcome* o) {
  if (env == nullptr || cb.IsEmpty()) {
    // The environment is going away: nobody will adopt the fd.
    if (o->fd >= 0) close(o->fd);
    delete o;
    return;
  }
  Napi::Object r = Napi::Object::New(env);
  if (o->fd >= 0) {
    r.Set("fd", o->fd);
    auto ep = [&](const Endpoint& e) {
      Napi::Object x = Napi::Object::New(env);
      x.Set("address", e.address);
      x.Set("port", e.port);
      return x;
    };
    r.Set("local", ep(o->local));
    r.Set("remote", ep(o->remote));
    r.Set("device", o->device);
  } else {
    r.Set("errno", -o->err);
    r.Set("syscall", o->syscall);
    r.Set("reason", o->reason);
    r.Set("notOffered", o->not_offered);
  }
  delete o;
  // Not Function::Call: a JS exception must stay pending (Node reports it as uncaught), not
  // become a C++ exception here.
  napi_value argv[1] = {r};
  napi_value result;
  napi_call_function(env, env.Global(), cb, 1, argv, &result);
}

using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Outcome, DeliverJs>;

// Posts an outcome; when the loop can no longer take it, the fd is closed here.
void Post(Tsfn& tsfn, Outcome* o) {
  if (tsfn.NonBlockingCall(o) != napi_ok) {
    if (o->fd >= 0) close(o->fd);
    delete o;
  }
}

const char* TransportOf(ibv_context* verbs) {
  if (verbs == nullptr) return "none";
  return verbs->device->transport_type == IBV_TRANSPORT_IWARP ? "iwarp"
         : verbs->device->transport_type == IBV_TRANSPORT_IB  ? "ib"
                                                               : "other";
}

void SetNonblocking(int rs) {
  const RdmaLib* L = Rdma();
  int fl = L->rfcntl(rs, F_GETFL);
  L->rfcntl(rs, F_SETFL, (fl < 0 ? 0 : fl) | O_NONBLOCK);
}

// Options every bridged rsocket gets. TCP_NODELAY: rsockets accept it (they never delay a send
// anyway); set for the record so rgetsockopt reports what a TCP socket with noDelay would.
void SetOptions(int rs) {
  int on = 1;
  Rdma()->rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// The JS end and the bridge end of a fresh socketpair, both CLOEXEC and non-blocking (the JS
// end: libuv wants it so). Returns -errno on failure.
int MakeSocketpair(int sv[2]) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) return -errno;
  for (int i = 0; i < 2; i++) {
    int b = kSocketpairBufferBytes;
    if (setsockopt(sv[i], SOL_SOCKET, SO_SNDBUFFORCE, &b, sizeof b) != 0)
      setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
    if (setsockopt(sv[i], SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof b) != 0)
      setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
  }
  return 0;
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
// The bridge: see rsocket.h. Runs on the calling thread until the connection ends or `stop_efd`
// fires; closes `rs` and `sp` (the bridge end of the socketpair) before returning.

struct Direction {
  std::vector<char> buf = std::vector<char>(kBridgeBufferBytes);
  size_t off = 0, len = 0;  // pending bytes: buf[off, off + len)
  bool eof = false;         // the source said EOF
  bool shut = false;        // EOF passed on to the sink
  size_t room() const { return buf.size() - off - len; }
  char* tail() { return buf.data() + off + len; }
  void compact() {
    if (len == 0) off = 0;
    else if (off > 0 && room() == 0) {
      memmove(buf.data(), buf.data() + off, len);
      off = 0;
    }
  }
  void consumed(size_t n) {
    off += n;
    len -= n;
    if (len == 0) off = 0;
  }
};

bool Transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

// How long a bridge whose JS end is closed waits for the peer's EOF after passing ours on (like
// TCP's FIN_WAIT2 timeout for an orphaned socket), in ms.
constexpr int kLingerMs = 60000;

// How a bridge ends.
enum class Ending {
  kOrderly,    // both directions saw EOF (or the linger ran out): rclose, close
  kResetJs,    // the rsocket failed or the peer reset: JS must see ECONNRESET
  kResetPeer,  // JS reset (or left with bytes arriving): rclose without a prior EOF
  kStop,       // stop eventfd: close everything
};

// Closes the bridge end so that the JS end reads ECONNRESET: a UNIX stream socket closed with
// bytes unread in its receive queue sets ECONNRESET on its peer. One byte is put there through a
// short-lived dup of the JS end, once its inode proves it is still the same socket.
void CloseWithReset(int sp, int js_fd, ino_t js_ino) {
  int d = fcntl(js_fd, F_DUPFD_CLOEXEC, 0);
  if (d >= 0) {
    struct stat st;
    if (fstat(d, &st) == 0 && st.st_ino == js_ino) {
      char byte = 0;
      ssize_t n = send(d, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      (void)n;
    }
    close(d);
  }
  close(sp);
}

// The bridge end of the socketpair, and the JS end's fd and inode (for CloseWithReset).
struct SocketpairEnds {
  int sp = -1;
  int js_fd = -1;
  ino_t js_ino = 0;
};

void Bridge(int rs, SocketpairEnds ends, int stop_efd) {
  const RdmaLib* L = Rdma();
  const int sp = ends.sp;
  Direction r2s;  // rsocket -> socketpair (bytes from the peer, to JS)
  Direction s2r;  // socketpair -> rsocket (bytes from JS, to the peer)
  bool sp_hup = false;  // JS closed its end entirely
  int64_t linger_until = 0;
  Ending ending = Ending::kOrderly;
  for (;;) {
    r2s.compact();
    s2r.compact();
    // The socketpair end polls POLLHUP whatever the mask once both of its directions are shut
    // (JS closed its end, or JS's EOF and ours crossed), so after that it is only polled while
    // bytes JS wrote before its EOF may still be queued there: they must still reach the peer.
    const bool sp_read = !s2r.eof && s2r.room() > 0;
    const bool sp_polled = !sp_hup || sp_read;
    pollfd fds[3] = {};
    fds[0].fd = rs;
    fds[0].events = static_cast<short>((!r2s.eof && r2s.room() > 0 ? POLLIN : 0) | (s2r.len > 0 ? POLLOUT : 0));
    fds[1].fd = stop_efd;
    fds[1].events = POLLIN;
    fds[2].fd = sp;  // last, so that it can be left out: rpoll takes no negative fds
    fds[2].events = static_cast<short>((sp_read ? POLLIN : 0) | (!sp_hup && r2s.len > 0 ? POLLOUT : 0));
    int timeout = linger_until ? static_cast<int>(std::max<int64_t>(0, linger_until - NowMs())) : -1;
    int n = L->rpoll(fds, sp_polled ? 3 : 2, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      ending = Ending::kResetJs;
      break;
    }
    if (fds[1].revents) {
      ending = Ending::kStop;
      break;
    }
    if (n == 0 && linger_until && NowMs() >= linger_until) break;  // the peer never sent its EOF
    const short sp_rev = sp_polled ? fds[2].revents : 0;
    if (sp_rev & POLLHUP) sp_hup = true;
    const short rev = fds[0].revents;

    // rsocket -> buffer. EOF while we still write is the peer's reset (rclose without a prior
    // rshutdown(SHUT_WR) leaves this rsocket disconnected: POLLHUP), else its orderly EOF.
    if ((fds[0].events & POLLIN) && rev) {
      ssize_t k = L->rrecv(rs, r2s.tail(), r2s.room(), 0);
      if (k > 0) {
        r2s.len += static_cast<size_t>(k);
      } else if (k == 0) {
        if (!s2r.shut && (rev & (POLLHUP | POLLERR))) {
          ending = Ending::kResetJs;
          break;
        }
        r2s.eof = true;
      } else if (!Transient(errno)) {
        ending = Ending::kResetJs;
        break;
      }
    }
    if (rev & POLLERR) {
      ending = Ending::kResetJs;
      break;
    }
    // buffer -> socketpair
    if (r2s.len > 0) {
      ssize_t k = sp_hup ? -1 : send(sp, r2s.buf.data() + r2s.off, r2s.len, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sp_hup) errno = EPIPE;
      if (k > 0) {
        r2s.consumed(static_cast<size_t>(k));
      } else if (k < 0 && !Transient(errno)) {
        ending = Ending::kResetPeer;  // JS is gone and bytes keep coming: a reset, as TCP does
        break;
      }
    }
    if (r2s.eof && r2s.len == 0 && !r2s.shut) {
      if (!sp_hup) shutdown(sp, SHUT_WR);
      r2s.shut = true;
    }
    // socketpair -> buffer
    if ((fds[2].events & POLLIN) && sp_rev) {
      ssize_t k = recv(sp, s2r.tail(), s2r.room(), MSG_DONTWAIT);
      if (k > 0) {
        s2r.len += static_cast<size_t>(k);
      } else if (k == 0) {
        s2r.eof = true;
      } else if (!Transient(errno)) {
        ending = Ending::kResetPeer;  // ECONNRESET: JS destroyed with bytes unread
        break;
      }
    }
    // buffer -> rsocket
    if (s2r.len > 0) {
      ssize_t k = L->rsend(rs, s2r.buf.data() + s2r.off, s2r.len, 0);
      if (k > 0) {
        s2r.consumed(static_cast<size_t>(k));
      } else if (k < 0 && !Transient(errno)) {
        ending = Ending::kResetJs;
        break;
      }
    }
    if (s2r.eof && s2r.len == 0 && !s2r.shut) {
      L->rshutdown(rs, SHUT_WR);
      s2r.shut = true;
    }
    if (r2s.shut && s2r.shut) break;  // both directions ended in order
    if (sp_hup && s2r.shut && linger_until == 0) linger_until = NowMs() + kLingerMs;
  }
  L->rclose(rs);  // without a prior rshutdown(SHUT_WR) the peer reads this as a reset
  if (ending == Ending::kResetJs) CloseWithReset(sp, ends.js_fd, ends.js_ino);
  else close(sp);
}

SocketpairEnds Ends(const int sv[2]) {
  SocketpairEnds e;
  e.sp = sv[1];
  e.js_fd = sv[0];
  struct stat st;
  if (fstat(sv[0], &st) == 0) e.js_ino = st.st_ino;
  return e;
}

// ---------------------------------------------------------------------------------------------
// Client

// With rsocket_svc_bug (lib.h): what this process has in librdmacm's two rsocket service threads
// (listen_svc: listening rsockets; connect_svc: connected and accepted ones, from rconnect or
// raccept until rclose), and how many each can hold safely. The buggy thread reads its poll set once, when it starts, after
// growing the set by 4 slots (slot 0 its own); growing while it runs leaves it polling freed
// memory. It ends whenever its last rsocket leaves, and the next one starts it again with 4 more
// slots. So the first listen of the process cycles each thread kSvcPrewarmCycles times (one
// throw-away rsocket in, out) before any real rsocket: each thread then starts with
// 4 * (cycles + 1) slots and never has to grow while it runs. Should the process still reach a
// capacity, a client declines (the chain moves on to the next rung) and a listener stops listening
// (clients are REJECTED and move on) until a connection ends; a client that connected just
// before might then never be accepted, so the capacities are far above what the tests use.
constexpr int kSvcPrewarmCycles = 16;
std::atomic<int> g_listening{0};
std::atomic<int> g_connected{0};
std::atomic<int> g_listen_capacity{kRsocketSvcSafeSlots};
std::atomic<int> g_connect_capacity{kRsocketSvcSafeSlots};
std::mutex g_accept_mu;

bool SvcFull(const std::atomic<int>& n, const std::atomic<int>& capacity) {
  return Rdma()->rsocket_svc_bug && n.load() >= capacity.load();
}

// Cycles each service thread with throw-away rsockets: listen_svc through rbind(local, port 0) +
// rlisten + rclose, connect_svc through a non-blocking rconnect to `remote` (port 1) still in
// progress + rclose; `local` is an RDMA device's address of this host, `remote` one the route
// goes through an RDMA device to. Runs once per process, before any other rsocket is in a
// service thread (every path calls it first; call_once holds the others meanwhile).
void PrewarmServiceThreads(const sockaddr_storage& local, const sockaddr_storage& remote) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const RdmaLib* L = Rdma();
    if (!L->rsocket_svc_bug) return;
    auto with_port = [](sockaddr_storage a, int port, socklen_t* len) {
      if (a.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&a)->sin_port = htons(port), *len = sizeof(sockaddr_in);
      else reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = htons(port), *len = sizeof(sockaddr_in6);
      return a;
    };
    socklen_t llen, rlen;
    sockaddr_storage l = with_port(local, 0, &llen), r = with_port(remote, 1, &rlen);
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

struct ConnectJob {
  std::string address;
  int port = 0;
  int timeout_ms = 0;
  Tsfn tsfn;
  Worker* worker = nullptr;
};

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
  {
    // A non-blocking rconnect puts the rsocket in connect_svc until rclose.
    std::lock_guard<std::mutex> lock(g_accept_mu);
    if (SvcFull(g_connected, g_connect_capacity))
      return fail(EMFILE, "rconnect", "librdmacm " + L->rdmacm_version + " holds at most " + std::to_string(g_connect_capacity.load()) +
                                          " rsocket connections per process (rsocket service thread bug, fixed in rdma-core 53)", true);
    g_connected++;
  }
  int rs = L->rsocket(ss.ss_family, SOCK_STREAM, 0);
  if (rs < 0) {
    g_connected--;
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
    g_connected--;
    bool refused = err == ECONNREFUSED;
    return fail(err, "rconnect",
                refused ? "nobody listens with rsockets there (rdma_cm REJECTED)" : std::string(strerror(err)), refused);
  }
  return rs;
}

void ConnectThread(ConnectJob* job) {
  auto* o = new Outcome();
  int rs = Connect(job, o);
  int sv[2] = {-1, -1};
  SocketpairEnds ends;
  if (rs >= 0) {
    int r = MakeSocketpair(sv);
    if (r < 0) {
      Rdma()->rclose(rs);
      g_connected--;
      rs = -1;
      o->err = -r;
      o->syscall = "socketpair";
      o->reason = strerror(-r);
    } else {
      Names(rs, o);
      o->fd = sv[0];
      ends = Ends(sv);  // before JS owns (and may close) sv[0]
    }
  }
  Post(job->tsfn, o);
  job->tsfn.Release();
  if (rs >= 0) {
    Bridge(rs, ends, job->worker->stop_efd);  // rcloses rs
    g_connected--;
  }
  Registry::Get()->Remove(job->worker);
  delete job;
}

// ---------------------------------------------------------------------------------------------
// Server

struct ListenJob {
  int ls = -1;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int backlog = 1;
  Tsfn tsfn;
  Worker* worker = nullptr;
};

// rsocket + SO_REUSEADDR (+ IPV6_V6ONLY) + rbind + rlisten, non-blocking: the listening rsocket,
// or -1 with errno and the failing call in *syscall.
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

void BridgeThread(int rs, SocketpairEnds ends, Worker* w) {
  Bridge(rs, ends, w->stop_efd);  // rcloses rs
  g_connected--;
  Registry::Get()->Remove(w);
}

// Waits (checking every 100 ms) until an accepted slot and a listener slot are free, then listens
// again; false when stopped meanwhile.
bool Relisten(ListenJob* job) {
  for (;;) {
    pollfd p = {job->worker->stop_efd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) return false;
    if (SvcFull(g_connected, g_connect_capacity)) continue;
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
    std::unique_lock<std::mutex> lock(g_accept_mu);  // several listeners: one cap
    if (SvcFull(g_connected, g_connect_capacity)) {
      lock.unlock();
      CloseListener(job->ls);
      job->ls = -1;
      if (!Relisten(job)) break;
      continue;
    }
    int rs = L->raccept(job->ls, nullptr, nullptr);
    if (rs < 0) {
      if (Transient(errno) || errno == ECONNABORTED) continue;
      break;
    }
    g_connected++;
    lock.unlock();
    if (SvcFull(g_connected, g_connect_capacity)) {
      // No more rsockets in connect_svc (lib.h): stop listening until one ends.
      CloseListener(job->ls);
      job->ls = -1;
    }
    SetOptions(rs);
    SetNonblocking(rs);
    int sv[2] = {-1, -1};
    Worker* w = nullptr;
    if (MakeSocketpair(sv) == 0 && (w = Registry::Get()->Add(job->worker->env)) != nullptr) {
      auto* o = new Outcome();
      Names(rs, o);
      o->fd = sv[0];
      std::thread(BridgeThread, rs, Ends(sv), w).detach();
      Post(job->tsfn, o);
    } else {
      if (sv[0] >= 0) close(sv[0]);
      if (sv[1] >= 0) close(sv[1]);
      L->rclose(rs);
      g_connected--;
    }
    if (job->ls < 0 && !Relisten(job)) break;
  }
  if (job->ls >= 0) CloseListener(job->ls);
  job->tsfn.Release();
  Registry::Get()->Remove(job->worker);
  delete job;
}

#endif  // FASTSOCK_HAVE_RDMA

Napi::Error RdmaUnavailable(Napi::Env env) {
  Napi::Error e = Napi::Error::New(env, "rsockets unavailable: " + (Rdma()->error.empty() ? std::string("librdmacm has no rsocket API") : Rdma()->error));
  e.Set("errno", Napi::Number::New(env, -ENOSYS));
  e.Set("code", Napi::String::New(env, "ENOSYS"));
  return e;
}

bool RsocketsReady() { return Rdma()->ok && Rdma()->rsocket_ok; }

}  // namespace

Napi::Value RsocketConnectJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction())
    throw Napi::TypeError::New(env, "rsocketConnect(address, port, timeoutMs, cb)");
  if (!RsocketsReady()) throw RdmaUnavailable(env);
#if FASTSOCK_HAVE_RDMA
  auto* job = new ConnectJob();
  job->address = info[0].As<Napi::String>().Utf8Value();
  job->port = info[1].As<Napi::Number>().Int32Value();
  job->timeout_ms = std::max(1, info[2].As<Napi::Number>().Int32Value());
  job->worker = Registry::Get()->Add(env);
  if (!job->worker) {
    delete job;
    throw Napi::Error::New(env, std::string("eventfd: ") + strerror(errno));
  }
  job->tsfn = Tsfn::New(env, info[3].As<Napi::Function>(), "FASTSOCK_RSOCKET_CONNECT", 0, 1);
  std::thread(ConnectThread, job).detach();
#endif
  return env.Undefined();
}

Napi::Value RsocketListenJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction())
    throw Napi::TypeError::New(env, "rsocketListen(address, port, backlog, cb)");
  if (!RsocketsReady()) throw RdmaUnavailable(env);
#if FASTSOCK_HAVE_RDMA
  auto* job = new ListenJob();
  std::string address = info[0].As<Napi::String>().Utf8Value();
  job->backlog = std::max(1, info[2].As<Napi::Number>().Int32Value());
  if (!ParseIpAddr(address, info[1].As<Napi::Number>().Int32Value(), &job->addr, &job->addr_len)) {
    delete job;
    throw Napi::TypeError::New(env, "rsocketListen: not an IP address: " + address);
  }
  PrewarmServiceThreads(job->addr, job->addr);
  const char* syscall = nullptr;
  int ls = OpenListener(job->addr, job->addr_len, job->backlog, &syscall);
  if (ls < 0) {
    int err = errno;
    delete job;
    bool full = err == EMFILE && Rdma()->rsocket_svc_bug;
    Napi::Error e = Napi::Error::New(env, std::string(syscall) + " failed: " +
                                              (full ? "librdmacm " + Rdma()->rdmacm_version + " serves at most " +
                                                          std::to_string(g_listen_capacity.load()) +
                                                          " listening rsockets per process (rsocket service thread bug, fixed in rdma-core 53)"
                                                    : std::string(strerror(err))));
    e.Set("errno", Napi::Number::New(env, -err));
    e.Set("syscall", Napi::String::New(env, syscall));
    throw e;
  }
  job->ls = ls;
  job->worker = Registry::Get()->Add(env);
  if (!job->worker) {
    CloseListener(ls);
    delete job;
    throw Napi::Error::New(env, std::string("eventfd: ") + strerror(errno));
  }
  job->tsfn = Tsfn::New(env, info[3].As<Napi::Function>(), "FASTSOCK_RSOCKET_ACCEPT", 0, 1);
  job->tsfn.Unref(env);  // the TCP listener decides whether the process stays alive
  int id = job->worker->id;
  std::thread(AcceptThread, job).detach();
  return Napi::Number::New(env, id);
#else
  return env.Undefined();
#endif
}

Napi::Value RsocketCloseJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(info.Env(), "rsocketClose(id)");
  return Napi::Boolean::New(info.Env(), Registry::Get()->Stop(info[0].As<Napi::Number>().Int32Value()));
}

Napi::Value RdmaDeviceForAddressJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "rdmaDeviceForAddress(address)");
#if FASTSOCK_HAVE_RDMA
  const RdmaLib* L = Rdma();
  if (!L->ok) return env.Null();
  sockaddr_storage ss;
  socklen_t sslen;
  if (!ParseIpAddr(info[0].As<Napi::String>().Utf8Value(), 0, &ss, &sslen)) return env.Null();
  rdma_event_channel* ch = L->rdma_create_event_channel();
  if (!ch) return env.Null();
  rdma_cm_id* id = nullptr;
  Napi::Value out = env.Null();
  if (L->rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0) {
    if (L->rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&ss)) == 0 && id->verbs) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", L->ibv_get_device_name(id->verbs->device));
      o.Set("transport", TransportOf(id->verbs));
      out = o;
    }
    L->rdma_destroy_id(id);
  }
  L->rdma_destroy_event_channel(ch);
  return out;
#else
  return env.Null();
#endif
}

Napi::Value RsocketThreadsJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Registry::Get()->Count()));
}

}  // namespace fastsock
