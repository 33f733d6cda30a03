#include "sidechannel.h"

#include "kernelsock.h"
#include "sockdiag.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <time.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace fastsock {
namespace {

socklen_t AbstractAddr(const std::string& name, sockaddr_un* sa) {
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  size_t n = name.size();
  if (n > sizeof(sa->sun_path) - 1) n = sizeof(sa->sun_path) - 1;
  memcpy(sa->sun_path + 1, name.data(), n);  // sun_path[0] == '\0': abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// One /proc/net/tcp{,6} address: 8 hex digits per 32-bit word, each word printed in host order.
bool ParseProcAddr(const char* hex, size_t words, unsigned char* out) {
  for (size_t w = 0; w < words; w++) {
    char buf[9];
    memcpy(buf, hex + 8 * w, 8);
    buf[8] = 0;
    char* end = nullptr;
    uint32_t v = static_cast<uint32_t>(strtoul(buf, &end, 16));
    if (end != buf + 8) return false;
    memcpy(out + 4 * w, &v, 4);
  }
  return true;
}

static const unsigned char kZero16[16] = {0};
static const unsigned char kMapped12[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// Whether a listener bound to `la` (v6 == it is an AF_INET6 socket) accepts a connection to
// `addr` of `family`: the same address, the wildcard of its family, or a dual-stack :: (or
// ::ffff:addr) for IPv4.
bool ListenerAccepts(bool v6, const unsigned char* la, int family, const unsigned char* addr) {
  if (!v6) return family == 4 && (memcmp(la, addr, 4) == 0 || memcmp(la, kZero16, 4) == 0);
  if (family == 6) return memcmp(la, addr, 16) == 0 || memcmp(la, kZero16, 16) == 0;
  return memcmp(la, kZero16, 16) == 0 || (memcmp(la, kMapped12, 12) == 0 && memcmp(la + 12, addr, 4) == 0);
}

// LISTEN sockets on `port` through NETLINK_SOCK_DIAG (what `ss -ltn` uses): the kernel walks only
// its listening hash, so the cost does not grow with the host's established or TIME_WAIT
// sockets (reading /proc/net/tcp does: milliseconds with a few hundred of them). Returns false
// when netlink is unavailable (the caller falls back to /proc).
bool CollectListenInodesNetlink(int af, int family, const unsigned char* addr, int port, std::set<unsigned long>* inodes) {
  inet_diag_req_v2 req;
  memset(&req, 0, sizeof req);
  req.sdiag_family = static_cast<uint8_t>(af);
  req.sdiag_protocol = IPPROTO_TCP;
  req.idiag_states = 1u << TCP_LISTEN;
  return SockDiagDump(&req, sizeof req, [&](const nlmsghdr* h) {
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) return;
    const inet_diag_msg* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
    if (ntohs(m->id.idiag_sport) != port) return;
    unsigned char la[16];
    memcpy(la, m->id.idiag_src, 16);  // network order; IPv4 in the first 4 bytes
    if (ListenerAccepts(m->idiag_family == AF_INET6, la, family, addr)) inodes->insert(m->idiag_inode);
  }) == 0;
}

// Fallback: inodes of LISTEN sockets on `port` in one /proc/net file.
void CollectListenInodesProc(const char* file, bool v6file, int family, const unsigned char* addr,
                             int port, std::set<unsigned long>* inodes) {
  FILE* f = fopen(file, "re");
  if (!f) return;
  // One large read per walk: the kernel restarts its walk for every read() of this file.
  static thread_local char big[1 << 20];
  setvbuf(f, big, _IOFBF, sizeof big);
  char line[512];
  if (!fgets(line, sizeof line, f)) {  // header
    fclose(f);
    return;
  }
  while (fgets(line, sizeof line, f)) {
    char local[64], remote[64];
    unsigned st = 0;
    unsigned long inode = 0;
    // sl local rem st tx:rx tr:when retr uid timeout inode
    if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*u %*d %lu", local, remote, &st, &inode) != 4)
      continue;
    if (st != 0x0A) continue;  // TCP_LISTEN
    char* colon = strchr(local, ':');
    if (!colon) continue;
    int lport = static_cast<int>(strtol(colon + 1, nullptr, 16));
    if (lport != port) continue;
    unsigned char la[16];
    if (!ParseProcAddr(local, v6file ? 4 : 1, la)) continue;
    if (ListenerAccepts(v6file, la, family, addr)) inodes->insert(inode);
  }
  fclose(f);
}

// Every LISTEN socket a connection to addr:port may reach.
void CollectListenInodes(int family, const unsigned char* addr, int port, std::set<unsigned long>* inodes) {
  bool ok4 = CollectListenInodesNetlink(AF_INET, family, addr, port, inodes);
  bool ok6 = CollectListenInodesNetlink(AF_INET6, family, addr, port, inodes);
  if (!ok4) CollectListenInodesProc("/proc/net/tcp", false, family, addr, port, inodes);
  if (!ok6) CollectListenInodesProc("/proc/net/tcp6", true, family, addr, port, inodes);
  // An AF_SMC listener (the smc rung's server) is the socket its process holds; the TCP LISTEN
  // socket above is then the kernel's internal one (clcsock), held by no process. smc_diag does
  // not say the listener's family: accept the address read either way.
  std::vector<SmcListener> smc;
  CollectSmcListeners(port, &smc);
  for (const SmcListener& l : smc)
    if (ListenerAccepts(false, l.addr, family, addr) || ListenerAccepts(true, l.addr, family, addr)) inodes->insert(l.inode);
}

// The start time of a process (field 22 of /proc/PID/stat, in clock ticks since boot): with the
// pid, a process identity that pid reuse cannot fake. 0 when unreadable.
unsigned long long ProcessStartTime(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* p = strrchr(buf, ')');  // comm may contain spaces and parentheses
  if (!p) return 0;
  unsigned long long start = 0;
  // after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice threads itrealvalue starttime(22)
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &start) != 1) return 0;
  return start;
}

