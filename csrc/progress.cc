#include "progress.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "clock.h"
#include "uv_handles.h"

namespace fastsock {
namespace {

// The process cap: spinning CPU summed over every loop of the process, per period.
constexpr uint64_t kCapPeriodNs = 10000000;  // 10 ms
constexpr unsigned kDefaultCapPercent = 50;  // of one core
// Longest run of the engine inside one prepare callback before it yields one non-blocking turn
// of the loop (iodev's periodic yield): I/O, timers and watchers started by JS are served at
// least this often while a connection spins.
constexpr uint64_t kYieldNs = 20000;
// Polling passes over the hot endpoints between two reads of the clock.
constexpr unsigned kPassesPerClockRead = 8;
// A yield that took this long, or this long between two reads of the clock while spinning, means
// another task held this CPU for longer than a reply takes (a CPU-bound neighbour running its
// time slice): spinning then steals from it, so the whole process stops spinning for
// kContentionBackoffNs. (The kernel's haltpoll polls only an idle CPU; user space learns of
// contention this way.) A shorter run of another task (a peer sharing this CPU doing the few
// tens of µs of its own exchange) is not contention: the yield every kYieldNs already gave it
// the CPU, and a spinner that stopped for it would have its next message wake a halted vCPU
// (~30 µs here): with 20 µs, `fastsock rate` pair-based with 4 peers on 2 vCPUs ran 20-30 %
// slower (docs/polling.md). A peer that needs this CPU to answer is handled before spinning (holds).
// The pause is short: a late yield is often a one-off (an interrupt, the host preempting the
// vCPU), and a whole cap period (10 ms, the earlier value) kept polling off for most of a
// ping-pong: unmodified http on one connection went from 2.1x to 10x Node net with 100 µs. A CPU
// that stays contended keeps triggering it, and the pause grows (kContentionRecurNs).
constexpr uint64_t kPreemptedNs = 200000;
constexpr uint64_t kContentionBackoffNs = 100000;  // 100 µs, the first pause
// Contention seen again within kContentionRecurNs of the end of the previous pause doubles the
// pause, up to kContentionBackoffMaxNs (a CPU that stays contended: more processes than CPUs);
// seen later, the pause starts again at kContentionBackoffNs (a one-off).
constexpr uint64_t kContentionRecurNs = 1000000;       // 1 ms
constexpr uint64_t kContentionBackoffMaxNs = 10000000;  // 10 ms, the cap period

struct SpinCap {
  std::atomic<uint64_t> period_start_ns{0};
  std::atomic<uint64_t> spent_ns{0};  // in the current period
  std::atomic<uint64_t> total_ns{0};
  std::atomic<uint64_t> throttles{0};
  std::atomic<uint64_t> backoff_until_ns{0};
  std::atomic<uint64_t> backoff_ns{0};  // the last pause
  std::atomic<uint64_t> contended{0};
  unsigned percent = kDefaultCapPercent;
  uint64_t budget_ns = kCapPeriodNs * kDefaultCapPercent / 100;

  SpinCap() {
    // FASTSOCK_POLL_CAP_PERCENT: percent of one core, in [0, 100] (0: never spin).
    const char* v = getenv("FASTSOCK_POLL_CAP_PERCENT");
    if (v && *v) {
      char* end = nullptr;
      unsigned long p = strtoul(v, &end, 10);
      if (end && *end == 0 && p <= 100) percent = static_cast<unsigned>(p);
    }
    budget_ns = kCapPeriodNs * percent / 100;
  }

