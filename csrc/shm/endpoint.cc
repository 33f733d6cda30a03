#include "shm/endpoint.h"
#include "loop_util.h"

#include "callback.h"
#include "errors.h"
#include "progress_js.h"
#include "stream_state.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vector>

namespace fastsock {

Napi::Function ShmEndpoint::Define(Napi::Env env) {
  return DefineClass(env, "ShmEndpoint",
                     {
                         InstanceMethod("write", &ShmEndpoint::Write),
                         InstanceMethod("writev", &ShmEndpoint::Writev),
                         InstanceMethod("controlView", &ShmEndpoint::ControlView),
                         InstanceMethod("readInto", &ShmEndpoint::ReadInto),
                         InstanceMethod("read", &ShmEndpoint::Read),
                         InstanceMethod("readable", &ShmEndpoint::Readable),
                         InstanceMethod("writable", &ShmEndpoint::Writable),
                         InstanceMethod("armRead", &ShmEndpoint::ArmRead),
                         InstanceMethod("armWrite", &ShmEndpoint::ArmWrite),
                         InstanceMethod("state", &ShmEndpoint::State),
                         InstanceMethod("shutdown", &ShmEndpoint::Shutdown),
                         InstanceMethod("close", &ShmEndpoint::Close),
                         InstanceMethod("ref", &ShmEndpoint::Ref),
                         InstanceMethod("unref", &ShmEndpoint::Unref),
                         InstanceMethod("writeSync", &ShmEndpoint::WriteSync),
                         InstanceMethod("readIntoSync", &ShmEndpoint::ReadIntoSync),
                         InstanceMethod("counters", &ShmEndpoint::Counters),
                         InstanceMethod("setPollUs", &ShmEndpoint::SetPollUs),
                         InstanceMethod("pollStats", &ShmEndpoint::PollStats),
                         InstanceMethod("txRegion", &ShmEndpoint::TxRegion),
                         InstanceMethod("txHeadOffset", &ShmEndpoint::TxHeadOffset),
                         InstanceMethod("commit", &ShmEndpoint::Commit),
                         InstanceMethod("memStats", &ShmEndpoint::MemStats),
                         InstanceMethod("yieldRead", &ShmEndpoint::YieldRead),
                         StaticValue("controlLayout", ShmControlLayout(env)),
                     });
}

// new ShmEndpoint(memfd, c2sBytes, s2cBytes, isClient, peerDoorbellFd, peerDoorbellId, peerReadyFd,
//                 peerReadyNodes, sideFd, onevent)
// Takes ownership of the four fds, also when it throws.
ShmEndpoint::ShmEndpoint(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ShmEndpoint>(info) {
  Napi::Env env = info.Env();
  enum { kMemfd, kDoorbell, kReady, kSide };
  int fds[4] = {-1, -1, -1, -1};
  const int fd_args[4] = {0, 4, 6, 8};
  for (int i = 0; i < 4; i++)
    if (info.Length() > static_cast<size_t>(fd_args[i]) && info[fd_args[i]].IsNumber())
      fds[i] = info[fd_args[i]].As<Napi::Number>().Int32Value();
  auto close_all = [&] {
    for (int& fd : fds)
      if (fd >= 0) close(fd), fd = -1;
  };
  uint64_t peer_id = 0;
  if (info.Length() < 10 || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsBoolean() || !info[5].IsString() ||
      !info[7].IsNumber() || !info[9].IsFunction() || fds[kMemfd] < 0 || fds[kDoorbell] < 0 || fds[kReady] < 0 ||
      fds[kSide] < 0 || !ParseDoorbellId(info[5].As<Napi::String>().Utf8Value(), &peer_id)) {
    close_all();
    throw Napi::TypeError::New(env, "ShmEndpoint(memfd, c2sBytes, s2cBytes, isClient, peerDoorbellFd, peerDoorbellId, "
                                    "peerReadyFd, peerReadyNodes, sideFd, onevent)");
  }
  int eerr = 0;
  engine_ = EngineForEnv(env, &eerr);
  if (!engine_) {
    close_all();
    throw ErrnoError(env, eerr, "eventfd", std::string("the loop's doorbell and ready list: ") + strerror(eerr));
  }
  bool client = info[3].As<Napi::Boolean>().Value();
  std::string err;
  seg_ = Segment::Attach(fds[kMemfd], info[1].As<Napi::Number>().Uint32Value(), info[2].As<Napi::Number>().Uint32Value(), &err);
  if (!seg_) {
    close_all();
    throw FastsockError(env, "ERR_FASTSOCK_HANDSHAKE", "shared-memory segment refused: " + err);
  }
  fds[kMemfd] = -1;  // Attach closed it: the mappings keep the memory
  peer_ = PeerDoorbell::Adopt(fds[kDoorbell], fds[kReady], info[7].As<Napi::Number>().Uint32Value(), peer_id, &err);
  fds[kDoorbell] = fds[kReady] = -1;  // kept, or closed by Adopt
  if (!peer_) {
    close_all();
    throw FastsockError(env, "ERR_FASTSOCK_HANDSHAKE", "the peer loop's ready list refused: " + err);
  }
  side_fd_ = fds[kSide];
  tx_ = seg_->Tx(client);
  rx_ = seg_->Rx(client);
  own_hint_ = seg_->Hint(client);
  peer_hint_ = seg_->Hint(!client);
  tx_start_ = tx_.control()->head.load(std::memory_order_acquire);
  rx_start_ = rx_.control()->tail.load(std::memory_order_acquire);
  // Before any waiting flag is raised (ArmConsumerWait/ArmProducerWait store them with release):
  // the peer that clears one reads this to push onto this loop's ready list.
  own_hint_->ready_token.store(engine_->AdoptToken(this), std::memory_order_release);
  onevent_ = Napi::Persistent(info[9].As<Napi::Function>());
  async_ = std::make_unique<Napi::AsyncContext>(env, "FASTSOCK_SHM");

  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  side_poll_ = new uv_poll_t;
  uv_poll_init(loop, side_poll_, side_fd_);
  side_poll_->data = this;
  uv_poll_start(side_poll_, UV_READABLE | UV_DISCONNECT, OnSide);
  napi_add_env_cleanup_hook(env, CleanupHook, this);
  cleanup_env_ = env;
}

ShmEndpoint::~ShmEndpoint() {
  local_ = nullptr;  // its ArrayBuffer may be finalized in the same collection
  if (cleanup_env_) napi_remove_env_cleanup_hook(cleanup_env_, CleanupHook, this);
  ReleaseSyncEntry();
  Teardown();
}

void ShmEndpoint::Teardown() {
  if (engine_) {
    engine_->UnwatchIdle(this);
    engine_->Disarm(this);
    engine_->DropToken(this);
    engine_.reset();
  }
  if (side_poll_) {
    side_poll_->data = nullptr;
    ClosePoll(side_poll_);
    side_poll_ = nullptr;
  }
  // uv_poll_stop removed the fd from epoll; closing it now is safe.
  if (side_fd_ >= 0) close(side_fd_);
  side_fd_ = -1;
  peer_.reset();
  seg_.reset();
  closed_ = true;
  PublishLocal(kStateClosed);
}

// The peer's token is read on every wake-up (not kept): it is written once, when the peer's
// endpoint is made, which for the server is before the client's exists.
void ShmEndpoint::RingPeer() {
  if (peer_) peer_->Wake(peer_hint_->ready_token.load(std::memory_order_acquire));
}

// After a synchronous call: its waits may have consumed a doorbell ring owed to another endpoint
// of the loop (whose token is still on the list: ringing again is enough), and their Arm*Wait
// may have cleared a waiting flag this endpoint sleeps on in the loop without any peer pushing
// its token (then the loop is told to check it). A call that found its bytes or room while
// spinning armed nothing and costs nothing here: telling the loop after every call (an eventfd
// write) took the synchronous pair from 0.21 to 0.65 µs RTT/2.
void ShmEndpoint::RestoreDoorbell() {
  bool drained = drained_doorbell_, armed = sync_armed_;
  drained_doorbell_ = sync_armed_ = false;
  if (!engine_) return;
  if (armed && sleep_index >= 0) engine_->WakeSelf(this);
  else if (drained) engine_->RingSelf();
}

bool ShmEndpoint::CheckSide() {
  if (peer_gone_) return true;
  char b;
  ssize_t r = recv(side_fd_, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) peer_gone_ = true;
  // r == 1: the peer sent something on the side channel, which it must not: treat as gone.
  if (r == 1) peer_gone_ = true;
  if (peer_gone_) PublishLocal(kStateGone);
  return peer_gone_;
}

void ShmEndpoint::Notify() {
  if (closed_) return;
  if (engine_) {
    engine_->Release(this);  // the wait's event is JS's now
    PublishCpu();            // also without polling: the peer may poll, and must know
  }
  Napi::Env env = onevent_.Env();
  Napi::HandleScope scope(env);
  CallFromLoop(env, onevent_.Value(), Value(), 0, nullptr, *async_);
}

void ShmEndpoint::CleanupHook(void* arg) {
  // The environment (a worker, or the process) is going away: release the loop handles and fds
  // while the loop still exists; the JS object may never be finalized.
  // Like the kernel closing a process's TCP sockets: a FIN, or a RST where bytes were left unread.
  static_cast<ShmEndpoint*>(arg)->PublishCloseAndTeardown(false);
}

// Per direction it sleeps for: the event is there, or the flag is (again) raised, so the peer
// rings for the next one (RingView::Rearm*Wait: a stale ring may have cleared it).
bool ShmEndpoint::Woken() {
  return (sleep_read_ && !rx_.RearmConsumerWait()) || (sleep_write_ && !tx_.RearmProducerWait());
}

void ShmEndpoint::OnWake() {
  sleep_read_ = sleep_write_ = false;
  if (closed_) return;
  if (poll_window.waiting) poll_window.EndWait(NowNs());
  Notify();
}

void ShmEndpoint::SleepFor(bool read, bool write) {
  sleep_read_ = sleep_read_ || read;
  sleep_write_ = sleep_write_ || write;
  engine_->Sleep(this);
}

void ShmEndpoint::OnSide(uv_poll_t* h, int status, int) {
  auto* self = static_cast<ShmEndpoint*>(h->data);
  if (!self || self->closed_) return;
  if (status < 0 || self->CheckSide()) {
    self->peer_gone_ = true;
    self->PublishLocal(kStateGone);
    uv_poll_stop(h);
  }
  self->Notify();
}

// write(view) -> bytes copied into the ring (0 when full)
Napi::Value ShmEndpoint::Write(const Napi::CallbackInfo& info) {
  if (closed_) return Napi::Number::New(info.Env(), 0);
  size_t len = 0;
  uint8_t* p = info.Length() > 0 ? BytesOf(info[0], &len) : nullptr;
  if (!p && len) throw Napi::TypeError::New(info.Env(), "write(view)");
  uint64_t n = p ? tx_.Push(p, len, [this] {
    if (tx_.ConsumerNeedsWake()) RingPeer();
  }) : 0;
  if (n) WroteTx();
  return Napi::Number::New(info.Env(), static_cast<double>(n));
}

// readInto(view, offset = 0, maxBytes = rest of view) -> bytes copied from the ring into
// view[offset, offset + maxBytes) (0 when empty). Offsets past the view are clamped to it.
Napi::Value ShmEndpoint::ReadInto(const Napi::CallbackInfo& info) {
  if (closed_) return Napi::Number::New(info.Env(), 0);
  size_t len = 0;
  uint8_t* p = info.Length() > 0 ? BytesOf(info[0], &len) : nullptr;
  if (!p && len) throw Napi::TypeError::New(info.Env(), "readInto(view, offset, maxBytes)");
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
  uint64_t n = p ? rx_.Pop(p, len) : 0;
  if (n) {
    if (rx_.ProducerNeedsWake()) RingPeer();
    if (poll_window.waiting) poll_window.EndWait(NowNs());
  }
  return Napi::Number::New(info.Env(), static_cast<double>(n));
}

// read(maxBytes) -> Buffer with what is there (up to maxBytes), or null when empty
Napi::Value ShmEndpoint::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (closed_) return env.Null();
  uint64_t max = info.Length() > 0 && info[0].IsNumber() ? static_cast<uint64_t>(info[0].As<Napi::Number>().Int64Value()) : 65536;
  uint64_t n = rx_.Readable();
  if (n > max) n = max;
  if (n == 0) return env.Null();
  Napi::Buffer<uint8_t> buf = Napi::Buffer<uint8_t>::New(env, n);
  memcpy(buf.Data(), rx_.ReadPtr(), n);
  rx_.Release(n);
  if (rx_.ProducerNeedsWake()) RingPeer();
  if (poll_window.waiting) poll_window.EndWait(NowNs());
  return buf;
}

Napi::Value ShmEndpoint::Readable(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), closed_ ? 0 : static_cast<double>(rx_.Readable()));
}

