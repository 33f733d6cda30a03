// shm::Conn's waits in its loop (docs/polling.md): polled by the loop's progress engine for a
// learned window (csrc/progress.h), else asleep on the loop's doorbell with the ring's waiting
// flags raised; holds when the peer needs this CPU (the CPU hints of wire::SideHint); and the
// order across connections (ready stamps, YieldRead).
#include "shm/conn.h"

#include <sched.h>

namespace fastsock {
namespace shm {

uint32_t Conn::CpuHint() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<uint32_t>(cpu) + 1;
}

uint32_t Conn::PublishCpu() {
  uint32_t v = CpuHint();
  if (own_hint_->cpu.load(std::memory_order_relaxed) != v) own_hint_->cpu.store(v, std::memory_order_relaxed);
  return v;
}

bool Conn::PeerNeeds(uint32_t cpu) {
  return !closed_ && cpu != 0 && peer_hint_->cpu.load(std::memory_order_relaxed) == cpu && tx_.InFlight() > 0;
}

bool Conn::SleepIfIdle(bool r, bool w) {
  bool sleep = true;
  if (r && !rx_.ArmConsumerWait()) sleep = false;
  if (w && !tx_.ArmProducerWait()) sleep = false;
  if (sleep) SleepFor(r, w);
  return sleep;
}

// A wait begins at the first arm and lasts until its event is seen (by the engine, the
// doorbell, or a read that finds bytes); re-arming during it does not restart the window, so a
// connection that waits for nothing (an idle reader that keeps writing) spins at most once.
// With polling on, a wait whose peer needs this CPU is held (ProgressEngine::Hold): it sleeps,
// and the loop spins for nobody until it ends.
bool Conn::Await(bool read) {
  uint32_t cpu = engine_ ? PublishCpu() : 0;
  if (engine_ && poll_window.max_ns > 0) {
    uint64_t now = NowNs();
    if (!poll_window.waiting) poll_window.BeginWait(now);  // a wait observed on wake-up regrows the window
    if (PeerNeeds(cpu)) {
      // Held: asleep on the doorbell for this direction and any it was polling for.
      engine_->Hold(this);
      bool r = poll_read_ || read, w = poll_write_ || !read;
      poll_read_ = poll_write_ = false;
      if (SleepIfIdle(r, w)) return true;
      poll_window.waiting = false;
      engine_->Release(this);
      return false;
    } else if (poll_window.window_ns > 0 && now - poll_window.armed_at_ns < poll_window.window_ns && engine_->Arm(this, now)) {
      // Arm took this endpoint off the loop's sleepers: a direction it slept for (the read,
      // when a write-only pump arms the write) is polled from now on, or no ring would find it.
      poll_read_ = poll_read_ || sleep_read_ || read;
      poll_write_ = poll_write_ || sleep_write_ || !read;
      sleep_read_ = sleep_write_ = false;
      // Polling: the peer need not ring (a flag left from an earlier sleep would make it).
      if (poll_read_) rx_.control()->consumer_waiting.store(0, std::memory_order_relaxed);
      if (poll_write_) tx_.control()->producer_waiting.store(0, std::memory_order_relaxed);
      return true;
    }
  }
  bool armed = SleepIfIdle(read, !read);
  if (!armed) poll_window.waiting = false;
  return armed;
}

uint64_t Conn::ReadyStamp() {
  if (!closed_ && (poll_read_ || sleep_read_) && (rx_.Readable() > 0 || rx_.ProducerFlags() != 0))
    return rx_.control()->ready_ticks.load(std::memory_order_relaxed);
  return UINT64_MAX;
}

bool Conn::Poll() {
  return (poll_read_ && (rx_.Readable() > 0 || rx_.ProducerFlags() != 0)) || (poll_write_ && tx_.Writable() > 0);
}

void Conn::OnPollReady() {
  poll_read_ = poll_write_ = false;
  Notify();
}

void Conn::OnPollExpired() {
  bool r = poll_read_, w = poll_write_;
  poll_read_ = poll_write_ = false;
  if (closed_) return;
  if (!SleepIfIdle(r, w)) {
    poll_window.EndWait(NowNs());
    Notify();
  }
}

// Per direction it sleeps for: the event is there, or the flag is (again) raised, so the peer
// rings for the next one (RingView::Rearm*Wait: a stale ring may have cleared it).
bool Conn::Woken() {
  return (sleep_read_ && !rx_.RearmConsumerWait()) || (sleep_write_ && !tx_.RearmProducerWait());
}

void Conn::OnWake() {
  sleep_read_ = sleep_write_ = false;
  if (closed_) return;
  if (poll_window.waiting) poll_window.EndWait(NowNs());
  Notify();
}

void Conn::SleepFor(bool read, bool write) {
  sleep_read_ = sleep_read_ || read;
  sleep_write_ = sleep_write_ || write;
  engine_->Sleep(this);
}

// True when another endpoint of this loop is ready and not handed to the owner yet: this one is
// queued behind it (asleep for bytes, its token on the loop's ready list) and OnEvent comes in
// its turn; false (nothing else waits, or closed): read on.
bool Conn::YieldRead() {
  bool yield = !closed_ && engine_ && engine_->OthersReady(this);
  if (yield && hot_index >= 0) {
    poll_read_ = true;  // polled already (for space): the engine finds the bytes in their turn
  } else if (yield) {
    bool was = sleep_read_;
    sleep_read_ = true;
    if (!engine_->Requeue(this)) sleep_read_ = was, yield = false;
  }
  return yield;
}

void Conn::SetPollUs(double us) {
  poll_window.SetMax(static_cast<uint64_t>(us * 1000));
  if (poll_window.max_ns == 0 && hot_index >= 0 && engine_) {
    engine_->Disarm(this);  // off the sleepers too: what it slept for is armed again below
    poll_read_ = poll_read_ || sleep_read_;
    poll_write_ = poll_write_ || sleep_write_;
    sleep_read_ = sleep_write_ = false;
    OnPollExpired();  // the wait goes on, asleep on the doorbell
  }
}

}  // namespace shm
}  // namespace fastsock
