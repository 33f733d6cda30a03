// (Named bridge.h, not rsocket.h: csrc/ is on the include path and <rdma/rsocket.h> is rdma-core's.)
// Rung `rsocket`: rsockets (librdmacm's socket-like API over RC queue pairs) bridged to a UNIX
// socketpair, because rsockets have no fd libuv could poll.
//
// Every connection gets a helper thread (the bridge) that moves bytes between the rsocket and
// one end of a socketpair(AF_UNIX, SOCK_STREAM); the other end becomes the JS socket's own Node
// pipe handle. The bridge waits in rpoll(), which accepts rsockets and ordinary fds together:
//
//   JS socket (Pipe handle) <-> [socketpair] <-> bridge thread <-> rsocket <-> RC QP -> peer
//
// Stream semantics, per direction:
//   - bytes: read from one side only while the bridge's buffer for that direction has room
//     (kBridgeBufferBytes), so a full peer stops the reads on this side: backpressure.
//   - EOF: read 0 from the rsocket -> shutdown(SHUT_WR) on the socketpair once the buffer is
//     flushed, and read 0 from the socketpair -> rshutdown(SHUT_WR); the other direction goes on
//     (half-open).
//   - resets: rsockets have no RST, but an rclose() not preceded by rshutdown(SHUT_WR) leaves the
//     peer's rsocket disconnected (rpoll: POLLHUP) while it could still write, which an orderly
//     close never does. So a bridge whose JS end reset (ECONNRESET on the socketpair, or JS gone
//     while bytes keep arriving) rcloses at once, and a bridge that reads EOF with POLLHUP while
//     its own write side is open (or whose rsocket fails: peer process killed) closes its
//     socketpair end with a byte unread in its receive queue, which the kernel turns into
//     ECONNRESET on the JS end, as TCP's RST would.
//   - orderly close: once JS closed its end and the EOF went out, the bridge waits (up to
//     kLingerMs) for the peer's EOF before rclose, like an orphaned TCP socket in FIN_WAIT2.
//   - stop: each thread polls its own eventfd too; rsocketClose(id), the environment's cleanup
//     hook and process exit write it, and the thread closes everything and ends.
//
// Files: this header and bridge.cc are the JS face (N-API only there); the rest has no N-API:
// bridge/workers.h (the helper-thread registry and stop eventfds), bridge/pump.h (the byte pump
// above), bridge/threads.h (connect and accept threads), bridge/svc.h (librdmacm's
// service-thread workaround). All rsocket calls go through Rdma() (csrc/rdma/lib.h): nothing
// here links librdmacm.
#pragma once
#include <napi.h>

namespace fastsock {

// rsocketConnect and rsocketListen throw code ERR_FASTSOCK_NO_RDMA (errno -ENOSYS) when
// librdmacm or its rsocket API cannot be loaded.
//
// rsocketConnect(address: string, port: number, timeoutMs: number, cb): void
//   Starts a thread that checks the route (an iWARP device or no RDMA device: declined), opens an
//   rsocket, rconnects within timeoutMs and then bridges it. cb runs once on the loop with
//   { fd, local: {address, port}, remote: {address, port}, device } on success (fd: the JS end
//   of the socketpair, the caller owns it), or { errno (negative), syscall, reason, notOffered }.
//   The pending connect keeps the loop alive, like a TCP connect.
Napi::Value RsocketConnectJs(const Napi::CallbackInfo& info);

// rsocketListen(address: string, port: number, backlog: number, cb): number (listener id)
//   rbind + rlisten synchronously (throws with code/errno/syscall, e.g. EADDRINUSE), then an accept
//   thread that bridges every accepted connection and calls cb({ fd, local, remote }) on the loop.
//   The listener does not keep the loop alive. Stop it with rsocketClose(id).
Napi::Value RsocketListenJs(const Napi::CallbackInfo& info);

// rsocketClose(id: number): boolean. Stops a listener (or any bridge) by id; false if it ended.
Napi::Value RsocketCloseJs(const Napi::CallbackInfo& info);

// rdmaDeviceForAddress(address: string): { name, transport: 'ib'|'iwarp'|'other' } | null
//   The RDMA device that owns a local address (rdma_bind_addr), or null when none does.
Napi::Value RdmaDeviceForAddressJs(const Napi::CallbackInfo& info);

// rsocketThreads(): number. Helper threads alive in this process (bridges, accept, connect).
Napi::Value RsocketThreadsJs(const Napi::CallbackInfo& info);

}  // namespace fastsock
