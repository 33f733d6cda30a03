#include "progress_js.h"

#include "loop_util.h"

namespace fastsock {

std::shared_ptr<ProgressEngine> EngineForEnv(napi_env env, int* err) {
  uv_loop_t* loop = LoopOf(env);
  bool made = false;
  std::shared_ptr<ProgressEngine> e = ProgressEngine::ForLoop(loop, err, &made);
  if (made) napi_add_env_cleanup_hook(env, ProgressEngine::ForgetLoop, loop);
  return e;
}

Napi::Object PollStatsObject(Napi::Env env, const PollStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("windowUs", static_cast<double>(s.window_ns) / 1e3);
  o.Set("maxUs", static_cast<double>(s.max_ns) / 1e3);
  o.Set("hot", s.hot);
  o.Set("hits", static_cast<double>(s.hits));
  o.Set("misses", static_cast<double>(s.misses));
  o.Set("spinNs", static_cast<double>(s.spin_ns));
  o.Set("lastWaitUs", static_cast<double>(s.last_wait_ns) / 1e3);
  return o;
}

Napi::Value ProgressStatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  ProgressEngine::Stats s;
  size_t hot = 0, sleeping = 0, held = 0, idle = 0, tokens = 0;
  int doorbell = -1, ready = -1;
  // An engine is used only on its loop's thread: this one.
  if (std::shared_ptr<ProgressEngine> e = ProgressEngine::Find(LoopOf(env))) {
    s = e->stats();
    hot = e->hot();
    sleeping = e->sleeping();
    held = e->held();
    idle = e->idle_watched();
    doorbell = e->doorbell_fd();
    ready = e->ready_fd();
    tokens = e->tokens();
  }
  ProgressEngine::ProcessStats p = ProgressEngine::Process();
  o.Set("hot", static_cast<double>(hot));
  o.Set("sleeping", static_cast<double>(sleeping));
  o.Set("held", static_cast<double>(held));
  o.Set("idleWatched", static_cast<double>(idle));
  o.Set("doorbellFd", doorbell);
  o.Set("readyFd", ready);
  o.Set("tokens", static_cast<double>(tokens));
  o.Set("spinNs", static_cast<double>(s.spin_ns));
  o.Set("hits", static_cast<double>(s.hits));
  o.Set("misses", static_cast<double>(s.misses));
  o.Set("throttles", static_cast<double>(s.throttles));
  o.Set("slices", static_cast<double>(s.slices));
  o.Set("holds", static_cast<double>(s.holds));
  o.Set("listed", static_cast<double>(s.listed));
  o.Set("scans", static_cast<double>(s.scans));
  o.Set("processSpinNs", static_cast<double>(p.spin_ns));
  o.Set("processThrottles", static_cast<double>(p.throttles));
  o.Set("processContended", static_cast<double>(p.contended));
  o.Set("capPercent", static_cast<double>(p.cap_percent));
  o.Set("periodNs", static_cast<double>(p.period_ns));
  return o;
}

}  // namespace fastsock