long long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Verified processes and the listeners they were seen to hold (see VerifyListenerOwner in the
// header). One pidfd per process, however many listeners it has.
struct VerifiedProcess {
  pid_t pid;
  int pidfd;                     // held open: alive <=> the pid still names this process; -1 without pidfds
  unsigned long long start;      // the process's start time, for kernels without pidfds
  std::vector<unsigned long> listeners;  // inodes of TCP LISTEN sockets (or AF_SMC listeners) it holds, oldest first
  unsigned long long lastUse;
};
constexpr size_t kMaxVerifiedProcesses = 16;
constexpr size_t kMaxListenersPerProcess = 32;
std::mutex verified_mu;
std::vector<VerifiedProcess> verified;
unsigned long long verified_clock = 0;

bool PidfdAlive(int pidfd) { return pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0; }

VerifiedProcess* FindVerified(pid_t pid) {
  for (VerifiedProcess& p : verified)
    if (p.pid == pid) return &p;
  return nullptr;
}

void Forget(VerifiedProcess* p) {
  if (p->pidfd >= 0) close(p->pidfd);
  verified.erase(verified.begin() + (p - verified.data()));
}

// Whether the process verified before as `pid` holds one of `inodes` and is provably still the
// same process; forgets it when it is gone. Caller holds verified_mu.
bool CachedHolds(pid_t pid, const std::set<unsigned long>& inodes) {
  VerifiedProcess* p = FindVerified(pid);
  if (!p) return false;
  bool held = false;
  for (unsigned long ino : p->listeners) held = held || inodes.count(ino) > 0;
  if (!held) return false;
  bool same = p->pidfd >= 0 ? PidfdAlive(p->pidfd) : (p->start != 0 && p->start == ProcessStartTime(pid));
  if (!same) {
    Forget(p);
    return false;
  }
  p->lastUse = ++verified_clock;
  return true;
}

// The TCP LISTEN socket (its inode) that a connection to addr:port reaches, asked with an exact
// sock_diag request: the kernel runs its own listener lookup, as for an arriving SYN (the most
// specific bound address wins; one member of a SO_REUSEPORT group). One hash lookup, where a
// LISTEN dump walks every bucket of the listening hash (64 Ki buckets here: ~20 µs). 0 when
// there is none, or netlink cannot say (the caller then collects them all).
unsigned long ReachedListener(int family, const unsigned char* addr, int port) {
  inet_diag_req_v2 req;
  memset(&req, 0, sizeof req);
  req.sdiag_family = static_cast<uint8_t>(family == 4 ? AF_INET : AF_INET6);
  req.sdiag_protocol = IPPROTO_TCP;
  req.idiag_states = 1u << TCP_LISTEN;
  req.id.idiag_sport = htons(static_cast<uint16_t>(port));
  memcpy(req.id.idiag_src, addr, family == 4 ? 4 : 16);  // the remote end (dst, dport) stays 0
  req.id.idiag_cookie[0] = req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  unsigned long inode = 0;
  int rc = SockDiagGet(&req, sizeof req, [&](const nlmsghdr* h) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) return;
    const inet_diag_msg* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
    if (m->idiag_state == TCP_LISTEN && ntohs(m->id.idiag_sport) == port) inode = m->idiag_inode;
  });
  return rc == 0 ? inode : 0;
}

