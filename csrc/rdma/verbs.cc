// The verbs rung's JS face: VerbsEndpoint (a Conn), VerbsListener (a Listener) and verbsConnect.
// N-API lives here only: JS views become CallerBytes, JS references become Holds, results become
// JS values; the protocol itself is in csrc/rdma/verbs/ (conn.h states its contracts). The
// methods VerbsEndpoint shares with ShmEndpoint are bound once, in csrc/endpoint_face.h.
#include "rdma/verbs.h"

#if FASTSOCK_HAVE_RDMA
#include <netinet/in.h>

#include <algorithm>
#include <memory>
#include <string>

#include "callback.h"
#include "endpoint_face.h"
#include "errors.h"
#include "ip_addr.h"
#include "loop_util.h"
#include "progress_js.h"
#include "rdma/lib.h"
#include "rdma/verbs/conn.h"
#include "rdma/verbs/listener.h"
#include "rdma/verbs/options.h"

namespace fastsock {
namespace {

using verbs::CallerBytes;
using verbs::Conn;

// A Hold over a JS reference: an ArrayBuffer (the caller's allocation) or a Buffer (a block).
class JsHold : public verbs::Hold {
 public:
  explicit JsHold(Napi::Value v) : ref_(Napi::Persistent(v)) {}
  Napi::Value Value() const { return ref_.Value(); }

 private:
  Napi::Reference<Napi::Value> ref_;
};

// The bytes of one JS view (a TypedArray or DataView) for one call: two N-API calls, and a Hold
// on its ArrayBuffer only when the core asks for one.
class ViewBytes : public verbs::Holder {
 public:
  // False when `v` is neither a TypedArray nor a DataView.
  bool Init(napi_env env, napi_value v) {
    napi_typedarray_type type;
    size_t length = 0, offset = 0;
    void* data = nullptr;
    if (napi_get_typedarray_info(env, v, &type, &length, &data, &ab_, &offset) == napi_ok) {
      bytes.len = length * ElementBytes(type);
    } else if (napi_get_dataview_info(env, v, &bytes.len, &data, &ab_, &offset) != napi_ok) {
      return false;
    }
    bytes.data = static_cast<uint8_t*>(data);
    void* base = nullptr;
    if (napi_get_arraybuffer_info(env, ab_, &base, &bytes.base_len) == napi_ok && base) {
      bytes.base = static_cast<uint8_t*>(base);
      bytes.holder = this;
    }
    env_ = env;
    return true;
  }
  verbs::HoldPtr MakeHold() override { return std::make_unique<JsHold>(Napi::Value(env_, ab_)); }

  CallerBytes bytes;

 private:
  static size_t ElementBytes(napi_typedarray_type t) {
    switch (t) {
      case napi_int16_array:
      case napi_uint16_array:
        return 2;
      case napi_int32_array:
      case napi_uint32_array:
      case napi_float32_array:
        return 4;
      case napi_float64_array:
      case napi_bigint64_array:
      case napi_biguint64_array:
        return 8;
      default:
        return 1;
    }
  }

