#include "rdma/verbs/regcache.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdma/verbs/options.h"

namespace fastsock {
namespace verbs {

RegEntry* RegCache::Get(const CallerBytes& mem, uint8_t* p, size_t len, int* err) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    RegEntry* e = it->get();
    if (p >= e->addr && p + len <= e->addr + e->len) {
      hits_++;
      lru_.splice(lru_.begin(), lru_, it);
      e->inflight++;
      return e;
    }
  }
  misses_++;
  bool cache = mem.holder && mem.base && mem.base_len <= capacity_;
  uint8_t* addr = cache ? mem.base : p;
  size_t n = cache ? mem.base_len : len;
  if (cache) Evict(n);
  ibv_mr* mr = (L_->ibv_reg_mr)(pd_, addr, n, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) {
    *err = errno ? errno : ENOMEM;
    if (DebugOn()) fprintf(stderr, "fastsock %d verbs: registering %zu bytes failed: %s\n", getpid(), n, strerror(*err));
    return nullptr;
  }
  auto e = std::make_unique<RegEntry>();
  e->addr = addr;
  e->len = n;
  e->mr = mr;
  e->inflight = 1;
  e->cached = cache;
  if (mem.holder) e->keep = mem.holder->MakeHold();
  RegEntry* raw = e.get();
  if (cache) {
    bytes_ += n;
    lru_.push_front(std::move(e));
  } else {
    transient_.push_back(std::move(e));
  }
  return raw;
}

void RegCache::Release(RegEntry* e) {
  if (!e) return;
  e->inflight--;
  if (e->cached || e->inflight > 0) return;
  for (auto it = transient_.begin(); it != transient_.end(); ++it) {
    if (it->get() == e) {
      L_->ibv_dereg_mr(e->mr);
      transient_.erase(it);
      return;
    }
  }
}

void RegCache::Clear() {
  for (auto& e : lru_) L_->ibv_dereg_mr(e->mr);
  for (auto& e : transient_) L_->ibv_dereg_mr(e->mr);
  lru_.clear();
  transient_.clear();
  bytes_ = 0;
}

void RegCache::Evict(size_t need) {
  for (auto it = lru_.end(); (need > capacity_ || bytes_ + need > capacity_) && it != lru_.begin();) {
    --it;
    if ((*it)->inflight > 0) continue;
    L_->ibv_dereg_mr((*it)->mr);
    bytes_ -= (*it)->len;
    evictions_++;
    it = lru_.erase(it);
  }
}

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
