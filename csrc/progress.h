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
// shared by every shm endpoint of the loop, so a connection costs no doorbell fd of its own, and
// beside it the loop's ready list (csrc/ready_list.h: a memfd peers map). An endpoint about to
// sleep registers with Sleep(); a peer that saw that endpoint's "waiting" flag in the shared
// control block pushes the endpoint's token (AdoptToken) onto the ready list, then rings the
// loop's doorbell (once per peer loop, csrc/shm/peer_doorbell.h); one read of the doorbell then
// takes the list and checks the endpoints it names (Woken(), a read of shared memory each): a
// wake-up costs O(endpoints woken), not O(endpoints asleep). Every sleeping endpoint is checked
// only when a peer asked for it (an endpoint without a token) or the list was scribbled on.
//
// Order (docs/polling.md, "Order across connections"): the endpoints found ready at once (a
// doorbell's, or one pass of the engine over its hot endpoints) are handed to JS in the order
// they became ready: the ready list's order, and the peers' stamps of when each ring became
// ready (ReadyStamp(); the list and the hot endpoints are looked at again until a look finds
// nothing new, so that anything made ready before an endpoint found is found with it).
//
// Threading: an engine is used only on its loop's thread; the registry (loop -> engine) and the
// process cap are shared by all threads.
//
// No N-API here: the endpoints' protocol cores (csrc/shm/conn.h, csrc/rdma/verbs/conn.h) are
// Pollables. csrc/progress_js.h is the JS side: the engine of an environment's loop, and the
// pollStats() / progressStats() objects.
#pragma once
#include <uv.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ready_list.h"

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

// pollStats() of one polled endpoint: its PollWindow, and whether the engine polls it now.
struct PollStats {
  uint64_t window_ns = 0, max_ns = 0;
  bool hot = false;
  uint64_t hits = 0, misses = 0, spin_ns = 0, last_wait_ns = 0;
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

  // When what it waits for became ready (the host's ticks, csrc/clock.h ReadyTicks, as its peer
  // stamped it: shm's RingControl::ready_ticks), UINT64_MAX when unknown (space to write;
  // verbs): the order in which the engine hands endpoints found ready at once to JS. Called only
  // for those, before any of them goes to JS (it reads what Poll()/Woken() found). Cheap, as
  // Poll().
  virtual uint64_t ReadyStamp() { return UINT64_MAX; }
  // Whether ReadyStamp() orders anything: on while its loop has more than one endpoint with a
  // token (shm asks its peer to stamp only then: a lone connection's messages cost no clock read).
  virtual void WantStamps(bool) {}

  PollStats GetPollStats() const {
    const PollWindow& w = poll_window;
    return {w.window_ns, w.max_ns, hot_index >= 0, w.hits, w.misses, w.spin_ns, w.last_wait_ns};
  }

  PollWindow poll_window;
  uint32_t ready_token = 0;  // its token in the loop's ready list (AdoptToken); 0: none
  int hot_index = -1;    // the engine's bookkeeping: index in its hot list, -1 when not hot
  int sleep_index = -1;  // index in its sleeping list, -1 when not asleep
  int idle_index = -1;   // index in its idle-watch list, -1 when not watched
  int held_index = -1;   // index in its held list, -1 when not held
};

