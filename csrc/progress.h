// Adaptive busy polling: one progress engine per event loop (docs/polling.md).
//
// An endpoint that waits (JS armed a read or a write) normally sleeps on its doorbell (an eventfd
// on a uv_poll): the wake-up costs ~20 µs on a VM. Instead, for a learned window, it joins the
// engine of its loop as a "hot" endpoint; when the loop would otherwise block (libuv's computed
// poll timeout is not 0 and its epoll set has nothing ready) the engine busy-polls every hot
// endpoint's Poll() (a read of shared memory, no syscall) from a uv_prepare handle, and hands a
// ready endpoint back to JS at once. A hot endpoint whose window passed without its event goes
// to sleep on its doorbell, as without polling.
//
// Sources of the policy:
// - iodev's polling-then-yield receive (G. L. Taboada, "Design of Efficient Java Communications
//   for High Performance Computing", 2009, section 4.2, Request.iwait): poll for a bounded time,
//   then give the CPU back; here the engine also yields to any other ready work of the loop.
// - The window per connection is the KVM guest haltpoll governor's (Linux
//   drivers/cpuidle/governors/haltpoll.c, adjust_poll_limit): after each wait of length
//   `block`, if window < block <= max the window doubles (at least to 50 µs, at most max); if
//   block > max it halves (below 1 µs: 0, i.e. no polling until a short wait regrows it); a wait
//   caught inside the window leaves it unchanged. A peer that answers late (a server doing 5 ms
//   of work) therefore stops costing spin within a few round trips, and a connection that waits
//   for nothing spins at most one window.
// - A per-process cap on spinning CPU (all loops of the process, shared atomics): at most
//   `capPercent` of one core per 10 ms period (default 50 %, FASTSOCK_POLL_CAP_PERCENT); past it
//   every hot endpoint sleeps until the next period. A sign that another task held the CPU for
//   longer than a reply takes (a yield that took over 200 µs, or a 200 µs gap between two clock
//   reads while spinning) stops all spinning of the process for 100 µs as well, doubling (up to
//   10 ms) while it recurs.
// - Holds: a wait whose reply must come from a peer that runs on this very CPU and still has
//   work from this side (PartnerNeedsCpu(): an shm peer's CPU hint, bytes it has not taken) does
//   not spin, and while such a wait lasts no endpoint of the loop spins: spinning would only keep
//   that peer off the CPU it needs (more processes than CPUs). The kernel's haltpoll polls only
//   an idle CPU; this is what user space can know of its own CPU's run queue.
//
// The loop's doorbell (docs/wire-protocol.md, "Doorbells"): one eventfd per loop, on one uv_poll,
// shared by every shm endpoint of the loop, so a connection costs no doorbell fd of its own. An
// endpoint about to sleep registers with Sleep(); a peer rings the loop's doorbell (once per
// peer loop, csrc/shm/peer_doorbell.h) after it saw that endpoint's "waiting" flag in the shared
// control block; one read of the doorbell then scans the sleeping endpoints (Woken(), a read of
// shared memory each) and hands the ready ones to JS.
//
// Threading: an engine is used only on its loop's thread; the registry (loop -> engine) and the
// process cap are shared by all threads.
#pragma once
#include <napi.h>
#include <uv.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fastsock {

// The learned polling window of one connection, and its counters (all in ns).
struct PollWindow {
  static constexpr uint64_t kGrowStartNs = 50000;  // haltpoll's guest_halt_poll_grow_start
  static constexpr uint64_t kFloorNs = 1000;       // below this the window is 0 (no polling)

  uint64_t max_ns = 0;     // the cap (shmPollUs); 0: never poll
  uint64_t window_ns = 0;  // the current window, in [0, max_ns]
  uint64_t armed_at_ns = 0;
  bool waiting = false;  // a wait began at armed_at_ns and has not been observed yet
  uint64_t hits = 0;     // waits caught while polling
  uint64_t misses = 0;   // windows that ran out: the endpoint went to sleep
  uint64_t spin_ns = 0;  // this endpoint's share of the engine's spinning
  uint64_t last_wait_ns = 0;