  // True when this process may still spin in the period that contains now_ns.
  bool Allows(uint64_t now_ns) {
    if (now_ns < backoff_until_ns.load(std::memory_order_relaxed)) return false;
    uint64_t start = period_start_ns.load(std::memory_order_relaxed);
    if (now_ns - start >= kCapPeriodNs && period_start_ns.compare_exchange_strong(start, now_ns, std::memory_order_relaxed))
      spent_ns.store(0, std::memory_order_relaxed);
    return spent_ns.load(std::memory_order_relaxed) < budget_ns;
  }
  // Another task wanted the CPU: no spinning in this process for a while.
  void BackOff(uint64_t now_ns) {
    uint64_t pause = kContentionBackoffNs;
    if (now_ns < backoff_until_ns.load(std::memory_order_relaxed) + kContentionRecurNs) {
      pause = backoff_ns.load(std::memory_order_relaxed) * 2;
      if (pause > kContentionBackoffMaxNs) pause = kContentionBackoffMaxNs;
      if (pause < kContentionBackoffNs) pause = kContentionBackoffNs;
    }
    backoff_ns.store(pause, std::memory_order_relaxed);
    backoff_until_ns.store(now_ns + pause, std::memory_order_relaxed);
    contended.fetch_add(1, std::memory_order_relaxed);
  }
  void Charge(uint64_t ns) {
    spent_ns.fetch_add(ns, std::memory_order_relaxed);
    total_ns.fetch_add(ns, std::memory_order_relaxed);
  }
};

SpinCap& Cap() {
  static SpinCap cap;
  return cap;
}

std::mutex g_engines_mu;
std::unordered_map<uv_loop_t*, std::shared_ptr<ProgressEngine>>& Engines() {
  static auto* m = new std::unordered_map<uv_loop_t*, std::shared_ptr<ProgressEngine>>;
  return *m;
}

// The engine's lists (hot, sleeping, held, idle-watched) keep each endpoint's index in it, in
// the Pollable member `Index`, so that joining and leaving are O(1): append, or move the last
// entry into the hole.
template <int Pollable::*Index>
void Append(std::vector<Pollable*>& list, Pollable* p) {
  p->*Index = static_cast<int>(list.size());
  list.push_back(p);
}
template <int Pollable::*Index>
void Erase(std::vector<Pollable*>& list, Pollable* p) {
  size_t i = static_cast<size_t>(p->*Index);
  list[i] = list.back();
  list[i]->*Index = static_cast<int>(i);
  list.pop_back();
  p->*Index = -1;
}

}  // namespace

void PollWindow::EndWait(uint64_t now_ns) {
  if (!waiting) return;
  waiting = false;
  uint64_t block = now_ns - armed_at_ns;
  last_wait_ns = block;
  if (max_ns == 0) return;
  if (block > window_ns && block <= max_ns) {
    uint64_t w = window_ns * 2;
    if (w < kGrowStartNs) w = kGrowStartNs;
    window_ns = w > max_ns ? max_ns : w;
  } else if (block > max_ns) {
    window_ns /= 2;
    if (window_ns < kFloorNs) window_ns = 0;
  }
}

ProgressEngine::ProgressEngine(uv_loop_t* loop, int doorbell_fd, std::unique_ptr<ReadyList> list)
    : loop_(loop), prepare_(new uv_prepare_t), kick_(new uv_idle_t), doorbell_fd_(doorbell_fd), list_(std::move(list)),
      tokens_(1, nullptr) {
  uv_prepare_init(loop, prepare_);
  prepare_->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(prepare_));
  uv_idle_init(loop, kick_);
  uv_unref(reinterpret_cast<uv_handle_t*>(kick_));
  if (getrandom(&doorbell_id_, sizeof doorbell_id_, 0) != sizeof doorbell_id_)
    doorbell_id_ = (static_cast<uint64_t>(getpid()) << 32) ^ reinterpret_cast<uintptr_t>(this) ^ NowNs();
  doorbell_poll_ = new uv_poll_t;
  uv_poll_init(loop, doorbell_poll_, doorbell_fd_);
  doorbell_poll_->data = this;
  uv_poll_start(doorbell_poll_, UV_READABLE, OnDoorbell);
  uv_unref(reinterpret_cast<uv_handle_t*>(doorbell_poll_));
  idle_timer_ = new uv_timer_t;
  uv_timer_init(loop, idle_timer_);
  idle_timer_->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(idle_timer_));
}

ProgressEngine::~ProgressEngine() { CloseHandles(); }

void ProgressEngine::CloseHandles() {
  if (prepare_) {
    prepare_->data = nullptr;
    uv_prepare_stop(prepare_);
    CloseHandle(prepare_);
    prepare_ = nullptr;
  }
  if (kick_) {
    uv_idle_stop(kick_);
    CloseHandle(kick_);
    kick_ = nullptr;
  }
  if (idle_timer_) {
    idle_timer_->data = nullptr;
    uv_timer_stop(idle_timer_);
    CloseHandle(idle_timer_);
    idle_timer_ = nullptr;
  }
  if (doorbell_poll_) {
    doorbell_poll_->data = nullptr;
    ClosePoll(doorbell_poll_);  // stops the poll first: closing the fd after is safe
    doorbell_poll_ = nullptr;
  }
  if (doorbell_fd_ >= 0) close(doorbell_fd_);
  doorbell_fd_ = -1;
  list_->CloseFd();  // no more set-ups: the mapping stays (peers may still push) until the engine goes
}

