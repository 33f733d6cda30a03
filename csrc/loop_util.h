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
// One N-API call for a typed array (it is on every write and read: each call costs ~20 ns).
inline uint8_t* BytesOf(const Napi::Value& v, size_t* len) {
  napi_typedarray_type type;
  size_t count = 0;
  void* data = nullptr;
  if (napi_get_typedarray_info(v.Env(), v, &type, &count, &data, nullptr, nullptr) == napi_ok) {
    size_t elem = 1;
    switch (type) {
      case napi_int16_array: case napi_uint16_array: elem = 2; break;
      case napi_int32_array: case napi_uint32_array: case napi_float32_array: elem = 4; break;
      case napi_float64_array: case napi_bigint64_array: case napi_biguint64_array: elem = 8; break;
      default: break;
    }
    *len = count * elem;
    return static_cast<uint8_t*>(data);
  }
  size_t n = 0;
  if (napi_get_dataview_info(v.Env(), v, &n, &data, nullptr, nullptr) == napi_ok) {
    *len = n;
    return static_cast<uint8_t*>(data);
  }
  return nullptr;
}

// True for a TypedArray or DataView: what BytesOf's nullptr means (not a view, or an empty one
// without memory). Checked only when BytesOf found no bytes: no cost on the data path.
inline bool IsView(const Napi::Value& v) { return v.IsTypedArray() || v.IsDataView(); }

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
