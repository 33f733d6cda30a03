// The synchronous pair of a ShmEndpoint (csrc/shm/endpoint.h): writeSync / readIntoSync.
//
// A 64 B request/response between two threads costs ~0.3 µs each way here (bench/sync-pair.js):
// the ring's cache-line transfers (sync_ring.h keeps them few) and the JS/native boundary, so
// these calls take a lean N-API path (each N-API call costs 5-20 ns):
// - The class's writeSync/readIntoSync (ObjectWrap methods: napi_unwrap is a private-symbol
//   lookup, ~20 ns a call) run once per endpoint: they define on the JS object its own two
//   functions (SyncFast) whose callback data is the endpoint (a SyncEntry), so that later calls
//   find the own property and go straight in. The functions may outlive the endpoint (anyone may
//   keep one): the entry is counted, the endpoint clears it when it goes, and a call then throws.
// - Arguments are read without coercion (napi_get_value_double: no TryCatch, unlike
//   napi_coerce_to_number); the JS wrapper validates them and always passes numbers.
// - The writer reads the consumer's tail only when the space it saw last runs out
//   (csrc/shm/sync_ring.h), the spin reads the clock once per 64 polls (WaitSync), and the
//   doorbell is rung only when the peer sleeps (the ring's waiting flags, csrc/shm/ring.h).
#include "shm/endpoint.h"
#include "loop_util.h"
#include "shm/sync_ring.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include <string>

namespace fastsock {

// The endpoint behind the own functions of one JS object; refs: the endpoint, and each function.
struct ShmEndpoint::SyncEntry {
  ShmEndpoint* ep;
  int refs;
};

namespace {
// The arguments of writeSync/readIntoSync: (view, spinUs = 50, timeoutMs = 0).
struct SyncArgs {
  uint8_t* data = nullptr;
  size_t len = 0;
  uint64_t spin_ns = 50000;
  uint64_t deadline_ns = 0;  // 0: none
};

Napi::TypeError InvalidArg(napi_env env, const char* usage) {
  Napi::TypeError e = Napi::TypeError::New(env, usage);
  e.Set("code", Napi::String::New(env, "ERR_INVALID_ARG_TYPE"));
  return e;
}

// argv: napi_get_cb_info's (undefined past argc). Throws a TypeError (ERR_INVALID_ARG_TYPE).
SyncArgs ParseSyncArgs(napi_env env, size_t argc, const napi_value* argv, const char* usage) {
  SyncArgs a;
  Napi::Value view(env, argc > 0 ? argv[0] : nullptr);
  a.data = argc > 0 ? BytesOf(view, &a.len) : nullptr;
  // No bytes: anything but a view, or an empty view (whose data may be null too).
  if (!a.data && (argc == 0 || !(view.IsTypedArray() || view.IsDataView()))) throw InvalidArg(env, usage);
  double spin_us = 50, tmo_ms = 0;
  if (argc > 1 && napi_get_value_double(env, argv[1], &spin_us) != napi_ok) throw InvalidArg(env, usage);
  if (argc > 2 && napi_get_value_double(env, argv[2], &tmo_ms) != napi_ok) throw InvalidArg(env, usage);
  a.spin_ns = spin_us > 0 ? static_cast<uint64_t>(spin_us * 1000) : 0;
  if (tmo_ms > 0) a.deadline_ns = NowNs() + static_cast<uint64_t>(tmo_ms * 1e6);
  return a;
}

// A sync call's failure: `code` ECONNRESET or ETIMEDOUT, and how far it got.
Napi::Error SyncError(Napi::Env env, const std::string& message, const char* code, const char* count_name, size_t count) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  e.Set(count_name, Napi::Number::New(env, static_cast<double>(count)));
  return e;
}
}  // namespace

template <typename Cond>
int ShmEndpoint::WaitSync(Cond cond, bool arm_read, uint64_t spin_ns, uint64_t deadline_ns) {
  // The clock is read once per 64 polls, the first time after 64 polls (the spin budget counts
  // from there): a reply that comes within them, the usual case of the pair, costs no clock read.
  uint64_t start = 0;
  for (unsigned i = 1; spin_ns > 0; i++) {
    if (cond()) return 0;
    if ((i & 63) == 0) {
      uint64_t now = NowNs();
      if (start == 0) start = now;
      else if (now - start >= spin_ns) break;
      if (deadline_ns && now >= deadline_ns) return -ETIMEDOUT;
    }
    CpuRelax();
  }
  for (;;) {
    if (cond()) return 0;
    if (CheckSide()) return -ECONNRESET;
    sync_armed_ = true;
    bool armed = arm_read ? rx_.ArmConsumerWait() : tx_.ArmProducerWait();
    if (!armed) continue;
    int timeout = -1;
    if (deadline_ns) {
      uint64_t now = NowNs();
      if (now >= deadline_ns) return -ETIMEDOUT;
      timeout = static_cast<int>((deadline_ns - now + 999999) / 1000000);
    }
    // The loop's doorbell is shared: a ring taken here may have been another endpoint's, so
    // RestoreDoorbell rings it again for the loop when the call returns.
    pollfd p[2] = {{engine_->doorbell_fd(), POLLIN, 0}, {side_fd_, POLLIN | POLLRDHUP, 0}};
    int r = poll(p, 2, timeout);
    if (r < 0 && errno != EINTR) return -errno;
    if (p[0].revents & POLLIN) {
      engine_->DrainDoorbell();
      drained_doorbell_ = true;
    }
  }
}

