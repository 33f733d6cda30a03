// shm::Conn's non-blocking data path (conn.h states the contracts): writes into the transmit
// ring, reads out of the receive ring, and the zero-copy loan. A doorbell is rung only when the
// peer sleeps (the rings' waiting flags, ring.h).
#include "shm/conn.h"

#include <string.h>

namespace fastsock {
namespace shm {

uint64_t Conn::Write(const uint8_t* p, uint64_t n) {
  if (closed_ || n == 0) return 0;
  uint64_t done = tx_.Push(p, n, [this] {
    if (tx_.ConsumerNeedsWake()) RingPeer();
  });
  if (done) WroteTx();
  return done;
}

// One call and one doorbell check for a whole corked batch; a large batch is published
// kPublishChunk bytes at a time, as Write does.
uint64_t Conn::Writev(const iovec* iov, size_t count) {
  if (closed_) return 0;
  const uint64_t room = tx_.Writable();
  uint8_t* dst = tx_.WritePtr();  // contiguous for `room` bytes (the mirror)
  uint64_t done = 0, pending = 0;
  bool empty = room == tx_.size();  // the first publish makes the ring ready: stamped
  auto publish = [&] {
    if (empty) tx_.StampIfWanted(), empty = false;
    tx_.Commit(pending);
    pending = 0;
    if (tx_.ConsumerNeedsWake()) RingPeer();
  };
  for (size_t i = 0; i < count && done < room; i++) {
    const uint8_t* p = static_cast<const uint8_t*>(iov[i].iov_base);
    const uint64_t len = iov[i].iov_len;
    for (uint64_t off = 0; off < len && done < room;) {
      uint64_t k = len - off;
      if (k > room - done) k = room - done;
      if (k > RingView::kPublishChunk - pending) k = RingView::kPublishChunk - pending;
      memcpy(dst + done, p + off, k);
      off += k;
      done += k;
      pending += k;
      if (pending == RingView::kPublishChunk) publish();
    }
  }
  if (pending) publish();
  if (done) WroteTx();
  return done;
}

uint64_t Conn::ReadInto(uint8_t* p, uint64_t n) {
  if (closed_ || n == 0) return 0;
  uint64_t got = rx_.Pop(p, n);
  if (got) {
    if (rx_.ProducerNeedsWake()) RingPeer();
    if (poll_window.waiting) poll_window.EndWait(NowNs());
  }
  return got;
}

int64_t Conn::TxHeadOffset() {
  if (closed_) return -1;
  loaned_ = true;  // the caller may now place bytes in the free space: no trimming until a write
  return static_cast<int64_t>(tx_.WritePtr() - tx_.data());
}

uint64_t Conn::Commit(uint64_t n) {
  if (closed_ || n == 0) return 0;
  uint64_t w = tx_.Writable();
  if (n > w) return 0;
  if (w == tx_.size()) tx_.StampIfWanted();
  tx_.Commit(n);
  if (tx_.ConsumerNeedsWake()) RingPeer();
  WroteTx();
  return n;
}

}  // namespace shm
}  // namespace fastsock
