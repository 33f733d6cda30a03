/**
 * Segments made ahead for the shm client: a connect takes a sealed memfd (csrc/shm/segment.h,
 * header written, nothing mapped) from a small per-process pool instead of creating one before
 * HELLO, and the pool is refilled off the critical path (setImmediate after the take). A pooled
 * memfd was never sent anywhere: once taken it is the connect's (sent with SHM_SETUP, or
 * closed), never put back, so nothing a peer saw is reused.
 *
 * Bounded and freed when unused: at most POOL_MAX memfds (one fd and one 4 KiB header page
 * each), only of the ring size last asked for, none made near the fd limit, and all closed after
 * POOL_IDLE_MS without a take (an idle process holds none).
 */
import { native } from '../../native'
import { underFdPressure } from '../fd-pressure'

/** Memfds kept ready. */
export const POOL_MAX = 2
/** A pool nobody took from for this long (ms) is emptied. */
export const POOL_IDLE_MS = 2000

let ringBytesPooled = 0
const ready: number[] = []
let refillQueued = false
let lastTakeMs = 0
let idleTimer: NodeJS.Timeout | null = null

/** A fresh sealed memfd for rings of `ringBytes` per direction: a pooled one, else made now. Throws (errno codes). */
export function takeSegment (ringBytes: number): number {
  lastTakeMs = Date.now()
  if (ringBytes !== ringBytesPooled) {
    drain()
    ringBytesPooled = ringBytes
  }
  const memfd = ready.pop() ?? native!.shmCreateSegment(ringBytes, ringBytes).memfd
  if (!refillQueued) {
    refillQueued = true
    setImmediate(refill)
  }
  return memfd
}

/** Tops the pool up to POOL_MAX (unless fds are short) and arms the idle timer. */
function refill (): void {
  refillQueued = false
  try {
    while (ready.length < POOL_MAX && !underFdPressure()) ready.push(native!.shmCreateSegment(ringBytesPooled, ringBytesPooled).memfd)
  } catch {
    // Out of fds or memory: connects make their own, as without a pool.
  }
  if (ready.length > 0 && idleTimer === null) {
    idleTimer = setTimeout(onIdle, POOL_IDLE_MS)
    idleTimer.unref()
  }
}

function onIdle (): void {
  idleTimer = null
  const idleMs = Date.now() - lastTakeMs
  if (idleMs >= POOL_IDLE_MS) return drain()
  idleTimer = setTimeout(onIdle, POOL_IDLE_MS - idleMs)
  idleTimer.unref()
}

/** Closes every pooled memfd. */
function drain (): void {
  for (const fd of ready.splice(0)) native!.closeFd(fd)
  if (idleTimer !== null) clearTimeout(idleTimer)
  idleTimer = null
}

/** How many memfds the pool holds now (tests). */
export function pooledSegments (): number {
  return ready.length
}
