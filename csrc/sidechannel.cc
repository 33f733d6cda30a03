#include "sidechannel.h"

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

#include <cstdint>
#include <set>

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

// Collects inodes of LISTEN sockets on `port` in one /proc/net file whose local address is
// acceptable for a connection to `addr`.
void CollectListenInodes(const char* file, bool v6file, int family, const unsigned char* addr,
                         int port, std::set<unsigned long>* inodes) {
  FILE* f = fopen(file, "re");
  if (!f) return;
  char line[512];
  if (!fgets(line, sizeof line, f)) {  // header
    fclose(f);
    return;
  }
  static const unsigned char kZero[16] = {0};
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
    bool ok = false;
    if (!v6file) {
      ok = family == 4 && (memcmp(la, addr, 4) == 0 || memcmp(la, kZero, 4) == 0);
    } else if (family == 6) {
      ok = memcmp(la, addr, 16) == 0 || memcmp(la, kZero, 16) == 0;
    } else {
      static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
      ok = memcmp(la, kZero, 16) == 0 || (memcmp(la, kMapped, 12) == 0 && memcmp(la + 12, addr, 4) == 0);
    }
    if (ok) inodes->insert(inode);
  }
  fclose(f);
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

SysResult GetPeerCred(int fd, PeerCred* out) {
  ucred uc;
  socklen_t len = sizeof uc;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) return -errno;
  out->pid = uc.pid;
  out->uid = uc.uid;
  out->gid = uc.gid;
  int pidfd = -1;
  len = sizeof pidfd;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
    out->pidfd = pidfd;
    out->pidfdFromSocket = true;
  } else if (uc.pid > 0) {
    out->pidfd = static_cast<int>(syscall(SYS_pidfd_open, uc.pid, 0));
    if (out->pidfd >= 0) fcntl(out->pidfd, F_SETFD, FD_CLOEXEC);
  }
  return 0;
}

std::string VerifyListenerOwner(int fd, int family, const unsigned char* addr, int port, uid_t uid,
                                PeerCred* cred) {
  int rc = GetPeerCred(fd, cred);
  if (rc < 0) return std::string("SO_PEERCRED failed: ") + strerror(-rc);
  if (cred->pid <= 0) return "peer process is not visible in this pid namespace";
  if (cred->uid != uid)
    return "peer runs as uid " + std::to_string(cred->uid) + ", not " + std::to_string(uid);
  std::set<unsigned long> inodes;
  CollectListenInodes("/proc/net/tcp", false, family, addr, port, &inodes);
  CollectListenInodes("/proc/net/tcp6", true, family, addr, port, &inodes);
  if (inodes.empty()) return "no TCP listener on port " + std::to_string(port);
  bool holds = ProcessHoldsInode(cred->pid, inodes);
  // The pidfd pins the peer's identity: if it is still alive after the scan, the PID we scanned
  // was not reused by another process in between.
  bool alive = cred->pidfd >= 0 && syscall(SYS_pidfd_send_signal, cred->pidfd, 0, nullptr, 0) == 0;
  if (!holds)
    return "peer pid " + std::to_string(cred->pid) + " does not own the TCP listener on port " +
           std::to_string(port);
  if (!alive) return "peer pid " + std::to_string(cred->pid) + " could not be pinned (pidfd)";
  return "";
}

}  // namespace fastsock
