// The ready list of one event loop (wire::ReadyListHeader, docs/wire-protocol.md "The ready
// list"): the memfd a loop's progress engine makes beside its doorbell, through which peers tell
// the loop which of its endpoints they woke, in the order they woke them. The owner (its loop's
// engine, csrc/progress.h) creates it and takes what was pushed; a peer process maps it (once per
// peer loop, with that loop's doorbell: csrc/shm/peer_doorbell.h) and pushes tokens.
//
// Why a linked stack of per-endpoint nodes rather than a bounded ring of tokens (Vyukov's MPMC
// queue): the list is shared by every peer process of the loop, and a ring's slot that a producer
// claimed (tail fetch_add) but never published (killed, or preempted for a time slice) blocks
// every token behind it, from every peer, until it is published; a node that a producer claimed
// but never linked blocks nobody but that node's own connection, whose peer is the one that
// stopped. One node per token also bounds the list (an endpoint is queued at most once: the
// wake-ups of a burst are deduplicated where they are made) and leaves nothing to overflow.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wire/frame.h"

namespace fastsock {

class ReadyList {
 public:
  ~ReadyList();
  ReadyList(const ReadyList&) = delete;
  ReadyList& operator=(const ReadyList&) = delete;

  // The owner's list: a sealed memfd of wire::kReadyNodes nodes, mapped. Null with *err (errno)
  // when it cannot be made (EMFILE, ENOMEM...).
  static std::unique_ptr<ReadyList> Create(int* err);
  // A peer's list, from the memfd it sent: checks everything a hostile peer could get wrong
  // first (a memfd sealed against shrinking and growing, of exactly ReadyListBytes(nodes) bytes,
  // its header's magic, version and node count equal to `nodes`, which is in range). Closes
  // `fd` on success; the caller keeps it on failure (null, *err set).
  static std::unique_ptr<ReadyList> Map(int fd, uint32_t nodes, std::string* err);

  // The owner's memfd, sent to peers with the doorbell (-1 for a peer's mapping, or once closed).
  int fd() const { return fd_; }
  void CloseFd();
  uint32_t nodes() const { return nodes_; }

  // --- producers: a peer waking one of the owner's endpoints, or the owner waking its own ---
  // Queues `token` (its node, unless it is queued already: the loop will find it there); a token
  // out of range (0: the endpoint has none) asks the loop to check every sleeping endpoint.
  void Push(uint32_t token);

  // --- the owning loop only ---
  // True when a push or a scan request waits (two loads of one cache line).
  bool Pending() const {
    return hd_->head.load(std::memory_order_relaxed) != 0 || hd_->scan.load(std::memory_order_relaxed) != 0;
  }
  // Takes everything pushed: appends the tokens to *out oldest first, each below `limit` (the
  // tokens handed out so far: any other was written by a peer, not pushed). True when the loop
  // must also check every sleeping endpoint: a scan request, or a list it cannot follow (a token
  // out of range, a cycle: a peer scribbled on it), whose claims it then clears all (a node left
  // claimed would never be pushed again).
  bool Take(uint32_t limit, std::vector<uint32_t>* out);
  // True while `token`'s node is claimed: pushed and not taken yet, or claimed by a producer that
  // stopped before linking it.
  bool Claimed(uint32_t token) const {
    return token < nodes_ && node_[token].queued.load(std::memory_order_acquire) != 0;
  }

 private:
  ReadyList() = default;
  bool MapFd(int fd, std::string* err);

  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  uint32_t nodes_ = 0;
  int fd_ = -1;
  wire::ReadyListHeader* hd_ = nullptr;
  wire::ReadyNode* node_ = nullptr;
};

}  // namespace fastsock
