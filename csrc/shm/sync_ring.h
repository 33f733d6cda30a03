// The synchronous pair's ring helpers (shm::Conn::WriteSync/ReadSync in csrc/shm/sync.cc, and
// the ring floor of csrc/native_limits.cc).
#pragma once

#include <cstdint>
#include <cstring>

#include "shm/ring.h"

namespace fastsock {

// RingView::Push, but the free space comes from `*tail_seen`, the tail this writer saw last (a
// lower bound: tail only grows, so the space is never overstated), and tail is read again only
// when that leaves less than `n` bytes. The consumer's tail line then stays in its own cache:
// read by the producer on every message, each tail store costs the consumer a cache-line
// transfer, which its store-load fence (RingView::ProducerNeedsWake) waits for before its reply
// can start (~50 ns of a 64 B half round trip here). Returns the bytes pushed (0: full).
template <typename OnPublish>
uint64_t PushSeenTail(RingView& tx, uint64_t* tail_seen, const uint8_t* src, uint64_t n, OnPublish on_publish) {
  const uint64_t size = tx.size();
  const uint64_t head = tx.control()->head.load(std::memory_order_relaxed);
  uint64_t used = head - *tail_seen;
  if (used > size || size - used < n) {
    *tail_seen = tx.control()->tail.load(std::memory_order_acquire);
    used = head - *tail_seen;
    if (used >= size) return 0;  // full, or a peer scribbled on tail
  }
  if (n > size - used) n = size - used;
  // Stamped only when the tail seen says empty: a stale tail (a lower bound) may hide an empty
  // ring, and reading tail again for the stamp would cost the line transfer this function avoids.
  if (n > 0 && used == 0) tx.StampIfWanted();
  for (uint64_t done = 0; done < n;) {
    uint64_t k = n - done > RingView::kPublishChunk ? RingView::kPublishChunk : n - done;
    memcpy(tx.WritePtr(), src + done, k);
    tx.Commit(k);
    done += k;
    on_publish();
  }
  return n;
}

// The spin of a reader waiting for bytes: true when bytes (or EOF/RST flags) are there. Else it
// prefetches the line the next byte will be in, so that the copy-out after head moves finds it
// here (the producer's write took it away, the prefetch brings it back as soon as written): the
// copy then costs no second cache-line transfer after head's (~40 ns of a 64 B half round trip).
inline bool ReadyOrPrefetch(const RingView& rx) {
  if (rx.Readable() > 0 || rx.ProducerFlags() != 0) return true;
  __builtin_prefetch(rx.ReadPtr(), 0, 3);
  return false;
}

}  // namespace fastsock
