#include "shm/peer_doorbell.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fastsock {
namespace {
std::mutex g_mu;
// id -> the kept copy; entries of released doorbells are erased by the destructor.
std::unordered_map<uint64_t, std::weak_ptr<PeerDoorbell>>& Registry() {
  static auto* m = new std::unordered_map<uint64_t, std::weak_ptr<PeerDoorbell>>;
  return *m;
}
}  // namespace

std::shared_ptr<PeerDoorbell> PeerDoorbell::Adopt(int fd, int list_fd, uint32_t nodes, uint64_t id, std::string* err) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& reg = Registry();
  auto it = reg.find(id);
  if (it != reg.end()) {
    if (auto kept = it->second.lock()) {
      close(fd);
      close(list_fd);
      return kept;
    }
  }
  std::unique_ptr<ReadyList> list = ReadyList::Map(list_fd, nodes, err);
  if (!list) {
    close(fd);
    close(list_fd);
    return nullptr;
  }
  std::shared_ptr<PeerDoorbell> d(new PeerDoorbell(fd, std::move(list), id));
  reg[id] = d;
  return d;
}

PeerDoorbell::~PeerDoorbell() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& reg = Registry();
    auto it = reg.find(id_);
    // A newer copy may have replaced this one's expired entry already: leave it.
    if (it != reg.end() && it->second.expired()) reg.erase(it);
  }
  close(fd_);
}

void PeerDoorbell::Ring() const {
  uint64_t one = 1;
  ssize_t r = write(fd_, &one, sizeof one);
  (void)r;  // EAGAIN: the counter is saturated, the peer loop wakes anyway
}

bool ParseDoorbellId(const std::string& hex, uint64_t* id) {
  if (hex.size() != 16) return false;
  uint64_t v = 0;
  for (char c : hex) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *id = v;
  return true;
}

std::string FormatDoorbellId(uint64_t id) {
  char b[17];
  snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(id));
  return b;
}

}  // namespace fastsock