  napi_env env_ = nullptr;
  napi_value ab_ = nullptr;
};

verbs::Options ParseOptions(const Napi::Value& v) {
  verbs::Options o;
  if (!v.IsObject()) return o;
  Napi::Object obj = v.As<Napi::Object>();
  auto num = [&](const char* k, double lo, double hi, double dflt) {
    Napi::Value x = obj.Get(k);
    if (!x.IsNumber()) return dflt;
    double d = x.As<Napi::Number>().DoubleValue();
    if (!(d >= lo && d <= hi)) throw ArgRangeError(v.Env(), std::string("verbs option ") + k + " out of range");
    return d;
  };
  o.eager_bytes = static_cast<uint32_t>(num("eagerBytes", verbs::kMinEagerBytes, verbs::kMaxEagerBytes, o.eager_bytes));
  o.credits = static_cast<uint32_t>(num("credits", verbs::kMinCredits, verbs::kMaxCredits, o.credits));
  o.rndv_threshold = static_cast<uint32_t>(num("rndvThreshold", 0, verbs::kMaxRndvChunk, 0));
  o.reg_cache_bytes = static_cast<size_t>(num("regCacheBytes", 0, 1ull << 40, static_cast<double>(o.reg_cache_bytes)));
  return o;
}

void AddrInfo(Napi::Object o, const char* prefix, const sockaddr_storage& ss) {
  int port = 0;
  const sockaddr* sa = reinterpret_cast<const sockaddr*>(&ss);
  std::string address = IpName(sa, &port);
  o.Set(std::string(prefix) + "Address", address);
  o.Set(std::string(prefix) + "Port", port);
  o.Set(std::string(prefix) + "Family", sa->sa_family == AF_INET6 ? "IPv6" : "IPv4");
}

// { localAddress, localPort, localFamily, remote..., device } of a connection ({} when none).
Napi::Object InfoObject(Napi::Env env, const Conn& c) {
  Napi::Object o = Napi::Object::New(env);
  verbs::ConnInfo info;
  if (!c.GetInfo(&info)) return o;
  AddrInfo(o, "local", info.local);
  AddrInfo(o, "remote", info.remote);
  o.Set("device", info.device);
  return o;
}

Napi::Object StatsObject(Napi::Env env, const verbs::Stats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("eagerBytes", s.eager_bytes);
  o.Set("peerEagerBytes", s.peer_eager_bytes);
  o.Set("recvBuffers", s.recv_buffers);
  o.Set("credits", s.credits);
  o.Set("rndvThreshold", s.rndv_threshold);
  o.Set("eagerSent", static_cast<double>(s.eager_sent));
  o.Set("rndvSent", static_cast<double>(s.rndv_sent));
  o.Set("rndvReceived", static_cast<double>(s.rndv_received));
  o.Set("rndvDirect", static_cast<double>(s.rndv_direct));
  o.Set("rndvDeclined", static_cast<double>(s.rndv_declined));
  o.Set("creditMessages", static_cast<double>(s.credit_messages));
  o.Set("starved", static_cast<double>(s.starved));
  o.Set("regCacheHits", static_cast<double>(s.reg_cache_hits));
  o.Set("regCacheMisses", static_cast<double>(s.reg_cache_misses));
  o.Set("regCacheEvictions", static_cast<double>(s.reg_cache_evictions));
  o.Set("regCacheBytes", static_cast<double>(s.reg_cache_bytes));
  o.Set("regCacheEntries", static_cast<double>(s.reg_cache_entries));
  o.Set("regCacheCapacity", static_cast<double>(s.reg_cache_capacity));
  o.Set("device", s.device);
  o.Set("iwarp", s.iwarp);
  return o;
}

// ---------------------------------------------------------------------------------------------
class VerbsEndpoint : public Napi::ObjectWrap<VerbsEndpoint>, public EndpointFace<VerbsEndpoint>, public verbs::Allocator {
 public:
  static Napi::Function Define(Napi::Env env) {
    Props props = {
        InstanceMethod("write", &VerbsEndpoint::Write),
        InstanceMethod("readInto", &VerbsEndpoint::ReadInto),
        InstanceMethod("read", &VerbsEndpoint::Read),
        InstanceMethod("setOnEvent", &VerbsEndpoint::SetOnEvent),
        InstanceMethod("stats", &VerbsEndpoint::Stats),
    };
    AddMethods(&props);  // readable, writable, armRead, ..., counters, setPollUs, pollStats
    return DefineClass(env, "VerbsEndpoint", props);
  }

  // new VerbsEndpoint(external<Conn>): only from C++ (a connection just established).
  explicit VerbsEndpoint(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VerbsEndpoint>(info) {
    if (info.Length() < 1 || !info[0].IsExternal())
      throw ArgTypeError(info.Env(), "VerbsEndpoint is made by verbsConnect / VerbsListener");
    conn_.reset(info[0].As<Napi::External<Conn>>().Data());
    async_ = std::make_unique<Napi::AsyncContext>(info.Env(), "FASTSOCK_VERBS");
    conn_->on_event = [this] { Notify(); };
    conn_->allocator = this;
    conn_->SetEngine(EngineForEnv(info.Env()));  // null (EMFILE): never polls
    env_ = info.Env();
    napi_add_env_cleanup_hook(env_, CleanupHook, this);
  }
  ~VerbsEndpoint() override {
    napi_remove_env_cleanup_hook(env_, CleanupHook, this);
    conn_->Close(true);
  }

  // A Buffer for a rendezvous READ that no reader's array takes.
  verbs::HoldPtr NewBlock(size_t len, uint8_t** data) override {
    Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env_, len);
    *data = b.Data();
    return std::make_unique<JsHold>(b);
  }

 private:
  friend class EndpointFace<VerbsEndpoint>;
  Conn& core() { return *conn_; }

  static void CleanupHook(void* arg) {
    // The environment is going away: as a kernel does for a TCP socket of an exiting process, a
    // FIN (or a RST when bytes were left unread), then the resources.
    static_cast<VerbsEndpoint*>(arg)->conn_->Close(false);
  }

  void Notify() {
    if (onevent_.IsEmpty() || conn_->closed()) return;
    Napi::HandleScope scope(env_);
    CallFromLoop(env_, onevent_.Value(), Value(), 0, nullptr, *async_);
  }