  void SetMax(uint64_t ns) {
    max_ns = ns;
    if (window_ns > ns) window_ns = ns;
  }
  void BeginWait(uint64_t now_ns) {
    armed_at_ns = now_ns;
    waiting = true;
  }
  // The wait that began at armed_at_ns ended at now_ns: adapt the window (haltpoll's rule).
  void EndWait(uint64_t now_ns);
};

// What the engine polls: a stream endpoint (shm; verbs can join the same way).
class Pollable {
 public:
  virtual ~Pollable() = default;
  // True when what the endpoint waits for has arrived (bytes, space, a peer flag). Cheap: reads
  // shared memory or a completion queue, no syscall, no JS.
  virtual bool Poll() = 0;
  // Poll() became true while hot: hand the event to JS (the engine already ended the wait).
  virtual void OnPollReady() = 0;
  // The window ran out (or the process cap was reached): sleep on the doorbell; if arming it
  // finds the event already there, hand it to JS.
  virtual void OnPollExpired() = 0;

  // Asleep on the loop's doorbell: true when what the endpoint sleeps for has arrived. Cheap, as
  // Poll(). False leaves the endpoint armed: a ring can be stale (its peer cleared the "waiting"
  // flag of a newer sleep, csrc/shm/ring.h), so an endpoint whose flag was cleared raises it
  // again, with the fence and re-check of arming, before it answers false.
  virtual bool Woken() = 0;
  // Woken() became true after the doorbell rang: hand the event to JS.
  virtual void OnWake() = 0;

  // True while the peer this endpoint waits on runs on this thread's CPU and has work from this
  // side (bytes it has not taken): spinning would keep it off the CPU it needs. Cheap (shared
  // memory). The default (verbs, a remote peer): false.
  virtual bool PartnerNeedsCpu() { return false; }

  // Watched by the engine's idle timer (WatchIdle): called about every kIdleTickMs from the
  // loop; no JS. True: stop watching.
  virtual bool OnIdleTick() { return true; }

  PollWindow poll_window;
  int hot_index = -1;    // the engine's bookkeeping: index in its hot list, -1 when not hot
  int sleep_index = -1;  // index in its sleeping list, -1 when not asleep
  int idle_index = -1;   // index in its idle-watch list, -1 when not watched
  int held_index = -1;   // index in its held list, -1 when not held
};

class ProgressEngine {
 public:
  // The engine of the loop of `env`, made on first use; freed by the env's cleanup hook (the
  // handles) and when the last endpoint lets go (the object). Null with *err set when its
  // doorbell cannot be made (EMFILE...).
  static std::shared_ptr<ProgressEngine> ForEnv(napi_env env, int* err = nullptr);
  ~ProgressEngine();

  // `p` waits: poll it until its window (poll_window.armed_at_ns + window_ns) runs out. False
  // when it may not spin now (the process cap is reached, or the loop is going away): the caller
  // sleeps on its doorbell instead.
  bool Arm(Pollable* p, uint64_t now_ns);
  // `p` waits on a peer that needs this CPU (p->PartnerNeedsCpu()): p sleeps (the caller puts it
  // on the doorbell), and no endpoint of the loop spins until p's wait ends (Release) or its
  // peer has taken everything (checked again at every Arm and every turn of the engine).
  void Hold(Pollable* p);
  // `p`'s wait ended (its event went to JS): it no longer holds spinning off.
  void Release(Pollable* p) {
    if (p->held_index >= 0) Unhold(p);
  }
  // `p` no longer waits (closed, or its event came another way): neither hot nor asleep.
  void Disarm(Pollable* p);
  // `p` sleeps on the loop's doorbell until Woken() (checked at every ring).
  void Sleep(Pollable* p);
  // The loop's doorbell: an eventfd (owned by the engine, -1 once the loop went away) and its
  // random 64-bit id, which peers use to keep one copy per loop (SHM_SETUP / SHM_READY).
  int doorbell_fd() const { return doorbell_fd_; }
  uint64_t doorbell_id() const { return doorbell_id_; }
  // The idle timer (one unref'd uv_timer per loop, running only while anything is watched): calls
  // p->OnIdleTick() every kIdleTickMs until it returns true (shm: gives a drained ring's pages
  // back). WatchIdle is cheap when already watched (one compare); UnwatchIdle before p goes away.
  static constexpr uint64_t kIdleTickMs = 100;
  void WatchIdle(Pollable* p) {
    if (p->idle_index < 0) StartWatchIdle(p);
  }
  void UnwatchIdle(Pollable* p);
  size_t idle_watched() const { return idle_.size(); }
  // Rings the loop's own doorbell (a synchronous wait that took a ring owed to the loop).
  void RingSelf();
  // Reads (resets) the doorbell's counter without scanning.
  void DrainDoorbell();

