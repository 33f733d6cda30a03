// The librdmacm rsocket service-thread workaround, and the rsocket calls every path shares.
//
// With RdmaLib::rsocket_svc_bug (csrc/rdma/lib.h): what this process has in librdmacm's two
// rsocket service threads (listen_svc: listening rsockets; connect_svc: connected and accepted
// ones, from rconnect or raccept until rclose), and how many each can hold safely. The buggy
// thread reads its poll set once, when it starts, after growing the set by 4 slots (slot 0 its
// own); growing while it runs leaves it polling freed memory. It ends whenever its last rsocket
// leaves, and the next one starts it again with 4 more slots. So the first listen or connect of
// the process cycles each thread kSvcPrewarmCycles times (one throw-away rsocket in, out) before
// any real rsocket: each thread then starts with 4 * (cycles + 1) slots and never has to grow
// while it runs. Should the process still reach a capacity, a client declines (the chain moves
// on to the next rung) and a listener stops listening (clients are REJECTED and move on) until a
// connection ends; a client that connected just before might then never be accepted, so the
// capacities are far above what the tests use. Without the bug there is no capacity.
// No N-API.
#pragma once

#if FASTSOCK_HAVE_RDMA
#include <sys/socket.h>

namespace fastsock {
namespace bridge {

// Cycles each service thread with throw-away rsockets: listen_svc through rbind(local, port 0) +
// rlisten + rclose, connect_svc through a non-blocking rconnect to `remote` (port 1) still in
// progress + rclose; `local` is an RDMA device's address of this host, `remote` one the route
// goes through an RDMA device to. Runs once per process, before any other rsocket is in a
// service thread (every path calls it first; the others wait meanwhile).
void PrewarmServiceThreads(const sockaddr_storage& local, const sockaddr_storage& remote);

// A place in connect_svc for an rsocket about to be connected or accepted: false when the
// capacity is reached. Give it back with ReleaseConnectSlot once the rsocket is rclosed.
bool TakeConnectSlot();
void ReleaseConnectSlot();
// No place left in connect_svc (a listener stops listening meanwhile).
bool ConnectSlotsFull();
// The capacities (meaningful with the bug), for error messages.
int ConnectCapacity();
int ListenCapacity();

// rsocket + SO_REUSEADDR (+ IPV6_V6ONLY) + rbind + rlisten, non-blocking: the listening rsocket,
// or -1 with errno (EMFILE: listen_svc is full) and the failing call in *syscall. Close it with
// CloseListener.
int OpenListener(const sockaddr_storage& ss, socklen_t len, int backlog, const char** syscall);
void CloseListener(int ls);

// O_NONBLOCK on an rsocket.
void SetNonblocking(int rs);

}  // namespace bridge
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
