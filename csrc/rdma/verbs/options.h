// The verbs rung's tunables and the rendezvous threshold chosen from measured attributes. No
// N-API: csrc/rdma/verbs.cc reads the JS options object into an Options within these bounds.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fastsock {
namespace verbs {

// Bounds of the options (a value outside them is a RangeError at the JS face).
constexpr uint32_t kMinEagerBytes = 256, kMaxEagerBytes = 1u << 20;
constexpr uint32_t kMinCredits = 4, kMaxCredits = 1024;  // the protocol keeps 1 of them in reserve
// VerbsRts.length is 32 bits: larger writes are split into rendezvous chunks of at most this.
constexpr uint32_t kMaxRndvChunk = 1u << 30;

struct Options {
  uint32_t eager_bytes = 16 * 1024;  // payload bytes per receive/send buffer
  uint32_t credits = 32;             // receive buffers posted (and send buffers)
  uint32_t rndv_threshold = 0;       // bytes; 0: choose from measured attributes (client) / take the client's (server)
  size_t reg_cache_bytes = DefaultRegCacheBytes();  // the registration cache's capacity

  // The registration cache may pin at most a quarter of RLIMIT_MEMLOCK (some drivers, siw among
  // them, enforce it even for root), 64 MiB when unlimited.
  static size_t DefaultRegCacheBytes();
};

// rndvThreshold from measured attributes: the size at which copying the bytes twice (eager: into
// the send buffer, out of the receive buffer) costs as much as the rendezvous' extra round trip
// (RTS, READ, FIN), given the one-way latency `half_rtt_ns`, rounded up to a power of two, within
// [eager_bytes, 4 MiB].
uint32_t ChooseThreshold(uint64_t half_rtt_ns, uint32_t eager_bytes);

// FASTSOCK_DEBUG, as lib/debug.ts reads it: failures that JS only sees as "the peer is gone" are
// then printed to stderr.
bool DebugOn();

}  // namespace verbs
}  // namespace fastsock