// One non-blocking turn of the loop (the kick idle handle stops itself on that turn).
void ProgressEngine::Kick() { uv_idle_start(kick_, [](uv_idle_t* k) { uv_idle_stop(k); }); }

void ProgressEngine::RingSelf() {
  if (doorbell_fd_ < 0) return;
  uint64_t one = 1;
  ssize_t w = write(doorbell_fd_, &one, sizeof one);
  (void)w;  // EAGAIN: the counter is saturated, the loop wakes anyway
}

void ProgressEngine::DrainDoorbell() {
  uint64_t v;
  ssize_t r = read(doorbell_fd_, &v, sizeof v);
  (void)r;
}

void ProgressEngine::WakeSelf(Pollable* p) {
  if (p->sleep_index < 0) return RingSelf();
  list_->Push(p->ready_token);  // 0 (no token): a check of every sleeper
  RingSelf();
}

bool ProgressEngine::OthersReady(const Pollable* self) {
  if (list_->Pending()) return true;
  for (const DueEntry& d : due_)
    if (d.p && d.p != self && d.how != Due::kExpired) return true;
  for (Pollable* p : hot_)
    if (p != self && p->Poll()) return true;
  return false;
}

bool ProgressEngine::Requeue(Pollable* p) {
  if (!prepare_ || !doorbell_poll_) return false;
  Sleep(p);
  list_->Push(p->ready_token);  // 0 (no token): a check of every sleeper
  // No doorbell write: the next prepare (Run's first Sweep) takes the list, and the kick keeps
  // the loop from blocking before it.
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(prepare_))) uv_prepare_start(prepare_, OnPrepare);
  Kick();
  return true;
}

uint32_t ProgressEngine::AdoptToken(Pollable* p) {
  uint32_t t = 0;
  if (!free_tokens_.empty()) {
    t = free_tokens_.back();
    free_tokens_.pop_back();
  } else if (tokens_.size() < list_->nodes()) {
    t = static_cast<uint32_t>(tokens_.size());
    tokens_.push_back(nullptr);
  }
  if (t != 0) tokens_[t] = p;
  p->ready_token = t;
  // Stamps order endpoints found ready together: needed from the second endpoint on.
  size_t live = tokens();
  if (live == 2) {
    for (Pollable* q : tokens_)
      if (q) q->WantStamps(true);
  } else if (live > 2) {
    p->WantStamps(true);
  }
  return t;
}

void ProgressEngine::DropToken(Pollable* p) {
  uint32_t t = p->ready_token;
  if (t == 0) return;
  p->ready_token = 0;
  tokens_[t] = nullptr;
  // Claimed: on the list (a peer may push it while the connection closes), or claimed by a
  // producer that stopped before linking it. Reused now, it would name another endpoint whose
  // peer finds it claimed and never pushes it; once the loop took it, it is free.
  if (list_->Claimed(t)) quarantine_.push_back(t);
  else free_tokens_.push_back(t);
  if (tokens() == 1) {
    for (Pollable* q : tokens_)
      if (q) q->WantStamps(false);  // alone again: its messages need no stamp
  }
}

void ProgressEngine::Undue(Pollable* p, bool woken_only) {
  for (auto& d : due_)
    if (d.p == p && (!woken_only || d.how == Due::kWoken)) d.p = nullptr;
}

void ProgressEngine::Sleep(Pollable* p) {
  if (!doorbell_poll_ || p->sleep_index >= 0) return;
  Undue(p, true);  // asleep again: not handed over as woken
  Append<&Pollable::sleep_index>(sleepers_, p);
}

void ProgressEngine::Unsleep(Pollable* p) { Erase<&Pollable::sleep_index>(sleepers_, p); }

void ProgressEngine::Hold(Pollable* p) {
  stats_.holds++;
  Undue(p);  // waits again: not handed over
  if (p->hot_index >= 0) Remove(p);
  if (p->held_index < 0) Append<&Pollable::held_index>(held_, p);
}

