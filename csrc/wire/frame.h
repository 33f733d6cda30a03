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
  // When the producer last made the ring ready from empty, in the host's ticks (csrc/clock.h
  // ReadyTicks: the TSC on x86-64): stored before the head (or flag) that published into an
  // empty ring. The consumer's loop orders connections it finds ready at once by it
  // (docs/polling.md, "Order across connections"); 0: never written. Only an ordering hint: any
  // value is harmless.
  std::atomic<uint64_t> ready_ticks;
  char pad1[kCacheLine - 24];
  /* 2nd cacheline: written by the consumer */
  std::atomic<uint64_t> tail;  // bytes consumed
  char pad2[kCacheLine - 8];
  /* 3rd cacheline: doorbell flags, set by the side about to sleep, cleared by the side that
     rings its doorbell (an eventfd write) */
  std::atomic<uint32_t> consumer_waiting;  // the consumer sleeps until head moves (or EOF)
  std::atomic<uint32_t> producer_waiting;  // the producer sleeps until tail moves
  // 1 while the consumer's loop has more than one connection, so that ready_ticks orders
  // something: the producer stamps only then (a lone connection's messages cost no clock read).
  // On this line, which the producer reads after every publish (consumer_waiting) and the
  // consumer writes only to sleep: not beside tail, whose line moves to the consumer with every
  // read (a producer that read it per message, as writeSync's cached tail avoids, paid a line
  // transfer per message: the synchronous pair's RTT/2 went from 0.21 to 0.65 µs).
  std::atomic<uint32_t> want_ticks;
  char pad3[kCacheLine - 12];
};
static_assert(sizeof(RingControl) == 3 * kCacheLine, "RingControl is three cache lines");
static_assert(offsetof(RingControl, ready_ticks) == 16, "ready_ticks beside head");
static_assert(offsetof(RingControl, tail) == kCacheLine, "tail on the 2nd cache line");
static_assert(offsetof(RingControl, want_ticks) == 2 * kCacheLine + 8, "want_ticks on the flags line");
static_assert(offsetof(RingControl, consumer_waiting) == 2 * kCacheLine, "flags on the 3rd line");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "lock-free 64-bit atomics in shared memory");

// One line per side of the connection, written by that side only (docs/wire-protocol.md, "CPU
// hints"): the CPU it last ran on when it began a wait or took an event, so that the other side
// does not busy-poll for a reply that needs its own CPU (csrc/progress.h, "holds"); and the token
// of this side's endpoint in its loop's ready list, which the other side pushes there when it
// wakes this side (ReadyListHeader below). Never trusted for memory safety: any value is harmless
// (a wrong token wakes the wrong endpoint of the writer's own peer loop, which finds nothing).
struct alignas(kCacheLine) SideHint {
  std::atomic<uint32_t> cpu;  // 1 + the CPU number; 0: unknown (not yet written, or an older peer)
  // This side's token in its loop's ready list, written once when its endpoint is made (before
  // it raises any waiting flag); 0: none (its loop's list is full): the waker asks for a scan.
  std::atomic<uint32_t> ready_token;
  char pad[kCacheLine - 8];
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

// The ready list of one event loop (docs/wire-protocol.md, "The ready list"): a sealed memfd the
// loop's progress engine makes with its doorbell and sends with it (SHM_SETUP / SHM_READY), mapped
// by every peer process. A peer that wakes one of this loop's endpoints (it cleared a waiting flag,
// or it closes) pushes that endpoint's token (SideHint::ready_token) onto the list, then rings the
// doorbell; the loop takes the whole list at once and wakes the endpoints it names in the order
// they were pushed, instead of checking every sleeping endpoint. An intrusive multi-producer
// stack (Linux's llist: llist_add / llist_del_all): node i belongs to token i; a producer claims
// a node with `queued` (0 -> 1: pushed at most once until taken), links it with a CAS on `head`;
// the consumer exchanges `head` with 0 and reverses what it took (FIFO). Lock-free: a producer
// stopped at any instruction never blocks another, and one killed before its CAS leaves only
// its own node claimed. Everything here is written by peers: the loop checks every index it reads.
constexpr uint32_t kReadyMagic = 0x4c525346;  // 'FSRL' read as a little-endian u32
constexpr uint32_t kReadyVersion = 1;
constexpr uint32_t kReadyNodes = 1u << 18;  // tokens 1 .. kReadyNodes - 1 (0: none / end of list)

struct ReadyNode {
  std::atomic<uint32_t> next;    // the token pushed before this one (0: the end)
  std::atomic<uint32_t> queued;  // 1 from a producer's claim until the loop takes the node
};
static_assert(sizeof(ReadyNode) == 8, "a ready node is 8 bytes");

struct ReadyListHeader {
  /* 1st cache line: written once by the owner */
  uint32_t magic;    // kReadyMagic
  uint32_t version;  // kReadyVersion
  uint32_t nodes;    // kReadyNodes: the node array's length
  uint32_t reserved[13];
  /* 2nd cache line: written by producers (CAS) and the owning loop (exchange) */
  std::atomic<uint32_t> head;  // the token pushed last (0: empty)
  // A producer had no usable token (0, or out of range): the loop checks every sleeping endpoint.
  std::atomic<uint32_t> scan;
  char pad[kCacheLine - 8];
  // then, at kReadyNodesOffset: ReadyNode node[nodes], node i for token i (node 0 unused)
};
constexpr uint64_t kReadyNodesOffset = 2 * kCacheLine;
static_assert(offsetof(ReadyListHeader, head) == kCacheLine, "head on the 2nd cache line");
static_assert(sizeof(ReadyListHeader) == kReadyNodesOffset, "nodes right after the header");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "lock-free 32-bit atomics in shared memory");

// The ready list's memfd size for `nodes` nodes.
constexpr uint64_t ReadyListBytes(uint32_t nodes) { return kReadyNodesOffset + sizeof(ReadyNode) * nodes; }

}  // namespace wire
}  // namespace fastsock
