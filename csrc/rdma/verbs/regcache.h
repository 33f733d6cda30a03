// The registration cache: memory regions for the caller's buffers, so that a rendezvous (RDMA
// READ from the writer's array, into the reader's) registers a hot buffer once, not per write.
//
// Contract:
//   - Get() returns a registration covering the requested range, with one use counted on it;
//     the caller gives that use back with Release() once the RDMA operation completed.
//   - An entry holds a Hold (below) on its allocation for as long as it lives, so the memory
//     cannot be freed and its address reused under a live registration (the classic
//     registration-cache hazard that UCX solves with memory hooks).
//   - Cached entries cover a whole allocation (later views of it hit) and are evicted least
//     recently used first, by bytes, down to `capacity`; an entry in use is never evicted.
//     Ranges whose allocation is unknown or larger than the capacity get a transient entry,
//     deregistered at its last Release().
// No N-API: the JS face (csrc/rdma/verbs.cc) implements Hold and Holder over JS references.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>

#include "rdma/lib.h"

namespace fastsock {
namespace verbs {

// Memory that belongs to the core's caller (a JS ArrayBuffer or Buffer): while a Hold lives, the
// memory stays allocated at the same address. Only the JS face makes them; the core keeps and
// drops them.
class Hold {
 public:
  virtual ~Hold() = default;
};
using HoldPtr = std::unique_ptr<Hold>;

// Makes a Hold on the allocation of the bytes of one call, only when the core keeps that memory
// past the call (a cache entry, a READ into it): a call that needs none pays nothing.
class Holder {
 public:
  virtual HoldPtr MakeHold() = 0;

 protected:
  ~Holder() = default;
};

// The caller's bytes for one call: [data, data + len), inside the allocation [base, base +
// base_len) that `holder` can hold. base and holder are null when the allocation is unknown (such
// bytes are neither cached nor READ into).
struct CallerBytes {
  uint8_t* data = nullptr;
  size_t len = 0;
  uint8_t* base = nullptr;
  size_t base_len = 0;
  Holder* holder = nullptr;
};

#if FASTSOCK_HAVE_RDMA

struct RegEntry {
  uint8_t* addr = nullptr;
  size_t len = 0;
  ibv_mr* mr = nullptr;
  HoldPtr keep;      // the allocation under the registration
  int inflight = 0;  // Get()s not yet Release()d
  bool cached = false;
};

class RegCache {
 public:
  RegCache(const RdmaLib* L, ibv_pd* pd, size_t capacity) : L_(L), pd_(pd), capacity_(capacity) {}
  ~RegCache() { Clear(); }
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  // A registration covering [p, p + len) of `mem`'s allocation: a cached one when possible (the
  // whole allocation is registered), else a transient one for just that range. Null with *err
  // = errno when the memory cannot be registered (RLIMIT_MEMLOCK, ...).
  RegEntry* Get(const CallerBytes& mem, uint8_t* p, size_t len, int* err);
  // Gives back one use of `e` (null: nothing); a transient entry goes with its last use.
  void Release(RegEntry* e);
  // Deregisters every cached entry no rendezvous is using.
  void EvictIdle() { Evict(SIZE_MAX / 2); }
  // Deregisters everything (the connection is going away).
  void Clear();

  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  size_t bytes_ = 0;  // bytes registered by cached entries
  size_t entries() const { return lru_.size(); }

 private:
  // Evicts idle entries, least recently used first, until `need` more bytes fit the capacity.
  void Evict(size_t need);

  const RdmaLib* L_;
  ibv_pd* pd_;
  size_t capacity_;
  std::list<std::unique_ptr<RegEntry>> lru_;  // most recently used first
  std::list<std::unique_ptr<RegEntry>> transient_;
};

#endif  // FASTSOCK_HAVE_RDMA

}  // namespace verbs
}  // namespace fastsock