Napi::Value ShmEndpoint::Writable(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), closed_ ? 0 : static_cast<double>(tx_.Writable()));
}

Napi::Value ShmEndpoint::ArmRead(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !closed_ && !peer_gone_ && Await(true));
}

Napi::Value ShmEndpoint::ArmWrite(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !closed_ && !peer_gone_ && Await(false));
}

uint32_t ShmEndpoint::CpuHint() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<uint32_t>(cpu) + 1;
}

uint32_t ShmEndpoint::PublishCpu() {
  uint32_t v = CpuHint();
  if (own_hint_->cpu.load(std::memory_order_relaxed) != v) own_hint_->cpu.store(v, std::memory_order_relaxed);
  return v;
}

bool ShmEndpoint::PeerNeeds(uint32_t cpu) {
  return !closed_ && cpu != 0 && peer_hint_->cpu.load(std::memory_order_relaxed) == cpu && tx_.InFlight() > 0;
}

bool ShmEndpoint::SleepIfIdle(bool r, bool w) {
  bool sleep = true;
  if (r && !rx_.ArmConsumerWait()) sleep = false;
  if (w && !tx_.ArmProducerWait()) sleep = false;
  if (sleep) SleepFor(r, w);
  return sleep;
}

// A wait begins at the first arm and lasts until its event is seen (by the engine, the
// doorbell, or a read that finds bytes); re-arming during it does not restart the window, so a
// connection that waits for nothing (an idle reader that keeps writing) spins at most once.
// With polling on, a wait whose peer needs this CPU is held (ProgressEngine::Hold): it sleeps,
// and the loop spins for nobody until it ends.
bool ShmEndpoint::Await(bool read) {
  uint32_t cpu = engine_ ? PublishCpu() : 0;
  if (engine_ && poll_window.max_ns > 0) {
    uint64_t now = NowNs();
    if (!poll_window.waiting) poll_window.BeginWait(now);  // a wait observed on wake-up regrows the window
    if (PeerNeeds(cpu)) {
      // Held: asleep on the doorbell for this direction and any it was polling for.
      engine_->Hold(this);
      bool r = poll_read_ || read, w = poll_write_ || !read;
      poll_read_ = poll_write_ = false;
      if (SleepIfIdle(r, w)) return true;
      poll_window.waiting = false;
      engine_->Release(this);
      return false;
    } else if (poll_window.window_ns > 0 && now - poll_window.armed_at_ns < poll_window.window_ns && engine_->Arm(this, now)) {
      // Arm took this endpoint off the loop's sleepers: a direction it slept for (the read,
      // when a write-only pump arms the write) is polled from now on, or no ring would find it.
      poll_read_ = poll_read_ || sleep_read_ || read;
      poll_write_ = poll_write_ || sleep_write_ || !read;
      sleep_read_ = sleep_write_ = false;
      // Polling: the peer need not ring (a flag left from an earlier sleep would make it).
      if (poll_read_) rx_.control()->consumer_waiting.store(0, std::memory_order_relaxed);
      if (poll_write_) tx_.control()->producer_waiting.store(0, std::memory_order_relaxed);
      return true;
    }
  }
  bool armed = SleepIfIdle(read, !read);
  if (!armed) poll_window.waiting = false;
  return armed;
}

