#include "ready_list.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sealed_memfd.h"


namespace fastsock {
namespace {
// The most nodes a peer's list may announce (a mapping of 128 MiB): anything larger is refused.
constexpr uint32_t kMaxPeerNodes = 1u << 24;
}  // namespace

ReadyList::~ReadyList() {
  if (base_) munmap(base_, bytes_);
  CloseFd();
}

void ReadyList::CloseFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool ReadyList::MapFd(int fd, std::string* err) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *err = std::string("mmap of the ready list failed: ") + strerror(errno);
    return false;
  }
  base_ = static_cast<uint8_t*>(p);
  hd_ = reinterpret_cast<wire::ReadyListHeader*>(base_);
  node_ = reinterpret_cast<wire::ReadyNode*>(base_ + wire::kReadyNodesOffset);
  return true;
}

std::unique_ptr<ReadyList> ReadyList::Create(int* err) {
  // The pages exist only once touched: a node's page when its token is first pushed.
  int fd = CreateSealedMemfd("fastsock-ready", wire::ReadyListBytes(wire::kReadyNodes));
  if (fd < 0) {
    *err = -fd;
    return nullptr;
  }
  std::unique_ptr<ReadyList> l(new ReadyList());
  l->fd_ = fd;  // closed by the destructor on any failure below
  l->nodes_ = wire::kReadyNodes;
  l->bytes_ = wire::ReadyListBytes(l->nodes_);
  std::string why;
  if (!l->MapFd(fd, &why)) {
    *err = errno ? errno : ENOMEM;
    return nullptr;
  }
  l->hd_->magic = wire::kReadyMagic;
  l->hd_->version = wire::kReadyVersion;
  l->hd_->nodes = l->nodes_;
  return l;
}

std::unique_ptr<ReadyList> ReadyList::Map(int fd, uint32_t nodes, std::string* err) {
  if (nodes < 2 || nodes > kMaxPeerNodes) {
    *err = "the ready list's node count is out of range";
    return nullptr;
  }
  if (const char* why = SealedMemfdProblem(fd, wire::ReadyListBytes(nodes))) {
    *err = std::string("the ready list: ") + why;
    return nullptr;
  }
  std::unique_ptr<ReadyList> l(new ReadyList());
  l->nodes_ = nodes;
  l->bytes_ = wire::ReadyListBytes(nodes);
  if (!l->MapFd(fd, err)) return nullptr;
  if (l->hd_->magic != wire::kReadyMagic || l->hd_->version != wire::kReadyVersion || l->hd_->nodes != nodes) {
    *err = "the ready list's header does not match the handshake";
    return nullptr;
  }
  close(fd);
  return l;
}

// llist_add: claim the node (one push until the loop takes it), link it on top. The release CAS
// publishes `next`, and everything the producer did before (the bytes, the cleared flag), to the
// loop's acquire exchange in Take (every push is a read-modify-write of head: one release
// sequence).
void ReadyList::Push(uint32_t token) {
  if (token == 0 || token >= nodes_) {
    hd_->scan.store(1, std::memory_order_release);
    return;
  }
  wire::ReadyNode& n = node_[token];
  if (n.queued.exchange(1, std::memory_order_acq_rel) != 0) return;
  uint32_t top = hd_->head.load(std::memory_order_relaxed);
  do {
    n.next.store(top, std::memory_order_relaxed);
  } while (!hd_->head.compare_exchange_weak(top, token, std::memory_order_release, std::memory_order_relaxed));
}

// llist_del_all, then llist_reverse_order. Each node's `next` is read before its claim is
// cleared: from then on a producer may push it again (and rewrite `next`). Clearing with an
// exchange (acquire) makes what a producer did before it found the node still claimed (and so
// did not push it: the bytes it published) visible to the check the loop makes next.
bool ReadyList::Take(uint32_t limit, std::vector<uint32_t>* out) {
  bool scan = hd_->scan.load(std::memory_order_relaxed) != 0 && hd_->scan.exchange(0, std::memory_order_acq_rel) != 0;
  if (hd_->head.load(std::memory_order_relaxed) == 0) return scan;
  if (limit > nodes_) limit = nodes_;
  const size_t first = out->size();
  bool broken = false;
  for (uint32_t t = hd_->head.exchange(0, std::memory_order_acq_rel); t != 0;) {
    // A token never handed out, or more tokens than exist (a cycle): not what producers push.
    if (t >= limit || out->size() - first >= limit) {
      broken = true;
      break;
    }
    wire::ReadyNode& n = node_[t];
    uint32_t next = n.next.load(std::memory_order_relaxed);
    n.queued.exchange(0, std::memory_order_acq_rel);
    out->push_back(t);
    t = next;
  }
  std::reverse(out->begin() + static_cast<std::ptrdiff_t>(first), out->end());
  if (broken) {
    // What followed the break is lost: every sleeping endpoint is checked instead, and no node
    // stays claimed (its producer would skip it for good).
    for (uint32_t t = 1; t < limit; t++) node_[t].queued.store(0, std::memory_order_release);
    scan = true;
  }
  return scan;
}

}  // namespace fastsock
