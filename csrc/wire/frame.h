// The parts of docs/wire-protocol.md that native code reads or writes: the shared-memory
// segment of the `shm` rung. (The side-channel messages are encoded in lib/wire.ts.)
//
// Segment layout (one memfd, created and sealed by the client):
//
//   offset 0            4096                     4096 + C                4096 + C + S
//   +-------------------+------------------------+-----------------------+
//   | SegmentHeader     | ring data c2s (C bytes) | ring data s2c (S bytes)|
//   | + 2 RingControl   |  client -> server       |  server -> client      |
//   +-------------------+------------------------+-----------------------+
//
// C and S are powers of two, multiples of the page size, 4 KiB .. 256 MiB.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fastsock {
namespace wire {

constexpr uint32_t kSegmentMagic = 0x4d485346;  // 'FSHM' read as a little-endian u32
constexpr uint32_t kSegmentVersion = 1;
constexpr uint32_t kSegmentHeaderBytes = 4096;
constexpr uint32_t kMinRingBytes = 4096;
constexpr uint32_t kMaxRingBytes = 256u << 20;
constexpr size_t kCacheLine = 64;

// producer_flags
constexpr uint32_t kRingEof = 1;    // the producer wrote its last byte (end(): a FIN)
constexpr uint32_t kRingReset = 2;  // the producer's end was destroyed with data unread (a RST)

// Control block of one SPSC byte ring. head and tail count bytes since the start (never wrap;
// 2^64 bytes is centuries at memory speed); data lives at (position & (size - 1)).
struct alignas(kCacheLine) RingControl {
  /* 1st cacheline: written by the producer */
  std::atomic<uint64_t> head;            // bytes produced
  std::atomic<uint32_t> producer_flags;  // kRingEof | kRingReset
  uint32_t pad0;
  char pad1[kCacheLine - 16];
  /* 2nd cacheline: written by the consumer */
  std::atomic<uint64_t> tail;  // bytes consumed
  char pad2[kCacheLine - 8];
  /* 3rd cacheline: doorbell flags, set by the side about to sleep, cleared by the side that
     rings its doorbell (an eventfd write) */
  std::atomic<uint32_t> consumer_waiting;  // the consumer sleeps until head moves (or EOF)
  std::atomic<uint32_t> producer_waiting;  // the producer sleeps until tail moves
  char pad3[kCacheLine - 8];
};
static_assert(sizeof(RingControl) == 3 * kCacheLine, "RingControl is three cache lines");
static_assert(offsetof(RingControl, tail) == kCacheLine, "tail on the 2nd cache line");
static_assert(offsetof(RingControl, consumer_waiting) == 2 * kCacheLine, "flags on the 3rd line");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "lock-free 64-bit atomics in shared memory");

// One line per side of the connection, written by that side only (docs/wire-protocol.md, "CPU
// hints"): the CPU it last ran on when it began a wait or took an event, so that the other side
// does not busy-poll for a reply that needs its own CPU (csrc/progress.h, "holds"). A hint, never
// trusted for memory safety: any value is harmless.
struct alignas(kCacheLine) SideHint {
  std::atomic<uint32_t> cpu;  // 1 + the CPU number; 0: unknown (not yet written, or an older peer)
  char pad[kCacheLine - 4];
};

struct SegmentHeader {
  uint32_t magic;          // kSegmentMagic
  uint32_t version;        // kSegmentVersion
  uint32_t header_bytes;   // kSegmentHeaderBytes: where ring data starts
  uint32_t ring_bytes_c2s; // C
  uint32_t ring_bytes_s2c; // S
  uint32_t reserved[11];   // zero
  RingControl c2s;         // at offset 64
  RingControl s2c;         // at offset 256
  SideHint client_hint;    // at offset 448
  SideHint server_hint;    // at offset 512
};
static_assert(offsetof(SegmentHeader, c2s) == 64, "c2s control at 64");
static_assert(offsetof(SegmentHeader, s2c) == 256, "s2c control at 256");
static_assert(offsetof(SegmentHeader, client_hint) == 448, "client hint at 448");
static_assert(offsetof(SegmentHeader, server_hint) == 512, "server hint at 512");
static_assert(sizeof(SegmentHeader) <= kSegmentHeaderBytes, "header fits its page");

}  // namespace wire
}  // namespace fastsock
