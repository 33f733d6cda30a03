/**
 * Process-wide settings read from the environment, once per process (every socket consults them;
 * process.env is a slow lookup). Per-socket options (`shmRingBytes`, `shmPollUs`) override them.
 */

/** Default shm ring size per direction: comparable to loopback socket buffers (docs/design.md). */
export const DEFAULT_SHM_RING_BYTES = 1 << 20

let pollUsFromEnv: number | null = null
let ringBytesFromEnv: number | null = null

/** True for a valid shm ring size: a power of two from 4096 to 256 MiB, in bytes. */
export function validRingBytes (v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 4096 && v <= 256 * 1024 * 1024 && (v & (v - 1)) === 0
}

/**
 * The in-loop polling budget (µs) of handle-less endpoints, from FASTSOCK_SHM_POLL_US, else 0:
 * never spin unless asked. The stream core hands it to the endpoint (`setPollUs`).
 */
export function configuredPollUs (): number {
  if (pollUsFromEnv === null) {
    const v = Number(process.env.FASTSOCK_SHM_POLL_US ?? 0)
    pollUsFromEnv = Number.isFinite(v) && v >= 0 && v <= 1e6 ? v : 0
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
