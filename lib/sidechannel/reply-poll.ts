/**
 * L2, busy polling for the side channel's reply: after HELLO, a client that would sleep on epoll
 * for ACCEPT (a blocking wake-up costs more than a short spin: docs/polling.md) first polls the
 * socket for a bounded time, when recent handshakes suggest the reply comes that soon (the
 * learned-window idea of KVM's haltpoll, as in docs/polling.md). A server that answers late (a
 * loaded host: the server process waits for a CPU) turns it off, so the spinning costs nothing
 * there; it comes back on when replies come quickly again.
 */

/** Upper bound (µs) of the poll for one reply. */
export const REPLY_POLL_CAP_US = 50

/** How many recent reply latencies the window is learned from. */
const SAMPLES = 8

/** µs from HELLO written to the reply seen, the last SAMPLES handshakes (this process). */
const recentUs: number[] = []

/**
 * How long (µs) to busy-poll for the reply after HELLO (counted from the client's first read that
 * finds nothing, lib/sidechannel/framed-read.ts): REPLY_POLL_CAP_US, bounded by the
 * socket's `pollUs` (0 turns polling off), when the median of recent replies came
 * within twice the bound (a reply seen after sleeping is seen a wake-up late), else 0.
 */
export function replyPollUs (pollUs: number | undefined): number {
  const capUs = Math.min(REPLY_POLL_CAP_US, pollUs ?? REPLY_POLL_CAP_US)
  if (!(capUs > 0)) return 0
  if (recentUs.length === 0) return capUs
  const sorted = recentUs.slice().sort((a, b) => a - b)
  return sorted[sorted.length >> 1] <= 2 * capUs ? capUs : 0
}

/** Records how long (µs) a reply took after HELLO. */
export function recordReplyUs (us: number): void {
  recentUs.push(us)
  if (recentUs.length > SAMPLES) recentUs.shift()
}
