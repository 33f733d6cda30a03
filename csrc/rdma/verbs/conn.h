// One verbs connection, the protocol core of the `verbs` rung (csrc/rdma/verbs.h says what the
// rung is; csrc/wire/verbs.h and docs/wire-protocol.md specify the bytes). No N-API: the JS
// face (VerbsEndpoint in csrc/rdma/verbs.cc) turns JS views into CallerBytes and these results
// into JS values; everything else happens here, on the loop the connection was made on.
//
// A Conn owns the RDMA CM id and its event channel, the queue pair, its completion queue and
// channel, the eager buffer pools, the registration cache, and the stream state. Set-up (resolve,
// connect or accept) is driven by RDMA CM events (conn.cc); the data path by completions
// (protocol.cc), whose waits are in polling.cc. Both channels' fds sit on uv_polls of the loop.
//
// Contracts of the data path (the calls the stream pump makes through the JS face):
//   Write(bytes)    sends from the caller's bytes and returns how many it took (0: none now).
//                   Below the rendezvous threshold the bytes are copied into eager buffers as far
//                   as credits allow; the caller may reuse its array at once. At or above it, the
//                   first call announces the bytes (RTS) and returns 0; the caller must then call
//                   Write again with the same bytes (same address and length) until it returns
//                   their length, which happens only after the peer has READ them: until then the
//                   array must not change. A declined rendezvous sends the same bytes eager.
//   ReadInto(bytes) copies the bytes that have arrived, in order, into the caller's bytes and
//                   returns how many. When the head of the stream is an announced rendezvous and
//                   the caller's bytes can hold all of it, the bytes are READ straight into them
//                   (0 now; a later ReadInto with the same bytes returns them without a copy).
//   PeekHead/TakeBlock  read() without an array of the caller's: a rendezvous READ into a block
//                   of the JS face's (Allocator) is handed out whole or in views, no copy.
//   Readable, HasReadable, Writable, ArmRead, ArmWrite, State: what the pump needs to decide
//                   between "more work", "end of stream" and "sleep"; see each.
//   Shutdown()      sends EOF (FIN) once the rendezvous in flight, if any, has completed.
//   Counters()      bytes written and read since the connection was made, kept after Close.
//   Close(reset)    FIN (or RST when `reset` or bytes are left unread, as TCP does), waits up to
//                   kCloseDrainMs for the last SENDs, then frees everything; later calls are
//                   no-ops.
// on_event fires (from the loop) after completions or a disconnect changed what these return.
//
// Waiting (docs/polling.md): a Conn is a Pollable of its loop's progress engine (csrc/progress.h,
// given with SetEngine). When ArmRead/ArmWrite find nothing to do and the connection's learned
// window is open, the engine polls the completion queue (Poll: ibv_poll_cq, handling what it
// returns) until what the pump waits for has come, instead of sleeping on the completion channel;
// the CQ is then not armed, so the peer's messages raise no CQ event. When the window runs out
// (OnPollExpired), or is closed, the CQ is armed (ibv_req_notify_cq) and polled once more, and the
// connection sleeps on the channel: invariant, between loop callbacks a connection that is not
// polled has its CQ armed, so every completion wakes the loop (OnCq).
#pragma once

#if FASTSOCK_HAVE_RDMA
#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "progress.h"
#include "rdma/lib.h"
#include "rdma/verbs/options.h"
#include "rdma/verbs/regcache.h"
#include "stream_state.h"
#include "wire/verbs.h"

namespace fastsock {
namespace verbs {

// Why set-up failed: a positive errno, the call (or set-up step) that failed, a sentence.
struct SetupError {
  int err = 0;
  const char* syscall = "";
  std::string message;
};

// Where a rendezvous READ lands when no array of the reader's takes it: a fresh block of `len`
// bytes that the JS face can later hand out without a copy (a Buffer). Null when out of memory.
class Allocator {
 public:
  virtual HoldPtr NewBlock(size_t len, uint8_t** data) = 0;

