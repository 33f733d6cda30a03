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

// Ping-pong of `bytes`-byte messages between two threads over two of fastsock's SPSC rings
// (csrc/shm/ring.h, 64 KiB each; `bytes` a power of two in [1, 4096]) with the synchronous pair's
// protocol (csrc/shm/sync_ring.h): copy in, publish head, check the doorbell flag (a store-load
// fence); busy-poll head (prefetching the next line), copy out, publish tail, check the flag.
// `iterations` round trips, elapsed nanoseconds (0 for a bad `bytes`): the floor of
// writeSync/readIntoSync, without JS and N-API.
uint64_t RingPingPongNs(uint32_t iterations, uint32_t bytes);

}  // namespace fastsock
