// The doorbell of a peer's event loop (docs/wire-protocol.md, "Doorbells"): an eventfd received
// in SHM_SETUP (the client's) or SHM_READY (the server's) with the random 64-bit id of the loop
// that owns it, and that loop's ready list (csrc/ready_list.h), received with it. Every
// connection to the same peer loop shares one copy, so a peer with many connections costs this
// process one fd (the eventfd; the list's memfd is closed once mapped) and one mapping, not one
// per connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ready_list.h"

namespace fastsock {

class PeerDoorbell {
 public:
  // Takes ownership of `fd` (an eventfd the caller checked) and of `list_fd` (the loop's ready
  // list, announced with `nodes` nodes): keeps them as the copy for `id`, or closes them when a
  // live copy for `id` is kept already and returns that one. Null, with both closed and *err
  // set, when the list is refused (ReadyList::Map).
  static std::shared_ptr<PeerDoorbell> Adopt(int fd, int list_fd, uint32_t nodes, uint64_t id, std::string* err);
  ~PeerDoorbell();
  PeerDoorbell(const PeerDoorbell&) = delete;
  PeerDoorbell& operator=(const PeerDoorbell&) = delete;

  // Wakes the peer loop for its endpoint `token` (the peer's SideHint::ready_token): pushes the
  // token onto the loop's ready list, then one eventfd write. The loop then takes the list and
  // checks the endpoints it names, in the order they were pushed (0: it checks them all).
  void Wake(uint32_t token) const {
    list_->Push(token);
    Ring();
  }
  int fd() const { return fd_; }

 private:
  PeerDoorbell(int fd, std::unique_ptr<ReadyList> list, uint64_t id) : fd_(fd), id_(id), list_(std::move(list)) {}
  void Ring() const;
  int fd_;
  uint64_t id_;
  std::unique_ptr<ReadyList> list_;
};

// Parses a doorbell id as the JS side carries it (16 hex digits); false when malformed.
bool ParseDoorbellId(const std::string& hex, uint64_t* id);
// The id as 16 lower-case hex digits.
std::string FormatDoorbellId(uint64_t id);

}  // namespace fastsock