// writeSync(view, spinUs, timeoutMs) -> bytes written (all of them), or throws
// (ECONNRESET when the peer is gone, ETIMEDOUT).
napi_value ShmEndpoint::DoWriteSync(napi_env env, size_t argc, const napi_value* argv) {
  SyncArgs a = ParseSyncArgs(env, argc, argv, "writeSync(view: TypedArray | DataView, spinUs: number, timeoutMs: number)");
  if (closed_) throw Napi::Error::New(env, "writeSync on a closed shm endpoint");
  size_t done = 0;
  while (done < a.len) {
    uint64_t n = PushSeenTail(tx_, &sync_tail_seen_, a.data + done, a.len - done, [this] {
      if (tx_.ConsumerNeedsWake()) RingPeer();
    });
    if (n) {
      done += n;
      WroteTx();
      continue;
    }
    if (rx_.ProducerFlags() & wire::kRingReset) break;
    int r = WaitSync([&] { return tx_.Writable() > 0; }, false, a.spin_ns, a.deadline_ns);
    if (r < 0) {
      RestoreDoorbell();
      throw SyncError(env, std::string("writeSync: ") + strerror(-r), r == -ETIMEDOUT ? "ETIMEDOUT" : "ECONNRESET",
                      "bytesWritten", done);
    }
  }
  RestoreDoorbell();
  napi_value out;
  napi_create_double(env, static_cast<double>(done), &out);
  return out;
}

// readIntoSync(view, spinUs, timeoutMs) -> bytes read: all of view, or fewer at EOF.
// Throws ECONNRESET (peer reset or gone) or ETIMEDOUT.
napi_value ShmEndpoint::DoReadIntoSync(napi_env env, size_t argc, const napi_value* argv) {
  SyncArgs a = ParseSyncArgs(env, argc, argv, "readIntoSync(view: TypedArray | DataView, spinUs: number, timeoutMs: number)");
  if (closed_) throw Napi::Error::New(env, "readIntoSync on a closed shm endpoint");
  size_t done = 0;
  while (done < a.len) {
    uint64_t n = rx_.Pop(a.data + done, a.len - done);
    if (n) {
      done += n;
      if (rx_.ProducerNeedsWake()) RingPeer();
      continue;
    }
    uint32_t f = rx_.ProducerFlags();
    if (f & wire::kRingReset) {
      RestoreDoorbell();
      throw SyncError(env, "readIntoSync: connection reset by peer", "ECONNRESET", "bytesRead", done);
    }
    if (f & wire::kRingEof) break;
    int r = WaitSync([&] { return ReadyOrPrefetch(rx_); }, true, a.spin_ns, a.deadline_ns);
    if (r < 0) {
      if (rx_.Readable() > 0) continue;  // the peer left data behind: deliver it first
      RestoreDoorbell();
      throw SyncError(env, std::string("readIntoSync: ") + strerror(-r), r == -ETIMEDOUT ? "ETIMEDOUT" : "ECONNRESET",
                      "bytesRead", done);
    }
  }
  RestoreDoorbell();
  napi_value out;
  napi_create_double(env, static_cast<double>(done), &out);
  return out;
}

// The own functions' callback: data is the SyncEntry.
template <bool kWrite>
napi_value ShmEndpoint::SyncFast(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value argv[3];
  void* data = nullptr;
  if (napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, &data) != napi_ok) return nullptr;
  ShmEndpoint* ep = static_cast<SyncEntry*>(data)->ep;
  try {
    if (!ep) throw Napi::Error::New(env, "synchronous I/O on a collected shm endpoint");
    return kWrite ? ep->DoWriteSync(env, argc, argv) : ep->DoReadIntoSync(env, argc, argv);
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
  sync_entry_->ep = nullptr;
  UnrefSyncEntry(nullptr, sync_entry_, nullptr);
  sync_entry_ = nullptr;
}

// Defines `self`'s own writeSync/readIntoSync (SyncFast), once. On any failure the class's
// methods simply stay in use.
void ShmEndpoint::InstallSyncEntry(napi_env env, napi_value self) {
  if (sync_entry_) return;
  sync_entry_ = new SyncEntry{this, 1};
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
  napi_value argv[3];
  size_t argc = info.Length() < 3 ? info.Length() : 3;
  for (size_t i = 0; i < argc; i++) argv[i] = info[i];
  return Napi::Value(info.Env(), DoWriteSync(info.Env(), argc, argv));
}

Napi::Value ShmEndpoint::ReadIntoSync(const Napi::CallbackInfo& info) {
  InstallSyncEntry(info.Env(), info.This());
  napi_value argv[3];
  size_t argc = info.Length() < 3 ? info.Length() : 3;
  for (size_t i = 0; i < argc; i++) argv[i] = info[i];
  return Napi::Value(info.Env(), DoReadIntoSync(info.Env(), argc, argv));
}

}  // namespace fastsock