class ProgressEngine {
 public:
  // The engine of `loop`, made on first use (*made true then: its owner arranges for
  // ForgetLoop(loop) when the loop's environment goes away: EngineForEnv, csrc/progress_js.h);
  // freed by ForgetLoop (the handles) and when the last endpoint lets go (the object). Null with
  // *err set when its doorbell cannot be made (EMFILE...).
  static std::shared_ptr<ProgressEngine> ForLoop(uv_loop_t* loop, int* err = nullptr, bool* made = nullptr);
  // The loop (a uv_loop_t*) is going away: its engine's handles are closed while the loop still
  // exists, and the loop is forgotten (its address may be reused). Endpoints still holding the
  // engine keep the object alive; it polls nothing more. (The signature of an env cleanup hook.)
  static void ForgetLoop(void* loop);
  // The engine of `loop` if one was made (null otherwise): for the counters.
  static std::shared_ptr<ProgressEngine> Find(uv_loop_t* loop);
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
  // The loop's ready list, sent with the doorbell: its memfd (owned by the engine, -1 once the
  // loop went away) and its node count.
  int ready_fd() const { return list_->fd(); }
  uint32_t ready_nodes() const { return list_->nodes(); }
  // A token naming `p` in the loop's ready list (also set in p->ready_token), which its peer
  // pushes when it wakes p; 0 when every token is taken (its peer then asks for a check of every
  // sleeping endpoint). DropToken before p goes away: a token whose node is still claimed waits
  // until the loop took it before it names another endpoint.
  uint32_t AdoptToken(Pollable* p);
  void DropToken(Pollable* p);
  // Names `p` on the loop's own ready list and rings the doorbell: the loop checks p at its next
  // turn (a synchronous wait on p's rings may have cleared the waiting flags p sleeps on, and
  // taken a ring owed to the loop).
  void WakeSelf(Pollable* p);
  // True when an endpoint other than `self` is ready and not yet handed to JS: collected for the
  // current hand-over, named on the ready list, or hot with its Poll() true. Cheap: a load, and
  // a Poll() per hot endpoint.
  bool OthersReady(const Pollable* self);
  // `p` (which JS is handling, neither hot nor asleep) has more of what it waited for, but other
  // endpoints became ready first: it sleeps, already woken, behind them (its token on the ready
  // list, as a peer would push it), and the loop's next turn (prepare) takes the list without
  // blocking: p's Woken() is checked and it is handed over in its turn. The caller sets what p
  // sleeps for first (its Woken() must see it). False (nothing done) once the loop went away.
  bool Requeue(Pollable* p);
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
    uint64_t listed = 0;  // tokens taken from the ready list
    uint64_t scans = 0;   // checks of every sleeping endpoint (a peer without a token asked, or a scribbled list)
  };
  const Stats& stats() const { return stats_; }
  size_t hot() const { return hot_.size(); }
  size_t sleeping() const { return sleepers_.size(); }
  size_t held() const { return held_.size(); }
  size_t tokens() const { return tokens_.size() - 1 - free_tokens_.size() - quarantine_.size(); }

  // The process cap's counters (every loop of the process).
  struct ProcessStats {
    uint64_t spin_ns = 0, throttles = 0, contended = 0;
    unsigned cap_percent = 0;
    uint64_t period_ns = 0;
  };
  static ProcessStats Process();

 private:
  void Kick();  // one non-blocking turn of the loop
  // How an endpoint in due_ is handed over: ready while hot (OnPollReady), ready while asleep
  // (OnWake), its window ran out (OnPollExpired).
  enum class Due : uint8_t { kReady, kWoken, kExpired };
  struct DueEntry {
    Pollable* p;  // nullptr once cleared (JS armed, slept, disarmed or closed it meanwhile)
    Due how;
    uint64_t key;  // ReadyStamp(), read just before ordering
  };

  ProgressEngine(uv_loop_t* loop, int doorbell_fd, std::unique_ptr<ReadyList> list);
  static void OnPrepare(uv_prepare_t* h);
  static void OnDoorbell(uv_poll_t* h, int status, int events);
  void Unsleep(Pollable* p);
  void Unhold(Pollable* p);
  // Releases the holds whose peer no longer needs this CPU; true when any is left.
  bool Holding();
  void StartWatchIdle(Pollable* p);
  static void OnIdleTimer(uv_timer_t* h);
  void CloseHandles();
  // The prepare callback: sweeps, then spins while the loop would otherwise block.
  void Run();
  // Takes ready and expired endpoints off the hot list and hands them over; returns the
  // earliest window end of the endpoints still hot (UINT64_MAX: none).
  uint64_t Sweep(uint64_t now_ns);
  // Moves every ready endpoint to due_: hot ones whose Poll() is true, sleepers the ready list
  // names (all sleepers when asked) whose Woken() is true; again until a look finds nothing new.
  void CollectReady();
  // Takes the ready list; true when it found any endpoint ready.
  bool TakeList();
  // Hands every due endpoint over, the ready ones first in the order they became ready.
  void Dispatch(uint64_t now_ns, bool throttled);
  // Clears `p`'s entries in due_ (all, or only those handed over as woken).
  void Undue(Pollable* p, bool woken_only = false);
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
  std::unique_ptr<ReadyList> list_;
  // token -> endpoint (index 0 unused; nullptr: free, or dropped while its node was claimed)
  std::vector<Pollable*> tokens_;
  std::vector<uint32_t> free_tokens_;
  std::vector<uint32_t> quarantine_;  // dropped while claimed: free once the loop took them
  std::vector<uint32_t> taken_;       // scratch: what one TakeList took
  std::vector<Pollable*> hot_;
  std::vector<Pollable*> held_;  // waits on a peer that needs this CPU (Hold): nobody spins
  uv_timer_t* idle_timer_ = nullptr;  // unref'd; active while idle_ is not empty
  std::vector<Pollable*> idle_;
  // Taken off hot_ or sleepers_, being handed over.
  std::vector<DueEntry> due_;
  Stats stats_;
};

}  // namespace fastsock