void ProgressEngine::Unhold(Pollable* p) { Erase<&Pollable::held_index>(held_, p); }

bool ProgressEngine::Holding() {
  for (size_t i = 0; i < held_.size();) {
    if (!held_[i]->PartnerNeedsCpu()) {
      Unhold(held_[i]);  // held_[i] is now another endpoint
      continue;
    }
    i++;
  }
  return !held_.empty();
}

// The doorbell rang: one read, then the ready list (and the hot endpoints: what became ready at
// once is handed over in one order) to JS; JS may close, arm or put to sleep any endpoint
// meanwhile (Disarm, Arm and Sleep clear its entry in due_).
void ProgressEngine::OnDoorbell(uv_poll_t* h, int, int) {
  auto* self = static_cast<ProgressEngine*>(h->data);
  if (!self) return;
  self->DrainDoorbell();
  self->CollectReady();
  self->Dispatch(0, false);
}

bool ProgressEngine::TakeList() {
  if (!list_->Pending()) return false;
  taken_.clear();
  bool scan = list_->Take(static_cast<uint32_t>(tokens_.size()), &taken_);
  stats_.listed += taken_.size();
  bool found = false;
  // In push order; a token named twice (a peer's scribble) finds its endpoint awake already.
  for (uint32_t t : taken_) {
    Pollable* p = tokens_[t];
    if (!p || p->sleep_index < 0 || !p->Woken()) continue;  // hot, free, or a stale ring (re-armed)
    Unsleep(p);
    due_.push_back({p, Due::kWoken, 0});
    found = true;
  }
  if (scan) {
    stats_.scans++;
    for (size_t i = 0; i < sleepers_.size();) {
      Pollable* p = sleepers_[i];
      if (p->Woken()) {
        Unsleep(p);  // sleepers_[i] is now another endpoint
        due_.push_back({p, Due::kWoken, 0});
        found = true;
        continue;
      }
      i++;
    }
  }
  for (size_t i = 0; i < quarantine_.size();) {
    if (!list_->Claimed(quarantine_[i])) {
      free_tokens_.push_back(quarantine_[i]);
      quarantine_[i] = quarantine_.back();
      quarantine_.pop_back();
      continue;
    }
    i++;
  }
  return found;
}

// A look at the hot endpoints and the list, again while a look finds something: whatever was
// made ready before an endpoint this found is visible by the next look (each producer stamps and
// publishes a ring, then pushes a token, in order; a later load sees an earlier store of theirs),
// so it is handed over in the same batch, in its place, not in a later one.
void ProgressEngine::CollectReady() {
  for (;;) {
    size_t before = due_.size();
    for (size_t i = 0; i < hot_.size();) {
      Pollable* p = hot_[i];
      if (p->Poll()) {
        Remove(p);  // hot_[i] is now another endpoint
        due_.push_back({p, Due::kReady, 0});
        continue;
      }
      i++;
    }
    TakeList();
    if (due_.size() == before) return;
  }
}

void ProgressEngine::StartWatchIdle(Pollable* p) {
  if (!idle_timer_) return;
  Append<&Pollable::idle_index>(idle_, p);
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(idle_timer_)))
    uv_timer_start(idle_timer_, OnIdleTimer, kIdleTickMs, kIdleTickMs);
}

void ProgressEngine::UnwatchIdle(Pollable* p) {
  if (p->idle_index < 0) return;
  Erase<&Pollable::idle_index>(idle_, p);
  if (idle_.empty() && idle_timer_) uv_timer_stop(idle_timer_);
}

// OnIdleTick runs no JS, so the list cannot change under the loop but by UnwatchIdle here.
void ProgressEngine::OnIdleTimer(uv_timer_t* h) {
  auto* self = static_cast<ProgressEngine*>(h->data);
  if (!self) return;
  for (size_t i = 0; i < self->idle_.size();) {
    Pollable* p = self->idle_[i];
    if (p->OnIdleTick()) {
      self->UnwatchIdle(p);  // idle_[i] is now another endpoint
      continue;
    }
    i++;
  }
}

