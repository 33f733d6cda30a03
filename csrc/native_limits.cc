#include "native_limits.h"

#include "clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
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

}  // namespace fastsock