// Remembers that the process `cred` names (pinned by a dup of its pidfd) holds `inodes`.
void Remember(const PeerCred& cred, unsigned long long start, const std::set<unsigned long>& inodes) {
  std::lock_guard<std::mutex> lock(verified_mu);
  VerifiedProcess* p = FindVerified(cred.pid);
  if (!p) {
    int pinned = cred.pidfd >= 0 ? fcntl(cred.pidfd, F_DUPFD_CLOEXEC, 0) : -1;
    if (pinned < 0 && start == 0) return;  // nothing would prove it is the same process later
    if (verified.size() >= kMaxVerifiedProcesses) {
      VerifiedProcess* oldest = &verified[0];
      for (VerifiedProcess& q : verified)
        if (q.lastUse < oldest->lastUse) oldest = &q;
      Forget(oldest);
    }
    verified.push_back({cred.pid, pinned, pinned >= 0 ? 0 : start, {}, 0});
    p = &verified.back();
  }
  p->lastUse = ++verified_clock;
  for (unsigned long ino : inodes) {
    bool known = false;
    for (unsigned long l : p->listeners) known = known || l == ino;
    if (known) continue;
    if (p->listeners.size() >= kMaxListenersPerProcess) p->listeners.erase(p->listeners.begin());
    p->listeners.push_back(ino);
  }
}

bool ProcessHoldsInode(pid_t pid, const std::set<unsigned long>& inodes) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", static_cast<int>(pid));
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[320], target[128];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    unsigned long ino = 0;
    if (sscanf(target, "socket:[%lu]", &ino) == 1 && inodes.count(ino)) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

}  // namespace

SysResult ListenAbstract(const std::string& name, int backlog) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_un sa;
  socklen_t len = AbstractAddr(name, &sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, backlog) != 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  return fd;
}

SysResult ConnectAbstract(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_un sa;
  socklen_t len = AbstractAddr(name, &sa);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    int err = errno;
    close(fd);
    return -err;  // a UNIX stream connect never returns EINPROGRESS
  }
  return fd;
}

