// One NETLINK_SOCK_DIAG dump (sock_diag(7)): the request goes out, every reply message comes
// back to `each` until NLMSG_DONE. Used for TCP LISTEN sockets (csrc/sidechannel.cc) and AF_SMC
// sockets (csrc/kernelsock.cc).
#pragma once
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace fastsock {

// Sends `req` (a sock_diag request body of `len` bytes, e.g. inet_diag_req_v2) as a
// SOCK_DIAG_BY_FAMILY dump and calls `each` for every reply. Returns 0 at NLMSG_DONE, the
// kernel's -errno from an NLMSG_ERROR, or -errno when netlink itself fails. The netlink socket
// is kept open per thread (close-on-exec) and reopened after a failed dump.
int SockDiagDump(const void* req, size_t len, const std::function<void(const nlmsghdr*)>& each);

}  // namespace fastsock
