// The `verbs` rung: a byte stream over an RDMA reliable-connected queue pair, set up with RDMA
// CM, speaking the iodev protocols (thesis 4.2.3; wire format in csrc/wire/verbs.h):
//   eager       short writes are copied into pre-registered send buffers and SENT into the
//               peer's pre-posted receive buffers, under credit-based flow control;
//   rendezvous  writes of at least `rndvThreshold` bytes are announced (RTS) and RDMA READ by the
//               receiver straight from the caller's registered buffer into the destination
//               (the reader's typed array when one is waiting), zero copies; the registration
//               cache keeps hot buffers registered.
// Completions arrive on a completion channel whose fd sits on a uv_poll; with setPollUs(us) > 0
// a waiting connection is first busy-polled (ibv_poll_cq) by its loop's progress engine for a
// window learned per connection, at most `us`, before it arms the CQ and sleeps on the channel
// (csrc/progress.h, docs/polling.md; lib/ passes pollUs, 200 unless set). RDMA CM events
// (disconnect) have their own channel fd on a uv_poll.
//
// Files: the protocol core has no N-API: verbs/conn.h (one connection: set-up in conn.cc, the
// data path in protocol.cc, its waits in polling.cc; the contracts of the data-path calls),
// verbs/listener.h, verbs/regcache.h, verbs/options.h. verbs.cc is the JS face (N-API only there).
//
// JS faces (see lib/native.ts for the shapes; errors carry code, errno and syscall, or code
// ERR_FASTSOCK_NO_RDMA when rdma-core cannot be loaded):
//   verbsConnect(addr, port, iwarpPort, options, cb(err, endpoint, info))
//   new VerbsListener(addr, port, iwarpPort, backlog, options, onconnection(endpoint, info))
//   VerbsEndpoint: the ShmEndpoint surface the stream pump drives (write, readInto, read, and
//   readable, writable, armRead, armWrite, state, shutdown, close, ref, unref, counters,
//   setPollUs, pollStats, bound once for both in csrc/endpoint_face.h), setOnEvent(fn) and
//   stats().
#pragma once
#include <napi.h>

namespace fastsock {

// Registers VerbsEndpoint, VerbsListener and verbsConnect on `exports` (no-ops without rdma-core
// headers: the rung is then absent).
void InitVerbs(Napi::Env env, Napi::Object exports);

}  // namespace fastsock