  static void View(const Napi::CallbackInfo& info, ViewBytes* v, const char* call) {
    if (info.Length() < 1 || !v->Init(info.Env(), info[0])) throw NotAViewError(info.Env(), call);
  }

  Napi::Value Write(const Napi::CallbackInfo& info) {
    ViewBytes v;
    View(info, &v, "write(view)");
    return Napi::Number::New(info.Env(), static_cast<double>(conn_->closed() ? 0 : conn_->Write(v.bytes)));
  }
  Napi::Value ReadInto(const Napi::CallbackInfo& info) {
    ViewBytes v;
    View(info, &v, "readInto(view)");
    return Napi::Number::New(info.Env(), static_cast<double>(conn_->closed() ? 0 : conn_->ReadInto(v.bytes)));
  }
  // read(max = 65536): Buffer | Uint8Array | null. A rendezvous READ that landed in a Buffer of
  // its own is handed out as it is (or in views of at most `max` bytes); eager bytes are copied
  // into a fresh Buffer.
  Napi::Value Read(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t max = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : 65536;
    if (max == 0) max = 65536;
    if (conn_->closed()) return env.Null();
    verbs::HeadBlock head;
    bool wait = false;
    if (conn_->PeekHead(max, &head, &wait)) {
      Napi::Value whole = static_cast<const JsHold*>(head.block)->Value();
      Napi::Value out = whole;
      if (!head.whole) {
        Napi::Uint8Array u8 = whole.As<Napi::Uint8Array>();
        out = Napi::Uint8Array::New(env, head.len, u8.ArrayBuffer(), u8.ByteOffset() + head.offset);
      }
      conn_->TakeBlock(head.len);
      return out;
    }
    if (wait) return env.Null();
    size_t n = conn_->Readable(max);
    if (n == 0) return env.Null();
    Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env, n);
    ViewBytes v;
    v.Init(env, b);
    conn_->ReadInto(v.bytes);  // n <= Readable(): fills it
    return b;
  }
  Napi::Value SetOnEvent(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsFunction()) throw ArgTypeError(info.Env(), "setOnEvent(fn): fn must be a function");
    onevent_ = Napi::Persistent(info[0].As<Napi::Function>());
    return info.Env().Undefined();
  }
  Napi::Value Stats(const Napi::CallbackInfo& info) { return StatsObject(info.Env(), conn_->GetStats()); }

  std::unique_ptr<Conn> conn_;  // set in the constructor, for the endpoint's whole life
  Napi::FunctionReference onevent_;
  std::unique_ptr<Napi::AsyncContext> async_;
  napi_env env_ = nullptr;
};

// Per-environment (main thread, each worker) state of this module.
struct VerbsInstance {
  Napi::FunctionReference endpoint_ctor;
};

// Wraps an established connection in its JS endpoint (which owns it from here on).
Napi::Object WrapConn(Napi::Env env, Conn* c) {
  return env.GetInstanceData<VerbsInstance>()->endpoint_ctor.New({Napi::External<Conn>::New(env, c)});
}

void NeedRdma(Napi::Env env) {
  const RdmaLib* L = Rdma();
  if (!L->ok) throw FastsockError(env, kErrNoRdma, "rdma-core is not available: " + L->error);
}

// verbsConnect(addr: string, port, iwarpPort, options, cb(err, endpoint, info)). The callback is
// called exactly once, from the loop.
Napi::Value VerbsConnectJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NeedRdma(env);
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[4].IsFunction())
    throw ArgTypeError(env, "verbsConnect(addr, port, iwarpPort, options, cb)");
  sockaddr_storage dst;
  if (!ParseIpAddr(info[0].As<Napi::String>().Utf8Value(), info[1].As<Napi::Number>().Int32Value(), &dst))
    throw ArgTypeError(env, "verbsConnect: addr must be an IP address literal");
  verbs::Options opt = ParseOptions(info[3]);
  int timeout = 2000;
  if (info[3].IsObject()) {
    Napi::Value t = info[3].As<Napi::Object>().Get("timeoutMs");
    if (t.IsNumber()) timeout = std::max(1, t.As<Napi::Number>().Int32Value());
  }
  auto* c = new Conn(LoopOf(env), opt);
  auto cb = std::make_shared<Napi::FunctionReference>(Napi::Persistent(info[4].As<Napi::Function>()));
  auto ctx = std::make_shared<Napi::AsyncContext>(env, "FASTSOCK_VERBS_CONNECT");
  c->on_setup = [c, cb, ctx, env](const verbs::SetupError* failure) {
    Napi::HandleScope scope(env);
    if (failure) {
      Napi::Error e = ErrnoError(env, failure->err, failure->syscall, "verbs: " + failure->message);
      delete c;
      napi_value argv[1] = {e.Value()};
      CallFromLoop(env, cb->Value(), Napi::Env(env).Global(), 1, argv, *ctx);
      return;
    }
    Napi::Object infoObj = InfoObject(env, *c);
    Napi::Object ep = WrapConn(env, c);
    napi_value argv[3] = {Napi::Env(env).Null(), ep, infoObj};
    CallFromLoop(env, cb->Value(), Napi::Env(env).Global(), 3, argv, *ctx);
  };
  verbs::SetupError err;
  if (!c->StartConnect(dst, info[2].As<Napi::Number>().Int32Value(), timeout, &err)) {
    c->on_setup = nullptr;
    delete c;
    throw ErrnoError(env, err.err, err.syscall, "verbs: " + err.message);
  }
  return env.Undefined();
}

