// The JS data path's native side of ShmEndpoint (csrc/shm/endpoint.h): the batch write, and the
// views of the control blocks and the transmit ring that lib/transports/shm/endpoint.ts reads
// and copies into without a call per message (docs/design.md, "Per-message cost").
#include "shm/endpoint.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "errors.h"
#include "loop_util.h"
#include "stream_state.h"

namespace fastsock {

Napi::Object ShmControlLayout(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytes", static_cast<double>(sizeof(wire::RingControl)));
  o.Set("head", static_cast<double>(offsetof(wire::RingControl, head)));
  o.Set("producerFlags", static_cast<double>(offsetof(wire::RingControl, producer_flags)));
  o.Set("tail", static_cast<double>(offsetof(wire::RingControl, tail)));
  o.Set("consumerWaiting", static_cast<double>(offsetof(wire::RingControl, consumer_waiting)));
  o.Set("producerWaiting", static_cast<double>(offsetof(wire::RingControl, producer_waiting)));
  o.Set("ringEof", static_cast<double>(wire::kRingEof));
  o.Set("ringReset", static_cast<double>(wire::kRingReset));
  o.Set("headerBytes", static_cast<double>(wire::kSegmentHeaderBytes));
  return o;
}

// writev(views, index = 0, offset = 0) -> bytes copied into the ring from views[index] (its
// bytes from `offset` on), then views[index + 1]..., in order, as far as they fit (0 when full).
// One call and one doorbell check for a whole corked batch (shm::Conn::Writev); a large batch is
// published kPublishChunk bytes at a time, as write() does. TypeError (ERR_INVALID_ARG_TYPE)
// for a non-array or an element that is not a TypedArray/DataView; the views before it are in
// the ring, and the error's `bytesWritten` says how many bytes.
Napi::Value ShmEndpoint::Writev(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw ArgTypeError(env, "writev(views, index, offset): views must be an array");
  if (conn_->closed()) return Napi::Number::New(env, 0);
  Napi::Array views = info[0].As<Napi::Array>();
  uint32_t count = views.Length();
  uint32_t i = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 0;
  size_t off = info.Length() > 2 && info[2].IsNumber() ? static_cast<size_t>(info[2].As<Napi::Number>().Int64Value()) : 0;
  // The views' bytes, as far as the ring has room for them now (it only grows meanwhile). Only
  // views over 4 KiB, or not Uint8Arrays, come here (lib/transports/shm/endpoint.ts copies the
  // others from JS): one allocation is nothing beside their copy.
  const uint64_t room = conn_->Writable();
  std::vector<iovec> iov;
  iov.reserve(count > i ? std::min<uint32_t>(count - i, 64) : 0);
  uint64_t gathered = 0;
  bool bad = false;
  for (; i < count && gathered < room; i++, off = 0) {
    Napi::Value v = views.Get(i);
    size_t len = 0;
    uint8_t* p = BytesOf(v, &len);
    if (!p && !IsView(v)) {  // (an empty view may have no pointer)
      bad = true;
      break;
    }
    if (off >= len) continue;
    iov.push_back({p + off, len - off});
    gathered += len - off;
  }
  uint64_t done = conn_->Writev(iov.data(), iov.size());
  if (bad) {  // every view before it fitted
    Napi::Error e = ArgTypeError(env, "writev: every element must be a TypedArray or DataView");
    e.Set("bytesWritten", Napi::Number::New(env, static_cast<double>(done)));
    throw e;
  }
  return Napi::Number::New(env, static_cast<double>(done));
}

// controlView() -> { control, rx, tx, local }, the same object on every call: `control` an
// ArrayBuffer over the segment's header page (shared with the peer), `rx`/`tx` the byte offsets
// of this end's receive and transmit rings' control blocks in it (fields at
// ShmEndpoint.controlLayout), `local` an ArrayBuffer whose first u32 holds this end's
// kStateGone | kStateClosed bits, kept current by the core (shm::Conn::MirrorState). JS copies
// small writes into the transmit ring through txRegion() (endpoint.cc). Like txRegion(),
// `control` keeps the address range mapped while JS holds it; at close the core swaps the
// shared pages under it for private zero pages (Segment::Release), so a closed connection's
// memory goes at once, not at the next garbage collection, and the view reads zeros: check
// kStateClosed in `local` before touching it. It is not detached: detaching any ArrayBuffer
// invalidates V8's process-wide ArrayBufferDetaching protector, after which every optimized
// typed-array access in the process checks for detachment (`fastsock npb cg --class A --np 2`:
// 0.87 s with the views detached at close, 0.70 s without; docs/npb.md). Throws EBADF once closed.
Napi::Value ShmEndpoint::ControlView(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (conn_->closed()) throw ErrnoError(env, EBADF, "controlView", "controlView on a closed shm endpoint");
  if (!control_view_.IsEmpty()) return control_view_.Value();
  shm::Mapping m = conn_->GetMapping();
  Napi::ArrayBuffer local = Napi::ArrayBuffer::New(env, 64);
  uint32_t* word = static_cast<uint32_t*>(local.Data());
  memset(word, 0, 64);
  auto drop = [](Napi::Env, void*, std::shared_ptr<Segment>* k) { delete k; };
  Napi::ArrayBuffer control = Napi::ArrayBuffer::New(env, m.header, wire::kSegmentHeaderBytes, drop,
      new std::shared_ptr<Segment>(std::move(m.segment)));
  Napi::Object o = Napi::Object::New(env);
  o.Set("control", control);
  o.Set("rx", static_cast<double>(m.rx_control));
  o.Set("tx", static_cast<double>(m.tx_control));
  o.Set("local", local);
  control_view_ = Napi::Persistent(o);
  conn_->MirrorState(word);  // kStateGone now if so, kStateClosed at close
  return o;
}

}  // namespace fastsock
