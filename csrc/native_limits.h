// Native limits printed beside fastsock's figures (docs/benchmarks.md): what the hardware allows
// without any socket in the way. (Not named limits.h: csrc/ is on the include path, and that
// name would shadow the C library's <limits.h> for every system header.)
#pragma once
#include <cstddef>
#include <cstdint>

namespace fastsock {

// Copies `bytes` between two page-aligned buffers `iterations` times (after one warm-up copy) and
// returns the elapsed wall time in nanoseconds. Buffers are allocated once per call.
uint64_t MemcpyTimeNs(size_t bytes, uint32_t iterations);

// Ping-pong of one cache line between two threads that busy-poll a shared flag: `iterations`
// round trips, elapsed nanoseconds. Half of (elapsed / iterations) is the floor for any
// shared-memory half round-trip latency on this machine.
uint64_t SpinPingPongNs(uint32_t iterations);

}  // namespace fastsock
