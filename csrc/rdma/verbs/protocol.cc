// Conn's data path: eager SENDs into the peer's pre-posted receive buffers under credit-based
// flow control, and the rendezvous (RTS, RDMA READ, RNDV_FIN) for large writes. The wire format
// is csrc/wire/verbs.h; the contracts of the public calls are in conn.h.
#include "rdma/verbs/conn.h"

#if FASTSOCK_HAVE_RDMA
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "stream_state.h"

namespace fastsock {
namespace verbs {
namespace {

using wire::VerbsHeader;
using wire::VerbsRndvFin;
using wire::VerbsRts;

// wr_id = kind << 56 | index (receive/send buffer slot, or the rendezvous id of a READ).
constexpr uint64_t kWrRecv = 1ull << 56, kWrSend = 2ull << 56, kWrRead = 3ull << 56;
constexpr uint64_t kWrKindMask = 0xffull << 56;

}  // namespace

void Conn::PostRecv(uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_pool_ + (size_t)slot * slot_bytes_), slot_bytes_, recv_mr_->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrRecv | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_recv(id_->qp, &wr, &bad) == 0) pending_return_++;
}

void Conn::Consumed(uint32_t slot) {
  if (closed_ || peer_gone_) return;
  PostRecv(slot);
  MaybeReturnCredits();
}

bool Conn::PostSend(uint8_t type, const void* body, uint32_t body_len, const uint8_t* payload, uint32_t payload_len) {
  bool control = type != wire::kVerbsData && type != wire::kVerbsRts;
  if (free_slots_.empty() || credits_ < (control ? 1u : 2u) || peer_gone_ || !id_ || !id_->qp) return false;
  uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  uint8_t* buf = send_pool_ + (size_t)slot * slot_bytes_;
  VerbsHeader h{};
  h.type = type;
  h.credits = static_cast<uint16_t>(std::min<uint32_t>(pending_return_, 0xffff));
  pending_return_ -= h.credits;
  if (h.credits) peer_starved_ = false;
  credits_--;
  if (credits_ < 2) {
    h.flags |= wire::kVerbsFlagStarved;
    starved_++;
  }
  h.length = payload_len;
  memcpy(buf, &h, sizeof h);
  if (body_len) memcpy(buf + sizeof h, body, body_len);
  if (payload_len) memcpy(buf + sizeof h, payload, payload_len);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(sizeof h + body_len + payload_len), send_mr_->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrSend | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (ibv_post_send(id_->qp, &wr, &bad) != 0) {
    free_slots_.push_back(slot);
    credits_++;
    pending_return_ += h.credits;
    return false;
  }
  outstanding_sends_++;
  if (type == wire::kVerbsCredit) credit_msgs_++;
  return true;
}

void Conn::FlushControl() {
  while (!fins_to_send_.empty()) {
    if (!PostSend(wire::kVerbsRndvFin, &fins_to_send_.front(), sizeof(VerbsRndvFin), nullptr, 0)) return;
    fins_to_send_.pop_front();
  }
  if (fin_wanted_ && !fin_sent_ && !tx_.active) {
    if (PostSend(wire::kVerbsFin, nullptr, 0, nullptr, 0)) fin_sent_ = true;
  }
}

void Conn::MaybeReturnCredits() {
  FlushControl();
  if (pending_return_ == 0) return;
  if (pending_return_ >= std::max<uint32_t>(1, opt_.credits / 4) || peer_starved_) {
    PostSend(wire::kVerbsCredit, nullptr, 0, nullptr, 0);
  }
}

// The completion channel rang (the CQ was armed: the connection is asleep, or was until the
// engine took it). One event per arm: the CQ stays unarmed until Settle arms it again, so a
// connection the pump polls next raises no event.
void Conn::OnCq() {
  if (closed_ || !cq_) return;
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  while (L_->ibv_get_cq_event(comp_, &ev_cq, &ev_ctx) == 0) L_->ibv_ack_cq_events(ev_cq, 1);
  cq_armed_ = false;
  int n = ProcessCq();
  bool over = WaitOver();
  if (n > 0 || over) Deliver(over);
  Settle();
}