 protected:
  ~Allocator() = default;
};

// A rendezvous READ that landed in a block of its own, at the head of the stream (PeekHead).
struct HeadBlock {
  const Hold* block = nullptr;  // made by the Allocator; valid until TakeBlock
  size_t offset = 0;            // first unread byte in the block
  size_t len = 0;               // bytes a read of at most `max` takes
  bool whole = false;           // the read takes the whole block (hand the block itself out)
};

// Counters and negotiated parameters, for stats().
struct Stats {
  uint32_t eager_bytes = 0, peer_eager_bytes = 0, recv_buffers = 0, credits = 0, rndv_threshold = 0;
  uint64_t eager_sent = 0, rndv_sent = 0, rndv_received = 0, rndv_direct = 0, rndv_declined = 0;
  uint64_t credit_messages = 0, starved = 0;
  uint64_t reg_cache_hits = 0, reg_cache_misses = 0, reg_cache_evictions = 0;
  size_t reg_cache_bytes = 0, reg_cache_entries = 0, reg_cache_capacity = 0;
  std::string device;
  bool iwarp = false;
};

// The addresses and device of an established connection.
struct ConnInfo {
  sockaddr_storage local{}, remote{};
  std::string device;
};

// One item of the receive stream, in arrival order.
struct RxItem {
  enum Kind {
    kData,  // eager bytes [off, off + len) of receive buffer `slot`: reads copy them out; the
            // buffer is re-posted (a credit to return) once they are all consumed
    kRts,   // a rendezvous announced by the writer: see RtsState
    kFin,   // the writer's EOF: reads stop here; State() then reports kStateEof
  } kind = kData;
  uint32_t slot = 0, off = 0, len = 0;
  wire::VerbsRts rts{};
  enum RtsState {
    kNew,      // announced, not READ yet: the next read picks the destination and starts the
               // READ (or declines it, and the writer sends the bytes eager instead)
    kReading,  // the READ is in flight: reads stop here, nothing is readable yet
    kDone,     // the bytes are here (at dest): reads take them, `consumed` counts how far
  } state = kNew;
  uint8_t* dest = nullptr;
  RegEntry* reg = nullptr;   // the destination's registration, until the READ completed
  HoldPtr keep;              // the destination (a block of the Allocator's, or the reader's array)
  bool as_buffer = false;    // dest is a block that read() may hand out whole
  uint32_t consumed = 0;
};

class Conn : public Pollable {
 public:
  // Set-up phases. Data-path calls are no-ops (return 0 / nothing) until kEstablished.
  enum class Phase {
    kResolving,    // client: resolving the address, then the route (RDMA CM); CM events drive it
    kConnecting,   // client: CONNECT sent with our private data; waits for ESTABLISHED
    kAccepting,    // server: ACCEPT sent with our private data; waits for ESTABLISHED
    kEstablished,  // the data path works: Write, ReadInto, ... as the contracts above say
    kDead,         // set-up failed or the connection was destroyed: every call is a no-op
  };

  Conn(uv_loop_t* loop, const Options& o);
  ~Conn() override;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // ----- set-up (conn.cc) -----
  // Client: resolve `dst` (PS_IB; iWARP devices restart in PS_TCP on iwarp_port) and connect,
  // within timeout_ms. False (with *err) when it cannot even start; otherwise on_setup runs
  // once, from the loop.
  bool StartConnect(const sockaddr_storage& dst, int iwarp_port, int timeout_ms, SetupError* err);
  // Server: adopt the id of a CONNECT_REQUEST (already acked), with the client's private data,
  // and accept. False (with *err) when it cannot; otherwise on_setup runs once, from the loop.
  bool StartAccept(rdma_cm_id* id, const wire::VerbsPrivateData& peer, SetupError* err);

  // Set-up's outcome: null once established, else why it failed. It may delete this Conn.
  std::function<void(const SetupError* failure)> on_setup;
  // Data-path progress (completions, a disconnect): what the data-path calls return changed.
  std::function<void()> on_event;
  // Where rendezvous READs land when no reader's array takes them (set before the first read).
  Allocator* allocator = nullptr;

