// Module init: the JS-facing functions of the native core. Each binding validates its arguments
// and throws on bad input through errors.h (ArgTypeError: a TypeError, code ERR_INVALID_ARG_TYPE;
// ArgRangeError: a RangeError, code ERR_OUT_OF_RANGE); system errors come back as -errno numbers where callers
// expect them as a normal outcome (a side channel nobody listens on), and as thrown errors with
// `code`, `errno` and `syscall` otherwise (csrc/errors.h).
#include <napi.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "errors.h"
#include "fdpass.h"
#include "helper_threads.h"
#include "kernelsock.h"
#include "native_limits.h"
#include "progress_js.h"
#include "rdma/probe.h"
#include "rdma/verbs.h"
#include "rdma/bridge.h"
#include "shm/endpoint.h"
#include "sidechannel.h"
#include "source_hash.h"
#include "stream_state.h"

namespace fastsock {
namespace {

int FdArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw ArgTypeError(info.Env(), "argument " + std::to_string(i) + " must be an fd");
  int fd = info[i].As<Napi::Number>().Int32Value();
  if (fd < 0) throw ArgRangeError(info.Env(), "fd must be >= 0");
  return fd;
}

std::string StringArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsString())
    throw ArgTypeError(info.Env(), "argument " + std::to_string(i) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

// listenAbstract(name: string, backlog: number): number (fd). Throws with code/errno/syscall.
Napi::Value ListenAbstractJs(const Napi::CallbackInfo& info) {
  std::string name = StringArg(info, 0);
  int backlog = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : 511;
  int r = ListenAbstract(name, backlog);
  if (r < 0) throw ErrnoError(info.Env(), -r, "listen");
  return Napi::Number::New(info.Env(), r);
}

// connectAbstract(name: string): number. The connected fd (>= 0), or -errno.
Napi::Value ConnectAbstractJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), ConnectAbstract(StringArg(info, 0)));
}

// peerCred(fd): { pid, uid, gid }. Throws with code/errno/syscall.
Napi::Value PeerCredJs(const Napi::CallbackInfo& info) {
  PeerCred c;
  int r = GetPeerCred(FdArg(info, 0), &c, false);
  if (r < 0) throw ErrnoError(info.Env(), -r, "getsockopt");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("pid", static_cast<double>(c.pid));
  o.Set("uid", static_cast<double>(c.uid));
  o.Set("gid", static_cast<double>(c.gid));
  return o;
}

// verifyListener(fd, family: 4|6, addr: Uint8Array(4|16), port, uid):
//   { ok: boolean, reason: string, pid, uid, pidfdFromSocket: boolean, cached: boolean,
//     listenersNs, scanNs, totalNs } (what the check cost: VerifyTimings)
Napi::Value VerifyListenerJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  if (info.Length() < 5 || !info[1].IsNumber() || !info[2].IsTypedArray() || !info[3].IsNumber() ||
      !info[4].IsNumber())
    throw ArgTypeError(env, "verifyListener(fd, family, addr, port, uid)");
  int family = info[1].As<Napi::Number>().Int32Value();
  Napi::Uint8Array a = info[2].As<Napi::Uint8Array>();
  if ((family != 4 && family != 6) || a.ByteLength() != (family == 4 ? 4u : 16u))
    throw ArgTypeError(env, "addr must be 4 bytes for family 4, 16 bytes for family 6");
  unsigned char addr[16] = {0};
  memcpy(addr, a.Data(), a.ByteLength());
  int port = info[3].As<Napi::Number>().Int32Value();
  uid_t uid = static_cast<uid_t>(info[4].As<Napi::Number>().Uint32Value());
  PeerCred c;
  VerifyTimings t;
  std::string reason = VerifyListenerOwner(fd, family, addr, port, uid, &c, &t);
  if (c.pidfd >= 0) close(c.pidfd);
  Napi::Object o = Napi::Object::New(env);
  o.Set("ok", reason.empty());
  o.Set("reason", reason);
  o.Set("pid", static_cast<double>(c.pid));
  o.Set("uid", static_cast<double>(c.uid));
  o.Set("pidfdFromSocket", c.pidfdFromSocket);
  o.Set("cached", t.cached);
  o.Set("listenersNs", static_cast<double>(t.listenersNs));
  o.Set("scanNs", static_cast<double>(t.scanNs));
  o.Set("totalNs", static_cast<double>(t.totalNs));
  return o;
}

// closeFd(fd): void. For fds the addon handed out that never reached a Node handle.
Napi::Value CloseFdJs(const Napi::CallbackInfo& info) {
  close(FdArg(info, 0));
  return info.Env().Undefined();
}

// growSocketBuffers(fd, bytes): sets SO_SNDBUF/SO_RCVBUF to `bytes`, with the FORCE variants
// where permitted (CAP_NET_ADMIN) so that the limit net.core.wmem_max does not apply. Returns the
// send buffer the kernel granted (it doubles the request for bookkeeping), or -errno.
Napi::Value GrowSocketBuffersJs(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0);
  if (info.Length() < 2 || !info[1].IsNumber()) throw ArgTypeError(info.Env(), "growSocketBuffers(fd, bytes)");
  int bytes = info[1].As<Napi::Number>().Int32Value();
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  int got = 0;
  socklen_t len = sizeof got;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) != 0) return Napi::Number::New(info.Env(), -errno);
  return Napi::Number::New(info.Env(), got);
}