int Conn::ProcessCq() {
  if (!cq_ || in_cq_) return 0;
  in_cq_ = true;
  int total = 0;
  ibv_wc wc[16];
  for (;;) {
    int n = ibv_poll_cq(cq_, 16, wc);
    if (n <= 0) break;
    for (int i = 0; i < n; i++) HandleWc(wc[i]);
    total += n;
  }
  in_cq_ = false;
  if (total > 0 && !closed_) MaybeReturnCredits();
  return total;
}

void Conn::HandleWc(const ibv_wc& wc) {
  uint64_t kind = wc.wr_id & kWrKindMask;
  uint32_t idx = static_cast<uint32_t>(wc.wr_id & ~kWrKindMask);
  if (kind == kWrSend) {
    outstanding_sends_--;
    free_slots_.push_back(idx);
  }
  if (wc.status != IBV_WC_SUCCESS) {
    if (DebugOn() && wc.status != IBV_WC_WR_FLUSH_ERR)
      fprintf(stderr, "fastsock %d verbs: work request %s failed: %s (vendor error 0x%x)\n", getpid(),
              kind == kWrRead ? "RDMA READ" : kind == kWrSend ? "SEND" : "RECV", L_->ibv_wc_status_str(wc.status), wc.vendor_err);
    // A flushed work request: the queue pair is down (we or the peer disconnected).
    if (!closed_) peer_gone_ = true;
    return;
  }
  if (kind == kWrRead) {
    for (auto& it : rxq_) {
      if (it.kind == RxItem::kRts && it.rts.id == idx && it.state == RxItem::kReading) {
        it.state = RxItem::kDone;
        rndv_received_++;
        // The bytes are in this end's memory: the writer may reuse its array now, whenever
        // the reader consumes them.
        FinishRts(it);
        break;
      }
    }
    return;
  }
  if (kind != kWrRecv) return;
  if (wc.byte_len < sizeof(VerbsHeader)) return Consumed(idx);  // not a message of this protocol
  uint8_t* buf = recv_pool_ + (size_t)idx * slot_bytes_;
  VerbsHeader h;
  memcpy(&h, buf, sizeof h);
  credits_ += h.credits;
  if (h.flags & wire::kVerbsFlagStarved) peer_starved_ = true;
  switch (h.type) {
    case wire::kVerbsData:
      if (h.length == 0 || h.length > wc.byte_len - sizeof h) return Consumed(idx);
      rxq_.push_back(RxItem{});
      rxq_.back().kind = RxItem::kData;
      rxq_.back().slot = idx;
      rxq_.back().off = sizeof h;
      rxq_.back().len = h.length;
      return;
    case wire::kVerbsRts: {
      RxItem it;
      it.kind = RxItem::kRts;
      memcpy(&it.rts, buf + sizeof h, sizeof it.rts);
      rxq_.push_back(std::move(it));
      return Consumed(idx);
    }
    case wire::kVerbsRndvFin: {
      VerbsRndvFin f;
      memcpy(&f, buf + sizeof h, sizeof f);
      if (tx_.active && f.id == tx_.id) {
        tx_.done = true;
        tx_.status = f.status;
        // Declined (the reader could not register memory): the bytes go eager instead. Any
        // other status: the peer's READ failed, the stream is broken.
        if (f.status != 0 && f.status != wire::kVerbsRndvDeclined) peer_gone_ = true;
      }
      return Consumed(idx);
    }
    case wire::kVerbsFin:
      rxq_.push_back(RxItem{});
      rxq_.back().kind = RxItem::kFin;
      return Consumed(idx);
    case wire::kVerbsRst:
      reset_ = true;
      return Consumed(idx);
    default:  // kVerbsCredit, or unknown (ignored, as the spec says)
      return Consumed(idx);
  }
}

void Conn::Notify() {
  if (on_event) on_event();
}

void Conn::PopFin() {
  if (!rxq_.empty() && rxq_.front().kind == RxItem::kFin) {
    rxq_.pop_front();
    fin_seen_ = true;
  }
}

