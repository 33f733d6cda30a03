#include "fdpass.h"

#include "callback.h"
#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <vector>

namespace fastsock {
namespace {
constexpr int kMaxFds = 8;

int FdArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber()) throw ArgTypeError(info.Env(), "fd expected");
  return info[i].As<Napi::Number>().Int32Value();
}
}  // namespace

Napi::Value SendFdsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  if (info.Length() < 3 || !info[1].IsTypedArray() || !info[2].IsArray())
    throw ArgTypeError(env, "sendFds(fd, bytes, fds)");
  Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
  Napi::Array arr = info[2].As<Napi::Array>();
  if (arr.Length() > kMaxFds || bytes.ByteLength() == 0) throw ArgRangeError(env, "1+ bytes and at most 8 fds");
  int fds[kMaxFds];
  for (uint32_t i = 0; i < arr.Length(); i++) fds[i] = arr.Get(i).As<Napi::Number>().Int32Value();
  iovec iov{bytes.Data(), bytes.ByteLength()};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (arr.Length() > 0) {
    msg.msg_control = ctrl;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * arr.Length());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * arr.Length());
    memcpy(CMSG_DATA(c), fds, sizeof(int) * arr.Length());
  }
  ssize_t n;
  do n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return Napi::Number::New(env, n < 0 ? -errno : static_cast<double>(n));
}

Napi::Value RecvFdsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  uint32_t max_bytes = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 512;
  uint32_t max_fds = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().Uint32Value() : kMaxFds;
  if (max_bytes == 0 || max_bytes > 65536 || max_fds > kMaxFds) throw ArgRangeError(env, "recvFds limits");
  std::vector<uint8_t> buf(max_bytes);
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t n;
  do n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Napi::Number::New(env, -errno);
  std::vector<int> got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      int* p = reinterpret_cast<int*>(CMSG_DATA(c));
      for (size_t i = 0; i < k; i++) got.push_back(p[i]);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) || got.size() > max_fds) {
    for (int f : got) close(f);
    return Napi::Number::New(env, -EPROTO);
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytes", Napi::Buffer<uint8_t>::Copy(env, buf.data(), static_cast<size_t>(n)));
  Napi::Array fds = Napi::Array::New(env, got.size());
  for (uint32_t i = 0; i < got.size(); i++) fds.Set(i, got[i]);
  o.Set("fds", fds);
  return o;
}

Napi::Value DupFdJs(const Napi::CallbackInfo& info) {
  int r = fcntl(FdArg(info, 0), F_DUPFD_CLOEXEC, 0);
  return Napi::Number::New(info.Env(), r < 0 ? -errno : r);
}

Napi::Value EventFlagCreateJs(const Napi::CallbackInfo& info) {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return Napi::Number::New(info.Env(), fd < 0 ? -errno : fd);
}

Napi::Value EventFlagRaiseJs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), eventfd_write(FdArg(info, 0), 1) < 0 ? -errno : 0);
}

Napi::Value EventFlagTakeJs(const Napi::CallbackInfo& info) {
  eventfd_t count = 0;
  if (eventfd_read(FdArg(info, 0), &count) == 0) return Napi::Number::New(info.Env(), count > 0 ? 1 : 0);
  return Napi::Number::New(info.Env(), errno == EAGAIN ? 0 : -errno);
}

namespace {
struct Waiter {
  uv_poll_t poll;
  uv_timer_t timer;
  Napi::FunctionReference cb;
  std::unique_ptr<Napi::AsyncContext> ctx;
  int pending_closes = 2;
  bool fired = false;
  int fd = -1;
  bool connecting = false;  // waiting for a non-blocking connect: report SO_ERROR
};

void CloseWaiter(Waiter* w) {
  auto on_close = [](uv_handle_t* h) {
    Waiter* w = static_cast<Waiter*>(h->data);
    if (--w->pending_closes == 0) delete w;
  };
  uv_poll_stop(&w->poll);
  uv_timer_stop(&w->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->poll), on_close);
  uv_close(reinterpret_cast<uv_handle_t*>(&w->timer), on_close);
}

void Fire(Waiter* w, int status) {
  if (w->fired) return;
  w->fired = true;
  // Close the poll before the callback, so the callback may close or hand over the fd: stopping
  // a poll removes its fd *number* from epoll (uv__platform_invalidate_fd), and a number the
  // callback closed may name another socket or doorbell by then (registered in the callback or
  // its microtasks), which would silently stop waking up. `w` lives until both close callbacks.
  CloseWaiter(w);
  Napi::Env env = w->cb.Env();
  Napi::HandleScope scope(env);
  napi_value arg = Napi::Number::New(env, status);
  CallFromLoop(env, w->cb.Value(), env.Global(), 1, &arg, *w->ctx);
}
}  // namespace

namespace {
// Starts a one-shot wait for `events` on fd; see WaitReadableJs / WaitConnectedJs.
void StartWait(const Napi::CallbackInfo& info, int events, const char* usage) {
  Napi::Env env = info.Env();
  int fd = FdArg(info, 0);
  if (info.Length() < 3 || !info[1].IsNumber() || !info[2].IsFunction()) throw ArgTypeError(env, usage);
  uv_loop_t* loop = nullptr;
  napi_get_uv_event_loop(env, &loop);
  Waiter* w = new Waiter();
  w->cb = Napi::Persistent(info[2].As<Napi::Function>());
  w->ctx = std::make_unique<Napi::AsyncContext>(env, "FASTSOCK_WAIT");
  w->poll.data = w;
  w->timer.data = w;
  w->fd = fd;
  w->connecting = (events & UV_WRITABLE) != 0;
  if (int rc = uv_poll_init(loop, &w->poll, fd); rc != 0) {
    delete w;
    throw ErrnoError(env, -rc, "uv_poll_init", std::string(usage) + ": cannot poll this fd");
  }
  uv_timer_init(loop, &w->timer);
  uv_poll_start(&w->poll, events, [](uv_poll_t* h, int status, int) {
    Waiter* w = static_cast<Waiter*>(h->data);
    if (w->connecting) {
      // The outcome of a non-blocking connect is SO_ERROR (0 once connected). libuv reports a
      // POLLERR (a refused connect) as status UV_EBADF: SO_ERROR has the real reason then too.
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) status = -err;
    }
    Fire(w, status < 0 ? status : 0);
  });
  // libuv's loop time is the time of the loop turn's start: after a long synchronous stretch (a
  // slow start-up, an emulated CPU) it lags, and the timeout would fire early by that much.
  uv_update_time(loop);
  uv_timer_start(&w->timer, [](uv_timer_t* h) { Fire(static_cast<Waiter*>(h->data), -ETIMEDOUT); },
                 static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue()), 0);
}
}  // namespace

Napi::Value WaitReadableJs(const Napi::CallbackInfo& info) {
  StartWait(info, UV_READABLE | UV_DISCONNECT, "waitReadable(fd, timeoutMs, cb)");
  return info.Env().Undefined();
}

Napi::Value WaitConnectedJs(const Napi::CallbackInfo& info) {
  StartWait(info, UV_WRITABLE | UV_DISCONNECT, "waitConnected(fd, timeoutMs, cb)");
  return info.Env().Undefined();
}

}  // namespace fastsock
