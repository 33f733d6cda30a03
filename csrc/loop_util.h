// Small helpers shared by the native endpoints (shm, verbs): clocks, the bytes of a JS view,
// and closing a uv_poll whose memory is freed in its close callback.
#pragma once
#include <napi.h>
#include <time.h>
#include <uv.h>

#include <cstdint>

namespace fastsock {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

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

template <typename Handle>
void CloseHandle(Handle* h) {
  if (!h) return;
  uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* x) { delete reinterpret_cast<Handle*>(x); });
}

inline void ClosePoll(uv_poll_t* p) {
  if (!p) return;
  uv_poll_stop(p);
  CloseHandle(p);
}

}  // namespace fastsock
