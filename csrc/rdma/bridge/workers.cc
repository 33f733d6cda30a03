#include "rdma/bridge/workers.h"

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace fastsock {
namespace bridge {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

Worker* Registry::Add(const void* owner) {
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto* w = new Worker();
  w->id = ++next_id_;
  w->stop_efd = efd;
  w->owner = owner;
  live_[w->id] = w;
  return w;
}

void Registry::Remove(Worker* w) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(w->id);
    close(w->stop_efd);
    delete w;
  }
  cv_.notify_all();
}

bool Registry::Stop(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  Signal(it->second);
  return true;
}

bool Registry::Track(const void* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  return owners_.insert(owner).second;
}

void Registry::StopAndWait(const void* owner) {
  std::unique_lock<std::mutex> lock(mu_);
  if (owner != nullptr) owners_.erase(owner);
  auto mine = [&] {
    for (auto& kv : live_)
      if (owner == nullptr || kv.second->owner == owner) return true;
    return false;
  };
  for (auto& kv : live_)
    if (owner == nullptr || kv.second->owner == owner) Signal(kv.second);
  cv_.wait_for(lock, std::chrono::milliseconds(kStopWaitMs), [&] { return !mine(); });
}

size_t Registry::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

Registry* Registry::Get() {
  static Registry* r = [] {
    auto* reg = new Registry();
    std::atexit([] { Get()->StopAndWait(nullptr); });
    return reg;
  }();
  return r;
}

void Registry::Signal(Worker* w) {
  uint64_t one = 1;
  ssize_t n = write(w->stop_efd, &one, sizeof one);
  (void)n;
}

}  // namespace bridge
}  // namespace fastsock
