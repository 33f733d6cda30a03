// The synchronous pair's JS entry points (csrc/shm/endpoint.h): writeSync / readIntoSync, over
// shm::Conn::WriteSync / ReadSync (csrc/shm/sync.cc, the ring protocol and its waits).
//
// A 64 B request/response between two threads costs ~0.2 µs each way here (bench/sync-pair.js),
// so the JS/native boundary counts, and these calls take a lean N-API path (each N-API call
// costs 5-20 ns):
// - The class's writeSync/readIntoSync (ObjectWrap methods: napi_unwrap is a private-symbol
//   lookup, ~20 ns a call) run once per endpoint: they define on the JS object its own two
//   functions (SyncFast) whose callback data is the endpoint's core (a SyncEntry), so that later
//   calls find the own property and go straight in. The functions may outlive the endpoint
//   (anyone may keep one): the entry is counted, the endpoint clears it when it goes, and a call
//   then throws (EBADF).
// - Arguments are read without coercion (napi_get_value_double: no TryCatch, unlike
//   napi_coerce_to_number); the JS wrapper validates them and always passes numbers.
#include "shm/endpoint.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <string>

#include "errors.h"
#include "loop_util.h"

namespace fastsock {

// The core behind the own functions of one JS object; refs: the endpoint, and each function.
struct ShmEndpoint::SyncEntry {
  shm::Conn* conn;
  int refs;
};

namespace {
constexpr char kWriteUsage[] = "writeSync(view: TypedArray | DataView, spinUs: number, timeoutMs: number, yield?: boolean)";
constexpr char kReadUsage[] = "readIntoSync(view: TypedArray | DataView, spinUs: number, timeoutMs: number, yield?: boolean)";

// The arguments of writeSync/readIntoSync: (view, spinUs = 50, timeoutMs = 0, yield = false).
struct SyncArgs {
  uint8_t* data = nullptr;
  size_t len = 0;
  uint64_t spin_ns = 50000;
  uint64_t timeout_ns = 0;  // 0: none; counted from the call's first wait (shm::Conn::WaitSync)
  bool yield = false;       // sched_yield() between the spin's polls
};

// argv: napi_get_cb_info's (undefined past argc). Throws a TypeError (ERR_INVALID_ARG_TYPE).
SyncArgs ParseSyncArgs(napi_env env, size_t argc, const napi_value* argv, const char* usage) {
  SyncArgs a;
  Napi::Value view(env, argc > 0 ? argv[0] : nullptr);
  a.data = argc > 0 ? BytesOf(view, &a.len) : nullptr;
  // No bytes: anything but a view, or an empty view (whose data may be null too).
  if (!a.data && (argc == 0 || !IsView(view))) throw ArgTypeError(env, usage);
  double spin_us = 50, tmo_ms = 0;
  if (argc > 1 && napi_get_value_double(env, argv[1], &spin_us) != napi_ok) throw ArgTypeError(env, usage);
  if (argc > 2 && napi_get_value_double(env, argv[2], &tmo_ms) != napi_ok) throw ArgTypeError(env, usage);
  if (argc > 3) {
    napi_valuetype t;
    napi_typeof(env, argv[3], &t);
    if (t == napi_boolean) napi_get_value_bool(env, argv[3], &a.yield);
    else if (t != napi_undefined) throw ArgTypeError(env, usage);
  }
  a.spin_ns = spin_us > 0 ? static_cast<uint64_t>(spin_us * 1000) : 0;
  if (tmo_ms > 0) a.timeout_ns = std::max<uint64_t>(1, static_cast<uint64_t>(tmo_ms * 1e6));
  return a;
}

// writeSync(view, spinUs, timeoutMs, yield) -> bytes written (all of them, or fewer when the peer
// reset), or throws ECONNRESET (the peer is gone), ETIMEDOUT (with `bytesWritten`), EBADF
// (closed).
// readIntoSync(view, spinUs, timeoutMs, yield) -> bytes read: all of view, or fewer at EOF. Throws
// ECONNRESET (the peer reset, or is gone), ETIMEDOUT (with `bytesRead`), EBADF (closed).
template <bool kWrite>
napi_value DoSync(napi_env env, shm::Conn* conn, size_t argc, const napi_value* argv) {
  SyncArgs a = ParseSyncArgs(env, argc, argv, kWrite ? kWriteUsage : kReadUsage);
  shm::SyncResult r = kWrite ? conn->WriteSync(a.data, a.len, a.spin_ns, a.timeout_ns, a.yield)
                             : conn->ReadSync(a.data, a.len, a.spin_ns, a.timeout_ns, a.yield);
  if (r.err) {
    const char* call = kWrite ? "writeSync" : "readIntoSync";
    if (r.err == EBADF) throw ErrnoError(env, EBADF, kWrite ? "write" : "read", std::string(call) + " on a closed shm endpoint");
    std::string message = std::string(call) + ": " + (r.peer_reset ? "connection reset by peer" : strerror(r.err));
    Napi::Error e = ErrnoError(env, r.err == ETIMEDOUT ? ETIMEDOUT : ECONNRESET, kWrite ? "write" : "read", message);
    e.Set(kWrite ? "bytesWritten" : "bytesRead", Napi::Number::New(env, static_cast<double>(r.done)));
    throw e;
  }
  napi_value out;
  napi_create_double(env, static_cast<double>(r.done), &out);
  return out;
}
}  // namespace

// The own functions' callback: data is the SyncEntry.
template <bool kWrite>
napi_value ShmEndpoint::SyncFast(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 4;
  napi_value argv[4];
  void* data = nullptr;
  if (napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, &data) != napi_ok) return nullptr;
  shm::Conn* conn = static_cast<SyncEntry*>(data)->conn;
  try {
    if (!conn) throw ErrnoError(env, EBADF, kWrite ? "write" : "read", "synchronous I/O on a collected shm endpoint");
    return DoSync<kWrite>(env, conn, argc, argv);
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
    return nullptr;
  }
}

