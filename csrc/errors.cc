#include "errors.h"

#include <errno.h>
#include <string.h>
#include <uv.h>

namespace fastsock {
namespace {

Napi::Error Make(Napi::Env env, const std::string& code, const std::string& message, int err, const char* syscall) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  if (err) e.Set("errno", Napi::Number::New(env, -err));
  if (syscall) e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

// The name libuv gives a positive errno ("ECONNREFUSED"), as util.getSystemErrorName does.
std::string ErrnoName(int err) {
  char buf[64];
  return uv_err_name_r(-err, buf, sizeof buf);
}

}  // namespace

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& message) {
  if (err <= 0) err = EIO;
  return Make(env, ErrnoName(err), message.empty() ? std::string(syscall) + " failed: " + strerror(err) : message, err, syscall);
}

Napi::Error FastsockError(Napi::Env env, const char* code, const std::string& message, int err, const char* syscall) {
  return Make(env, code, message, err, syscall);
}

Napi::TypeError ArgTypeError(Napi::Env env, const std::string& message) {
  Napi::TypeError e = Napi::TypeError::New(env, message);
  e.Set("code", Napi::String::New(env, "ERR_INVALID_ARG_TYPE"));
  return e;
}

Napi::RangeError ArgRangeError(Napi::Env env, const std::string& message) {
  Napi::RangeError e = Napi::RangeError::New(env, message);
  e.Set("code", Napi::String::New(env, "ERR_OUT_OF_RANGE"));
  return e;
}

}  // namespace fastsock
