'use strict'
// Preloaded into every run (`node -r`): when the test is still alive shortly before its timeout,
// calls process.exit(EXIT_PROBE_CODE). Node's test/common then runs its exit-time checks
// (mustCall counts), after a line on stderr saying so; a failing check turns the exit code into 1. So a hang that exits with
// EXIT_PROBE_CODE did all it was meant to and only failed to exit (a handle keeping the loop
// alive); one that exits with 1 was stuck before its checks passed. The timer is unref'd: it never
// keeps a test alive.
const ms = Number(process.env.FASTSOCK_NODE_SUITE_PROBE_MS)
if (ms > 0) {
  setTimeout(() => {
    process.stderr.write(`${process.env.FASTSOCK_NODE_SUITE_PROBE_MARK} pid ${process.pid}\n`)
    process.exit(Number(process.env.FASTSOCK_NODE_SUITE_PROBE_CODE))
  }, ms).unref()
}