uint64_t ShmEndpoint::ReadyStamp() {
  if (!closed_ && (poll_read_ || sleep_read_) && (rx_.Readable() > 0 || rx_.ProducerFlags() != 0))
    return rx_.control()->ready_ticks.load(std::memory_order_relaxed);
  return UINT64_MAX;
}

bool ShmEndpoint::Poll() {
  return (poll_read_ && (rx_.Readable() > 0 || rx_.ProducerFlags() != 0)) || (poll_write_ && tx_.Writable() > 0);
}

void ShmEndpoint::OnPollReady() {
  poll_read_ = poll_write_ = false;
  Notify();
}

void ShmEndpoint::OnPollExpired() {
  bool r = poll_read_, w = poll_write_;
  poll_read_ = poll_write_ = false;
  if (closed_) return;
  if (!SleepIfIdle(r, w)) {
    poll_window.EndWait(NowNs());
    Notify();
  }
}

// yieldRead() -> true when another endpoint of this loop is ready and not handed to JS yet:
// this one is queued behind it (asleep for bytes, its token on the loop's ready list) and
// onevent() comes in its turn; false (nothing else waits, or closed): read on.
Napi::Value ShmEndpoint::YieldRead(const Napi::CallbackInfo& info) {
  bool yield = !closed_ && engine_ && engine_->OthersReady(this);
  if (yield && hot_index >= 0) {
    poll_read_ = true;  // polled already (for space): the engine finds the bytes in their turn
  } else if (yield) {
    bool was = sleep_read_;
    sleep_read_ = true;
    if (!engine_->Requeue(this)) sleep_read_ = was, yield = false;
  }
  return Napi::Boolean::New(info.Env(), yield);
}

