#include "sockdiag.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sock_diag.h>

namespace fastsock {

namespace {

// One NETLINK_SOCK_DIAG socket per thread, kept open: a verification runs a dump or two per
// connect, and socket() + close() cost as much as the dump of a few listeners. -1: none yet.
thread_local int tls_nl = -1;
thread_local uint32_t tls_seq = 0;

int DiagSocket() {
  if (tls_nl < 0) tls_nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  return tls_nl;
}

void DropDiagSocket() {
  if (tls_nl >= 0) close(tls_nl);
  tls_nl = -1;
}

// One request: a dump (every reply until NLMSG_DONE) or, with !dump, an exact request (one reply).
int Query(const void* req, size_t len, bool dump, const std::function<void(const nlmsghdr*)>& each) {
  if (len > 256) return -EINVAL;
  int nl = DiagSocket();
  if (nl < 0) return -errno;
  alignas(nlmsghdr) char out[NLMSG_SPACE(256)];
  memset(out, 0, sizeof out);
  auto* nlh = reinterpret_cast<nlmsghdr*>(out);
  nlh->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(len));
  nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
  nlh->nlmsg_flags = static_cast<uint16_t>(dump ? NLM_F_REQUEST | NLM_F_DUMP : NLM_F_REQUEST);
  const uint32_t seq = ++tls_seq;
  nlh->nlmsg_seq = seq;
  memcpy(NLMSG_DATA(nlh), req, len);
  sockaddr_nl sa;
  memset(&sa, 0, sizeof sa);
  sa.nl_family = AF_NETLINK;
  if (sendto(nl, out, nlh->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    int err = errno;
    DropDiagSocket();
    return -err;
  }
  int rc = -EIO;
  alignas(nlmsghdr) char buf[32768];
  for (bool done = false; !done;) {
    ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n <= 0) {
      rc = n < 0 ? -errno : -EIO;
      break;
    }
    for (nlmsghdr* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<unsigned>(n)); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq) continue;  // a late reply to an earlier, abandoned request
      if (h->nlmsg_type == NLMSG_DONE) {
        rc = 0;
        done = true;
        break;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        const nlmsgerr* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        rc = e->error < 0 ? e->error : -EIO;
        done = true;
        break;
      }
      each(h);
      if (!dump) {  // an exact request has one answer: the socket, or NLMSG_ERROR
        rc = 0;
        done = true;
        break;
      }
    }
  }
  // A dump that did not end cleanly may leave replies queued: start afresh next time.
  if (rc != 0) DropDiagSocket();
  return rc;
}

}  // namespace

int SockDiagDump(const void* req, size_t len, const std::function<void(const nlmsghdr*)>& each) {
  return Query(req, len, true, each);
}

int SockDiagGet(const void* req, size_t len, const std::function<void(const nlmsghdr*)>& each) {
  return Query(req, len, false, each);
}

}  // namespace fastsock
