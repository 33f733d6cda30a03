#include "rdma/lib.h"

#include <dlfcn.h>
#include <string.h>

#include <mutex>

namespace fastsock {

#if FASTSOCK_HAVE_RDMA
namespace {

// dlopen by soname (the runtime packages libibverbs1 / librdmacm1 ship only these).
void* OpenLib(const char* soname, std::string* err) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *err = std::string(soname) + " not loadable: " + (e ? e : "unknown error");
  }
  return h;
}

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* out, std::string* err) {
  dlerror();
  void* p = dlsym(lib, name);
  if (!p) {
    if (err->empty()) *err = std::string("symbol ") + name + " missing from rdma-core";
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

RdmaLib* Load() {
  auto* lib = new RdmaLib();
  std::string err;
  void* ibv = OpenLib("libibverbs.so.1", &err);
  void* cm = ibv ? OpenLib("librdmacm.so.1", &err) : nullptr;
  if (!ibv || !cm) {
    lib->error = err;
    return lib;
  }
  bool ok = true;
#define R(lib_, name) ok = Resolve(lib_, #name, &lib->name, &err) && ok;
  R(ibv, ibv_get_device_list) R(ibv, ibv_free_device_list) R(ibv, ibv_get_device_name)
  R(ibv, ibv_open_device) R(ibv, ibv_close_device) R(ibv, ibv_query_device) R(ibv, ibv_query_port)
  R(ibv, ibv_alloc_pd) R(ibv, ibv_dealloc_pd) R(ibv, ibv_reg_mr) R(ibv, ibv_dereg_mr)
  R(ibv, ibv_create_comp_channel) R(ibv, ibv_destroy_comp_channel) R(ibv, ibv_create_cq)
  R(ibv, ibv_destroy_cq) R(ibv, ibv_get_cq_event) R(ibv, ibv_ack_cq_events) R(ibv, ibv_fork_init)
  R(ibv, ibv_is_fork_initialized) R(ibv, ibv_wc_status_str)
  R(cm, rdma_create_event_channel) R(cm, rdma_destroy_event_channel) R(cm, rdma_create_id)
  R(cm, rdma_destroy_id) R(cm, rdma_bind_addr) R(cm, rdma_resolve_addr) R(cm, rdma_resolve_route)
  R(cm, rdma_create_qp) R(cm, rdma_destroy_qp) R(cm, rdma_connect) R(cm, rdma_listen)
  R(cm, rdma_accept) R(cm, rdma_reject) R(cm, rdma_disconnect) R(cm, rdma_get_cm_event)
  R(cm, rdma_ack_cm_event) R(cm, rdma_migrate_id) R(cm, rdma_event_str) R(cm, rdma_get_devices)
  R(cm, rdma_free_devices)
  if (!ok) {
    lib->error = err;
    return lib;
  }
  bool rs = true;
  std::string rs_err;
#define RS(name) rs = Resolve(cm, #name, &lib->name, &rs_err) && rs;
  RS(rsocket) RS(rbind) RS(rlisten) RS(raccept) RS(rconnect) RS(rshutdown) RS(rclose) RS(rrecv)
  RS(rsend) RS(rpoll) RS(rgetpeername) RS(rgetsockname) RS(rsetsockopt) RS(rgetsockopt) RS(rfcntl)
#undef R
#undef RS
  lib->rsocket_ok = rs;
  // Fork safety (rdma-core's ibv_fork_init(3)): must precede every registration. On kernels
  // that keep registered pages intact across fork (5.13+, ibv_is_fork_initialized() ==
  // IBV_FORK_UNNEEDED) it is a no-op; elsewhere it marks registered ranges MADV_DONTFORK.
  int fr = lib->ibv_fork_init();
  if (fr != 0) {
    lib->error = std::string("ibv_fork_init failed: ") + strerror(fr);
    return lib;
  }
  lib->ok = true;
  return lib;
}

}  // namespace

const RdmaLib* Rdma() {
  static std::once_flag once;
  static RdmaLib* lib = nullptr;
  std::call_once(once, [] { lib = Load(); });
  return lib;
}
#else
const RdmaLib* Rdma() {
  static RdmaLib lib;
  return &lib;
}
#endif

}  // namespace fastsock