void Conn::StartRead(RxItem& it) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(it.dest), it.rts.length, it.reg->mr->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrRead | it.rts.id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = it.rts.addr;
  wr.wr.rdma.rkey = it.rts.rkey;
  int rc = ibv_post_send(id_->qp, &wr, &bad);
  if (rc != 0) {
    if (DebugOn()) fprintf(stderr, "fastsock %d verbs: posting an RDMA READ of %u bytes failed: %s\n", getpid(), it.rts.length, strerror(rc));
    peer_gone_ = true;
    return;
  }
  it.state = RxItem::kReading;
}

void Conn::FinishRts(RxItem& it) {
  cache_->Release(it.reg);
  it.reg = nullptr;
  fins_to_send_.push_back({it.rts.id, 0});
  FlushControl();
}

void Conn::DeclineRts() {
  fins_to_send_.push_back({rxq_.front().rts.id, wire::kVerbsRndvDeclined});
  rxq_.pop_front();
  FlushControl();
}

bool Conn::StartRendezvousRead(RxItem& it, const CallerBytes& b) {
  for (int attempt = 0; attempt < 2 && !it.reg; attempt++) {
    if (attempt == 1) cache_->EvictIdle();  // pinned-memory limit (RLIMIT_MEMLOCK): make room
    int err = 0;
    if (b.len >= it.rts.length && b.holder) {
      // The reader waits for at least this many bytes: READ straight into its array.
      it.reg = cache_->Get(b, b.data, it.rts.length, &err);
      if (it.reg) {
        it.dest = b.data;
        it.keep = b.holder->MakeHold();
        rndv_direct_++;
        break;
      }
    }
    uint8_t* data = nullptr;
    HoldPtr block = allocator ? allocator->NewBlock(it.rts.length, &data) : nullptr;
    if (!block) break;
    it.reg = cache_->Get(CallerBytes{}, data, it.rts.length, &err);
    if (it.reg) {
      it.dest = data;
      it.as_buffer = true;
      it.keep = std::move(block);
    }
  }
  if (!it.reg) {
    rndv_declined_++;
    return false;
  }
  StartRead(it);
  return true;
}

size_t Conn::Write(const CallerBytes& b) {
  uint8_t* p = b.data;
  size_t len = b.len;
  if (closed_ || peer_gone_ || reset_ || fin_sent_ || phase_ != Phase::kEstablished || len == 0) return 0;
  bool declined = false;
  if (len >= rndv_threshold_) {
    uint32_t chunk = static_cast<uint32_t>(std::min<size_t>(len, kMaxRndvChunk));
    if (tx_.active) {
      if (!tx_.done || tx_.addr != p || tx_.len != chunk) return 0;
      cache_->Release(tx_.reg);
      tx_.active = false;
      FlushControl();
      if (tx_.status == 0) {
        bytes_written_ += chunk;
        return chunk;
      }
      declined = true;  // the reader declined: send this chunk eager (below)
    }
    if (!declined && !CanSendData()) return 0;
    int err = 0;
    RegEntry* reg = declined ? nullptr : cache_->Get(b, p, chunk, &err);
    if (reg) {
      VerbsRts r{reinterpret_cast<uintptr_t>(p), reg->mr->rkey, chunk, next_rndv_id_++, 0};
      if (!PostSend(wire::kVerbsRts, &r, sizeof r, nullptr, 0)) {
        cache_->Release(reg);
        return 0;
      }
      tx_.active = true;
      tx_.done = false;
      tx_.addr = p;
      tx_.len = chunk;
      tx_.id = r.id;
      tx_.reg = reg;
      rndv_sent_++;
      return 0;
    }
    // Declined, or registration failed (locked-memory limit, ...): this chunk goes eager.
    if (declined) len = chunk;
  }
  size_t done = 0;
  uint32_t max = std::min(peer_eager_, opt_.eager_bytes);
  while (done < len && CanSendData()) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(len - done, max));
    if (!PostSend(wire::kVerbsData, nullptr, 0, p + done, n)) break;
    done += n;
    eager_sent_++;
  }
  bytes_written_ += done;
  return done;
}

