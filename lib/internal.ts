/**
 * `fastsock/internal`: what the benchmark tools (the fastsock-tools package, tools/ in this
 * repository) need beyond the public API, in one entry point so that they import nothing else of
 * the library's internals. Not a stable API: it serves the tools of the same version.
 *
 * - The native floors the tools print beside their figures (csrc/native_limits.cc): memcpy time,
 *   a busy-polled cache-line ping-pong, a ping-pong over two shm rings. The library itself never
 *   calls them, and loads an addon without them.
 * - spawnRanks / freePort: the job launcher of `fastsock mpirun` (lib/cli/mpirun.ts), which
 *   `fastsock osu` starts its ranks with.
 */
import { loadError, native } from './native'

export { freePort, spawnRanks } from './cli/mpirun'
export type { JobResult, RankExit, RankJob, SpawnRanksOptions } from './cli/mpirun'

/** The native floors (times in ns; each call blocks its thread for the whole measurement). */
export interface NativeFloors {
  /** Elapsed ns for `iterations` memcpy of `bytes` (page-aligned, warm in cache). */
  memcpyTimeNs (bytes: number, iterations: number): number
  /** Elapsed ns for `iterations` busy-polled cache-line round trips between two threads. */
  spinPingPongNs (iterations: number): number
  /**
   * Elapsed ns for `iterations` round trips of `bytes`-byte messages (a power of two up to 4096,
   * else 0 and nothing measured) between two threads over two shm rings, with the synchronous
   * pair's protocol; absent from addons built before it existed.
   */
  ringPingPongNs?: (iterations: number, bytes: number) => number
}

function loadFloors (): { floors: NativeFloors | null, why: string | null } {
  if (native === null) return { floors: null, why: `native addon not loaded: ${loadError?.message.split('\n')[0] ?? 'unknown'}` }
  const { memcpyTimeNs, spinPingPongNs, ringPingPongNs } = native
  if (memcpyTimeNs === undefined || spinPingPongNs === undefined) return { floors: null, why: 'the native addon has no benchmark floors (memcpyTimeNs, spinPingPongNs)' }
  // Bound to the addon: called as its methods, as everywhere else.
  const floors: NativeFloors = { memcpyTimeNs: memcpyTimeNs.bind(native), spinPingPongNs: spinPingPongNs.bind(native) }
  if (ringPingPongNs !== undefined) floors.ringPingPongNs = ringPingPongNs.bind(native)
  return { floors, why: null }
}

const loaded = loadFloors()

/** The native floors, or null (see floorsUnavailable). */
export const floors: NativeFloors | null = loaded.floors
/** Why `floors` is null ("native addon not loaded: ..."), or null when it is not. */
export const floorsUnavailable: string | null = loaded.why
/** Whether the native addon loaded, and why not (the tools record it beside their figures). */
export const addon: { loaded: boolean, loadError: string | null } = { loaded: native !== null, loadError: loadError?.message ?? null }
