// SPSC byte ring over a RingControl (wire/frame.h) and a data region mapped twice back to back
// (a "mirrored" mapping), so that any run of up to `size` bytes starting anywhere in the ring
// is contiguous in memory: every send and receive is a single memcpy.
//
// Ordering: the producer copies bytes, then publishes head with release; the consumer reads
// head with acquire, copies, then publishes tail with release. The doorbell protocol is
// Dekker-style: the side about to sleep stores its waiting flag, issues a seq_cst fence and
// re-checks the ring; the other side publishes head/tail, fences, and rings (eventfd write)
// only if it sees the flag, clearing it. One of the two always sees the other's store, so no
// wake-up is lost, and a doorbell is rung only when the peer sleeps.
// A ring may be stale: the producer published, was preempted before its fence, the consumer
// read the bytes and slept again (flag raised), then the producer saw that new flag, cleared it
// and rang. The sleeper that finds nothing on a ring must therefore raise its flag again, with
// the same re-check (Rearm*Wait), or it sleeps with no flag while the peer never rings again.
// The producer that clears a consumer's flag (or a consumer, a producer's) pushes that side's
// token onto its loop's ready list before it rings (csrc/ready_list.h): so a sleeper whose flag
// was cleared is always named there, and its loop checks only the sleepers named.
//
// Order across rings: a producer that publishes into an empty ring (bytes, or a flag) stamps
// ready_ticks first (Stamp()), so that a loop finding several rings ready at once hands them to JS
// in the order they became ready (docs/polling.md, "Order across connections").
#pragma once

#include <errno.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "clock.h"
#include "wire/frame.h"

namespace fastsock {

class RingView {
 public:
  RingView() = default;
  RingView(wire::RingControl* ctl, uint8_t* data, uint64_t size) : ctl_(ctl), data_(data), size_(size) {}

  uint64_t size() const { return size_; }
  uint8_t* data() const { return data_; }
  wire::RingControl* control() const { return ctl_; }

