/**
 * The tools' one door to the fastsock library they measure: which installation, and its entry
 * points `fastsock`, `fastsock/mpi` and `fastsock/internal`, loaded at run time through the
 * library's own package exports (a require made inside that package resolves its own name), so a
 * tool sees what an application sees and imports nothing else of the library.
 *
 * Which installation, first found:
 * 1. FASTSOCK_TOOLS_LIBRARY, a package directory. The library's `fastsock` command sets it to its
 *    own package when it hands `pipe`, `rate` or `osu` over (so `npx fastsock pipe` measures the
 *    fastsock that ran it), and pinLibrary() sets it for every process a tool starts (peers,
 *    ranks), so that all of them load the same library.
 * 2. `fastsock` resolved from the current directory: the application's installation.
 * 3. `fastsock` resolved from this package: installed beside it.
 * 4. The enclosing directory whose package.json is named fastsock: this repository, where tools/
 *    is a workspace of the library's package, which npm does not link into node_modules.
 * None: the tools still run, measuring Node's net baselines only, and say why.
 */
import * as fs from 'fs'
import { createRequire } from 'module'
import type * as net from 'net'
import * as path from 'path'
import type * as FastsockInternal from 'fastsock/internal'
import type * as FastsockMpi from 'fastsock/mpi'

/** The environment variable naming the library's package directory (module comment). */
export const LIBRARY_ENV = 'FASTSOCK_TOOLS_LIBRARY'

/** Where the library is: its package directory and how it was found, or null and why not. */
export interface LibraryLocation { root: string | null, how: string }

let located: LibraryLocation | null = null

function isFastsockPackage (dir: string): boolean {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'fastsock'
  } catch {
    return false
  }
}

function resolvedFrom (from: string): string | null {
  try {
    return path.dirname(require.resolve('fastsock/package.json', { paths: [from] }))
  } catch {
    return null
  }
}

/** Finds the library (module comment); cached. Never throws. */
export function findLibrary (): LibraryLocation {
  if (located !== null) return located
  const env = process.env[LIBRARY_ENV]
  if (env !== undefined && env !== '') {
    located = isFastsockPackage(env)
      ? { root: path.resolve(env), how: `${LIBRARY_ENV}` }
      : { root: null, how: `${LIBRARY_ENV}=${env} is not the fastsock package` }
    return located
  }
  const fromCwd = resolvedFrom(process.cwd())
  if (fromCwd !== null) return (located = { root: fromCwd, how: 'resolved from the current directory' })
  const fromHere = resolvedFrom(__dirname)
  if (fromHere !== null) return (located = { root: fromHere, how: 'installed beside fastsock-tools' })
  for (let dir = path.dirname(__dirname); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (isFastsockPackage(dir)) return (located = { root: dir, how: 'the repository fastsock-tools sits in' })
  }
  return (located = { root: null, how: 'fastsock is not installed (npm install fastsock)' })
}

/**
 * Pins the library found for every process this one starts: sets FASTSOCK_TOOLS_LIBRARY in this
 * process's environment, which child_process passes on. Called by the tools' main() first.
 */
export function pinLibrary (): void {
  const { root } = findLibrary()
  if (root !== null) process.env[LIBRARY_ENV] = root
}

/** `require` inside the library's package: its own name resolves through its exports. */
function libraryRequire (): NodeRequire {
  const { root, how } = findLibrary()
  if (root === null) throw new Error(how)
  return createRequire(path.join(root, 'package.json'))
}

/** fastsock/internal (native floors, the job launcher). Throws when the library is not found or fails to load. */
export function loadInternal (): typeof FastsockInternal {
  return libraryRequire()('fastsock/internal') as typeof FastsockInternal
}

/** fastsock/mpi. Throws when the library is not found or fails to load. */
export function loadMpi (): typeof FastsockMpi {
  return libraryRequire()('fastsock/mpi') as typeof FastsockMpi
}

/** The version of the library measured (its package.json), or 'unknown'. */
export function libraryVersion (): string {
  try {
    return (libraryRequire()('fastsock/package.json') as { version: string }).version
  } catch {
    return 'unknown'
  }
}

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

/** Loads `fastsock` from the installation findLibrary() names. Cached; never throws. */
export function loadFastsock (): LoadedFastsock {
  if (cached !== null) return cached
  const from = findLibrary().root ?? 'nowhere'
  try {
    const mod = libraryRequire()('fastsock') as Partial<FastsockModule>
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