  struct Stats {
    uint64_t spin_ns = 0, hits = 0, misses = 0, throttles = 0, slices = 0;
    uint64_t holds = 0;  // waits that slept because their peer needed this CPU (Hold)
  };
  const Stats& stats() const { return stats_; }
  size_t hot() const { return hot_.size(); }
  size_t sleeping() const { return sleepers_.size(); }
  size_t held() const { return held_.size(); }

 private:
  ProgressEngine(uv_loop_t* loop, int doorbell_fd);
  static void OnPrepare(uv_prepare_t* h);
  static void OnDoorbell(uv_poll_t* h, int status, int events);
  void Unsleep(Pollable* p);
  void Unhold(Pollable* p);
  // Releases the holds whose peer no longer needs this CPU; true when any is left.
  bool Holding();
  void StartWatchIdle(Pollable* p);
  static void OnIdleTimer(uv_timer_t* h);
  static void CleanupHook(void* arg);
  void CloseHandles();
  // The prepare callback: sweeps, then spins while the loop would otherwise block.
  void Run();
  // Takes ready and expired endpoints off the hot list and hands them over; returns the
  // earliest window end of the endpoints still hot (UINT64_MAX: none).
  uint64_t Sweep(uint64_t now_ns);
  void Dispatch(uint64_t now_ns, bool throttled);
  // The process cap is reached: every hot endpoint sleeps.
  void ExpireAll(uint64_t now_ns);
  void Remove(Pollable* p);

  uv_loop_t* loop_;
  uv_prepare_t* prepare_;  // runs Run() while any endpoint is hot (unref'd)
  uv_idle_t* kick_;        // one non-blocking turn of the loop when Run() yields (unref'd)
  int doorbell_fd_ = -1;
  uint64_t doorbell_id_ = 0;
  uv_poll_t* doorbell_poll_ = nullptr;  // unref'd: a sleeping connection's side channel refs the loop
  std::vector<Pollable*> sleepers_;
  std::vector<Pollable*> woken_;  // taken off sleepers_ by a ring, being handed over (nullptr: cleared)
  std::vector<Pollable*> hot_;
  std::vector<Pollable*> held_;  // waits on a peer that needs this CPU (Hold): nobody spins
  uv_timer_t* idle_timer_ = nullptr;  // unref'd; active while idle_ is not empty
  std::vector<Pollable*> idle_;
  // Taken off hot_ by Sweep, being handed over: (endpoint or nullptr once cleared, ready).
  std::vector<std::pair<Pollable*, bool>> due_;
  Stats stats_;
};

// progressStats() -> { hot, sleeping, held, idleWatched, doorbellFd, spinNs, hits, misses, throttles, slices, holds } of this thread's loop
// engine (zeros before any), plus the process-wide { processSpinNs, processThrottles,
// processContended, capPercent, periodNs }.
Napi::Value ProgressStatsJs(const Napi::CallbackInfo& info);

// pollStats() of one polled endpoint (shm, verbs): { windowUs, maxUs, hot, hits, misses, spinNs,
// lastWaitUs } from its PollWindow (times in µs, spin in ns).
Napi::Object PollStatsObject(Napi::Env env, const Pollable& p);

}  // namespace fastsock
