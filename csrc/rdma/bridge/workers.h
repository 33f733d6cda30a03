// The rsocket bridge's helper threads (connect, accept, one bridge per connection), registered
// so that one can be stopped by id (rsocketClose) and so that environment teardown and process
// exit can stop every thread of an owner (an N-API environment; the glue passes it as an opaque
// tag) and wait for them. No N-API here.
//
// Contract: a thread is registered (Add) before it starts and removes itself (Remove) as its very
// last step; it polls its worker's stop_efd beside whatever it waits for, and ends promptly once
// that becomes readable.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>

namespace fastsock {
namespace bridge {

// How long StopAndWait waits for the threads to end, in ms.
constexpr int kStopWaitMs = 2000;

// The monotonic clock in ms.
int64_t NowMs();

struct Worker {
  int id = 0;
  int stop_efd = -1;            // readable once the thread must stop
  const void* owner = nullptr;  // whose thread it is (the environment that started it)
};

class Registry {
 public:
  // Registers a worker of `owner` with a fresh stop eventfd; nullptr (errno set) when no eventfd
  // can be made.
  Worker* Add(const void* owner);
  // Called by the thread as its last step: the worker and its eventfd go.
  void Remove(Worker* w);
  // Signals worker `id` to stop; false when it has already ended.
  bool Stop(int id);
  // Remembers `owner`; true the first time (the caller then arranges StopAndWait(owner) at its
  // teardown), false when it is remembered already.
  bool Track(const void* owner);
  // Stops the workers of `owner` (every worker when owner is null), forgets the owner, and waits
  // up to kStopWaitMs for them to end.
  void StopAndWait(const void* owner);
  // Workers alive.
  size_t Count();

  // The process-wide registry. Never destroyed (detached threads may still touch it while static
  // destructors run); process exit stops and waits for every worker.
  static Registry* Get();

 private:
  static void Signal(Worker* w);

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Worker*> live_;
  std::set<const void*> owners_;
  int next_id_ = 0;
};

}  // namespace bridge
}  // namespace fastsock
