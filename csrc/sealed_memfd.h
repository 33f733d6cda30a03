// Sealed memfds shared with a peer process: the shm segment (csrc/shm/segment.cc) and each loop's
// ready list (csrc/ready_list.cc). Sealed against shrinking and growing before any peer sees them,
// so neither end can resize the mapping under the other (SIGBUS).
#pragma once

#include <cstdint>

namespace fastsock {

// A memfd named `name`, `bytes` long (zero), sealed against shrink, grow and further seals.
// Returns the fd, or -errno (nothing left open).
int CreateSealedMemfd(const char* name, uint64_t bytes);

// What is wrong with a memfd a peer sent for a mapping of `bytes`: nullptr when it is sealed
// against resizing and exactly `bytes` long, else the reason ("not a sealable memfd", ...).
const char* SealedMemfdProblem(int fd, uint64_t bytes);

}  // namespace fastsock
