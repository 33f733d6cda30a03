// Conn's waits: adaptive busy polling of the completion queue by the loop's progress engine
// (csrc/progress.h, docs/polling.md), else a sleep on the completion channel. conn.h states the
// invariant: between loop callbacks, a connection the engine does not poll has its CQ armed.
#include "rdma/verbs/conn.h"

#if FASTSOCK_HAVE_RDMA
#include "clock.h"

namespace fastsock {
namespace verbs {

void Conn::SetPollUs(double us) {
  poll_window.SetMax(static_cast<uint64_t>(us * 1000));
  if (poll_window.max_ns == 0 && hot_index >= 0 && engine_) {
    engine_->Disarm(this);
    OnPollExpired();  // the wait goes on, asleep on the completion channel
  }
}

// A wait begins at the first arm and lasts until its event is seen (by the engine, or after a
// wake-up); re-arming during it does not restart the window (as shm::Conn::Await).
bool Conn::Await(bool read) {
  if (closed_ || !cq_) return true;  // nothing more comes: state() says why
  (read ? wait_read_ : wait_write_) = true;
  if (engine_ && poll_window.window_ns > 0) {
    uint64_t now = NowNs();
    if (!poll_window.waiting) poll_window.BeginWait(now);
    if (now - poll_window.armed_at_ns < poll_window.window_ns && engine_->Arm(this, now)) return true;
  } else if (!poll_window.waiting && poll_window.max_ns > 0) {
    poll_window.BeginWait(NowNs());  // observed on wake-up: a short wait regrows the window
  }
  // Asleep on the completion channel: arm the CQ, then look once more, since a completion that
  // came before the arm raises no event. What this finds for the other direction is delivered
  // by the engine (still polled), the CQ event (armed before it came) or Settle (in a callback).
  ArmCq();
  ProcessCq();
  if (read ? ReadWaitOver() : WriteWaitOver()) {
    poll_window.waiting = false;
    return false;
  }
  return true;
}

void Conn::ArmCq() {
  if (cq_armed_ || !cq_) return;
  if (ibv_req_notify_cq(cq_, 0) == 0) cq_armed_ = true;
}

bool Conn::WaitOver() const {
  return reset_ != told_reset_ || peer_gone_ != told_gone_ || (wait_read_ && ReadWaitOver()) ||
         (wait_write_ && WriteWaitOver());
}

void Conn::Deliver(bool ended) {
  if (hot_index >= 0 && engine_) engine_->Disarm(this);
  wait_read_ = wait_write_ = false;
  told_reset_ = reset_;
  told_gone_ = peer_gone_;
  if (ended && poll_window.waiting) poll_window.EndWait(NowNs());
  Notify();
}

// Each Deliver runs JS, which re-arms only what it still waits for (ArmRead/ArmWrite re-check
// first), so the loop ends.
void Conn::Settle() {
  for (;;) {
    if (closed_ || !cq_ || hot_index >= 0) return;
    if (!cq_armed_) {
      ArmCq();
      ProcessCq();
    }
    if (!WaitOver()) return;
    Deliver(true);
  }
}

// The engine's peek: ibv_poll_cq (user space on rxe, siw and hardware providers: no syscall),
// handling what it returns (credits, receive buffers, READ completions); true once what the
// pump waits for is here.
bool Conn::Poll() {
  ProcessCq();
  return WaitOver();
}

void Conn::OnPollReady() {
  Deliver(true);  // the engine ended the wait
  Settle();
}

// The window ran out (or the process cap was reached): arm the doorbell, i.e. the CQ, and poll
// once more; then sleep on the completion channel.
void Conn::OnPollExpired() { Settle(); }

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