size_t Conn::ReadInto(const CallerBytes& b) {
  uint8_t* p = b.data;
  size_t len = b.len;
  size_t done = 0;
  while (done < len && !rxq_.empty()) {
    RxItem& it = rxq_.front();
    if (it.kind == RxItem::kFin) break;
    if (it.kind == RxItem::kData) {
      size_t n = std::min<size_t>(len - done, it.len);
      memcpy(p + done, recv_pool_ + (size_t)it.slot * slot_bytes_ + it.off, n);
      done += n;
      it.off += static_cast<uint32_t>(n);
      it.len -= static_cast<uint32_t>(n);
      if (it.len == 0) {
        uint32_t slot = it.slot;
        rxq_.pop_front();
        Consumed(slot);
      }
      continue;
    }
    // Rendezvous.
    if (it.state == RxItem::kNew) {
      if (done > 0 || closed_ || peer_gone_) break;
      if (StartRendezvousRead(it, b)) break;
      DeclineRts();  // the writer sends these bytes eager instead; they follow in order
      continue;
    }
    if (it.state != RxItem::kDone) break;
    size_t left = it.rts.length - it.consumed;
    size_t n = std::min(len - done, left);
    if (p + done != it.dest + it.consumed) memcpy(p + done, it.dest + it.consumed, n);
    done += n;
    it.consumed += static_cast<uint32_t>(n);
    if (it.consumed == it.rts.length) rxq_.pop_front();
  }
  bytes_read_ += done;
  return done;
}

bool Conn::PeekHead(size_t max, HeadBlock* head, bool* wait) {
  *wait = false;
  if (rxq_.empty()) return false;
  RxItem& it = rxq_.front();
  if (it.kind == RxItem::kRts && it.state == RxItem::kDone && it.as_buffer) {
    // The READ landed in a block of its own: handed out without a copy, whole or in views of at
    // most `max` bytes. What the reader has not taken stays here, so it counts as unread (a RST
    // at close, as TCP with bytes in its receive queue) and keeps the stream's order.
    size_t left = it.rts.length - it.consumed;
    head->block = it.keep.get();
    head->offset = it.consumed;
    head->whole = it.consumed == 0 && left <= max;
    head->len = std::min(left, max);
    return true;
  }
  if (it.kind == RxItem::kRts && it.state == RxItem::kNew) {
    if (!StartRendezvousRead(it, CallerBytes{})) DeclineRts();
    *wait = true;
  }
  return false;
}

void Conn::TakeBlock(size_t n) {
  RxItem& it = rxq_.front();
  bytes_read_ += n;
  it.consumed += static_cast<uint32_t>(n);
  if (it.consumed == it.rts.length) rxq_.pop_front();
}

size_t Conn::Readable(size_t max) const {
  size_t n = 0;
  for (auto& it : rxq_) {
    if (it.kind == RxItem::kFin || n >= max) break;
    if (it.kind == RxItem::kData) {
      n += it.len;
      continue;
    }
    if (it.state != RxItem::kDone) break;
    n += it.rts.length - it.consumed;
  }
  return std::min(n, max);
}

bool Conn::HasReadable() const {
  if (rxq_.empty()) return false;
  const RxItem& it = rxq_.front();
  return it.kind == RxItem::kData || (it.kind == RxItem::kRts && it.state == RxItem::kDone);
}

size_t Conn::Writable() const {
  if (tx_.active || credits_ < 2) return 0;
  return static_cast<size_t>(std::min<uint32_t>(credits_ - 1, static_cast<uint32_t>(free_slots_.size()))) *
         std::min(peer_eager_, opt_.eager_bytes);
}

bool Conn::ArmRead() {
  PopFin();
  return !ReadWaitOver() && Await(true);
}

bool Conn::ArmWrite() { return !WriteWaitOver() && Await(false); }

bool Conn::ReadWaitOver() const {
  if (rxq_.empty()) return false;
  const RxItem& it = rxq_.front();
  return it.kind != RxItem::kRts || it.state != RxItem::kReading;
}

bool Conn::WriteWaitOver() const {
  if (tx_.active) return tx_.done;
  return credits_ >= 2 && !free_slots_.empty();
}

int Conn::State() {
  PopFin();
  int s = 0;
  if (fin_seen_) s |= kStateEof;
  if (reset_) s |= kStateReset;
  if (peer_gone_) s |= kStateGone;
  if (closed_) s |= kStateClosed;
  if (HasReadable()) s |= kStateReadable;
  return s;
}

void Conn::Shutdown() {
  if (closed_) return;
  fin_wanted_ = true;
  FlushControl();
}

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
