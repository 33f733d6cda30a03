// The rsocket bridge's byte pump: moves bytes between a connected rsocket and the bridge end of
// a socketpair whose other end is the JS socket's Node pipe handle (csrc/rdma/bridge.h draws the
// picture and states the stream semantics: backpressure, EOF per direction, resets, orderly
// close with a linger, stop). No N-API.
#pragma once

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <sys/types.h>

namespace fastsock {
namespace bridge {

// The bridge end of the socketpair, and the JS end's fd and inode (to tell, at a reset, that the
// fd still is the same socket).
struct SocketpairEnds {
  int sp = -1;
  int js_fd = -1;
  ino_t js_ino = 0;
};

// A fresh socketpair: sv[0] the JS end, sv[1] the bridge end, both CLOEXEC and non-blocking
// (libuv wants the JS end so), with buffers about what loopback TCP autotunes to. -errno on
// failure.
int MakeSocketpair(int sv[2]);
// The ends of a socketpair MakeSocketpair made; call it before JS owns (and may close) sv[0].
SocketpairEnds Ends(const int sv[2]);

// An errno that means "not now" for a non-blocking call: try again later.
inline bool Transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

// Runs the bridge on the calling thread until the connection ends or `stop_efd` becomes
// readable; closes `rs` and `ends.sp` before returning.
void Bridge(int rs, SocketpairEnds ends, int stop_efd);

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
