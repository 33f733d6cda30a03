// One end of an `shm` connection, the protocol core of the shm rung (docs/wire-protocol.md
// specifies the bytes; ring.h the rings and their doorbell protocol). No N-API: the JS face
// (ShmEndpoint, csrc/shm/endpoint.h) turns JS views into bytes and these results into JS values,
// and relays this end's events to JS; everything else happens here, on the loop the connection
// was made on.
//
// A Conn holds the segment's mapping (segment.h: both rings, the header page with both control
// blocks and both sides' hint lines), the peer loop's doorbell and ready list (peer_doorbell.h:
// kept once per peer loop), the side-channel socket on a uv_poll (the liveness signal: its one fd
// of its own), its token in its loop's ready list, and its waits. Files: conn.cc (set-up,
// teardown, close, the side channel, state, counters, ring memory), datapath.cc (the non-blocking
// data path and loans), polling.cc (waits: the progress engine, the loop's doorbell, CPU hints,
// order across connections), sync.cc (the synchronous pair's waits in the calling thread).
//
// Contracts (the calls the stream core makes through the JS face):
//   Write(p, n), Writev(iov, count)  never block: copy what fits into the transmit ring and
//                    publish it, large copies kPublishChunk bytes at a time; return the bytes
//                    moved (0: full). Writev takes a whole corked batch, in order, with one
//                    doorbell check per publish.
//   ReadInto(p, n)   copies what is there (at most n) out of the receive ring; 0 when empty.
//   Readable, Writable  bytes a read / a write can move now (0 once closed).
//   ArmRead, ArmWrite   before the caller waits for bytes / space: false means "retry now"
//                    (it is there, or the peer is gone, or closed); true means Owner::OnEvent
//                    will come. The wait is polled by the loop's progress engine for a window
//                    learned per connection (SetPollUs caps it; 0, the default, never polls),
//                    else it sleeps on the loop's doorbell (csrc/progress.h, docs/polling.md).
//   State            kState* bits (csrc/stream_state.h): one call, no syscall.
//   YieldRead        asked before reading more in a turn that already handed bytes over: true
//                    when another endpoint of the loop became ready first; this one is then
//                    queued behind it (OnEvent comes in its turn, docs/polling.md).
//   TxHeadOffset, Commit  the zero-copy loan: where the next byte goes in the transmit ring's
//                    mirrored mapping (no trimming until a write), and publishing n bytes
//                    placed there (0 when n bytes are not free).
//   Shutdown         publishes EOF (a FIN).
//   Close(reset)     a RST when `reset` or when bytes were left unread (as the kernel does for
//                    TCP), else a FIN; rings the peer, closes the side channel (the peer sees it
//                    at once) and frees everything; later calls are no-ops.
//   WriteSync, ReadSync  may block the calling thread: busy-poll for spin_ns (yielding the CPU
//                    between polls if asked), then sleep in poll(2) on the loop's doorbell and
//                    the side channel (sync.cc).
// Owner::OnEvent fires (from the loop) whenever what these return may have changed: the doorbell
// rang for this end, the engine found its wait over, or the side channel changed. It is
// level-free: the owner then asks what is there.
//
// Memory follows the bytes in flight (docs/wire-protocol.md, "Ring memory"): after a write this
// end is watched by its loop's idle timer; once its transmit ring saw no write for a whole tick
// (100-200 ms) it gives the ring's free pages back (RingView::TrimFree), never while a loan is
// outstanding (TxHeadOffset taken, not yet committed or overwritten).
#pragma once

#include <sys/uio.h>
#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>

#include "progress.h"
#include "shm/peer_doorbell.h"
#include "shm/segment.h"
#include "stream_state.h"

namespace fastsock {
namespace shm {

// What a Conn reports to the object that owns it (the JS face), from the loop.
class Owner {
 public:
  // What Readable/Writable/State return may have changed (see the contracts above).
  virtual void OnEvent() = 0;