std::shared_ptr<ProgressEngine> ProgressEngine::ForLoop(uv_loop_t* loop, int* err, bool* made) {
  if (made) *made = false;
  std::lock_guard<std::mutex> lock(g_engines_mu);
  auto& engines = Engines();
  auto it = engines.find(loop);
  if (it != engines.end()) return it->second;
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    if (err) *err = errno;
    return nullptr;
  }
  int lerr = 0;
  std::unique_ptr<ReadyList> list = ReadyList::Create(&lerr);
  if (!list) {
    close(fd);
    if (err) *err = lerr;
    return nullptr;
  }
  std::shared_ptr<ProgressEngine> e(new ProgressEngine(loop, fd, std::move(list)));
  engines.emplace(loop, e);
  if (made) *made = true;
  return e;
}

std::shared_ptr<ProgressEngine> ProgressEngine::Find(uv_loop_t* loop) {
  std::lock_guard<std::mutex> lock(g_engines_mu);
  auto& engines = Engines();
  auto it = engines.find(loop);
  return it == engines.end() ? nullptr : it->second;
}

ProgressEngine::ProcessStats ProgressEngine::Process() {
  SpinCap& cap = Cap();
  ProcessStats s;
  s.spin_ns = cap.total_ns.load(std::memory_order_relaxed);
  s.throttles = cap.throttles.load(std::memory_order_relaxed);
  s.contended = cap.contended.load(std::memory_order_relaxed);
  s.cap_percent = cap.percent;
  s.period_ns = kCapPeriodNs;
  return s;
}

// The environment of the loop is going away (progress.h): its handles close while it exists.
void ProgressEngine::ForgetLoop(void* arg) {
  std::shared_ptr<ProgressEngine> e;
  {
    std::lock_guard<std::mutex> lock(g_engines_mu);
    auto& engines = Engines();
    auto it = engines.find(static_cast<uv_loop_t*>(arg));
    if (it == engines.end()) return;
    e = std::move(it->second);
    engines.erase(it);
  }
  e->CloseHandles();
  for (Pollable* p : e->hot_) p->hot_index = -1;
  for (Pollable* p : e->sleepers_) p->sleep_index = -1;
  for (Pollable* p : e->idle_) p->idle_index = -1;
  for (Pollable* p : e->held_) p->held_index = -1;
  e->held_.clear();
  e->idle_.clear();
  e->hot_.clear();
  e->due_.clear();
  e->sleepers_.clear();
}

bool ProgressEngine::Arm(Pollable* p, uint64_t now_ns) {
  if (!prepare_) return false;
  if (!held_.empty() && Holding()) return false;  // a peer needs this CPU: nobody spins
  SpinCap& cap = Cap();
  if (!cap.Allows(now_ns)) {
    stats_.throttles++;
    cap.throttles.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Undue(p);  // hot again: not handed over
  if (p->sleep_index >= 0) Unsleep(p);
  if (p->hot_index < 0) Append<&Pollable::hot_index>(hot_, p);
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(prepare_))) uv_prepare_start(prepare_, OnPrepare);
  return true;
}

void ProgressEngine::Remove(Pollable* p) { Erase<&Pollable::hot_index>(hot_, p); }

void ProgressEngine::Disarm(Pollable* p) {
  if (p->hot_index >= 0) Remove(p);
  if (p->held_index >= 0) Unhold(p);
  if (p->sleep_index >= 0) Unsleep(p);
  Undue(p);
}

void ProgressEngine::OnPrepare(uv_prepare_t* h) {
  auto* self = static_cast<ProgressEngine*>(h->data);
  if (self) self->Run();
}

uint64_t ProgressEngine::Sweep(uint64_t now_ns) {
  CollectReady();
  uint64_t next = UINT64_MAX;
  for (size_t i = 0; i < hot_.size();) {
    Pollable* p = hot_[i];
    uint64_t end = p->poll_window.armed_at_ns + p->poll_window.window_ns;
    if (now_ns >= end) {
      Remove(p);
      due_.push_back({p, Due::kExpired, 0});
      continue;  // hot_[i] is now another endpoint
    }
    if (end < next) next = end;
    i++;
  }
  Dispatch(now_ns, false);
  return next;
}

