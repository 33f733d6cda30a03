// The JS face of an shm connection end (csrc/shm/endpoint.h): construction, the data path's
// calls that take JS views, loans, memStats, and the module's shm functions. The protocol is
// shm::Conn's (csrc/shm/conn.h); the methods every face shares are in csrc/endpoint_face.h.
#include "shm/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "callback.h"
#include "errors.h"
#include "loop_util.h"

namespace fastsock {

Napi::Function ShmEndpoint::Define(Napi::Env env) {
  Props props = {
      InstanceMethod("write", &ShmEndpoint::Write),
      InstanceMethod("writev", &ShmEndpoint::Writev),
      InstanceMethod("controlView", &ShmEndpoint::ControlView),
      InstanceMethod("readInto", &ShmEndpoint::ReadInto),
      InstanceMethod("read", &ShmEndpoint::Read),
      InstanceMethod("writeSync", &ShmEndpoint::WriteSync),
      InstanceMethod("readIntoSync", &ShmEndpoint::ReadIntoSync),
      InstanceMethod("txRegion", &ShmEndpoint::TxRegion),
      InstanceMethod("txHeadOffset", &ShmEndpoint::TxHeadOffset),
      InstanceMethod("commit", &ShmEndpoint::Commit),
      InstanceMethod("memStats", &ShmEndpoint::MemStats),
      InstanceMethod("yieldRead", &ShmEndpoint::YieldRead),
      StaticValue("controlLayout", ShmControlLayout(env)),
  };
  AddMethods(&props);  // readable, writable, armRead, ..., counters, setPollUs, pollStats
  return DefineClass(env, "ShmEndpoint", props);
}

// new ShmEndpoint(memfd, c2sBytes, s2cBytes, isClient, peerDoorbellFd, peerDoorbellId, peerReadyFd,
//                 peerReadyNodes, sideFd, onevent)
// Takes ownership of the four fds, also when it throws.
ShmEndpoint::ShmEndpoint(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ShmEndpoint>(info) {
  Napi::Env env = info.Env();
  shm::Setup s;
  int* fds[4] = {&s.memfd, &s.peer_doorbell, &s.peer_ready, &s.side};
  const int fd_args[4] = {0, 4, 6, 8};
  for (int i = 0; i < 4; i++)
    if (info.Length() > static_cast<size_t>(fd_args[i]) && info[fd_args[i]].IsNumber())
      *fds[i] = info[fd_args[i]].As<Napi::Number>().Int32Value();
  auto close_all = [&] {
    for (int* fd : fds)
      if (*fd >= 0) close(*fd), *fd = -1;
  };
  if (info.Length() < 10 || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsBoolean() || !info[5].IsString() ||
      !info[7].IsNumber() || !info[9].IsFunction() || s.memfd < 0 || s.peer_doorbell < 0 || s.peer_ready < 0 ||
      s.side < 0 || !ParseDoorbellId(info[5].As<Napi::String>().Utf8Value(), &s.peer_doorbell_id)) {
    close_all();
    throw ArgTypeError(env, "ShmEndpoint(memfd, c2sBytes, s2cBytes, isClient, peerDoorbellFd, peerDoorbellId, "
                            "peerReadyFd, peerReadyNodes, sideFd, onevent)");
  }
  int eerr = 0;
  std::shared_ptr<ProgressEngine> engine = EngineForEnv(env, &eerr);
  if (!engine) {
    close_all();
    throw ErrnoError(env, eerr, "eventfd", std::string("the loop's doorbell and ready list: ") + strerror(eerr));
  }
  s.c2s_bytes = info[1].As<Napi::Number>().Uint32Value();
  s.s2c_bytes = info[2].As<Napi::Number>().Uint32Value();
  s.client = info[3].As<Napi::Boolean>().Value();
  s.peer_ready_nodes = info[7].As<Napi::Number>().Uint32Value();
  std::string err;
  conn_ = shm::Conn::Open(LoopOf(env), std::move(engine), s, this, &err);  // owns the fds now
  if (!conn_) throw FastsockError(env, "ERR_FASTSOCK_HANDSHAKE", err);
  onevent_ = Napi::Persistent(info[9].As<Napi::Function>());
  async_ = std::make_unique<Napi::AsyncContext>(env, "FASTSOCK_SHM");
  napi_add_env_cleanup_hook(env, CleanupHook, this);
  cleanup_env_ = env;
}

ShmEndpoint::~ShmEndpoint() {
  if (cleanup_env_) napi_remove_env_cleanup_hook(cleanup_env_, CleanupHook, this);
  ReleaseSyncEntry();
  conn_.reset();  // tears down (without the local word: its ArrayBuffer may be finalized in the same collection)
}

void ShmEndpoint::CleanupHook(void* arg) {
  // The environment (a worker, or the process) is going away: release the loop handles and fds
  // while the loop still exists; the JS object may never be finalized.
  // Like the kernel closing a process's TCP sockets: a FIN, or a RST where bytes were left unread.
  static_cast<ShmEndpoint*>(arg)->conn_->Close(false);
}

void ShmEndpoint::OnEvent() {
  Napi::Env env = onevent_.Env();
  Napi::HandleScope scope(env);
  CallFromLoop(env, onevent_.Value(), Value(), 0, nullptr, *async_);
}

// write(view) -> bytes copied into the ring (0 when full, or closed)
Napi::Value ShmEndpoint::Write(const Napi::CallbackInfo& info) {
  size_t len = 0;
  const uint8_t* p = BytesOf(info[0], &len);
  if (!p && !IsView(info[0])) throw NotAViewError(info.Env(), "write(view)");
  return Napi::Number::New(info.Env(), static_cast<double>(conn_->Write(p, len)));
}

// readInto(view, offset = 0, maxBytes = rest of view) -> bytes copied from the ring into
// view[offset, offset + maxBytes) (0 when empty, or closed). Offsets past the view are clamped
// to it.
Napi::Value ShmEndpoint::ReadInto(const Napi::CallbackInfo& info) {
  size_t len = 0;
  uint8_t* p = BytesOf(info[0], &len);
  if (!p && !IsView(info[0])) throw NotAViewError(info.Env(), "readInto(view, offset, maxBytes)");
  if (info.Length() > 1 && p) {
    size_t off = info[1].IsNumber() ? static_cast<size_t>(info[1].As<Napi::Number>().Int64Value()) : 0;
    if (off > len) off = len;
    p += off;
    len -= off;
    if (info.Length() > 2 && info[2].IsNumber()) {
      double max = info[2].As<Napi::Number>().DoubleValue();
      if (max >= 0 && max < static_cast<double>(len)) len = static_cast<size_t>(max);
    }
  }
  return Napi::Number::New(info.Env(), static_cast<double>(conn_->ReadInto(p, len)));
}

// read(maxBytes) -> Buffer with what is there (up to maxBytes), or null when empty (or closed)
Napi::Value ShmEndpoint::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t max = info.Length() > 0 && info[0].IsNumber() ? static_cast<uint64_t>(info[0].As<Napi::Number>().Int64Value()) : 65536;
  uint64_t n = conn_->Readable();
  if (n > max) n = max;
  if (n == 0) return env.Null();
  Napi::Buffer<uint8_t> buf = Napi::Buffer<uint8_t>::New(env, n);
  conn_->ReadInto(buf.Data(), n);  // n <= Readable(): fills it
  return buf;
}

// yieldRead() -> true when another endpoint of this loop is ready and not handed to JS yet:
// this one is queued behind it and onevent() comes in its turn; false (nothing else waits, or
// closed): read on.
Napi::Value ShmEndpoint::YieldRead(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), conn_->YieldRead());
}