// setPollUs(us): the polling window's upper bound in µs, in [0, 1e6]; 0 (the default) never
// polls. RangeError otherwise.
Napi::Value ShmEndpoint::SetPollUs(const Napi::CallbackInfo& info) {
  double us = info.Length() > 0 ? info[0].ToNumber().DoubleValue() : 0;
  if (!(us >= 0) || us > 1e6) throw Napi::RangeError::New(info.Env(), "pollUs must be in [0, 1e6]");
  poll_window.SetMax(static_cast<uint64_t>(us * 1000));
  if (poll_window.max_ns == 0 && hot_index >= 0 && engine_) {
    engine_->Disarm(this);  // off the sleepers too: what it slept for is armed again below
    poll_read_ = poll_read_ || sleep_read_;
    poll_write_ = poll_write_ || sleep_write_;
    sleep_read_ = sleep_write_ = false;
    OnPollExpired();  // the wait goes on, asleep on the doorbell
  }
  return info.Env().Undefined();
}

// pollStats() -> { windowUs, maxUs, hot, hits, misses, spinNs, lastWaitUs }: the learned
// polling window (µs), its cap, whether the engine polls this endpoint now, waits caught while
// polling, windows that ran out into a sleep, this endpoint's share of the spinning (ns), and the
// last wait observed (µs).
Napi::Value ShmEndpoint::PollStats(const Napi::CallbackInfo& info) {
  return PollStatsObject(info.Env(), GetPollStats());
}

