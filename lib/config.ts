/**
 * Process-wide settings read from the environment, once per process (every socket consults them;
 * process.env is a slow lookup). Per-socket options (`shmRingBytes`, `pollUs`) override them.
 */

/** Default shm ring size per direction: comparable to loopback socket buffers (docs/design.md). */
export const DEFAULT_SHM_RING_BYTES = 1 << 20

let pollUsFromEnv: number | undefined | null = null
let ringBytesFromEnv: number | null = null

/** True for a valid shm ring size: a power of two from 4096 to 256 MiB, in bytes. */
export function validRingBytes (v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 4096 && v <= 256 * 1024 * 1024 && (v & (v - 1)) === 0
}

/**
 * Default cap (µs) of the adaptive busy-polling window of an endpoint that joins its loop's
 * progress engine (capability `adaptivePolling`: shm, verbs). docs/polling.md says how it was chosen.
 */
export const DEFAULT_POLL_WINDOW_US = 200

/**
 * The cap (µs) of the busy-polling window from FASTSOCK_POLL_US (or its deprecated name
 * FASTSOCK_SHM_POLL_US: the window is every polling rung's, not shm's), else undefined: each
 * channel's default then applies (DEFAULT_POLL_WINDOW_US with `adaptivePolling`, else 0).
 * The stream core hands the result to the endpoint (`setPollUs`).
 */
export function configuredPollUs (): number | undefined {
  if (pollUsFromEnv === null) {
    const raw = process.env.FASTSOCK_POLL_US ?? process.env.FASTSOCK_SHM_POLL_US
    const v = Number(raw)
    pollUsFromEnv = raw !== undefined && raw.trim() !== '' && Number.isFinite(v) && v >= 0 && v <= 1e6 ? v : undefined
  }
  return pollUsFromEnv
}

/** shm ring bytes per direction from FASTSOCK_SHM_RING_BYTES, else DEFAULT_SHM_RING_BYTES. */
export function configuredRingBytes (): number {
  if (ringBytesFromEnv === null) {
    const v = Number(process.env.FASTSOCK_SHM_RING_BYTES)
    ringBytesFromEnv = validRingBytes(v) ? v : DEFAULT_SHM_RING_BYTES
  }
  return ringBytesFromEnv
}

/**
 * The nice value V8's platform worker threads get when the process's first busy-polling
 * endpoint starts (FASTSOCK_HELPER_NICE, an integer 0..19; default 19; 0 leaves them alone;
 * anything else: the default). Read when asked, not cached: fastsock/mpi's init sets it before
 * its first connection (lib/mpi/bootstrap.ts). docs/polling.md, "Where a millisecond round trip goes".
 */
export function configuredHelperNice (): number {
  const raw = process.env.FASTSOCK_HELPER_NICE
  const v = raw === undefined || raw.trim() === '' ? 19 : Number(raw)
  return Number.isInteger(v) && v >= 0 && v <= 19 ? v : 19
}

