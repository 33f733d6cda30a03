// The addon's one way to build a JS error. Bad arguments are not failures: ArgTypeError and
// ArgRangeError build them as Node's own argument errors (a TypeError with `code`
// ERR_INVALID_ARG_TYPE, a RangeError with ERR_OUT_OF_RANGE), thrown where they are checked.
// Every failure made here has `code`:
//   - a failed system (or rdma-core) call: `code` is the errno's name as libuv and Node spell it
//     ('EADDRINUSE'), `errno` the negative number (-98) and `syscall` the call, as Node's own
//     system errors (uvException in lib/internal/errors.js);
//   - a failure of fastsock's own: `code` is an ERR_FASTSOCK_* name (every one the addon throws is
//     in lib/errors.ts's FastsockErrorCode), with `errno` and `syscall` when a system error lies
//     beneath it.
// Used where an error is thrown or handed to a callback; functions whose callers treat an errno
// as a normal outcome return -errno numbers instead (lib/native.ts says which).
#pragma once
#include <napi.h>

#include <string>

namespace fastsock {

// Thrown when rdma-core (libibverbs, librdmacm, or librdmacm's rsocket API) cannot be used.
constexpr char kErrNoRdma[] = "ERR_FASTSOCK_NO_RDMA";

// A failed call `syscall` with positive errno `err` (0 counts as EIO). `message` defaults to
// "<syscall> failed: <strerror(err)>".
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& message = "");

// A fastsock failure with code `code` (ERR_FASTSOCK_*); `err` (positive errno, 0 for none) and
// `syscall` (nullptr for none) when a failed call lies beneath it.
Napi::Error FastsockError(Napi::Env env, const char* code, const std::string& message, int err = 0,
                          const char* syscall = nullptr);

// An argument of the wrong type: a TypeError with code ERR_INVALID_ARG_TYPE (Node's).
Napi::TypeError ArgTypeError(Napi::Env env, const std::string& message);

// An argument outside its range: a RangeError with code ERR_OUT_OF_RANGE (Node's).
Napi::RangeError ArgRangeError(Napi::Env env, const std::string& message);

}  // namespace fastsock
