#include "rdma/lib.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
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

// The rdma-core release in the real file name of a loaded library (librdmacm.so.1.3.44.0 ->
// 44, 0), false when it does not end in one.
bool ReleaseOf(void* handle, int* major, int* minor) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return false;
  char real[PATH_MAX];
  if (!realpath(map->l_name, real)) return false;
  const char* base = strrchr(real, '/');
  base = base ? base + 1 : real;
  unsigned a, b, c, d;
  return sscanf(base, "librdmacm.so.%u.%u.%u.%u", &a, &b, &c, &d) == 4 && (*major = c, *minor = d, true);
}

// Whether release major.minor predates rdma-core's fix of the rsocket service thread (commit
// 24061f015: v53.0, backported as the first minor release listed per stable series).
bool HasSvcBug(int major, int minor) {
  if (major >= 53) return false;
  static const int kFixedMinor[][2] = {{52, 1}, {51, 2}, {50, 2}, {49, 3}, {48, 3}, {47, 4}, {46, 5},
                                       {45, 6}, {44, 7}, {43, 7}, {42, 8}, {41, 8}, {40, 8}, {39, 9},
                                       {38, 10}, {37, 11}, {36, 12}, {35, 12}, {34, 13}, {33, 14},
                                       {32, 14}, {31, 15}, {30, 14}};
  for (const auto& f : kFixedMinor)
    if (f[0] == major) return minor < f[1];
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
  int major = 0, minor = 0;
  if (ReleaseOf(cm, &major, &minor)) {
    lib->rdmacm_version = std::to_string(major) + "." + std::to_string(minor);
    lib->rsocket_svc_bug = HasSvcBug(major, minor);
  }
  // Fork safety (rdma-core's ibv_fork_init(3)): must precede every registration, and only where
  // the kernel does not keep registered pages intact across fork itself (5.13+:
  // ibv_is_fork_initialized() == IBV_FORK_UNNEEDED before any init). There it is left out:
  // rdma-core before 51 (commit 5a11b68ca) still turns it on, and then marks every registered
  // range MADV_DONTFORK. fastsock registers the caller's ArrayBuffers, whose pages share malloc's
  // heap with other data, so a child lost those pages: seen in the guest (rdma-core 44.0, kernel
  // 6.12) as execve failing with EFAULT in spawn() while a rendezvous was registered (its argv
  // lay on such a page). Where the kernel has no copy-on-fork, that hazard remains (docs/transports.md).
  int fr = lib->ibv_is_fork_initialized() == IBV_FORK_UNNEEDED ? 0 : lib->ibv_fork_init();
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