  // ----- data path (protocol.cc; contracts above) -----
  size_t Write(const CallerBytes& b);
  size_t ReadInto(const CallerBytes& b);
  // read() without the reader's array, first step. Returns true with *head when the head of the
  // stream is a READ landed in a block of its own (take it with TakeBlock(head->len)). Returns
  // false otherwise, with *wait true when a rendezvous READ was just started (or declined) for
  // the head: nothing to read now. When false without wait, read Readable(max) bytes with
  // ReadInto.
  bool PeekHead(size_t max, HeadBlock* head, bool* wait);
  // Consumes `n` bytes of the head block PeekHead returned.
  void TakeBlock(size_t n);
  // Bytes a read can take now, counting at most up to `max` (the queue is walked in order).
  size_t Readable(size_t max = SIZE_MAX) const;
  // Readable() > 0, in O(1): only the head of the stream decides it.
  bool HasReadable() const;
  // Bytes Write can take now without a rendezvous (eager credit and buffers).
  size_t Writable() const;
  // Before the pump sleeps waiting for bytes: false when it must retry at once (bytes wait, the
  // end of the stream, or a rendezvous wants its READ started). True: on_event will come (the
  // engine polls the CQ for the connection's window, then the CQ is armed).
  bool ArmRead();
  // Before the pump sleeps waiting to write: false when a write would make progress now.
  bool ArmWrite();
  // kState* bits (csrc/stream_state.h).
  int State();
  void Shutdown();
  void Close(bool reset);
  void SetRefed(bool on);
  // The loop's progress engine (null: never poll, every wait sleeps on the completion channel).
  void SetEngine(std::shared_ptr<ProgressEngine> e) { engine_ = std::move(e); }
  // The cap of the polling window, in µs (pollUs; 0, the default: never poll).
  void SetPollUs(double us);
  Stats GetStats() const;
  // False when there is no connection (any more).
  bool GetInfo(ConnInfo* info) const;
  // Close() ran: every data-path call is a no-op.
  bool closed() const { return closed_; }
  // Bytes written and read since the connection was made (kept after Close).
  StreamCounters Counters() const { return {bytes_written_, bytes_read_}; }

 private:
  // set-up (conn.cc)
  bool CreateChannel(SetupError* err);
  bool SetupQp(SetupError* err);
  wire::VerbsPrivateData PrivateData() const;
  rdma_conn_param ConnParam(const wire::VerbsPrivateData* mine) const;
  void OnCmEvent();
  void HandleCm(rdma_cm_event* ev);
  void Fail(int err, const char* syscall, const std::string& msg);
  void Established(const void* pdata, uint8_t plen);
  void Destroy();
  // Pollable (csrc/progress.h; polling.cc): the completion queue, polled by the loop's engine.
  bool Poll() override;
  void OnPollReady() override;
  void OnPollExpired() override;
  // The loop's doorbell is shm's: a Conn sleeps on its completion channel, never there.
  bool Woken() override { return false; }
  void OnWake() override {}
  // polling.cc: ArmRead/ArmWrite found nothing to do: poll for the window, else arm the CQ.
  bool Await(bool read);
  bool ReadWaitOver() const;   // a read would find something (bytes, FIN, a rendezvous to start)
  bool WriteWaitOver() const;  // a write would make progress (credits and a slot, or RNDV_FIN)
  // What the pump waits for has come, or the peer reset or went away since it was last told.
  bool WaitOver() const;
  // Hands an event to JS (on_event): the connection is no longer polled nor waiting; `ended`:
  // what it waited for came (the window learns from the wait).
  void Deliver(bool ended);
  // After a loop callback ran JS: a connection not polled gets its CQ armed, and whatever came
  // before the arm (or meanwhile) is delivered.
  void Settle();
  void ArmCq();
  // data path (protocol.cc)
  void OnCq();
  int ProcessCq();  // completions handled
  void HandleWc(const ibv_wc& wc);
  void PostRecv(uint32_t slot);
  void Consumed(uint32_t slot);
  bool PostSend(uint8_t type, const void* body, uint32_t body_len, const uint8_t* payload, uint32_t payload_len);
  bool CanSendData() const { return credits_ >= 2 && !free_slots_.empty() && !closed_ && !peer_gone_ && !fin_sent_; }
  void FlushControl();
  void MaybeReturnCredits();
  void StartRead(RxItem& it);
  void FinishRts(RxItem& it);
  // Declines the rendezvous at the head of the stream (RNDV_FIN "declined"): the writer sends
  // those bytes eager instead.
  void DeclineRts();
  // Registers a READ destination for `it` (the reader's bytes when they hold at least the
  // announced bytes, else a fresh block) and starts the READ; false when no memory could be
  // registered even after evicting idle cache entries: the rendezvous is then declined.
  bool StartRendezvousRead(RxItem& it, const CallerBytes& b);
  void PopFin();
  void Notify();