// txRegion() -> one ArrayBuffer over the transmit ring's mirrored mapping, the same on every
// call, keeping the mapping alive while JS holds it. Throws EBADF once closed (unless made before).
Napi::Value ShmEndpoint::TxRegion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!tx_region_.IsEmpty()) return tx_region_.Value();
  shm::Mapping m = conn_->GetMapping();
  if (!m.header) throw ErrnoError(env, EBADF, "txRegion", "txRegion on a closed shm endpoint");
  auto* keep = new std::shared_ptr<Segment>(std::move(m.segment));
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, m.tx_ring, 2 * m.tx_ring_size,
      [](Napi::Env, void*, std::shared_ptr<Segment>* k) { delete k; }, keep);
  tx_region_ = Napi::Persistent(ab);
  return ab;
}

// txHeadOffset() -> offset in txRegion() where the next byte goes, in [0, size); -1 once closed
Napi::Value ShmEndpoint::TxHeadOffset(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(conn_->TxHeadOffset()));
}

// commit(n) -> n, or 0 when fewer than n bytes are free (nothing published)
Napi::Value ShmEndpoint::Commit(const Napi::CallbackInfo& info) {
  uint64_t n = info.Length() > 0 ? static_cast<uint64_t>(info[0].ToNumber().Int64Value()) : 0;
  return Napi::Number::New(info.Env(), static_cast<double>(conn_->Commit(n)));
}

