// The doorbell of a peer's event loop (docs/wire-protocol.md, "Doorbells"): an eventfd received
// in SHM_SETUP (the client's) or SHM_READY (the server's) with the random 64-bit id of the loop
// that owns it. Every connection to the same peer loop shares one copy, so a peer with many
// connections costs this process one fd, not one per connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace fastsock {

class PeerDoorbell {
 public:
  // Takes ownership of `fd` (an eventfd the caller checked): keeps it as the copy for `id`, or
  // closes it when a live copy for `id` is kept already and returns that one.
  static std::shared_ptr<PeerDoorbell> Adopt(int fd, uint64_t id);
  ~PeerDoorbell();
  PeerDoorbell(const PeerDoorbell&) = delete;
  PeerDoorbell& operator=(const PeerDoorbell&) = delete;

  // One eventfd write: the peer loop wakes and scans its sleeping endpoints.
  void Ring() const;
  int fd() const { return fd_; }

 private:
  PeerDoorbell(int fd, uint64_t id) : fd_(fd), id_(id) {}
  int fd_;
  uint64_t id_;
};

// Parses a doorbell id as the JS side carries it (16 hex digits); false when malformed.
bool ParseDoorbellId(const std::string& hex, uint64_t* id);
// The id as 16 lower-case hex digits.
std::string FormatDoorbellId(uint64_t id);

}  // namespace fastsock
