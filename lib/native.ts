/**
 * The native core (csrc/), loaded with node-gyp-build from build/Release or
 * prebuilds/<platform>-<arch>/. When it cannot load, `native` is null and `loadError` says why:
 * the fast rungs are then absent and every connection uses TCP.
 */
import * as path from 'path'

/** The functions csrc/addon.cc exports. fds are plain numbers; -errno results are negative. */
export interface NativeCore {
  /** Binds + listens on an abstract UNIX name; returns the fd. Throws (errno, syscall). */
  listenAbstract (name: string, backlog: number): number
  /** Non-blocking connect to an abstract UNIX name: the connected fd, or -errno. */
  connectAbstract (name: string): number
  /** SO_PEERCRED of a connected UNIX socket. */
  peerCred (fd: number): { pid: number, uid: number, gid: number }
  /** Checks that the peer of `fd` owns the TCP LISTEN socket for addr:port and runs as `uid`. */
  verifyListener (fd: number, family: 4 | 6, addr: Uint8Array, port: number, uid: number):
  { ok: boolean, reason: string, pid: number, uid: number, pidfdFromSocket: boolean }
  closeFd (fd: number): void
  /** 0 when socket(family, SOCK_STREAM, 0) succeeds, else -errno. */
  probeSocketFamily (family: number): number
  /** Elapsed ns for `iterations` memcpy of `bytes` (page-aligned, warm). */
  memcpyTimeNs (bytes: number, iterations: number): number
  /** Elapsed ns for `iterations` busy-polled cache-line round trips between two threads. */
  spinPingPongNs (iterations: number): number
  /** sha256 of csrc/ when this binary was built (scripts/source-hash.js). */
  sourceHash: string
  napiVersion: number
}

let loaded: NativeCore | null = null
let error: Error | null = null
try {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const load = require('node-gyp-build') as (dir: string) => NativeCore
  loaded = load(path.join(__dirname, '..'))
} catch (err) {
  error = err as Error
}

/** The native core, or null when it could not be loaded (see `loadError`). */
export const native: NativeCore | null = loaded
/** Why the native core did not load, or null. */
export const loadError: Error | null = error