SysResult GetPeerCred(int fd, PeerCred* out, bool pin) {
  ucred uc;
  socklen_t len = sizeof uc;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) return -errno;
  out->pid = uc.pid;
  out->uid = uc.uid;
  out->gid = uc.gid;
  if (!pin) return 0;
  int pidfd = -1;
  len = sizeof pidfd;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
    out->pidfd = pidfd;
    out->pidfdFromSocket = true;
  } else if (errno == ESRCH) {
    // The kernel has SO_PEERPIDFD and says the socket's creator is gone: its pid may name
    // another process by now, so nothing can be pinned (pidfd_open(pid) would pin that other one).
  } else if (uc.pid > 0) {
    out->pidfd = static_cast<int>(syscall(SYS_pidfd_open, uc.pid, 0));
    if (out->pidfd >= 0) fcntl(out->pidfd, F_SETFD, FD_CLOEXEC);
  }
  return 0;
}

std::string VerifyListenerOwner(int fd, int family, const unsigned char* addr, int port, uid_t uid,
                                PeerCred* cred, VerifyTimings* timings) {
  VerifyTimings local;
  VerifyTimings& t = timings ? *timings : local;
  long long t0 = NowNs();
  // The pidfd is fetched only on a cache miss: a hit is pinned by the cached one.
  int rc = GetPeerCred(fd, cred, false);
  if (rc < 0) return std::string("SO_PEERCRED failed: ") + strerror(-rc);
  if (cred->pid <= 0) return "peer process is not visible in this pid namespace";
  if (cred->uid != uid)
    return "peer runs as uid " + std::to_string(cred->uid) + ", not " + std::to_string(uid);
  std::set<unsigned long> inodes;
  bool known;
  {
    std::lock_guard<std::mutex> lock(verified_mu);
    known = FindVerified(cred->pid) != nullptr;
  }
  // A process verified before: is the listener a connection to addr:port reaches one it held?
  unsigned long reached = known ? ReachedListener(family, addr, port) : 0;
  if (reached != 0) {
    inodes.insert(reached);
    std::lock_guard<std::mutex> lock(verified_mu);
    t.cached = CachedHolds(cred->pid, inodes);
  }
  if (!t.cached) {
    inodes.clear();
    CollectListenInodes(family, addr, port, &inodes);
  }
  long long t1 = NowNs();
  t.listenersNs = t1 - t0;
  if (inodes.empty()) return "no TCP listener on port " + std::to_string(port);
  if (!t.cached) {
    std::lock_guard<std::mutex> lock(verified_mu);
    t.cached = CachedHolds(cred->pid, inodes);
  }
  if (t.cached) {
    // The cached pidfd says the process verified before still has this pid. The socket's peer
    // is that process if the socket's creator is alive too (two live processes cannot share a
    // pid): SO_PEERPIDFD fails with ESRCH when the creator is gone (a listener passed on by a
    // process that exited). Kernels without SO_PEERPIDFD: the pid alone, as on a miss.
    int pidfd = -1;
    socklen_t len = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0) {
      close(pidfd);
    } else if (errno == ESRCH) {
      t.cached = false;
      return "the process that created the side channel (pid " + std::to_string(cred->pid) + ") is gone";
    }
    t.totalNs = NowNs() - t0;
    return "";
  }
  rc = GetPeerCred(fd, cred, true);
  if (rc < 0) return std::string("SO_PEERCRED failed: ") + strerror(-rc);
  unsigned long long start = ProcessStartTime(cred->pid);
  bool holds = ProcessHoldsInode(cred->pid, inodes);
  // The pidfd pins the peer's identity: if it is still alive after the scan, the PID we scanned
  // was not reused by another process in between.
  bool alive = PidfdAlive(cred->pidfd);
  long long t2 = NowNs();
  t.scanNs = t2 - t1;
  t.totalNs = t2 - t0;
  if (!holds)
    return "peer pid " + std::to_string(cred->pid) + " does not own the TCP listener on port " +
           std::to_string(port);
  if (!alive) return "peer pid " + std::to_string(cred->pid) + " could not be pinned (pidfd)";
  Remember(*cred, start, inodes);
  return "";
}

}  // namespace fastsock
