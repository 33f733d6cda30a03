// Side channel: the abstract UNIX socket a fastsock server listens on beside its TCP port, and the
// checks that make it safe to trust (docs/design.md, "Discovery" and "Security").
//
// Every function here is synchronous and cheap (a few syscalls and /proc reads); none blocks on
// the network: sockets are created non-blocking, and a connect that would wait reports EAGAIN.
#pragma once

#include <string>
#include <sys/types.h>

namespace fastsock {

// Result of a syscall wrapper: fd (or 0) on success, or -errno.
using SysResult = int;

// Binds and listens on the abstract name `name` (no leading NUL; the name is exactly these
// bytes, addrlen = offsetof(sun_path) + 1 + name.size()). Returns the listening fd, or -errno
// (-EADDRINUSE when anyone in this network namespace already holds the name).
SysResult ListenAbstract(const std::string& name, int backlog);

// Connects a non-blocking stream socket to the abstract name. Returns the connected fd, or
// -errno: -ECONNREFUSED (nobody listens), -EAGAIN (listener backlog full).
SysResult ConnectAbstract(const std::string& name);

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int pidfd = -1;     // SO_PEERPIDFD (Linux >= 6.5), else pidfd_open(pid), else -1
  bool pidfdFromSocket = false;  // true when the kernel bound the pidfd to the socket's peer
};

// SO_PEERCRED of a connected UNIX socket, and with `pin` a pidfd for the peer (SO_PEERPIDFD,
// else pidfd_open). Returns 0 or -errno.
SysResult GetPeerCred(int fd, PeerCred* out, bool pin = true);

// What a verification cost (CLOCK_MONOTONIC ns), for profiling (bench/connect.js --steps).
struct VerifyTimings {
  long long listenersNs = 0;  // the LISTEN sockets on the port (sock_diag, or /proc/net/tcp*)
  long long scanNs = 0;       // the peer's /proc/PID/fd scan (0 on a cache hit)
  long long totalNs = 0;
  bool cached = false;        // passed on a cached (pidfd-pinned process, listener inode) pair
};

// Why a listener could not be verified; empty when it was.
//
// Verifies that the process on the other end of `fd` (a connected UNIX socket) owns a TCP socket
// in LISTEN state on `port` whose bound address is `addr` (16 bytes; IPv4 as its 4 bytes when
// family == 4) or the wildcard of a family that accepts it (0.0.0.0, ::, and :: for an IPv4
// address on a dual-stack listener), or an AF_SMC socket in LISTEN state on it (smc_diag; its
// TCP socket is the kernel's own). Method: the LISTEN sockets' inodes from /proc/net/tcp{,6},
// then the peer's /proc/PID/fd links; the peer pidfd, checked alive after the scan, proves the PID
// was not reused meanwhile. Also requires the peer's uid to equal `uid`.
//
// A verified (process, listener inode) pair is cached, with a pidfd of that process held open
// (or, where the kernel has no pidfds, the process's start time): the same pid later passes
// without a new /proc scan while that pidfd says the process is alive (so the pid was not
// reused) and the LISTEN socket a TCP connection to this address and port reaches is one of its
// inodes (asked anew every time, with an exact sock_diag lookup: a listener that closed, and a
// squatter that took the name after it, is a miss; so may be another member of a SO_REUSEPORT
// group, which then runs the full check). One
// pidfd per cached process; at most 16 processes (the least recently used goes first) and 32
// listeners each.
std::string VerifyListenerOwner(int fd, int family, const unsigned char* addr, int port, uid_t uid,
                                PeerCred* cred, VerifyTimings* timings = nullptr);

}  // namespace fastsock
