/**
 * L2, the one loop that reads handshake frames with their fds from a raw side-channel fd under a
 * deadline (the client's reply, the listener's HELLO, the shm set-up's messages): recvmsg
 * natively (a frame may carry fds, which a read through a handle would drop), busy-poll once if
 * asked, else sleep until readable (`native.waitReadable`), and hand everything read so far to
 * the caller until it says the frames it wants are complete. Nothing is read past what the
 * caller allows (`wanted`): bytes after the handshake belong to whoever takes the fd over.
 *
 * And how long the client busy-polls for the side channel's reply (ReplyWindow): after HELLO, a
 * client that would sleep on epoll for ACCEPT (a blocking wake-up costs more than a short spin:
 * docs/polling.md) first polls the socket for a bounded time, when recent handshakes suggest the
 * reply comes that soon (the learned-window idea of KVM's haltpoll, as in docs/polling.md). A
 * server that answers late (a loaded host: the server process waits for a CPU) turns it off, so
 * the spinning costs nothing there; it comes back on when replies come quickly again. The window
 * is the connector's own field (./connector.ts), not module state.
 */
import { native } from '../native'
import { ERRNO } from '../errors'
import * as wire from '../wire'

const { EAGAIN, ETIMEDOUT } = ERRNO

/** How a read ends without the caller's frames: the deadline, EOF, `aborted()`, or a -errno. */
export type ReadEnd = 'timeout' | 'closed' | 'aborted' | number

/** What was read so far: the bytes, the fds that came with them (the caller's), and whether a busy poll caught them. */
export interface FramesRead {
  acc: Buffer
  fds: number[]
  polled: boolean
}

export interface FramedReadOptions {
  /** The most fds one recvmsg may take (more: EPROTO, MSG_CTRUNC). */
  maxFds: number
  /** Date.now() after which the read ends with 'timeout'. */
  deadline: number
  /** How many bytes the next recvmsg may take, given what was read (default: wire.MAX_MESSAGE_BYTES). */
  wanted?: (acc: Buffer) => number
  /**
   * Before the first sleep, busy-poll for this many µs, counted from the first read that found
   * nothing (so the caller's own work after its request does not eat the budget); `polled` says
   * whether the poll caught bytes.
   */
  spinUs?: number
  /** Checked before every read: true ends the read with 'aborted'. */
  aborted?: () => boolean
}

/**
 * Reads from `fd` until `onBytes(read)` returns true (the frames are complete; a throw ends the
 * read with that error), or the read ends (`onEnd`, with the bytes and fds read so far: the
 * caller closes or keeps them). Calls back synchronously when the bytes are already there.
 */
export function readFrames (fd: number, o: FramedReadOptions, onBytes: (read: FramesRead) => boolean,
  onEnd: (why: ReadEnd | Error, read: FramesRead) => void): void {
  const n = native!
  const read: FramesRead = { acc: Buffer.alloc(0), fds: [], polled: false }
  let spinUs = o.spinUs !== undefined && o.spinUs > 0 ? o.spinUs : 0
  const wanted = o.wanted ?? (() => wire.MAX_MESSAGE_BYTES)
  const more = (): void => {
    for (;;) {
      if (o.aborted?.()) return onEnd('aborted', read)
      let r = n.recvFds(fd, wanted(read.acc), o.maxFds)
      if (r === EAGAIN && spinUs > 0) {
        const until = process.hrtime.bigint() + BigInt(Math.round(spinUs * 1000))
        spinUs = 0
        while (r === EAGAIN && process.hrtime.bigint() < until) r = n.recvFds(fd, wanted(read.acc), o.maxFds)
        read.polled = r !== EAGAIN
      }
      if (r === EAGAIN) {
        const leftMs = o.deadline - Date.now()
        if (leftMs <= 0) return onEnd('timeout', read)
        n.waitReadable(fd, leftMs, status => {
          if (status === ETIMEDOUT) return onEnd('timeout', read)
          more()
        })
        return
      }
      if (typeof r === 'number') return onEnd(r, read)
      if (r.bytes.length === 0) return onEnd('closed', read)
      read.fds.push(...r.fds)
      read.acc = read.acc.length ? Buffer.concat([read.acc, r.bytes]) : r.bytes
      let done: boolean
      try {
        done = onBytes(read)
      } catch (err) {
        return onEnd(err as Error, read)
      }
      if (done) return
    }
  }
  more()
}

/** Upper bound (µs) of the poll for one reply. */
export const REPLY_POLL_CAP_US = 50

/** How many recent reply latencies the window is learned from. */
const SAMPLES = 8

/** The learned window of one connector: how long to poll for the next reply. */
export class ReplyWindow {
  /** µs from HELLO written to the reply seen, the last SAMPLES handshakes. */
  private readonly recentUs: number[] = []

  /**
   * How long (µs) to busy-poll for the reply after HELLO (counted from the client's first read
   * that finds nothing, readFrames' `spinUs`): REPLY_POLL_CAP_US, bounded by the socket's `pollUs`
   * (0 turns polling off), when the median of recent replies came within twice the bound (a
   * reply seen after sleeping is seen a wake-up late), else 0.
   */
  pollUs (pollUs: number | undefined): number {
    const capUs = Math.min(REPLY_POLL_CAP_US, pollUs ?? REPLY_POLL_CAP_US)
    if (!(capUs > 0)) return 0
    if (this.recentUs.length === 0) return capUs
    const sorted = this.recentUs.slice().sort((a, b) => a - b)
    return sorted[sorted.length >> 1] <= 2 * capUs ? capUs : 0
  }

  /** Records how long (µs) a reply took after HELLO. */
  record (us: number): void {
    this.recentUs.push(us)
    if (this.recentUs.length > SAMPLES) this.recentUs.shift()
  }
}