// state() -> kState* bits (csrc/stream_state.h): the peer sent EOF, the peer reset, the peer is
// gone (side channel closed), this endpoint is closed, unread bytes in the receive ring. One
// call, no syscall: what the pump needs to decide between "more work", "end of stream" and "sleep".
Napi::Value ShmEndpoint::State(const Napi::CallbackInfo& info) {
  uint32_t s = 0;
  if (!closed_) {
    uint32_t f = rx_.ProducerFlags();
    if (f & wire::kRingEof) s |= kStateEof;
    if (f & wire::kRingReset) s |= kStateReset;
    if (peer_gone_) s |= kStateGone;  // set by the side channel's watcher
    if (rx_.Readable() > 0) s |= kStateReadable;
  } else {
    s |= kStateClosed;
  }
  return Napi::Number::New(info.Env(), s);
}

Napi::Value ShmEndpoint::Shutdown(const Napi::CallbackInfo& info) {
  if (!closed_) {
    tx_.SetProducerFlag(wire::kRingEof);
    tx_.control()->consumer_waiting.store(0, std::memory_order_relaxed);
    RingPeer();
  }
  return info.Env().Undefined();
}

// Publishes the end of this side, as the kernel does when a TCP socket is closed: a RST when
// asked (`reset`) or when bytes were left unread in the receive ring, else a FIN (EOF; the peer
// still reads what is in the ring). Then rings the peer and tears down.
void ShmEndpoint::PublishCloseAndTeardown(bool reset) {
  if (closed_) return;
  tx_.SetProducerFlag(reset || rx_.Readable() > 0 ? wire::kRingReset : wire::kRingEof);
  RingPeer();
  if (side_fd_ >= 0) shutdown(side_fd_, SHUT_RDWR);
  Teardown();
}

