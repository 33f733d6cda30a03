// shm::Conn's synchronous pair (WriteSync / ReadSync): the ring protocol of the JS face's
// writeSync / readIntoSync (csrc/shm/endpoint_sync.cc), which may block the calling thread.
//
// A 64 B request/response between two threads costs ~0.2 µs each way here (bench/sync-pair.js):
// the ring's cache-line transfers, kept few, and the JS/native boundary (the face's lean path).
// The writer reads the consumer's tail only when the space it saw last runs out (sync_ring.h),
// the spin reads the clock once per 64 polls (WaitSync), and the doorbell is rung only when the
// peer sleeps (the ring's waiting flags, ring.h).
#include "shm/conn.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>

#include "shm/sync_ring.h"

namespace fastsock {
namespace shm {

template <typename Cond>
int Conn::WaitSync(Cond cond, bool arm_read, uint64_t spin_ns, uint64_t timeout_ns, uint64_t* deadline_ns, bool yield) {
  // The clock is read once per 64 polls, the first time after 64 polls (the spin budget counts
  // from there): a reply that comes within them, the usual case of the pair, costs no clock read.
  // The call's deadline is set by that first read too (timeout_ns from the first wait, not from
  // the call: a call that never waits reads no clock at all, ~25 ns each on this VM).
  // `yield`: sched_yield() after each poll (Open MPI's yield-when-idle), for more spinning threads
  // than CPUs: a peer runnable on this CPU runs now, not after this thread's time slice or a
  // doorbell wake-up. The clock is then read after every poll: a yield may give the CPU away for
  // a whole time slice of another thread (milliseconds under load), and the spin budget and the
  // deadline must still bound the wait (the event loop's timers run between its slices).
  uint64_t start = 0;
  const unsigned clock_mask = yield ? 0 : 63;
  for (unsigned i = 1; spin_ns > 0; i++) {
    if (cond()) return 0;
    if (yield) sched_yield();
    if ((i & clock_mask) == 0) {
      uint64_t now = NowNs();
      if (timeout_ns && *deadline_ns == 0) *deadline_ns = now + timeout_ns;
      if (start == 0) start = now;
      else if (now - start >= spin_ns) break;
      if (*deadline_ns && now >= *deadline_ns) return -ETIMEDOUT;
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
    if (timeout_ns) {
      uint64_t now = NowNs();
      if (*deadline_ns == 0) *deadline_ns = now + timeout_ns;
      if (now >= *deadline_ns) return -ETIMEDOUT;
      timeout = static_cast<int>((*deadline_ns - now + 999999) / 1000000);
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

// After a synchronous call: its waits may have consumed a doorbell ring owed to another endpoint
// of the loop (whose token is still on the list: ringing again is enough), and their Arm*Wait
// may have cleared a waiting flag this endpoint sleeps on in the loop without any peer pushing
// its token (then the loop is told to check it). A call that found its bytes or room while
// spinning armed nothing and costs nothing here: telling the loop after every call (an eventfd
// write) took the synchronous pair from 0.21 to 0.65 µs RTT/2.
void Conn::RestoreDoorbell() {
  bool drained = drained_doorbell_, armed = sync_armed_;
  drained_doorbell_ = sync_armed_ = false;
  if (!engine_) return;
  if (armed && sleep_index >= 0) engine_->WakeSelf(this);
  else if (drained) engine_->RingSelf();
}

// Stops early when the peer reset (with what was written) or when a wait fails; EBADF once closed.
SyncResult Conn::WriteSync(const uint8_t* p, uint64_t n, uint64_t spin_ns, uint64_t timeout_ns, bool yield) {
  SyncResult res;
  uint64_t deadline_ns = 0;  // set by the first wait (WaitSync)
  if (closed_) {
    res.err = EBADF;
    return res;
  }
  while (res.done < n) {
    uint64_t k = PushSeenTail(tx_, &sync_tail_seen_, p + res.done, n - res.done, [this] {
      if (tx_.ConsumerNeedsWake()) RingPeer();
    });
    if (k) {
      res.done += k;
      WroteTx();
      continue;
    }
    if (rx_.ProducerFlags() & wire::kRingReset) break;
    int r = WaitSync([&] { return tx_.Writable() > 0; }, false, spin_ns, timeout_ns, &deadline_ns, yield);
    if (r < 0) {
      res.err = -r;
      break;
    }
  }
  RestoreDoorbell();
  return res;
}

// Stops early at EOF, when the peer reset (peer_reset), or when a wait fails; bytes the peer
// left behind are delivered before its failure. EBADF once closed.
SyncResult Conn::ReadSync(uint8_t* p, uint64_t n, uint64_t spin_ns, uint64_t timeout_ns, bool yield) {
  SyncResult res;
  uint64_t deadline_ns = 0;  // set by the first wait (WaitSync)
  if (closed_) {
    res.err = EBADF;
    return res;
  }
  while (res.done < n) {
    uint64_t k = rx_.Pop(p + res.done, n - res.done);
    if (k) {
      res.done += k;
      if (rx_.ProducerNeedsWake()) RingPeer();
      continue;
    }
    uint32_t f = rx_.ProducerFlags();
    if (f & wire::kRingReset) {
      res.err = ECONNRESET;
      res.peer_reset = true;
      break;
    }
    if (f & wire::kRingEof) break;
    int r = WaitSync([&] { return ReadyOrPrefetch(rx_); }, true, spin_ns, timeout_ns, &deadline_ns, yield);
    if (r < 0) {
      if (rx_.Readable() > 0) continue;  // the peer left data behind: deliver it first
      res.err = -r;
      break;
    }
  }
  RestoreDoorbell();
  return res;
}

}  // namespace shm
}  // namespace fastsock