  // --- producer side ---
  // Bytes the producer may write now.
  // Clamped to [0, size]: a peer that scribbles on tail cannot make us write out of bounds.
  uint64_t Writable() const { return size_ - InFlight(); }
  // Bytes produced that the consumer has not taken yet, clamped to [0, size].
  uint64_t InFlight() const {
    uint64_t used = ctl_->head.load(std::memory_order_relaxed) - ctl_->tail.load(std::memory_order_acquire);
    return used > size_ ? size_ : used;
  }
  // Where the next byte goes (contiguous for Writable() bytes, thanks to the mirror).
  uint8_t* WritePtr() const { return data_ + (ctl_->head.load(std::memory_order_relaxed) & (size_ - 1)); }
  // Copies up to n bytes in; returns how many. Large copies are published kPublishChunk bytes
  // at a time, and `on_publish` runs after each (the caller rings a sleeping consumer there), so
  // the consumer copies out while the producer still copies in: a large message costs about
  // one memcpy of latency, not two.
  static constexpr uint64_t kPublishChunk = 64 * 1024;
  template <typename OnPublish>
  uint64_t Push(const uint8_t* src, uint64_t n, OnPublish on_publish) {
    uint64_t w = Writable();
    if (n > w) n = w;
    if (n > 0 && w == size_) StampIfWanted();
    uint64_t done = 0;
    while (done < n) {
      uint64_t k = n - done > kPublishChunk ? kPublishChunk : n - done;
      memcpy(WritePtr(), src + done, k);
      Commit(k);
      done += k;
      on_publish();
    }
    return n;
  }
  void Commit(uint64_t n) {
    ctl_->head.store(ctl_->head.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  // Before the Commit (or the flag) that makes an empty ring ready: when it became ready. The
  // release store of head (or of the flags) publishes it with the bytes. One read of the host's
  // tick counter (ReadyTicks: rdtsc, ~10 ns) per message that finds the ring empty, none while
  // the ring holds bytes.
  void Stamp() { ctl_->ready_ticks.store(ReadyTicks(), std::memory_order_relaxed); }
  // Stamp() when the consumer's loop orders several connections (want_ticks, on the flags line
  // the producer reads after the publish anyway: ConsumerNeedsWake).
  void StampIfWanted() {
    if (ctl_->want_ticks.load(std::memory_order_relaxed) != 0) Stamp();
  }
  // After producing: true when the consumer was asleep (flag cleared): ring its doorbell.
  bool ConsumerNeedsWake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return ctl_->consumer_waiting.load(std::memory_order_relaxed) != 0 &&
           ctl_->consumer_waiting.exchange(0, std::memory_order_acq_rel) != 0;
  }
  // The producer is about to sleep waiting for space: returns false if space appeared.
  // The store is a release: the side's ready token (written when its endpoint was made) is
  // visible to the peer that exchanges the flag and pushes the token.
  bool ArmProducerWait() {
    ctl_->producer_waiting.store(1, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (Writable() > 0) {
      ctl_->producer_waiting.store(0, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  // Asleep for space, the doorbell rang: false when space appeared. A cleared flag means the
  // consumer rang, maybe for space this side already took (it exchanged the flag after this
  // side had re-armed it): the flag is raised again, with ArmProducerWait's re-check.
  bool RearmProducerWait() {
    if (ctl_->producer_waiting.load(std::memory_order_acquire) == 0) return ArmProducerWait();
    return Writable() == 0;
  }
  // A flag (EOF, RESET) published into an empty ring makes it ready: stamped as bytes are.
  void SetProducerFlag(uint32_t f) {
    if (InFlight() == 0) StampIfWanted();
    ctl_->producer_flags.fetch_or(f, std::memory_order_release);
  }
  // Gives the whole pages of the free space [head, tail + size) back to the kernel
  // (madvise MADV_REMOVE: a hole punched in the memfd, so both mirror views and the peer's
  // mappings lose them too; a later write faults in zeroed pages). Pages that hold unread bytes
  // stay; the page that holds head stays too unless the ring is drained (head == tail: every
  // page is free). Race-free without the consumer's help: the free space is the producer's
  // alone, tail is read with acquire (the consumer finished copying every byte below it), and
  // the consumer never reads at or beyond head. The caller must not have bytes placed but not
  // committed (a zero-copy loan) in the free space. `*trimmed_to` is the position up to which an
  // earlier call gave pages back: pages from the one after head's up to it are still holes (the
  // producer writes only below head, and position p + size is the page of p), so they are
  // skipped, and it is advanced. Returns the bytes given back, or -errno.
  int64_t TrimFree(uint64_t page_bytes, uint64_t* trimmed_to) {
    uint64_t head = ctl_->head.load(std::memory_order_relaxed);
    uint64_t tail = ctl_->tail.load(std::memory_order_acquire);
    if (head - tail > size_) return -EINVAL;  // a peer scribbled on tail: leave the ring alone
    const uint64_t mask = ~(page_bytes - 1);
    uint64_t from = (head + page_bytes - 1) & mask;
    uint64_t to = (tail + size_) & mask;
    if (from < *trimmed_to) from = *trimmed_to;
    int64_t done = 0;
    if (to > from) {
      if (!Punch(from, to - from)) return -errno;
      *trimmed_to = to;
      done += static_cast<int64_t>(to - from);
    }
    if (head == tail && (head & ~mask) != 0) {
      if (!Punch(head & mask, page_bytes)) return -errno;
      done += static_cast<int64_t>(page_bytes);
    }
    return done;
  }

  // --- consumer side ---
  // Clamped to [0, size]: a peer that scribbles on head cannot make us read out of bounds.
  uint64_t Readable() const {
    uint64_t r = ctl_->head.load(std::memory_order_acquire) - ctl_->tail.load(std::memory_order_relaxed);
    return r > size_ ? size_ : r;
  }
  const uint8_t* ReadPtr() const { return data_ + (ctl_->tail.load(std::memory_order_relaxed) & (size_ - 1)); }
  uint64_t Pop(uint8_t* dst, uint64_t n) {
    uint64_t r = Readable();
    if (n > r) n = r;
    if (n == 0) return 0;
    memcpy(dst, ReadPtr(), n);
    Release(n);
    return n;
  }
  void Release(uint64_t n) {
    ctl_->tail.store(ctl_->tail.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  // After consuming: true when the producer was asleep waiting for space (flag cleared).
  bool ProducerNeedsWake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return ctl_->producer_waiting.load(std::memory_order_relaxed) != 0 &&
           ctl_->producer_waiting.exchange(0, std::memory_order_acq_rel) != 0;
  }
  // The consumer is about to sleep waiting for data: returns false if data (or EOF) appeared.
  bool ArmConsumerWait() {
    ctl_->consumer_waiting.store(1, std::memory_order_release);  // (as ArmProducerWait's)
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (Readable() > 0 || ProducerFlags() != 0) {
      ctl_->consumer_waiting.store(0, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  // Asleep for bytes, the doorbell rang: false when bytes (or EOF) appeared. A cleared flag
  // means the producer rang, maybe for bytes this side already read (it exchanged the flag after
  // this side had re-armed it): the flag is raised again, with ArmConsumerWait's re-check.
  bool RearmConsumerWait() {
    if (ctl_->consumer_waiting.load(std::memory_order_acquire) == 0) return ArmConsumerWait();
    return Readable() == 0 && ProducerFlags() == 0;
  }
  uint32_t ProducerFlags() const { return ctl_->producer_flags.load(std::memory_order_acquire); }
  // Whether the producer should stamp ready_ticks (this consumer's loop has several connections).
  void WantTicks(bool on) { ctl_->want_ticks.store(on ? 1 : 0, std::memory_order_relaxed); }

 private:
  // MADV_REMOVE over ring positions [from, from + len), len <= size: one or two runs of the
  // first mirror view.
  bool Punch(uint64_t from, uint64_t len) {
    uint64_t off = from & (size_ - 1);
    uint64_t first = len < size_ - off ? len : size_ - off;
    if (madvise(data_ + off, first, MADV_REMOVE) != 0) return false;
    return len == first || madvise(data_, len - first, MADV_REMOVE) == 0;
  }

  wire::RingControl* ctl_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace fastsock
