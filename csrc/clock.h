// The monotonic clock in nanoseconds and a spin-wait hint, for timing and busy-polling.
#pragma once
#include <time.h>

#include <cstdint>

namespace fastsock {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A host-wide tick count for ordering events across processes (docs/polling.md, "Order across
// connections": when a ring became ready): the TSC on x86-64 (~10 ns: rdtsc, against ~25 ns for
// clock_gettime's vDSO here), the virtual counter on arm64 (cntvct_el0), CLOCK_MONOTONIC (ns)
// elsewhere. Every process of one host reads the same counter, so ticks compare across them;
// only compared with each other, never converted to time. A TSC the kernel does not keep in step
// across CPUs (old hardware) only makes the order less exact.
inline uint64_t ReadyTicks() {
#if defined(__x86_64__)
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return static_cast<uint64_t>(hi) << 32 | lo;
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return NowNs();
#endif
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace fastsock