// new VerbsListener(addr, port, iwarpPort, backlog, options, onconnection(endpoint, info)): a
// verbs::Listener (csrc/rdma/verbs/listener.h) on addr (a local address of an RDMA device).
// Throws with code (ENODEV: no RDMA device has that address; EADDRINUSE), errno and syscall.
// Properties: transport ('ib'|'iwarp'), port (the RDMA CM port), device.
class VerbsListener : public Napi::ObjectWrap<VerbsListener> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "VerbsListener",
                       {InstanceMethod("close", &VerbsListener::Close),
                        InstanceAccessor("transport", &VerbsListener::Transport, nullptr),
                        InstanceAccessor("port", &VerbsListener::Port, nullptr),
                        InstanceAccessor("device", &VerbsListener::Device, nullptr)});
  }

  explicit VerbsListener(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VerbsListener>(info) {
    Napi::Env env = info.Env();
    NeedRdma(env);
    env_ = env;
    if (info.Length() < 6 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber() ||
        !info[5].IsFunction())
      throw ArgTypeError(env, "VerbsListener(addr, port, iwarpPort, backlog, options, onconnection)");
    std::string addr = info[0].As<Napi::String>().Utf8Value();
    int port = info[1].As<Napi::Number>().Int32Value();
    sockaddr_storage ss;
    if (!ParseIpAddr(addr, port, &ss)) throw ArgTypeError(env, "VerbsListener: addr must be an IP address literal");
    listener_ = std::make_unique<verbs::Listener>(LoopOf(env), ParseOptions(info[4]));
    onconnection_ = Napi::Persistent(info[5].As<Napi::Function>());
    async_ = std::make_unique<Napi::AsyncContext>(env, "FASTSOCK_VERBS_LISTEN");
    verbs::SetupError err;
    if (!listener_->Open(ss, port, info[2].As<Napi::Number>().Int32Value(), info[3].As<Napi::Number>().Int32Value(), &err))
      throw ErrnoError(env, err.err, err.syscall, err.message);
    listener_->on_connection = [this](Conn* c) {
      Napi::HandleScope scope(env_);
      Napi::Object infoObj = InfoObject(env_, *c);
      Napi::Object ep = WrapConn(env_, c);
      napi_value argv[2] = {ep, infoObj};
      CallFromLoop(env_, onconnection_.Value(), Value(), 2, argv, *async_);
    };
    napi_add_env_cleanup_hook(env, CleanupHook, this);
    hooked_ = true;
  }
  ~VerbsListener() override {
    if (hooked_) napi_remove_env_cleanup_hook(env_, CleanupHook, this);
  }

 private:
  static void CleanupHook(void* arg) { static_cast<VerbsListener*>(arg)->listener_->Close(); }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    listener_->Close();
    return info.Env().Undefined();
  }
  Napi::Value Transport(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), listener_->iwarp() ? "iwarp" : "ib"); }
  Napi::Value Port(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), listener_->port()); }
  Napi::Value Device(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), listener_->device()); }

  napi_env env_ = nullptr;
  bool hooked_ = false;
  std::unique_ptr<verbs::Listener> listener_;
  Napi::FunctionReference onconnection_;
  std::unique_ptr<Napi::AsyncContext> async_;
};

}  // namespace

void InitVerbs(Napi::Env env, Napi::Object exports) {
  auto* inst = new VerbsInstance();
  Napi::Function ctor = VerbsEndpoint::Define(env);
  inst->endpoint_ctor = Napi::Persistent(ctor);
  env.SetInstanceData(inst);
  exports.Set("VerbsEndpoint", ctor);
  exports.Set("VerbsListener", VerbsListener::Define(env));
  exports.Set("verbsConnect", Napi::Function::New(env, VerbsConnectJs, "verbsConnect"));
}

}  // namespace fastsock

#else  // !FASTSOCK_HAVE_RDMA

namespace fastsock {
void InitVerbs(Napi::Env, Napi::Object) {}
}  // namespace fastsock

#endif