// close(reset: boolean): see PublishCloseAndTeardown. controlView()'s views of the segment are
// detached first: nothing reads the mapping once it is gone.
Napi::Value ShmEndpoint::Close(const Napi::CallbackInfo& info) {
  if (!closed_ && !control_view_.IsEmpty()) {
    control_ab_.Value().Detach();
    tx_ring_ab_.Value().Detach();
  }
  PublishCloseAndTeardown(info.Length() > 0 && info[0].ToBoolean().Value());
  return info.Env().Undefined();
}

void ShmEndpoint::SetRefed(bool on) {
  // The loop's doorbell is never ref'd: the side channel's watcher holds the loop for the
  // connection, as a TCP socket's handle does.
  if (!side_poll_) return;
  if (on) uv_ref(reinterpret_cast<uv_handle_t*>(side_poll_));
  else uv_unref(reinterpret_cast<uv_handle_t*>(side_poll_));
}

Napi::Value ShmEndpoint::Ref(const Napi::CallbackInfo& info) {
  SetRefed(true);
  return info.Env().Undefined();
}

Napi::Value ShmEndpoint::Unref(const Napi::CallbackInfo& info) {
  SetRefed(false);
  return info.Env().Undefined();
}

// counters() -> [bytesWritten, bytesRead] by this endpoint since it was created
Napi::Value ShmEndpoint::Counters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array a = Napi::Array::New(env, 2);
  if (closed_) {
    a.Set(0u, -1.0);
    a.Set(1u, -1.0);
    return a;
  }
  a.Set(0u, static_cast<double>(tx_.control()->head.load(std::memory_order_relaxed) - tx_start_));
  a.Set(1u, static_cast<double>(rx_.control()->tail.load(std::memory_order_relaxed) - rx_start_));
  return a;
}

Napi::Value ShmEndpoint::TxRegion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!tx_region_.IsEmpty()) return tx_region_.Value();
  if (closed_) throw Napi::Error::New(env, "txRegion on a closed shm endpoint");
  auto* keep = new std::shared_ptr<Segment>(seg_);
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, tx_.data(), 2 * tx_.size(),
      [](Napi::Env, void*, std::shared_ptr<Segment>* k) { delete k; }, keep);
  tx_region_ = Napi::Persistent(ab);
  return ab;
}

