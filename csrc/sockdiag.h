// NETLINK_SOCK_DIAG requests (sock_diag(7)): a dump (every reply message comes back to `each`
// until NLMSG_DONE) or an exact request (one reply). Used for TCP LISTEN sockets
// (csrc/sidechannel.cc) and AF_SMC sockets (csrc/kernelsock.cc).
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

// The same as an exact request (no NLM_F_DUMP): the kernel looks the one socket `req` names up
// (inet_diag: by its addresses and ports, as an arriving packet would be) and `each` sees its
// one reply. Returns 0 after it, the kernel's -errno (-ENOENT: no such socket), or -errno.
int SockDiagGet(const void* req, size_t len, const std::function<void(const nlmsghdr*)>& each);

}  // namespace fastsock
