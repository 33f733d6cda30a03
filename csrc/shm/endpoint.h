// One end of a `shm` connection, exposed to JS as `ShmEndpoint`: the JS face of its protocol
// core, shm::Conn (csrc/shm/conn.h, no N-API: the segment, the rings, the doorbells, the waits).
// N-API lives here only: argument checks, views of JS arrays and of the mapping, the onevent
// callback, the synchronous pair's own entry points, errors (csrc/errors.h). The methods every
// stream endpoint face shares (readable, writable, armRead, armWrite, state, shutdown, close,
// ref, unref, counters, setPollUs, pollStats) are bound once, in csrc/endpoint_face.h.
// Files: endpoint.cc (the class, construction, write/readInto/read, loans, memStats, the
// module functions), endpoint_datapath.cc (controlView, writev), endpoint_sync.cc (writeSync,
// readIntoSync).
//
// Contract (in the manner of Node's stream_base.h):
// - Construction takes ownership of the segment's memfd (closed once mapped), the peer loop's
//   doorbell eventfd and ready list (kept once per peer loop: csrc/shm/peer_doorbell.h) and the
//   side-channel socket (the liveness signal, on a uv_poll). Its own doorbell and ready list are
//   its loop's, shared by every endpoint of the loop (the progress engine's, csrc/progress.h):
//   one connection end holds one fd of its own, the side channel. It takes a token in its loop's
//   ready list and writes it in its side's hint line, where the peer reads it to wake it.
// - `onevent()` (a JS function given at construction) is called from the loop whenever the
//   doorbell rang or the side channel changed; it is level-free: JS then asks what is
//   available (readable(), writable(), state()) and does the work.
// - write(bytes), writev(views, index, offset) and readInto(bytes[, offset, maxBytes]) never
//   block: they move what fits and return the count (writev: a whole corked batch in one call,
//   one doorbell check for all of it). When they return less than asked and the caller wants to
//   wait, it arms the doorbell with armWrite() / armRead(): false means "retry now", true means
//   "onevent() will come".
// - controlView() exposes, for JS to read without a call, the segment's header page (both
//   rings' control blocks, shared with the peer, at the offsets of ShmEndpoint.controlLayout)
//   and a word of this end's local state bits (kStateGone, kStateClosed), which this end keeps current:
//   state() and readable() are then a few loads in JS (lib/transports/shm/endpoint.ts). At
//   close() the shared pages under its views become private zero pages (Segment::Release): the
//   views are never detached (endpoint_datapath.cc says why).
// - setPollUs(us) (default 0: never spins; lib/ passes pollUs, 200 unless set) lets
//   armRead/armWrite poll the ring from the loop's progress engine (csrc/progress.h) for a
//   window learned per connection, at most `us`, before sleeping on the doorbell;
//   pollStats() reports the window and its counters.
// - txRegion() is one ArrayBuffer over this end's transmit ring (2 x size bytes: the mirror),
//   made once and keeping the mapping alive for as long as JS holds it; txHeadOffset() is
//   where the next byte goes; commit(n) publishes n bytes the caller already placed there
//   (the zero-copy "loan" of allocShared, and JS's copies of small writes once a connection
//   has written a few times: V8 counts an ArrayBuffer's bytes as external memory until it is
//   collected, so one made for every short connection would bring garbage collections).
// - Memory follows the bytes in flight (docs/wire-protocol.md, "Ring memory"): after a write
//   this end is watched by its loop's idle timer; once its transmit ring saw no write for a
//   whole tick (100-200 ms) it gives the ring's free pages back (RingView::TrimFree), never
//   while a loan is outstanding (txHeadOffset() taken, not yet committed or overwritten).
//   memStats() reports what is resident (mincore) and what was given back.
// - writeSync/readIntoSync may block the calling thread (busy-poll for spinUs, then sleep in
//   poll(2) on the doorbell and the side channel) and are meant for workers and tight
//   request/response loops with a peer in another thread or process. The first call defines the
//   object's own writeSync/readIntoSync, which reach this endpoint without napi_unwrap
//   (csrc/shm/endpoint_sync.cc); they throw (EBADF) once it is gone.
// - yieldRead(): asked by JS before it reads more bytes after it handed some to JS in the same
//   turn (a handler ran meanwhile): true when another endpoint of the loop became ready in the
//   meantime, and this one is then queued behind it (onevent() comes in its turn): bytes are
//   handed to JS across connections in the order they became ready (docs/polling.md).
// - shutdown() publishes EOF (a FIN); close(reset) tears down: with reset, or with bytes left
//   unread, the peer sees a reset (ECONNRESET), else a FIN. Either way the side channel
//   closes, which the peer sees at once. counters() then keeps the values it had.
// - A bad argument throws a TypeError (code ERR_INVALID_ARG_TYPE) or RangeError
//   (ERR_OUT_OF_RANGE); a call that needs the mapping (controlView, txRegion, the synchronous
//   pair) throws EBADF once closed.
#pragma once

