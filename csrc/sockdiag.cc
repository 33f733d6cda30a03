#include "sockdiag.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sock_diag.h>

namespace fastsock {

int SockDiagDump(const void* req, size_t len, const std::function<void(const nlmsghdr*)>& each) {
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return -errno;
  alignas(nlmsghdr) char out[NLMSG_SPACE(256)];
  if (len > 256) {
    close(nl);
    return -EINVAL;
  }
  memset(out, 0, sizeof out);
  auto* nlh = reinterpret_cast<nlmsghdr*>(out);
  nlh->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(len));
  nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  memcpy(NLMSG_DATA(nlh), req, len);
  sockaddr_nl sa;
  memset(&sa, 0, sizeof sa);
  sa.nl_family = AF_NETLINK;
  if (sendto(nl, out, nlh->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
    int err = errno;
    close(nl);
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
    }
  }
  close(nl);
  return rc;
}

}  // namespace fastsock