 protected:
  ~Owner() = default;
};

// What a Conn is made from: the segment's memfd and ring sizes, which side this is, the peer
// loop's doorbell (eventfd, id) and ready list (memfd, node count), and the side-channel socket.
struct Setup {
  int memfd = -1;
  uint32_t c2s_bytes = 0, s2c_bytes = 0;
  bool client = false;
  int peer_doorbell = -1;
  uint64_t peer_doorbell_id = 0;
  int peer_ready = -1;
  uint32_t peer_ready_nodes = 0;
  int side = -1;
};

// memStats(): the size of each ring, the bytes of this end's transmit and receive rings whose
// pages exist now (mincore over one mirror view; -1 when it fails), and how often / how many
// bytes this end gave back (its transmit ring's idle trims). Sizes are 0 once closed.
struct MemStats {
  uint64_t ring_bytes = 0;
  int64_t tx_resident_bytes = 0, rx_resident_bytes = 0;
  uint64_t trims = 0, trimmed_bytes = 0;
};

// This end's view of the segment's mapping, for the JS face's views of it (controlView,
// txRegion). `segment` keeps the mapping alive; header is null once closed.
struct Mapping {
  uint8_t* header = nullptr;  // the header page (wire::kSegmentHeaderBytes): both control blocks
  uint64_t rx_control = 0, tx_control = 0;  // offsets of this end's rings' control blocks in it
  uint8_t* tx_ring = nullptr;  // the transmit ring's mirrored mapping, 2 x tx_ring_size bytes
  uint64_t tx_ring_size = 0;
  std::shared_ptr<Segment> segment;
};

// How a synchronous call ended: `done` bytes moved; err 0, or why it stopped early (a positive
// errno: ETIMEDOUT, ECONNRESET when the peer is gone, EBADF when this end is closed, or poll's);
// peer_reset: the peer published a reset (RST; err is ECONNRESET).
struct SyncResult {
  uint64_t done = 0;
  int err = 0;
  bool peer_reset = false;
};

class Conn : public Pollable {
 public:
  // Takes ownership of the fds of `s`, also when it fails: attaches the segment (checking what a
  // hostile peer could get wrong) and the peer loop's doorbell and ready list, takes a token in
  // `engine`'s ready list and watches the side channel on `loop`. Null with *err (a sentence)
  // when the segment or the ready list is refused.
  static std::unique_ptr<Conn> Open(uv_loop_t* loop, std::shared_ptr<ProgressEngine> engine, const Setup& s,
                                    Owner* owner, std::string* err);
  ~Conn() override;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // ----- data path (datapath.cc) -----
  uint64_t Write(const uint8_t* p, uint64_t n);
  uint64_t Writev(const iovec* iov, size_t count);
  uint64_t ReadInto(uint8_t* p, uint64_t n);
  uint64_t Readable() const { return closed_ ? 0 : rx_.Readable(); }
  uint64_t Writable() const { return closed_ ? 0 : tx_.Writable(); }
  // -1 once closed.
  int64_t TxHeadOffset();
  uint64_t Commit(uint64_t n);

  // ----- waits (polling.cc) -----
  bool ArmRead() { return !closed_ && !peer_gone_ && Await(true); }
  bool ArmWrite() { return !closed_ && !peer_gone_ && Await(false); }
  bool YieldRead();
  // The polling window's cap in µs, in [0, 1e6] (the face checks it); 0 never polls.
  void SetPollUs(double us);

  // ----- the connection (conn.cc) -----
  uint32_t State() const;
  void Shutdown();
  void Close(bool reset);
  // The side channel's watcher holds the loop (as a TCP socket's handle does) unless unref'd.
  void SetRefed(bool on);
  bool closed() const { return closed_; }
  StreamCounters Counters() const;
  MemStats GetMemStats() const;
  Mapping GetMapping() const;
  // Keeps *word's kStateGone and kStateClosed bits current (the JS face's local word, read from
  // JS without a call); null stops it.
  void MirrorState(uint32_t* word);

  // ----- the synchronous pair (sync.cc) -----
  // Every byte of [p, p + n) into the ring (fewer when the peer reset), waiting for space.
  // timeout_ns (0: none) counts from the call's first wait: a call that finds its room (or its
  // bytes) at once reads no clock. `yield`: sched_yield() between the spin's polls (for more
  // spinning threads than CPUs; WaitSync).
  SyncResult WriteSync(const uint8_t* p, uint64_t n, uint64_t spin_ns, uint64_t timeout_ns, bool yield = false);
  // [p, p + n) filled (fewer bytes only at EOF), waiting for bytes; timeout_ns as WriteSync's.
  SyncResult ReadSync(uint8_t* p, uint64_t n, uint64_t spin_ns, uint64_t timeout_ns, bool yield = false);

 private:
  Conn(std::shared_ptr<ProgressEngine> engine, Owner* owner) : engine_(std::move(engine)), owner_(owner) {}