#include <napi.h>

#include <memory>

#include "endpoint_face.h"
#include "shm/conn.h"

namespace fastsock {

class ShmEndpoint : public Napi::ObjectWrap<ShmEndpoint>, public EndpointFace<ShmEndpoint>, private shm::Owner {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit ShmEndpoint(const Napi::CallbackInfo& info);
  ~ShmEndpoint() override;

 private:
  friend class EndpointFace<ShmEndpoint>;
  shm::Conn& core() { return *conn_; }
  // shm::Owner: the core's event, relayed to onevent() from the loop.
  void OnEvent() override;
  static void CleanupHook(void* arg);

  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Writev(const Napi::CallbackInfo& info);
  Napi::Value ControlView(const Napi::CallbackInfo& info);
  Napi::Value ReadInto(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value WriteSync(const Napi::CallbackInfo& info);
  Napi::Value ReadIntoSync(const Napi::CallbackInfo& info);
  Napi::Value TxRegion(const Napi::CallbackInfo& info);
  Napi::Value TxHeadOffset(const Napi::CallbackInfo& info);
  Napi::Value Commit(const Napi::CallbackInfo& info);
  Napi::Value MemStats(const Napi::CallbackInfo& info);
  Napi::Value YieldRead(const Napi::CallbackInfo& info);

  // The synchronous pair's own functions (csrc/shm/endpoint_sync.cc).
  struct SyncEntry;
  template <bool kWrite>
  static napi_value SyncFast(napi_env env, napi_callback_info cbinfo);
  static void UnrefSyncEntry(napi_env env, void* data, void* hint);
  void InstallSyncEntry(napi_env env, napi_value self);
  void ReleaseSyncEntry();

  std::unique_ptr<shm::Conn> conn_;  // set in the constructor, for the endpoint's whole life
  napi_env cleanup_env_ = nullptr;
  SyncEntry* sync_entry_ = nullptr;  // the own writeSync/readIntoSync functions' (InstallSyncEntry)
  Napi::FunctionReference onevent_;
  std::unique_ptr<Napi::AsyncContext> async_;
  Napi::Reference<Napi::ArrayBuffer> tx_region_;
  // controlView(): its object (made on the first call); its local word is the core's
  // MirrorState word.
  Napi::ObjectReference control_view_;
};

// ShmEndpoint.controlLayout: the byte offsets JS reads a ring's control block at
// (wire::RingControl, docs/wire-protocol.md): { bytes (of one block), head (u64, bytes
// produced), producerFlags (u32: ringEof, ringReset), tail (u64, bytes consumed),
// consumerWaiting, producerWaiting (u32 doorbell flags), ringEof, ringReset (the flag bits),
// headerBytes (of the header page) }. head and tail are little-endian u64s whose low 32 bits
// suffice for a difference (a ring holds at most 256 MiB).
Napi::Object ShmControlLayout(Napi::Env env);

// shmCreateSegment(c2sBytes, s2cBytes) -> { memfd }; throws with `code` (EMFILE...) on failure
Napi::Value ShmCreateSegment(const Napi::CallbackInfo& info);
// shmLoopDoorbell() -> { fd, id, readyFd, readyNodes }: this loop's doorbell eventfd and ready
// list memfd (owned by the loop's engine; send them, never close them), the doorbell's id (16 hex
// digits) and the list's node count; throws with `code` (EMFILE...) on failure
Napi::Value ShmLoopDoorbell(const Napi::CallbackInfo& info);
// shmFdRoom() -> how many fd numbers are left below the RLIMIT_NOFILE soft limit above the
// lowest free one (the next fd any call would get): 0 when none is free, 1e9 without a limit.
// A cheap (one fcntl, one close) upper bound of the fds this process may still open.
Napi::Value ShmFdRoom(const Napi::CallbackInfo& info);
// isEventfd(fd) -> boolean
Napi::Value IsEventfd(const Napi::CallbackInfo& info);

}  // namespace fastsock
