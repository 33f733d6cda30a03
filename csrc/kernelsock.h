// Kernel stream sockets of other address families that speak IP addresses (AF_SMC, AF_INET_SDP):
// the `smc` and `sdp` rungs. Their fds are handed to Node, which drives them as its own TCP
// handles (getsockname on them reports AF_INET/AF_INET6), so the only native parts are socket
// creation, the non-blocking connect and bind, and smc_diag, the kernel's report of what an
// AF_SMC socket really runs on (SMC-R, SMC-D, or TCP after a fallback).
//
// Everything here is synchronous and cheap; nothing blocks on the network.
#pragma once

#include <napi.h>

#include <vector>

namespace fastsock {

// An AF_SMC socket in LISTEN state as smc_diag reports it. smc_diag does not say whether the
// socket is IPv4 or IPv6: an IPv4 address sits in the first 4 bytes, the other 12 are zero.
struct SmcListener {
  unsigned char addr[16];  // bound address, network order
  unsigned long inode;
};

// The AF_SMC LISTEN sockets on `port` (smc_diag). Returns false when smc_diag cannot be asked
// (no AF_SMC in this kernel, no smc_diag module): nothing is added then.
bool CollectSmcListeners(int port, std::vector<SmcListener>* out);

// connectStream(family, protocol, ipFamily: 4|6, addr: Uint8Array(4|16), port, bufferBytes?): number
//   socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol), SO_SNDBUF/SO_RCVBUF =
//   bufferBytes when > 0 (FORCE variants where permitted), and a non-blocking connect to addr:port (a sockaddr_in/in6). The fd (the connect may still be in progress:
//   waitConnected says how it ended), or -errno (the fd is closed then).
Napi::Value ConnectStreamJs(const Napi::CallbackInfo& info);

// bindStream(family, protocol, ipFamily: 4|6, addr: Uint8Array(4|16), port, v6only: boolean, bufferBytes?): number
//   socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol), SO_REUSEADDR (as libuv
//   sets on its TCP listeners), IPV6_V6ONLY for ipFamily 6, buffers as connectStream, bind. The bound, not yet listening
//   fd, or -errno (the fd is closed then).
Napi::Value BindStreamJs(const Napi::CallbackInfo& info);

// unsentBytes(fd): bytes written to the socket that the kernel has not sent yet (SIOCOUTQNSD; on
//   AF_SMC: prepared in the send buffer, not yet written to the peer), or -errno.
Napi::Value UnsentBytesJs(const Napi::CallbackInfo& info);

// smcDiag(fd): { mode: 0 SMC-R | 1 TCP fallback | 2 SMC-D, state, fallbackReason, peerDiagnosis }
//   for the AF_SMC socket `fd` (matched by its inode among smc_diag's sockets), or -errno:
//   -ENOENT when smc_diag does not list it, -EAFNOSUPPORT when smc_diag cannot be asked.
Napi::Value SmcDiagJs(const Napi::CallbackInfo& info);

}  // namespace fastsock
