// File descriptors over the side channel (SCM_RIGHTS), and a one-shot readiness wait on the
// loop, for the `shm` setup that follows ACCEPT (docs/wire-protocol.md, "SHM_SETUP").
#pragma once
#include <napi.h>

namespace fastsock {
// sendFds(fd, bytes: Uint8Array, fds: number[]) -> bytes sent, or -errno. Non-blocking.
Napi::Value SendFdsJs(const Napi::CallbackInfo& info);
// recvFds(fd, maxBytes, maxFds) -> { bytes: Buffer, fds: number[] } or -errno (-EAGAIN: nothing
// yet). Non-blocking. More fds than maxFds, or truncated control data: all received fds are
// closed and -EPROTO returned.
Napi::Value RecvFdsJs(const Napi::CallbackInfo& info);
// dupFd(fd) -> a new close-on-exec fd for the same socket, or -errno.
Napi::Value DupFdJs(const Napi::CallbackInfo& info);
// A flag two processes share once one passed the fd to the other (SCM_RIGHTS): the unix rung's
// reset flag (docs/wire-protocol.md, "Reset flag"). eventFlagCreate() -> a non-blocking,
// close-on-exec eventfd, or -errno. eventFlagRaise(fd) -> 0, or -errno. eventFlagTake(fd) -> 1
// when the flag was raised (and lowers it), 0 when not, or -errno.
Napi::Value EventFlagCreateJs(const Napi::CallbackInfo& info);
Napi::Value EventFlagRaiseJs(const Napi::CallbackInfo& info);
Napi::Value EventFlagTakeJs(const Napi::CallbackInfo& info);
// waitReadable(fd, timeoutMs, cb(status)): cb(0) once fd is readable (or hung up), cb(-ETIMEDOUT)
// after timeoutMs. One shot; the fd stays open and is not read.
Napi::Value WaitReadableJs(const Napi::CallbackInfo& info);
// waitConnected(fd, timeoutMs, cb(status)): for a socket whose non-blocking connect is in
// progress: once it is writable (or hung up), cb(0) when connected, else cb(-SO_ERROR)
// (-ECONNREFUSED...); cb(-ETIMEDOUT) after timeoutMs. One shot; the fd stays open.
Napi::Value WaitConnectedJs(const Napi::CallbackInfo& info);
}  // namespace fastsock
