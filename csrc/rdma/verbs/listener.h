// The verbs rung's listener core: an RDMA CM id listening on one local address, which checks each
// CONNECT_REQUEST's private data (csrc/wire/verbs.h), rejects what it cannot serve, and accepts
// the rest into Conns. No N-API: VerbsListener (csrc/rdma/verbs.cc) is its JS face.
//
// Contract:
//   Open()        binds and listens, synchronously: port `port` in the IB port space on
//                 InfiniBand/RoCE devices, `iwarp_port` in the TCP port space on iWARP devices
//                 (where the TCP listener holds `port`). False with *err (ENODEV: no RDMA device
//                 has that address; EADDRINUSE; ...). The listener's uv_poll does not keep the
//                 loop alive (the TCP listener decides that).
//   on_connection receives each connection once it is established (from the loop); it owns the
//                 Conn from then on. Requests with a missing or foreign private data are
//                 REJECTED (kVerbsRejectVersion), those it cannot allocate for with
//                 kVerbsRejectResources; set-ups that fail later are dropped silently.
//   Close()       stops listening and drops the set-ups in progress; idempotent.
#pragma once

#if FASTSOCK_HAVE_RDMA
#include <uv.h>

#include <functional>
#include <set>
#include <string>

#include "rdma/lib.h"
#include "rdma/verbs/conn.h"
#include "rdma/verbs/options.h"

namespace fastsock {
namespace verbs {

class Listener {
 public:
  Listener(uv_loop_t* loop, const Options& o) : loop_(loop), L_(Rdma()), opt_(o) {}
  ~Listener() { Close(); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  bool Open(const sockaddr_storage& addr, int port, int iwarp_port, int backlog, SetupError* err);
  void Close();

  std::function<void(Conn* c)> on_connection;

  bool iwarp() const { return iwarp_; }
  int port() const { return port_; }  // the RDMA CM port listened on
  const std::string& device() const { return device_; }

 private:
  void OnEvent();

  uv_loop_t* loop_;
  const RdmaLib* L_;
  Options opt_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  uv_poll_t* poll_ = nullptr;
  bool iwarp_ = false;
  int port_ = 0;
  std::string device_;
  std::set<Conn*> pending_;  // accepted, not established yet
};

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
