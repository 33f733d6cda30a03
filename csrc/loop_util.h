// Small helpers shared by the native endpoints' JS faces (shm, verbs): the bytes of a JS view,
// and watching an fd on the loop of an environment. The handle helpers themselves (no N-API)
// are in csrc/uv_handles.h.
#pragma once
#include <napi.h>
#include <uv.h>

#include "clock.h"
#include "uv_handles.h"

#include <cstdint>

namespace fastsock {

// The bytes of a TypedArray or DataView (nullptr for anything else); *len gets the byte length.
inline uint8_t* BytesOf(const Napi::Value& v, size_t* len) {
  if (v.IsTypedArray()) {
    Napi::TypedArray ta = v.As<Napi::TypedArray>();
    Napi::ArrayBuffer ab = ta.ArrayBuffer();
    *len = ta.ByteLength();
    return static_cast<uint8_t*>(ab.Data()) + ta.ByteOffset();
  }
  if (v.IsDataView()) {
    Napi::DataView dv = v.As<Napi::DataView>();
    *len = dv.ByteLength();
    return static_cast<uint8_t*>(dv.ArrayBuffer().Data()) + dv.ByteOffset();
  }
  return nullptr;
}

// The ArrayBuffer behind a TypedArray or DataView (undefined for anything else).
inline Napi::Value ArrayBufferOf(const Napi::Value& v) {
  if (v.IsTypedArray()) return v.As<Napi::TypedArray>().ArrayBuffer();
  if (v.IsDataView()) return v.As<Napi::DataView>().ArrayBuffer();
  return v.Env().Undefined();
}

// The loop of `env` (the main thread's, or a worker's).
inline uv_loop_t* LoopOf(napi_env env) {
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  return loop;
}

// WatchReadable (csrc/uv_handles.h) on the loop of `env`.
inline uv_poll_t* WatchReadable(napi_env env, int fd, void* data, uv_poll_cb cb) {
  return WatchReadable(LoopOf(env), fd, data, cb);
}

}  // namespace fastsock
