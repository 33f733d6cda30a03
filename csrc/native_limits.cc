#include "native_limits.h"

#include "clock.h"
#include "shm/sync_ring.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <memory>
#include <thread>

namespace fastsock {
uint64_t MemcpyTimeNs(size_t bytes, uint32_t iterations) {
  size_t alloc = bytes ? (bytes + 4095) & ~static_cast<size_t>(4095) : 4096;
  void* src = nullptr;
  void* dst = nullptr;
  if (posix_memalign(&src, 4096, alloc) != 0) return 0;
  if (posix_memalign(&dst, 4096, alloc) != 0) {
    free(src);
    return 0;
  }
  memset(src, 0x5a, alloc);
  memset(dst, 0, alloc);
  memcpy(dst, src, bytes);  // warm-up: fault in pages, fill caches
  uint64_t t0 = NowNs();
  for (uint32_t i = 0; i < iterations; i++) {
    memcpy(dst, src, bytes);
    asm volatile("" : : "r"(dst) : "memory");  // keep the copy
  }
  uint64_t t1 = NowNs();
  free(src);
  free(dst);
  return t1 - t0;
}

uint64_t SpinPingPongNs(uint32_t iterations) {
  struct alignas(64) Line {
    std::atomic<uint32_t> v{0};
  };
  Line ping, pong;
  std::thread peer([&] {
    for (uint32_t i = 1; i <= iterations; i++) {
      while (ping.v.load(std::memory_order_acquire) != i) {
      }
      pong.v.store(i, std::memory_order_release);
    }
  });
  uint64_t t0 = NowNs();
  for (uint32_t i = 1; i <= iterations; i++) {
    ping.v.store(i, std::memory_order_release);
    while (pong.v.load(std::memory_order_acquire) != i) {
    }
  }
  uint64_t t1 = NowNs();
  peer.join();
  return t1 - t0;
}

uint64_t RingPingPongNs(uint32_t iterations, uint32_t bytes) {
  constexpr uint64_t kRingBytes = 64 * 1024;
  if (bytes == 0 || bytes > 4096 || (bytes & (bytes - 1)) != 0) return 0;  // never straddles the ring's end
  struct alignas(64) Rings {
    wire::RingControl ctl[2];
    alignas(4096) uint8_t data[2][kRingBytes];
  };
  auto rings = std::make_unique<Rings>();  // zeroed: head = tail = 0, no flags
  RingView ping(&rings->ctl[0], rings->data[0], kRingBytes), pong(&rings->ctl[1], rings->data[1], kRingBytes);
  uint64_t tail_seen[2] = {0, 0};
  // One message each way: in, and wait for the whole reply (ReadIntoSync's loop, no clock).
  auto exchange = [bytes](RingView& tx, uint64_t* seen, RingView& rx, uint8_t* msg) {
    PushSeenTail(tx, seen, msg, bytes, [&tx] { tx.ConsumerNeedsWake(); });
    for (uint32_t got = 0; got < bytes;) {
      uint64_t n = rx.Pop(msg + got, bytes - got);
      if (n == 0) {
        if (!ReadyOrPrefetch(rx)) CpuRelax();
        continue;
      }
      got += static_cast<uint32_t>(n);
      rx.ProducerNeedsWake();
    }
  };
  std::thread peer([&] {
    uint8_t msg[4096] = {};
    for (uint32_t got = 0; got < bytes;) {  // the first request, then reply to each
      uint64_t n = ping.Pop(msg + got, bytes - got);
      got += static_cast<uint32_t>(n);
      if (n) ping.ProducerNeedsWake();
      else if (!ReadyOrPrefetch(ping)) CpuRelax();
    }
    for (uint32_t i = 1; i < iterations; i++) exchange(pong, &tail_seen[1], ping, msg);
    PushSeenTail(pong, &tail_seen[1], msg, bytes, [&] { pong.ConsumerNeedsWake(); });
  });
  uint8_t msg[4096] = {};
  uint64_t t0 = NowNs();
  for (uint32_t i = 0; i < iterations; i++) exchange(ping, &tail_seen[0], pong, msg);
  uint64_t t1 = NowNs();
  peer.join();
  return t1 - t0;
}

}  // namespace fastsock