// txHeadOffset() -> offset in txRegion() where the next byte goes, in [0, size)
Napi::Value ShmEndpoint::TxHeadOffset(const Napi::CallbackInfo& info) {
  if (closed_) return Napi::Number::New(info.Env(), -1);
  loaned_ = true;  // the caller may now place bytes in the free space: no trimming until a write
  return Napi::Number::New(info.Env(), static_cast<double>(tx_.WritePtr() - tx_.data()));
}

// commit(n) -> n, or 0 when fewer than n bytes are free (nothing published)
Napi::Value ShmEndpoint::Commit(const Napi::CallbackInfo& info) {
  uint64_t n = info.Length() > 0 ? static_cast<uint64_t>(info[0].ToNumber().Int64Value()) : 0;
  if (closed_ || n == 0) return Napi::Number::New(info.Env(), 0);
  uint64_t w = tx_.Writable();
  if (n > w) return Napi::Number::New(info.Env(), 0);
  if (w == tx_.size()) tx_.StampIfWanted();
  tx_.Commit(n);
  if (tx_.ConsumerNeedsWake()) RingPeer();
  WroteTx();
  return Napi::Number::New(info.Env(), static_cast<double>(n));
}

namespace {
uint64_t PageBytes() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

bool ShmEndpoint::OnIdleTick() {
  if (closed_) return true;
  uint64_t head = tx_.control()->head.load(std::memory_order_relaxed);
  if (head != idle_seen_head_) {  // written since the last tick: not idle yet
    idle_seen_head_ = head;
    return false;
  }
  if (loaned_) return false;
  int64_t r = tx_.TrimFree(PageBytes(), &trimmed_to_);
  if (r < 0) return true;  // madvise refused (or a peer scribbled on tail): keep the pages
  if (r > 0) {
    trims_++;
    trimmed_bytes_ += static_cast<uint64_t>(r);
  }
  // Bytes still unread keep their pages: look again when the consumer has taken them (unless
  // it is gone: they stay until close).
  return peer_gone_ || tx_.Writable() == tx_.size();
}

namespace {
// Bytes of [p, p + n) whose pages are in the memfd's page cache (mincore; shmem: allocated).
double ResidentBytes(const uint8_t* p, uint64_t n) {
  const uint64_t page = PageBytes();
  std::vector<unsigned char> v((n + page - 1) / page);
  if (mincore(const_cast<uint8_t*>(p), n, v.data()) != 0) return -1;
  uint64_t pages = 0;
  for (unsigned char c : v) pages += c & 1;
  return static_cast<double>(pages * page);
}
}  // namespace

// memStats() -> { ringBytes, txResidentBytes, rxResidentBytes, trims, trimmedBytes }: the size
// of each ring, the bytes of this end's transmit and receive rings whose pages exist now (mincore
// over one mirror view; -1 when it fails), and how often / how many bytes this end gave back
// (its transmit ring's idle trims). Zeros once closed. For tests and benchmarks.
Napi::Value ShmEndpoint::MemStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  bool open = !closed_;
  o.Set("ringBytes", open ? static_cast<double>(tx_.size()) : 0.0);
  o.Set("txResidentBytes", open ? ResidentBytes(tx_.data(), tx_.size()) : 0.0);
  o.Set("rxResidentBytes", open ? ResidentBytes(rx_.data(), rx_.size()) : 0.0);
  o.Set("trims", static_cast<double>(trims_));
  o.Set("trimmedBytes", static_cast<double>(trimmed_bytes_));
  return o;
}

Napi::Value ShmCreateSegment(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "shmCreateSegment(c2sBytes, s2cBytes)");
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
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(info.Env(), "isEventfd(fd)");
  char path[64], target[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", info[0].As<Napi::Number>().Int32Value());
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return Napi::Boolean::New(info.Env(), false);
  target[n] = 0;
  return Napi::Boolean::New(info.Env(), strcmp(target, "anon_inode:[eventfd]") == 0);
}

}  // namespace fastsock