void ShmEndpoint::UnrefSyncEntry(napi_env, void* data, void*) {
  auto* e = static_cast<SyncEntry*>(data);
  if (--e->refs == 0) delete e;
}

void ShmEndpoint::ReleaseSyncEntry() {
  if (!sync_entry_) return;
  sync_entry_->conn = nullptr;
  UnrefSyncEntry(nullptr, sync_entry_, nullptr);
  sync_entry_ = nullptr;
}

// Defines `self`'s own writeSync/readIntoSync (SyncFast), once. On any failure the class's
// methods simply stay in use.
void ShmEndpoint::InstallSyncEntry(napi_env env, napi_value self) {
  if (sync_entry_) return;
  sync_entry_ = new SyncEntry{conn_.get(), 1};
  napi_value fns[2];
  napi_callback cbs[2] = {SyncFast<true>, SyncFast<false>};
  const char* names[2] = {"writeSync", "readIntoSync"};
  for (int i = 0; i < 2; i++) {
    if (napi_create_function(env, names[i], NAPI_AUTO_LENGTH, cbs[i], sync_entry_, &fns[i]) != napi_ok) return;
    if (napi_add_finalizer(env, fns[i], sync_entry_, UnrefSyncEntry, nullptr, nullptr) != napi_ok) return;
    sync_entry_->refs++;
  }
  napi_property_descriptor props[2] = {
      {names[0], nullptr, nullptr, nullptr, nullptr, fns[0], napi_configurable, nullptr},
      {names[1], nullptr, nullptr, nullptr, nullptr, fns[1], napi_configurable, nullptr},
  };
  napi_define_properties(env, self, 2, props);
}

Napi::Value ShmEndpoint::WriteSync(const Napi::CallbackInfo& info) {
  InstallSyncEntry(info.Env(), info.This());
  napi_value argv[4];
  size_t argc = info.Length() < 4 ? info.Length() : 4;
  for (size_t i = 0; i < argc; i++) argv[i] = info[i];
  return Napi::Value(info.Env(), DoSync<true>(info.Env(), conn_.get(), argc, argv));
}

Napi::Value ShmEndpoint::ReadIntoSync(const Napi::CallbackInfo& info) {
  InstallSyncEntry(info.Env(), info.This());
  napi_value argv[4];
  size_t argc = info.Length() < 4 ? info.Length() : 4;
  for (size_t i = 0; i < argc; i++) argv[i] = info[i];
  return Napi::Value(info.Env(), DoSync<false>(info.Env(), conn_.get(), argc, argv));
}

}  // namespace fastsock
