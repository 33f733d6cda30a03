#include "rdma/probe.h"

#include "rdma/lib.h"

#include <errno.h>
#include <string.h>

namespace fastsock {

Napi::Value RdmaProbeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RdmaLib* L = Rdma();
  Napi::Object o = Napi::Object::New(env);
  Napi::Array devs = Napi::Array::New(env);
  o.Set("loaded", L->ok);
  o.Set("rsocket", L->ok && L->rsocket_ok);
  o.Set("rdmacmVersion", L->rdmacm_version);
  // Whether this librdmacm limits rsockets per process (lib.h: rsocket_svc_bug).
  o.Set("rsocketSvcBug", L->ok && L->rsocket_ok && L->rsocket_svc_bug);
  o.Set("error", L->error);
  o.Set("devices", devs);
#if FASTSOCK_HAVE_RDMA
  if (!L->ok) return o;
  // How rdma-core keeps registered memory safe across fork() (ibv_fork_init(3)): 'unneeded'
  // (the kernel copies pinned pages at fork, 5.13+), 'enabled' (registered ranges are
  // MADV_DONTFORK: a child loses those pages), 'disabled'.
  switch (L->ibv_is_fork_initialized()) {
    case IBV_FORK_UNNEEDED: o.Set("fork", "unneeded"); break;
    case IBV_FORK_ENABLED: o.Set("fork", "enabled"); break;
    default: o.Set("fork", "disabled"); break;
  }
  int n = 0;
  ibv_device** list = L->ibv_get_device_list(&n);
  if (!list) {
    o.Set("error", std::string("ibv_get_device_list: ") + strerror(errno));
    return o;
  }
  for (int i = 0; i < n; i++) {
    Napi::Object d = Napi::Object::New(env);
    d.Set("name", L->ibv_get_device_name(list[i]));
    const char* tt = list[i]->transport_type == IBV_TRANSPORT_IWARP ? "iwarp"
                     : list[i]->transport_type == IBV_TRANSPORT_IB  ? "ib"
                                                                     : "other";
    d.Set("transport", tt);
    Napi::Array ports = Napi::Array::New(env);
    if (ibv_context* ctx = L->ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (L->ibv_query_device(ctx, &attr) == 0) {
        for (uint8_t p = 1; p <= attr.phys_port_cnt; p++) {
          ibv_port_attr pa{};
          if ((L->ibv_query_port)(ctx, p, reinterpret_cast<_compat_ibv_port_attr*>(&pa)) != 0) continue;
          Napi::Object po = Napi::Object::New(env);
          po.Set("port", p);
          po.Set("active", pa.state == IBV_PORT_ACTIVE);
          po.Set("linkLayer", pa.link_layer == IBV_LINK_LAYER_ETHERNET     ? "Ethernet"
                              : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                                                                            : "unspecified");
          ports.Set(ports.Length(), po);
        }
      }
      L->ibv_close_device(ctx);
    }
    d.Set("ports", ports);
    devs.Set(devs.Length(), d);
  }
  L->ibv_free_device_list(list);
#endif
  return o;
}

}  // namespace fastsock
