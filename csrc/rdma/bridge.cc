// The rsocket rung's JS face (bridge.h states the functions and the bridge's stream semantics).
// N-API lives here only: the helper threads, the byte pump and the service-thread workaround are
// in csrc/rdma/bridge/; their outcomes reach JS through a thread-safe function per job.
#include "rdma/bridge.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <string>

#include "errors.h"
#include "ip_addr.h"
#include "rdma/bridge/svc.h"
#include "rdma/bridge/threads.h"
#include "rdma/bridge/workers.h"
#include "rdma/lib.h"

namespace fastsock {
namespace {

using bridge::Registry;

Napi::Error RdmaUnavailable(Napi::Env env) {
  return FastsockError(env, kErrNoRdma,
                       "rsockets unavailable: " + (Rdma()->error.empty() ? std::string("librdmacm has no rsocket API") : Rdma()->error),
                       ENOSYS);
}

bool RsocketsReady() { return Rdma()->ok && Rdma()->rsocket_ok; }

#if FASTSOCK_HAVE_RDMA

using bridge::Outcome;

// A worker of this environment; the environment's teardown stops and waits for its workers.
// Throws when no eventfd can be made.
bridge::Worker* AddWorker(Napi::Env env) {
  bridge::Worker* w = Registry::Get()->Add(env);
  if (!w) throw ErrnoError(env, errno, "eventfd", std::string("eventfd: ") + strerror(errno));
  if (Registry::Get()->Track(env))
    napi_add_env_cleanup_hook(env, [](void* arg) { Registry::Get()->StopAndWait(arg); }, static_cast<napi_env>(env));
  return w;
}


// On the loop: an outcome becomes the callback's one argument, { fd, local, remote, device } or
// { errno, syscall, reason, notOffered }.
void DeliverJs(Napi::Env env, Napi::Function cb, std::nullptr_t*, Outcome* raw) {
  std::unique_ptr<Outcome> o(raw);
  if (env == nullptr || cb.IsEmpty()) return;  // the environment is going away: the fd is closed
  Napi::Object r = Napi::Object::New(env);
  if (o->fd >= 0) {
    r.Set("fd", o->fd);
    o->fd = -1;  // JS owns it now
    auto ep = [&](const bridge::Endpoint& e) {
      Napi::Object x = Napi::Object::New(env);
      x.Set("address", e.address);
      x.Set("port", e.port);
      return x;
    };
    r.Set("local", ep(o->local));
    r.Set("remote", ep(o->remote));
    r.Set("device", o->device);
  } else {
    r.Set("errno", -o->err);
    r.Set("syscall", o->syscall);
    r.Set("reason", o->reason);
    r.Set("notOffered", o->not_offered);
  }
  o.reset();
  // Not Function::Call: a JS exception must stay pending (Node reports it as uncaught), not
  // become a C++ exception here.
  napi_value argv[1] = {r};
  napi_value result;
  napi_call_function(env, env.Global(), cb, 1, argv, &result);
}

using Tsfn = Napi::TypedThreadSafeFunction<std::nullptr_t, Outcome, DeliverJs>;

// Posts outcomes to the loop through a thread-safe function, released with the sink.
class TsfnSink : public bridge::OutcomeSink {
 public:
  explicit TsfnSink(Tsfn tsfn) : tsfn_(tsfn) {}
  ~TsfnSink() override { tsfn_.Release(); }
  void Post(std::unique_ptr<Outcome> o) override {
    Outcome* raw = o.release();
    if (tsfn_.NonBlockingCall(raw) != napi_ok) delete raw;
  }

 private:
  Tsfn tsfn_;
};

#endif  // FASTSOCK_HAVE_RDMA

}  // namespace

Napi::Value RsocketConnectJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction())
    throw ArgTypeError(env, "rsocketConnect(address, port, timeoutMs, cb)");
  if (!RsocketsReady()) throw RdmaUnavailable(env);
#if FASTSOCK_HAVE_RDMA
  auto job = std::make_unique<bridge::ConnectJob>();
  job->address = info[0].As<Napi::String>().Utf8Value();
  job->port = info[1].As<Napi::Number>().Int32Value();
  job->timeout_ms = std::max(1, info[2].As<Napi::Number>().Int32Value());
  job->worker = AddWorker(env);
  job->sink = std::make_unique<TsfnSink>(Tsfn::New(env, info[3].As<Napi::Function>(), "FASTSOCK_RSOCKET_CONNECT", 0, 1));
  bridge::SpawnConnect(std::move(job));
#endif
  return env.Undefined();
}

Napi::Value RsocketListenJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction())
    throw ArgTypeError(env, "rsocketListen(address, port, backlog, cb)");
  if (!RsocketsReady()) throw RdmaUnavailable(env);
#if FASTSOCK_HAVE_RDMA
  auto job = std::make_unique<bridge::ListenJob>();
  std::string address = info[0].As<Napi::String>().Utf8Value();
  job->backlog = std::max(1, info[2].As<Napi::Number>().Int32Value());
  if (!ParseIpAddr(address, info[1].As<Napi::Number>().Int32Value(), &job->addr, &job->addr_len))
    throw ArgTypeError(env, "rsocketListen: not an IP address: " + address);
  bridge::PrewarmServiceThreads(job->addr, job->addr);
  const char* syscall = nullptr;
  job->ls = bridge::OpenListener(job->addr, job->addr_len, job->backlog, &syscall);
  if (job->ls < 0) {
    int err = errno;
    bool full = err == EMFILE && Rdma()->rsocket_svc_bug;
    throw ErrnoError(env, err, syscall,
                     std::string(syscall) + " failed: " +
                         (full ? "librdmacm " + Rdma()->rdmacm_version + " serves at most " + std::to_string(bridge::ListenCapacity()) +
                                     " listening rsockets per process (rsocket service thread bug, fixed in rdma-core 53)"
                               : std::string(strerror(err))));
  }
  try {
    job->worker = AddWorker(env);
  } catch (...) {
    bridge::CloseListener(job->ls);
    throw;
  }
  Tsfn tsfn = Tsfn::New(env, info[3].As<Napi::Function>(), "FASTSOCK_RSOCKET_ACCEPT", 0, 1);
  tsfn.Unref(env);  // the TCP listener decides whether the process stays alive
  job->sink = std::make_unique<TsfnSink>(tsfn);
  int id = job->worker->id;
  bridge::SpawnAccept(std::move(job));
  return Napi::Number::New(env, id);
#else
  return env.Undefined();
#endif
}

Napi::Value RsocketCloseJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "rsocketClose(id)");
  return Napi::Boolean::New(info.Env(), Registry::Get()->Stop(info[0].As<Napi::Number>().Int32Value()));
}

Napi::Value RdmaDeviceForAddressJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw ArgTypeError(env, "rdmaDeviceForAddress(address)");
#if FASTSOCK_HAVE_RDMA
  if (!Rdma()->ok) return env.Null();
  sockaddr_storage ss;
  if (!ParseIpAddr(info[0].As<Napi::String>().Utf8Value(), 0, &ss)) return env.Null();
  std::string name, transport;
  if (!bridge::DeviceForAddress(ss, &name, &transport)) return env.Null();
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", name);
  o.Set("transport", transport);
  return o;
#else
  return env.Null();
#endif
}

Napi::Value RsocketThreadsJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(Registry::Get()->Count()));
}

}  // namespace fastsock