// Hands every due endpoint over. JS runs here: it may arm, disarm or close any endpoint, which
// Arm/Disarm/Sleep reflect in due_ (a cleared entry is skipped). The ready entries come first
// (CollectReady appends them before any expiry); two or more are put in the order they became
// ready, stably (equal or unknown stamps keep the list's order), before any JS runs.
void ProgressEngine::Dispatch(uint64_t now_ns, bool throttled) {
  size_t ready = 0;
  while (ready < due_.size() && due_[ready].how != Due::kExpired) ready++;
  if (ready > 1) {
    for (size_t i = 0; i < ready; i++) due_[i].key = due_[i].p->ReadyStamp();
    std::stable_sort(due_.begin(), due_.begin() + static_cast<std::ptrdiff_t>(ready),
                     [](const DueEntry& a, const DueEntry& b) { return a.key < b.key; });
  }
  for (size_t i = 0; i < due_.size(); i++) {
    Pollable* p = due_[i].p;
    if (!p) continue;
    due_[i].p = nullptr;
    switch (due_[i].how) {
      case Due::kReady:
        if (now_ns == 0) now_ns = NowNs();
        stats_.hits++;
        p->poll_window.hits++;
        p->poll_window.EndWait(now_ns);
        p->OnPollReady();
        break;
      case Due::kWoken:
        p->OnWake();
        break;
      case Due::kExpired:
        if (!throttled) {
          stats_.misses++;
          p->poll_window.misses++;
        }
        p->OnPollExpired();
        break;
    }
  }
  due_.clear();
}

void ProgressEngine::ExpireAll(uint64_t now_ns) {
  while (!hot_.empty()) {
    Pollable* p = hot_.back();
    Remove(p);
    due_.push_back({p, Due::kExpired, 0});
  }
  Dispatch(now_ns, true);
}

void ProgressEngine::Run() {
  uint64_t entered = NowNs();
  uint64_t now = entered;
  uint64_t deadline = Sweep(now);
  now = NowNs();  // Sweep may have run JS
  SpinCap& cap = Cap();
  while (!hot_.empty()) {
    // Spin only while the loop would otherwise block: nothing pending, no immediate, no due
    // timer (libuv's own poll timeout is not 0); yield one non-blocking turn of the loop every
    // kYieldNs so that I/O and newly started watchers are served.
    bool spun_long = now - entered >= kYieldNs;
    if (spun_long || uv_backend_timeout(loop_) == 0) {
      // iodev's yield: a process this one shares a CPU with (the peer, often) runs now, not
      // after this one's time slice; with nothing else runnable it returns at once.
      if (spun_long) {
        sched_yield();
        uint64_t back = NowNs();
        if (back - now > kPreemptedNs) cap.BackOff(back);
      }
      Kick();
      return;
    }
    if (!held_.empty() && Holding()) {
      ExpireAll(now);  // a peer needs this CPU: every hot endpoint sleeps; Arm refuses meanwhile
      now = NowNs();
      continue;
    }
    if (!cap.Allows(now)) {
      stats_.throttles++;
      cap.throttles.fetch_add(1, std::memory_order_relaxed);
      ExpireAll(now);  // Arm refuses until the next period: nobody becomes hot meanwhile
      now = NowNs();
      continue;
    }
    uint64_t start = now;
    uint64_t end = std::min(deadline, entered + kYieldNs);
    bool found = false, preempted = false;
    for (unsigned pass = 1; !found; pass++) {
      for (Pollable* p : hot_) {
        if (p->Poll()) {
          found = true;
          break;
        }
      }
      // A sleeper a peer woke: served now, in its place among the hot ones (Sweep), not after
      // this slice (up to kYieldNs) when the loop reads the doorbell.
      if (!found && list_->Pending()) found = true;
      if (found || pass % kPassesPerClockRead == 0) {
        uint64_t t = NowNs();
        if (t - now > kPreemptedNs) preempted = true;
        now = t;
        if (now >= end || preempted) break;
      }
      if (!found) CpuRelax();
    }
    if (preempted) cap.BackOff(now);
    uint64_t spun = now - start;
    cap.Charge(spun);
    stats_.spin_ns += spun;
    stats_.slices++;
    uint64_t share = spun / hot_.size();
    for (Pollable* p : hot_) p->poll_window.spin_ns += share;
    deadline = Sweep(now);
    now = NowNs();
  }
  if (!prepare_) return;
  if (!list_->Pending()) {
    uv_prepare_stop(prepare_);
  } else {
    // Named on the list while JS ran (Requeue, or a peer that rang): another turn of the loop
    // without blocking, whose prepare takes it.
    Kick();
  }
}

}  // namespace fastsock
