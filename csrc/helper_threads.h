// The process's V8 helper threads (the platform's worker pool: concurrent compilation, marking,
// sweeping) at a lower CPU priority, so that a busy-polling main thread is not the one they
// preempt when every CPU is busy (docs/polling.md, "Where a millisecond round trip goes").
#pragma once

namespace fastsock {

// Raises the nice value of the V8 platform's worker threads to `nice` (never lowers it): the
// threads named "V8Worker" (Node 24 and later name them), else, on Node releases that leave
// their threads unnamed, the threads Node starts with its platform: the first batch of threads
// after the main thread (same start tick, +1), with the main thread's name. Threads started
// later (worker_threads, libuv's pool) and the calling thread are left alone. Returns how many
// threads it changed, or -errno when /proc/self/task cannot be read.
int NiceHelperThreads(int nice);

}  // namespace fastsock
