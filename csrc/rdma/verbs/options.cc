#include "rdma/verbs/options.h"

#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>

#include "native_limits.h"

namespace fastsock {
namespace verbs {
namespace {

// The copy bandwidth of this host (bytes/ns), measured once: half of the eager/rendezvous
// trade-off (an eager byte is copied twice; a rendezvous costs a round trip more).
double CopyBytesPerNs() {
  static double bw = [] {
    const size_t n = 256 * 1024;
    const uint32_t iterations = 8;
    return static_cast<double>(n) * iterations / static_cast<double>(std::max<uint64_t>(MemcpyTimeNs(n, iterations), 1));
  }();
  return bw;
}

}  // namespace

size_t Options::DefaultRegCacheBytes() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) return std::min<size_t>(64u << 20, rl.rlim_cur / 4);
  return 64u << 20;
}

uint32_t ChooseThreshold(uint64_t half_rtt_ns, uint32_t eager_bytes) {
  double bytes = static_cast<double>(half_rtt_ns) * CopyBytesPerNs() / 2.0;
  uint32_t t = eager_bytes;
  while (t < bytes && t < (4u << 20)) t <<= 1;
  return t;
}

bool DebugOn() {
  static bool on = [] {
    const char* v = getenv("FASTSOCK_DEBUG");
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
  }();
  return on;
}

}  // namespace verbs
}  // namespace fastsock