// memStats() -> { ringBytes, txResidentBytes, rxResidentBytes, trims, trimmedBytes }
// (shm::MemStats; sizes 0 once closed). For tests and benchmarks.
Napi::Value ShmEndpoint::MemStats(const Napi::CallbackInfo& info) {
  shm::MemStats m = conn_->GetMemStats();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("ringBytes", static_cast<double>(m.ring_bytes));
  o.Set("txResidentBytes", static_cast<double>(m.tx_resident_bytes));
  o.Set("rxResidentBytes", static_cast<double>(m.rx_resident_bytes));
  o.Set("trims", static_cast<double>(m.trims));
  o.Set("trimmedBytes", static_cast<double>(m.trimmed_bytes));
  return o;
}

Napi::Value ShmCreateSegment(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw ArgTypeError(env, "shmCreateSegment(c2sBytes, s2cBytes)");
  std::string err;
  int memfd = Segment::Create(info[0].As<Napi::Number>().Uint32Value(), info[1].As<Napi::Number>().Uint32Value(), &err);
  if (memfd < 0) throw ErrnoError(env, -memfd, "memfd_create", "shm setup: " + err);
  Napi::Object o = Napi::Object::New(env);
  o.Set("memfd", memfd);
  return o;
}

Napi::Value ShmLoopDoorbell(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int eerr = 0;
  auto engine = EngineForEnv(env, &eerr);
  if (!engine) throw ErrnoError(env, eerr, "eventfd", std::string("the loop's doorbell and ready list: ") + strerror(eerr));
  Napi::Object o = Napi::Object::New(env);
  o.Set("fd", engine->doorbell_fd());
  o.Set("id", FormatDoorbellId(engine->doorbell_id()));
  o.Set("readyFd", engine->ready_fd());
  o.Set("readyNodes", static_cast<double>(engine->ready_nodes()));
  return o;
}

Napi::Value ShmFdRoom(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return Napi::Number::New(env, 1e9);
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  // F_DUPFD returns the lowest free fd number, as every fd-making call would.
  int lowest = fcntl(uv_backend_fd(loop), F_DUPFD_CLOEXEC, 0);
  if (lowest < 0) return Napi::Number::New(env, 0);
  close(lowest);
  return Napi::Number::New(env, static_cast<double>(rl.rlim_cur) - lowest);
}

Napi::Value IsEventfd(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "isEventfd(fd)");
  char path[64], target[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", info[0].As<Napi::Number>().Int32Value());
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return Napi::Boolean::New(info.Env(), false);
  target[n] = 0;
  return Napi::Boolean::New(info.Env(), strcmp(target, "anon_inode:[eventfd]") == 0);
}

}  // namespace fastsock