  // Pollable (csrc/progress.h; polling.cc): the ring's control block, read by the loop's engine.
  bool Poll() override;
  void OnPollReady() override;
  void OnPollExpired() override;
  // Asleep on the loop's doorbell (csrc/progress.h).
  bool Woken() override;
  void OnWake() override;
  // The receive ring's ready_ticks when it waits for bytes and they (or a flag) are there.
  uint64_t ReadyStamp() override;
  // Asks the peer to stamp the receive ring (RingControl::want_ticks).
  void WantStamps(bool on) override {
    if (!closed_) rx_.WantTicks(on);
  }
  // The peer's CPU hint (wire::SideHint) is this thread's CPU and the transmit ring holds bytes
  // it has not taken: it needs this CPU to answer.
  bool PartnerNeedsCpu() override { return PeerNeeds(CpuHint()); }
  // The idle timer (csrc/progress.h): gives the transmit ring's free pages back once no write
  // came for a whole tick; true (stop watching) when the ring is drained and trimmed.
  bool OnIdleTick() override;

  // This thread's CPU as a hint value: 1 + sched_getcpu() (glibc reads rseq or the vDSO: no
  // system call), 0 when unknown.
  static uint32_t CpuHint();
  // PartnerNeedsCpu() with this thread's CPU hint `cpu` already read.
  bool PeerNeeds(uint32_t cpu);
  // Writes this thread's CPU into this side's hint line when it changed (one load otherwise);
  // returns it (CpuHint()).
  uint32_t PublishCpu();
  // Raises the waiting flag of each direction asked (r: bytes, w: space) and sleeps on the
  // loop's doorbell: false, asleep for nothing, when an event of either is already there.
  bool SleepIfIdle(bool r, bool w);
  // Sleeps on the loop's doorbell for bytes (read) and/or space (write).
  void SleepFor(bool read, bool write);
  // ArmRead/ArmWrite: joins the engine while the window lasts, else sleeps on the doorbell.
  // True: OnEvent will come; false: retry now.
  bool Await(bool read);
  // A write published bytes: watch for the ring going idle.
  void WroteTx() {
    loaned_ = false;
    if (engine_) engine_->WatchIdle(this);
  }
  // Hands an event to the owner (the wait's event is the owner's now).
  void Notify();
  static void OnSide(uv_poll_t* h, int status, int events);
  void RingPeer();
  bool CheckSide();  // true when the peer is gone
  // After a synchronous call: gives the loop back a doorbell ring or a flag it took (sync.cc).
  void RestoreDoorbell();
  // Waits (spin then poll) until cond() or the peer is gone, at most timeout_ns (0: none) from
  // the call's first wait: *deadline_ns (0 until then) is set at this wait's first clock read
  // and kept for the call's later waits. 0, or -ETIMEDOUT / -ECONNRESET / -errno of poll.
  template <typename Cond>
  int WaitSync(Cond cond, bool arm_read, uint64_t spin_ns, uint64_t timeout_ns, uint64_t* deadline_ns, bool yield);
  void Teardown();
  // Mirrors a kState* bit (kStateGone, kStateClosed) into the owner's local word.
  void PublishLocal(uint32_t bit) {
    if (local_) local_[0] |= bit;
  }

  std::shared_ptr<Segment> seg_;
  RingView tx_, rx_;
  wire::SideHint* own_hint_ = nullptr;   // written by this side (PublishCpu)
  wire::SideHint* peer_hint_ = nullptr;  // written by the peer
  uint64_t tx_start_ = 0, rx_start_ = 0;
  StreamCounters final_;  // Counters() as they were when closed
  std::shared_ptr<PeerDoorbell> peer_;
  int side_fd_ = -1;
  uv_poll_t* side_poll_ = nullptr;
  // The engine of this loop (its doorbell, and adaptive polling), and what the current wait is
  // for (bytes, space, or both) while polled (poll_*) or asleep on the doorbell (sleep_*).
  std::shared_ptr<ProgressEngine> engine_;
  Owner* owner_;
  bool poll_read_ = false, poll_write_ = false;
  bool sleep_read_ = false, sleep_write_ = false;
  bool closed_ = false;
  bool peer_gone_ = false;
  // A synchronous call armed a waiting flag (Arm*Wait): the flag this endpoint may sleep on in
  // its loop was then raised and lowered again without a peer pushing its token (RestoreDoorbell).
  bool sync_armed_ = false;
  bool drained_doorbell_ = false;
  uint64_t sync_tail_seen_ = 0;  // the transmit ring's tail as WriteSync saw it last (PushSeenTail)
  // Ring memory: the transmit ring's head at the last idle tick, the position up to which its
  // free pages were given back (RingView::TrimFree), whether a loan is outstanding, and counters.
  uint64_t idle_seen_head_ = UINT64_MAX;
  uint64_t trimmed_to_ = 0;
  bool loaned_ = false;
  uint64_t trims_ = 0, trimmed_bytes_ = 0;
  uint32_t* local_ = nullptr;  // MirrorState's word
};

}  // namespace shm
}  // namespace fastsock
