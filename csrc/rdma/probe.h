// rdmaProbe(): what rdma-core offers on this host, for `fastsock probe` and rung availability.
#pragma once
#include <napi.h>

namespace fastsock {

// rdmaProbe() -> { loaded: boolean, rsocket: boolean, error: string, fork?: 'unneeded'|'enabled'|'disabled',
//                  devices: [{ name, transport: 'ib'|'iwarp'|'other', ports: [{ port, active,
//                             linkLayer: 'InfiniBand'|'Ethernet'|'unspecified' }] }] }
Napi::Value RdmaProbeJs(const Napi::CallbackInfo& info);

}  // namespace fastsock
