#include "rdma/bridge/pump.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "rdma/bridge/workers.h"
#include "rdma/lib.h"

namespace fastsock {
namespace bridge {
namespace {

// Bytes the bridge holds per direction between a read on one side and the write on the other.
// The kernel socketpair buffers (kSocketpairBufferBytes) and rsockets' own buffers sit on either
// side of it, so it only has to keep both sides busy, not to absorb bursts.
constexpr size_t kBridgeBufferBytes = 256 << 10;
// SO_SNDBUF/SO_RCVBUF of both socketpair ends: about what loopback TCP autotunes to, as on the
// unix rung, so that patterns that work over TCP (an echo nobody reads for 1 MB) work here too.
constexpr int kSocketpairBufferBytes = 4 << 20;
// How long a bridge whose JS end is closed waits for the peer's EOF after passing ours on (like
// TCP's FIN_WAIT2 timeout for an orphaned socket), in ms.
constexpr int kLingerMs = 60000;

// One direction's buffer: bytes read from the source and not yet written to the sink.
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

// How a bridge ends: what it does to each side on the way out.
enum class Ending {
  kOrderly,    // both directions saw EOF (or the linger ran out): rclose, close
  kResetJs,    // the rsocket failed or the peer reset: rclose, and JS must see ECONNRESET
  kResetPeer,  // JS reset (or left with bytes arriving): rclose without a prior EOF, close
  kStop,       // stop eventfd: rclose, close
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

}  // namespace

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

SocketpairEnds Ends(const int sv[2]) {
  SocketpairEnds e;
  e.sp = sv[1];
  e.js_fd = sv[0];
  struct stat st;
  if (fstat(sv[0], &st) == 0) e.js_ino = st.st_ino;
  return e;
}

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

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