  uv_loop_t* loop_;
  const RdmaLib* L_;
  Options opt_;
  Phase phase_ = Phase::kResolving;
  const char* step_ = "rdma_resolve_addr";  // the set-up call in progress (for errors)
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint8_t* recv_pool_ = nullptr;
  uint8_t* send_pool_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  ibv_mr* send_mr_ = nullptr;
  std::unique_ptr<RegCache> cache_;
  uv_poll_t* cm_poll_ = nullptr;
  uv_poll_t* cq_poll_ = nullptr;
  uv_timer_t* timer_ = nullptr;
  bool refed_ = true;
  // set-up
  sockaddr_storage dst_{};
  int iwarp_port_ = 0;
  int timeout_ms_ = 0;
  bool restarted_ = false;
  uint64_t connect_start_ns_ = 0;
  // negotiated
  uint32_t slot_bytes_ = 0;  // header + payload bytes per buffer (both pools)
  uint32_t peer_eager_ = 0;  // the peer's receive payload size
  uint32_t rndv_threshold_ = 0;
  uint32_t resp_res_ = 1, init_depth_ = 1;
  // flow control
  uint32_t credits_ = 0;         // SENDs we may post (peer receive buffers known free)
  uint32_t pending_return_ = 0;  // our receive buffers re-posted and not yet reported
  bool peer_starved_ = false;
  std::vector<uint32_t> free_slots_;
  uint32_t outstanding_sends_ = 0;
  // control messages waiting for a credit
  std::deque<wire::VerbsRndvFin> fins_to_send_;  // RNDV_FINs waiting for a send slot and a credit
  bool fin_wanted_ = false, fin_sent_ = false;
  // receive side
  std::deque<RxItem> rxq_;
  bool fin_seen_ = false, reset_ = false, peer_gone_ = false;
  // transmit rendezvous (one at a time: the stream writes in order)
  struct {
    bool active = false, done = false;
    uint8_t* addr = nullptr;
    uint32_t len = 0, id = 0, status = 0;
    RegEntry* reg = nullptr;
  } tx_;
  uint32_t next_rndv_id_ = 1;
  // waiting (polling.cc)
  std::shared_ptr<ProgressEngine> engine_;
  bool cq_armed_ = false;  // ibv_req_notify_cq called, its event not consumed yet
  bool wait_read_ = false, wait_write_ = false;  // armed by the pump, not delivered yet
  bool told_reset_ = false, told_gone_ = false;  // reset_ / peer_gone_ as last delivered
  bool in_cq_ = false;
  bool* alive_ = nullptr;  // cleared by the destructor: a callback may delete this connection
  bool closed_ = false;
  // statistics
  uint64_t bytes_written_ = 0, bytes_read_ = 0;
  uint64_t rndv_declined_ = 0;
  uint64_t rndv_sent_ = 0, rndv_received_ = 0, rndv_direct_ = 0, eager_sent_ = 0, credit_msgs_ = 0, starved_ = 0;
};

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
