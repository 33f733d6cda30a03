/**
 * The command line's view of the fastsock library: the few calls `pipe` and `probe` use, loaded
 * at run time from the built package (dist/index.js) so that the command still works, with the
 * plain `net` baselines only, when the core is absent or fails to load.
 */
import type * as net from 'net'
import * as path from 'path'

/** One rung of the failover chain as `fastsock.transports()` reports it. */
export interface RungInfo {
  /** 'shm' | 'unix' | 'verbs' | 'rsocket' | 'smc' | 'sdp' | 'tcp' */
  name: string
  available: boolean
  /** Why the rung is (un)available on this host. */
  reason: string
}

/** A fastsock socket: a net.Socket with the transport that actually carried it. */
export interface FastsockSocket extends net.Socket {
  /** Set once 'connect' fired: the rung that connected. */
  transport?: string
  /**
   * Resolves when exactly `lengthElements` elements (default: the rest of the view) have been
   * read into `view` starting at element `offsetElements` (default 0).
   */
  readInto?: (view: ArrayBufferView, offsetElements?: number, lengthElements?: number) => Promise<unknown>
}

/** Options shared by connect and createServer: the rungs to try, in order. */
export interface ChainOptions {
  transports?: string[]
  /** shm: in-loop polling budget (µs) before sleeping on the doorbell. */
  shmPollUs?: number
  /** How long one rung's connection attempt may take (ms). */
  transportTimeoutMs?: number
}

/** The part of the fastsock module the command line uses. */
export interface FastsockModule {
  createServer: (options: ChainOptions, onConnection?: (socket: FastsockSocket) => void) => net.Server
  connect: (options: ChainOptions & { port: number, host?: string }) => FastsockSocket
  transports: () => RungInfo[]
}

/** The library, or null with the reason it did not load. */
export interface LoadedFastsock {
  mod: FastsockModule | null
  error: Error | null
  /** Where it was loaded from. */
  from: string
}

let cached: LoadedFastsock | null = null

/**
 * Loads the fastsock library from the package this command belongs to (dist/index.js, next to
 * dist/cli/). Cached; never throws.
 */
export function loadFastsock (): LoadedFastsock {
  if (cached !== null) return cached
  const from = path.join(__dirname, '..', 'index.js')
  try {
    // A computed path: the command line must compile and run while the core is being written.
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const mod = require(from) as Partial<FastsockModule>
    const missing = (['createServer', 'connect', 'transports'] as const)
      .filter((k) => typeof mod[k] !== 'function')
    if (missing.length > 0) {
      cached = { mod: null, error: new Error(`fastsock is missing ${missing.join(', ')}()`), from }
    } else {
      cached = { mod: mod as FastsockModule, error: null, from }
    }
  } catch (err) {
    cached = { mod: null, error: err as Error, from }
  }
  return cached
}

/** What a tool's JSON says about the library it measured (`fastsock` in pipe's and rate's results). */
export interface FastsockReport { loaded: boolean, loadError: string | null, rungs: Array<{ name: string, available: boolean, reason: string }> }

/**
 * The rungs the library reports on this host, recorded in `report` (and why not, when the library
 * did not load or `transports()` threw: then null, and `warn` says that only the net baselines
 * are measured).
 */
export function loadRungs (report: FastsockReport, warn: (message: string) => void): RungInfo[] | null {
  const lib = loadFastsock()
  if (lib.mod === null) {
    report.loadError = lib.error?.message ?? 'unknown'
    warn(`fastsock library not loaded from ${lib.from} (${report.loadError}): measuring the net baselines only`)
    return null
  }
  try {
    const rungs = lib.mod.transports()
    Object.assign(report, { loaded: true, loadError: null, rungs: rungs.map((r) => ({ name: r.name, available: r.available, reason: r.reason })) })
    return rungs
  } catch (err) {
    report.loadError = `transports() threw: ${(err as Error).message}`
    warn(report.loadError)
    return null
  }
}

/** The rung names FASTSOCK_TRANSPORTS lists (the process-wide default chain), or null when unset. */
export function envTransports (): string[] | null {
  const env = process.env.FASTSOCK_TRANSPORTS
  if (env === undefined || env.trim() === '') return null
  return env.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '')
}
