// One binding of the JS methods the stream endpoints' faces share: ShmEndpoint
// (csrc/shm/endpoint.h, over shm::Conn) and VerbsEndpoint (csrc/rdma/verbs.cc, over verbs::Conn).
// The stream core (lib/stream/endpoint-stream.ts) drives both through the same StreamEndpoint
// table (lib/transports/contract.ts); what it calls on both with one meaning is bound here, once,
// so the two faces check arguments, build errors and answer after close() the same way:
//
//   readable(), writable()  bytes a read / a write can move now; 0 once closed
//   armRead(), armWrite()   false: retry now; true: the endpoint's event will come; false once
//                           closed (state() says why)
//   state()                 the kState* bits (csrc/stream_state.h); kStateClosed alone once closed
//   shutdown(), close(reset), ref(), unref()  (no-ops once closed: the cores')
//   counters()              [bytesWritten, bytesRead] since creation; after close(), the values
//                           it had when it closed (both cores keep them)
//   setPollUs(us)           the polling window's cap in µs, a number in [0, 1e6] (0: never poll);
//                           TypeError ERR_INVALID_ARG_TYPE for a non-number (or none), RangeError
//                           ERR_OUT_OF_RANGE for a negative, non-finite or larger value
//   pollStats()             { windowUs, maxUs, hot, hits, misses, spinNs, lastWaitUs }
//
// and the one check of write(view) / readInto(view)'s view (NotAViewError): each face reads the
// view's bytes its own way (shm: one N-API call on the hot path; verbs: with a hold on its
// ArrayBuffer for a rendezvous), so those methods stay the face's.
//
// A face is `class F : public Napi::ObjectWrap<F>, public EndpointFace<F>` with `core()` giving
// its protocol core (friend EndpointFace<F> when private), which has: bool closed() const;
// Readable(), Writable() (byte counts); bool ArmRead(), ArmWrite(); State() (kState* bits);
// void Shutdown(), Close(bool reset), SetRefed(bool), SetPollUs(double us);
// StreamCounters Counters() const; PollStats GetPollStats() const (a Pollable's).
#pragma once
#include <napi.h>
#include <stdio.h>

#include <string>
#include <vector>

#include "errors.h"
#include "progress_js.h"
#include "stream_state.h"

namespace fastsock {

// write(view) / readInto(view) given something else than a TypedArray or DataView.
inline Napi::TypeError NotAViewError(Napi::Env env, const char* call) {
  return ArgTypeError(env, std::string(call) + ": view must be a TypedArray or DataView");
}

template <typename Face>
class EndpointFace {
 public:
  using Wrap = Napi::ObjectWrap<Face>;
  using Props = std::vector<typename Wrap::PropertyDescriptor>;

  // Appends the shared methods to a face's own, for DefineClass.
  static void AddMethods(Props* props) {
    props->insert(props->end(), {
                                    Wrap::InstanceMethod("readable", &EndpointFace::Readable),
                                    Wrap::InstanceMethod("writable", &EndpointFace::Writable),
                                    Wrap::InstanceMethod("armRead", &EndpointFace::ArmRead),
                                    Wrap::InstanceMethod("armWrite", &EndpointFace::ArmWrite),
                                    Wrap::InstanceMethod("state", &EndpointFace::State),
                                    Wrap::InstanceMethod("shutdown", &EndpointFace::Shutdown),
                                    Wrap::InstanceMethod("close", &EndpointFace::Close),
                                    Wrap::InstanceMethod("ref", &EndpointFace::Ref),
                                    Wrap::InstanceMethod("unref", &EndpointFace::Unref),
                                    Wrap::InstanceMethod("counters", &EndpointFace::Counters),
                                    Wrap::InstanceMethod("setPollUs", &EndpointFace::SetPollUs),
                                    Wrap::InstanceMethod("pollStats", &EndpointFace::PollStats),
                                });
  }

 private:
  Face& face() { return *static_cast<Face*>(this); }
  auto& core() { return face().core(); }

  Napi::Value Readable(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core().closed() ? 0.0 : static_cast<double>(core().Readable()));
  }
  Napi::Value Writable(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), core().closed() ? 0.0 : static_cast<double>(core().Writable()));
  }
  Napi::Value ArmRead(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !core().closed() && core().ArmRead());
  }
  Napi::Value ArmWrite(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), !core().closed() && core().ArmWrite());
  }
  Napi::Value State(const Napi::CallbackInfo& info) {
    double s = core().closed() ? static_cast<double>(kStateClosed) : static_cast<double>(core().State());
    return Napi::Number::New(info.Env(), s);
  }
  Napi::Value Shutdown(const Napi::CallbackInfo& info) {
    core().Shutdown();
    return info.Env().Undefined();
  }
  // close(reset): a RST when `reset` (or when bytes were left unread), else a FIN; then the
  // core's resources go. Later calls are no-ops.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    core().Close(info.Length() > 0 && info[0].ToBoolean().Value());
    return info.Env().Undefined();
  }
  Napi::Value Ref(const Napi::CallbackInfo& info) {
    core().SetRefed(true);
    return info.Env().Undefined();
  }
  Napi::Value Unref(const Napi::CallbackInfo& info) {
    core().SetRefed(false);
    return info.Env().Undefined();
  }
  Napi::Value Counters(const Napi::CallbackInfo& info) {
    StreamCounters c = core().Counters();
    Napi::Array a = Napi::Array::New(info.Env(), 2);
    a.Set(0u, static_cast<double>(c.bytes_written));
    a.Set(1u, static_cast<double>(c.bytes_read));
    return a;
  }
  Napi::Value SetPollUs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(env, "setPollUs(us): us must be a number");
    double us = info[0].As<Napi::Number>().DoubleValue();
    if (!(us >= 0 && us <= 1e6)) {  // NaN too
      char got[32];
      snprintf(got, sizeof got, "%g", us);
      throw ArgRangeError(env, std::string("setPollUs(us): us must be in [0, 1e6], got ") + got);
    }
    core().SetPollUs(us);
    return env.Undefined();
  }
  Napi::Value PollStats(const Napi::CallbackInfo& info) { return PollStatsObject(info.Env(), core().GetPollStats()); }
};

}  // namespace fastsock
