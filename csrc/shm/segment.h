// The shared-memory segment of one `shm` connection: a sealed memfd holding the header and both
// rings (wire/frame.h), mapped with each ring mirrored. Created by the client, validated by the
// server before it touches anything else.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "shm/ring.h"
#include "wire/frame.h"

namespace fastsock {

class Segment {
 public:
  ~Segment();
  // Creates a sealed memfd for rings of c2s/s2c bytes (powers of two, >= 4 KiB) and writes its
  // header; it is not mapped (each end maps it with Attach). Returns the memfd, or -errno with
  // *err set.
  static int Create(uint32_t c2s, uint32_t s2c, std::string* err);
  // Maps a memfd received from a peer after checking everything a hostile peer could get wrong:
  // it is a memfd sealed against shrinking and growing, its size is exactly header + rings,
  // the header's magic, version and ring sizes are valid and equal `c2s`/`s2c`.
  // Closes memfd on success (the mappings keep the memory: no fd per connection); the caller
  // keeps it on failure.
  static std::shared_ptr<Segment> Attach(int memfd, uint32_t c2s, uint32_t s2c, std::string* err);

  // The ring this side produces into / consumes from.
  RingView Tx(bool client) const { return client ? c2s_ : s2c_; }
  RingView Rx(bool client) const { return client ? s2c_ : c2s_; }
  // The CPU hint line this side writes / the other side writes (wire::SideHint).
  wire::SideHint* Hint(bool client) const { return client ? &header_->client_hint : &header_->server_hint; }
  // The header page (kSegmentHeaderBytes, mapped shared): both rings' control blocks.
  uint8_t* header() const { return reinterpret_cast<uint8_t*>(header_); }
  // Replaces this side's mappings of the memfd with private zero pages (MAP_NORESERVE: no memory
  // until written) over the same addresses: the shared pages are no longer mapped here (they go
  // once the peer has unmapped too), while JS views of the range stay valid, reading zeros, until
  // the last holder drops the Segment and the destructor unmaps it. Used at close instead of
  // detaching the views (ShmEndpoint::ControlView says why); Conn::Teardown calls it once.
  void Release();

 private:
  Segment() = default;
  bool Map(int memfd, std::string* err);

  uint32_t c2s_bytes_ = 0, s2c_bytes_ = 0;
  uint8_t* base_ = nullptr;   // header, c2s twice, s2c twice (Map's diagram)
  uint64_t map_bytes_ = 0;
  wire::SegmentHeader* header_ = nullptr;
  RingView c2s_, s2c_;
};

// True for a power of two in [kMinRingBytes, kMaxRingBytes].
bool ValidRingBytes(uint64_t n);

}  // namespace fastsock
