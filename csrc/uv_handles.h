// libuv handles the native endpoints own (shm, verbs): watching an fd with a uv_poll, and closing
// a handle whose memory is freed in its close callback. No N-API here, so protocol cores that
// live on a loop (csrc/rdma/verbs/) can use it; csrc/loop_util.h adds the JS-facing helpers.
#pragma once
#include <fcntl.h>
#include <uv.h>

namespace fastsock {

// Closes a heap-allocated handle; its memory is freed once libuv has finished with it.
template <typename Handle>
void CloseHandle(Handle* h) {
  if (!h) return;
  uv_close(reinterpret_cast<uv_handle_t*>(h), [](uv_handle_t* x) { delete reinterpret_cast<Handle*>(x); });
}

// Makes `fd` non-blocking and watches it for readability on `loop`: a new uv_poll with `data`
// set, started with `cb`. Stop it with ClosePoll (after clearing data).
inline uv_poll_t* WatchReadable(uv_loop_t* loop, int fd, void* data, uv_poll_cb cb) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  auto* p = new uv_poll_t;
  uv_poll_init(loop, p, fd);
  p->data = data;
  uv_poll_start(p, UV_READABLE, cb);
  return p;
}

inline void ClosePoll(uv_poll_t* p) {
  if (!p) return;
  uv_poll_stop(p);
  CloseHandle(p);
}

}  // namespace fastsock
