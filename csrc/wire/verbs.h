// The `verbs` rung's wire format, byte for byte (docs/wire-protocol.md, "verbs"). All integers
// are little-endian (the only byte order fastsock runs on; static_assert below). Application
// bytes travel as they are.
//
// Connection: RDMA CM, reliable connected (RC) queue pair. Each side's VerbsPrivateData rides in
// the CM REQ (client) and REP (server). A server that refuses answers REJ with a
// VerbsPrivateData whose reject_reason is non-zero.
//
// Messages (two-sided SENDs into pre-posted receive buffers of `eager_bytes` each):
//   VerbsHeader, then `length` payload bytes for kData, a VerbsRts for kRts, a VerbsRndvFin for
//   kRndvFin, nothing for the others.
// Credits (flow control): a sender may SEND only into a receive buffer the peer has posted.
// Each side starts with `credits` = the peer's receive-buffer count and spends one per SEND;
// every header returns, in `credits`, how many receive buffers its sender re-posted since its
// previous header. kData and kRts need 2 credits (one stays in reserve), the control messages
// (kCredit, kRndvFin, kFin, kRst) 1, so credit returns can always flow. kFlagStarved in a
// header asks the peer to return credits at once.
// Rendezvous (large writes, >= the rendezvous threshold): the sender registers its buffer and
// sends kRts {addr, rkey, length, id}; the receiver RDMA READs the bytes straight into the
// destination (the caller's typed array when a readInto() is waiting for at least that many
// bytes, else a fresh Buffer that becomes the next 'data' chunk), then sends kRndvFin {id}. The
// sender's write completes only then: zero copies on both sides.
#pragma once
#include <cstdint>

namespace fastsock {
namespace wire {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "fastsock's wire format is little-endian");

constexpr uint32_t kVerbsMagic = 0x56534146;  // "FASV" in memory order
constexpr uint16_t kVerbsVersion = 1;

enum VerbsReject : uint16_t {
  kVerbsRejectNone = 0,
  kVerbsRejectVersion = 1,    // private data missing, wrong magic or version
  kVerbsRejectBusy = 2,       // maxConnections, or the server is not accepting
  kVerbsRejectResources = 3,  // the server could not create the queue pair or its buffers
};

struct VerbsPrivateData {
  uint32_t magic;           // kVerbsMagic
  uint16_t version;         // kVerbsVersion
  uint16_t reject_reason;   // VerbsReject (REJ only)
  uint32_t eager_bytes;     // payload bytes each of the sender's receive buffers holds
  uint32_t credits;         // receive buffers the sender has posted (the peer's initial credits)
  uint32_t rndv_threshold;  // client: the threshold both ends use (bytes); server: echoed
  uint32_t reserved;        // 0
};
static_assert(sizeof(VerbsPrivateData) == 24, "VerbsPrivateData is 24 bytes (fits an IB CM REQ)");

enum VerbsMsgType : uint8_t {
  kVerbsData = 1,
  kVerbsRts = 2,
  kVerbsRndvFin = 3,
  kVerbsCredit = 4,
  kVerbsFin = 5,
  kVerbsRst = 6,
};

constexpr uint8_t kVerbsFlagStarved = 1;

struct VerbsHeader {
  uint8_t type;      // VerbsMsgType
  uint8_t flags;     // kVerbsFlagStarved
  uint16_t credits;  // receive buffers re-posted since the sender's previous header
  uint32_t length;   // kData: payload bytes that follow; otherwise 0
};
static_assert(sizeof(VerbsHeader) == 8, "VerbsHeader is 8 bytes");

struct VerbsRts {
  uint64_t addr;    // remote virtual address of the source bytes
  uint32_t rkey;    // their memory region's remote key
  uint32_t length;  // bytes to READ
  uint32_t id;      // echoed in kRndvFin
  uint32_t reserved;
};
static_assert(sizeof(VerbsRts) == 24, "VerbsRts is 24 bytes");

constexpr uint32_t kVerbsRndvDeclined = 0xffffffff;

struct VerbsRndvFin {
  uint32_t id;
  // 0: the bytes were READ. kVerbsRndvDeclined: the receiver could not register memory for
  // them; the sender sends the same bytes eager instead (they come next in the stream).
  uint32_t status;
};
static_assert(sizeof(VerbsRndvFin) == 8, "VerbsRndvFin is 8 bytes");

}  // namespace wire
}  // namespace fastsock
