// Calling into JS from a libuv callback (no JS frame below us). A JS exception must not become a
// C++ exception here (nothing would catch it: std::terminate); it goes to Node's
// 'uncaughtException' machinery, exactly as an exception in a Node-core callback does. While the
// environment is shutting down (a worker being terminated) JS cannot run: the call is dropped.
#pragma once
#include <napi.h>

namespace fastsock {

inline void CallFromLoop(napi_env env, napi_value fn, napi_value recv, size_t argc, const napi_value* argv,
                         napi_async_context ctx) {
  napi_value result;
  napi_status st = napi_make_callback(env, ctx, recv, fn, argc, argv, &result);
  if (st == napi_pending_exception) {
    napi_value exc;
    if (napi_get_and_clear_last_exception(env, &exc) == napi_ok) napi_fatal_exception(env, exc);
  }
}

}  // namespace fastsock
