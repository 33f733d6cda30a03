// The progress engine's JS side (csrc/progress.h is the engine, without N-API): the engine of an
// environment's loop, and the objects pollStats() and progressStats() return.
#pragma once
#include <napi.h>

#include <memory>

#include "progress.h"

namespace fastsock {

// The engine of the loop of `env` (ProgressEngine::ForLoop), made on first use; the env's
// cleanup hook forgets it (ProgressEngine::ForgetLoop). Null with *err set when its doorbell
// cannot be made (EMFILE...).
std::shared_ptr<ProgressEngine> EngineForEnv(napi_env env, int* err = nullptr);

// pollStats() of one polled endpoint (shm, verbs): { windowUs, maxUs, hot, hits, misses, spinNs,
// lastWaitUs } (times in µs, spin in ns).
Napi::Object PollStatsObject(Napi::Env env, const PollStats& s);

// progressStats() -> { hot, sleeping, held, idleWatched, doorbellFd, readyFd, tokens, spinNs,
// hits, misses, throttles, slices, holds, listed, scans } of this thread's loop engine (zeros
// before any), plus the process-wide { processSpinNs, processThrottles, processContended,
// capPercent, periodNs }.
Napi::Value ProgressStatsJs(const Napi::CallbackInfo& info);

}  // namespace fastsock
