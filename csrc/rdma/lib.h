// rdma-core, opened at run time. libibverbs and librdmacm are dlopen'ed on first use, so the
// addon loads (and every other rung works) on hosts without rdma-core; the RDMA rungs are then
// absent and Rdma()->error says why. The headers come from Debian's libibverbs-dev and
// librdmacm-dev at build time; without them FASTSOCK_HAVE_RDMA is 0 and Rdma() always reports
// "built without rdma-core headers".
//
// Only exported functions are resolved here. The data-path calls (ibv_post_send, ibv_post_recv,
// ibv_poll_cq, ibv_req_notify_cq) are static inline in verbs.h and jump through the device's
// ops table, so they need no symbol. Nothing in csrc/ may call an ibv_*/rdma_*/r* function
// directly: `nm -D -u` of the addon must show none (test/native-symbols.test.js checks).
#pragma once

#if FASTSOCK_HAVE_RDMA
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#endif

#include <string>

namespace fastsock {

#if FASTSOCK_HAVE_RDMA
#define FASTSOCK_RDMA_FN(name) decltype(&::name) name = nullptr;
struct RdmaLib {
  bool ok = false;        // both libraries loaded and every symbol resolved
  bool rsocket_ok = false; // the rsocket API resolved (librdmacm >= 1.0.16)
  std::string error;      // why not, when !ok
  // rdma-core's release as the loaded librdmacm's file name says (librdmacm.so.1.3.<major>.<minor>),
  // "" when the name does not say.
  std::string rdmacm_version;
  // The rsocket service threads' stale-pointer bug (rdma-core commit 24061f015, "rsockets: Fix
  // for cm_svc_run thread"; fixed in v53.0 and the stable releases 30.14 ... 52.1): a service
  // thread whose poll set grows while it runs polls freed memory (csrc/rdma/bridge/svc.h works
  // around it). True when the loaded release predates the fix (or cannot be told).
  bool rsocket_svc_bug = true;
  // libibverbs
  FASTSOCK_RDMA_FN(ibv_get_device_list)
  FASTSOCK_RDMA_FN(ibv_free_device_list)
  FASTSOCK_RDMA_FN(ibv_get_device_name)
  FASTSOCK_RDMA_FN(ibv_open_device)
  FASTSOCK_RDMA_FN(ibv_close_device)
  FASTSOCK_RDMA_FN(ibv_query_device)
  FASTSOCK_RDMA_FN(ibv_query_port)
  FASTSOCK_RDMA_FN(ibv_alloc_pd)
  FASTSOCK_RDMA_FN(ibv_dealloc_pd)
  FASTSOCK_RDMA_FN(ibv_reg_mr)
  FASTSOCK_RDMA_FN(ibv_dereg_mr)
  FASTSOCK_RDMA_FN(ibv_create_comp_channel)
  FASTSOCK_RDMA_FN(ibv_destroy_comp_channel)
  FASTSOCK_RDMA_FN(ibv_create_cq)
  FASTSOCK_RDMA_FN(ibv_destroy_cq)
  FASTSOCK_RDMA_FN(ibv_get_cq_event)
  FASTSOCK_RDMA_FN(ibv_ack_cq_events)
  FASTSOCK_RDMA_FN(ibv_fork_init)
  FASTSOCK_RDMA_FN(ibv_is_fork_initialized)
  FASTSOCK_RDMA_FN(ibv_wc_status_str)
  // librdmacm: connection manager
  FASTSOCK_RDMA_FN(rdma_create_event_channel)
  FASTSOCK_RDMA_FN(rdma_destroy_event_channel)
  FASTSOCK_RDMA_FN(rdma_create_id)
  FASTSOCK_RDMA_FN(rdma_destroy_id)
  FASTSOCK_RDMA_FN(rdma_bind_addr)
  FASTSOCK_RDMA_FN(rdma_resolve_addr)
  FASTSOCK_RDMA_FN(rdma_resolve_route)
  FASTSOCK_RDMA_FN(rdma_create_qp)
  FASTSOCK_RDMA_FN(rdma_destroy_qp)
  FASTSOCK_RDMA_FN(rdma_connect)
  FASTSOCK_RDMA_FN(rdma_listen)
  FASTSOCK_RDMA_FN(rdma_accept)
  FASTSOCK_RDMA_FN(rdma_reject)
  FASTSOCK_RDMA_FN(rdma_disconnect)
  FASTSOCK_RDMA_FN(rdma_get_cm_event)
  FASTSOCK_RDMA_FN(rdma_ack_cm_event)
  FASTSOCK_RDMA_FN(rdma_migrate_id)
  FASTSOCK_RDMA_FN(rdma_event_str)
  FASTSOCK_RDMA_FN(rdma_get_devices)
  FASTSOCK_RDMA_FN(rdma_free_devices)
  // librdmacm: rsockets
  FASTSOCK_RDMA_FN(rsocket)
  FASTSOCK_RDMA_FN(rbind)
  FASTSOCK_RDMA_FN(rlisten)
  FASTSOCK_RDMA_FN(raccept)
  FASTSOCK_RDMA_FN(rconnect)
  FASTSOCK_RDMA_FN(rshutdown)
  FASTSOCK_RDMA_FN(rclose)
  FASTSOCK_RDMA_FN(rrecv)
  FASTSOCK_RDMA_FN(rsend)
  FASTSOCK_RDMA_FN(rpoll)
  FASTSOCK_RDMA_FN(rgetpeername)
  FASTSOCK_RDMA_FN(rgetsockname)
  FASTSOCK_RDMA_FN(rsetsockopt)
  FASTSOCK_RDMA_FN(rgetsockopt)
  FASTSOCK_RDMA_FN(rfcntl)
};
#undef FASTSOCK_RDMA_FN
#else
struct RdmaLib {
  bool ok = false;
  bool rsocket_ok = false;
  std::string error = "built without rdma-core headers (libibverbs-dev, librdmacm-dev)";
  std::string rdmacm_version;
  bool rsocket_svc_bug = true;
};
#endif

// Rsockets one rsocket service thread (listen_svc: listening rsockets; connect_svc: accepted and
// non-blocking-connected ones) holds without growing its poll set when it first starts (rdma-core
// allocates 4 slots, slot 0 its own socket).
constexpr int kRsocketSvcSafeSlots = 3;

// The process-wide rdma-core binding, loaded on the first call (thread-safe). Never null.
// Loading also calls ibv_fork_init() (fork safety, see docs/transports.md) before any memory is
// registered, unless RDMAV_FORK_SAFE / IBV_FORK_SAFE already asked rdma-core to do so.
const RdmaLib* Rdma();

}  // namespace fastsock