// niceHelperThreads(nice): raises the V8 platform's worker threads to nice value `nice` (0..19;
// csrc/helper_threads.h). Returns how many threads changed, or -errno.
Napi::Value NiceHelperThreadsJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "niceHelperThreads(nice)");
  int nice = info[0].As<Napi::Number>().Int32Value();
  if (nice < 0 || nice > 19) throw ArgRangeError(info.Env(), "nice must be 0..19");
  return Napi::Number::New(info.Env(), NiceHelperThreads(nice));
}

// probeSocketFamily(family: number): 0 when socket(family, SOCK_STREAM, 0) works, else -errno.
Napi::Value ProbeSocketFamilyJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "family must be a number");
  int fd = socket(info[0].As<Napi::Number>().Int32Value(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Napi::Number::New(info.Env(), -errno);
  close(fd);
  return Napi::Number::New(info.Env(), 0);
}

// memcpyTimeNs(bytes, iterations): number, elapsed ns for `iterations` copies of `bytes`.
Napi::Value MemcpyTimeNsJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw ArgTypeError(info.Env(), "memcpyTimeNs(bytes, iterations)");
  double bytes = info[0].As<Napi::Number>().DoubleValue();
  if (bytes < 0 || bytes > (1ull << 32)) throw ArgRangeError(info.Env(), "bytes out of range");
  return Napi::Number::New(info.Env(), static_cast<double>(MemcpyTimeNs(static_cast<size_t>(bytes),
                                                                        info[1].As<Napi::Number>().Uint32Value())));
}

// spinPingPongNs(iterations): number, elapsed ns for `iterations` busy-polled round trips.
Napi::Value SpinPingPongNsJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "iterations must be a number");
  return Napi::Number::New(info.Env(), static_cast<double>(SpinPingPongNs(info[0].As<Napi::Number>().Uint32Value())));
}

// ringPingPongNs(iterations, bytes): number, elapsed ns for `iterations` round trips of `bytes`
// over two shm rings (0 for a bad `bytes`).
Napi::Value RingPingPongNsJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw ArgTypeError(info.Env(), "ringPingPongNs(iterations, bytes)");
  return Napi::Number::New(info.Env(), static_cast<double>(RingPingPongNs(info[0].As<Napi::Number>().Uint32Value(),
                                                                          info[1].As<Napi::Number>().Uint32Value())));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  struct Binding {
    const char* name;
    Napi::Function::Callback fn;
  };
  static const Binding kBindings[] = {
      {"listenAbstract", ListenAbstractJs},     {"connectAbstract", ConnectAbstractJs},
      {"peerCred", PeerCredJs},                 {"verifyListener", VerifyListenerJs},
      {"closeFd", CloseFdJs},                   {"growSocketBuffers", GrowSocketBuffersJs},
      {"probeSocketFamily", ProbeSocketFamilyJs}, {"memcpyTimeNs", MemcpyTimeNsJs},
      {"spinPingPongNs", SpinPingPongNsJs},     {"ringPingPongNs", RingPingPongNsJs},
      {"shmCreateSegment", ShmCreateSegment},
      {"isEventfd", IsEventfd},                 {"shmLoopDoorbell", ShmLoopDoorbell},
      {"shmFdRoom", ShmFdRoom},                 {"sendFds", SendFdsJs},
      {"recvFds", RecvFdsJs},                   {"dupFd", DupFdJs},
      {"eventFlagCreate", EventFlagCreateJs},   {"eventFlagRaise", EventFlagRaiseJs},
      {"eventFlagTake", EventFlagTakeJs},
      {"waitReadable", WaitReadableJs},         {"rdmaProbe", RdmaProbeJs},
      // smc, sdp (csrc/kernelsock.h)
      {"waitConnected", WaitConnectedJs},       {"connectStream", ConnectStreamJs},
      {"bindStream", BindStreamJs},             {"smcDiag", SmcDiagJs},
      {"unsentBytes", UnsentBytesJs},
      {"rsocketConnect", RsocketConnectJs},     {"rsocketListen", RsocketListenJs},
      {"rsocketClose", RsocketCloseJs},         {"rdmaDeviceForAddress", RdmaDeviceForAddressJs},
      {"rsocketThreads", RsocketThreadsJs},     {"progressStats", ProgressStatsJs},
      {"niceHelperThreads", NiceHelperThreadsJs},
  };
  for (const Binding& b : kBindings) exports.Set(b.name, Napi::Function::New(env, b.fn, b.name));
  exports.Set("ShmEndpoint", ShmEndpoint::Define(env));
  InitVerbs(env, exports);
  Napi::Object state = Napi::Object::New(env);
  state.Set("EOF", Napi::Number::New(env, kStateEof));
  state.Set("RESET", Napi::Number::New(env, kStateReset));
  state.Set("GONE", Napi::Number::New(env, kStateGone));
  state.Set("CLOSED", Napi::Number::New(env, kStateClosed));
  state.Set("READABLE", Napi::Number::New(env, kStateReadable));
  exports.Set("streamState", state);
  exports.Set("sourceHash", Napi::String::New(env, FASTSOCK_SOURCE_HASH));
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  return exports;
}

}  // namespace
}  // namespace fastsock

static Napi::Object InitAll(Napi::Env env, Napi::Object exports) { return fastsock::Init(env, exports); }

NODE_API_MODULE(fastsock, InitAll)
