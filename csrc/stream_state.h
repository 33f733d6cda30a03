// The state bits every handle-less stream endpoint (shm, verbs) reports from state(), defined
// once here and exported to JS as `native.streamState` (lib/native.ts), so the stream core never
// spells a bare number. One call, no syscall: the bits describe what the endpoint already knows.
// Beside them, the byte counters both report from counters(). No N-API: the protocol cores use it.
#pragma once

#include <cstdint>

namespace fastsock {

enum StreamState : int {
  kStateEof = 1,        // the peer published EOF (a FIN): read what is left, then end
  kStateReset = 2,      // the peer reset the connection: ECONNRESET on the next read
  kStateGone = 4,       // the peer is gone without EOF (process died, side channel closed)
  kStateClosed = 8,     // this endpoint is closed: every call is a no-op
  kStateReadable = 16,  // unread bytes are waiting in the receive path
};

// counters(): the bytes an endpoint's stream moved since it was made (written into it, read out
// of it); once it is closed, the values it had when it closed.
struct StreamCounters {
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
};

}  // namespace fastsock
