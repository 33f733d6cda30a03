/**
 * The native core (csrc/), loaded with node-gyp-build from build/Release or
 * prebuilds/<platform>-<arch>/. When it cannot load, `native` is null and `loadError` says why:
 * the fast rungs are then absent and every connection uses TCP.
 */
import * as path from 'path'
import type { StreamEndpoint } from './contract'

/**
 * The functions csrc/addon.cc exports. fds are plain numbers; -errno results are negative. Thrown
 * errors (and callback errors) for failures carry `code` (csrc/errors.h): a system error's name
 * with `errno` (negative) and `syscall`, as Node's own; or an ERR_FASTSOCK_* code (rdma-core
 * missing: ERR_FASTSOCK_NO_RDMA). Bad arguments throw TypeError/RangeError.
 */
export interface NativeCore {
  /** Binds + listens on an abstract UNIX name; returns the fd. Throws (code, errno, syscall 'listen'). */
  listenAbstract (name: string, backlog: number): number
  /** Non-blocking connect to an abstract UNIX name: the connected fd, or -errno. */
  connectAbstract (name: string): number
  /** SO_PEERCRED of a connected UNIX socket. Throws (code, errno, syscall 'getsockopt'). */
  peerCred (fd: number): { pid: number, uid: number, gid: number }
  /** Checks that the peer of `fd` owns the TCP LISTEN socket for addr:port and runs as `uid`. */
  verifyListener (fd: number, family: 4 | 6, addr: Uint8Array, port: number, uid: number):
  { ok: boolean, reason: string, pid: number, uid: number, pidfdFromSocket: boolean, cached: boolean, listenersNs: number, scanNs: number, totalNs: number }
  closeFd (fd: number): void
  /** SO_SNDBUF/SO_RCVBUF (FORCE variants where permitted); the granted send buffer or -errno. */
  growSocketBuffers (fd: number, bytes: number): number
  /** 0 when socket(family, SOCK_STREAM, 0) succeeds, else -errno. */
  probeSocketFamily (family: number): number
  /**
   * The benchmarks' floors (csrc/native_limits.cc), optional: the library never calls them, and
   * loads a binary without them; the tools reach them through fastsock/internal (lib/internal.ts).
   * Elapsed ns for `iterations` memcpy of `bytes` (page-aligned, warm).
   */
  memcpyTimeNs? (bytes: number, iterations: number): number
  /** Elapsed ns for `iterations` busy-polled cache-line round trips between two threads (a floor, as memcpyTimeNs). */
  spinPingPongNs? (iterations: number): number
  /**
   * Elapsed ns for `iterations` round trips of `bytes`-byte messages (a power of two up to 4096;
   * else 0) between two threads over two shm rings, with the synchronous pair's protocol (a floor, as memcpyTimeNs).
   */
  ringPingPongNs? (iterations: number, bytes: number): number
  /**
   * One end of an shm connection (csrc/shm/endpoint.h); takes ownership of the four fds (the
   * memfd is closed once mapped, the peer loop's doorbell and ready list kept once per
   * `peerDoorbellId`).
   */
  ShmEndpoint: new (memfd: number, c2sBytes: number, s2cBytes: number, isClient: boolean,
    peerDoorbell: number, peerDoorbellId: string, peerReadyFd: number, peerReadyNodes: number, sideFd: number,
    onevent: () => void) => ShmEndpointNative
  /** A sealed memfd for the rings. Throws (with `code`, EMFILE...) on failure. */
  shmCreateSegment (c2sBytes: number, s2cBytes: number): { memfd: number }
  /**
   * This loop's doorbell eventfd and ready list memfd (never close them), the doorbell's id (16 hex
   * digits) and the list's node count. Throws with `code`.
   */
  shmLoopDoorbell (): { fd: number, id: string, readyFd: number, readyNodes: number }
  /** Fd numbers left below RLIMIT_NOFILE's soft limit above the lowest free one (1e9: no limit). */
  shmFdRoom (): number
  isEventfd (fd: number): boolean
  /** sendmsg with SCM_RIGHTS; bytes sent or -errno. */
  sendFds (fd: number, bytes: Uint8Array, fds: number[]): number
  /** recvmsg with SCM_RIGHTS; -errno (-EAGAIN: nothing yet, -EPROTO: too many fds). */
  recvFds (fd: number, maxBytes: number, maxFds: number): { bytes: Buffer, fds: number[] } | number
  /** F_DUPFD_CLOEXEC; the new fd or -errno. */
  dupFd (fd: number): number
  /** A flag two processes share by passing its fd (an eventfd, non-blocking): the fd or -errno. */
  eventFlagCreate (): number
  /** Raises the flag: 0 or -errno. */
  eventFlagRaise (fd: number): number
  /** 1 when the flag was raised (it is lowered), 0 when not, or -errno. */
  eventFlagTake (fd: number): number
  /**
   * One-shot: cb(0) when fd is readable or hung up, cb(-ETIMEDOUT) after timeoutMs. Throws
   * (code, errno, syscall 'uv_poll_init') when the fd cannot be polled.
   */
  waitReadable (fd: number, timeoutMs: number, cb: (status: number) => void): void
  /**
   * Connects an RDMA RC queue pair to addr:port (iwarpPort on iWARP devices) with RDMA CM.
   * cb(err) with err.code ETIMEDOUT / ECONNREFUSED (rejected) / EHOSTUNREACH (no RDMA route) /
   * EPROTO, errno and syscall (the RDMA CM step that failed), or cb(null, endpoint, info). Throws
   * (code, errno, syscall; ERR_FASTSOCK_NO_RDMA without rdma-core) when it cannot even start.
   */
  verbsConnect (addr: string, port: number, iwarpPort: number, options: Record<string, unknown>,
    cb: (err: Error | null, ep?: VerbsEndpointNative, info?: VerbsInfo) => void): void
  /** An RDMA CM listener on one local address; throws (code ENODEV, EADDRINUSE, ..., errno, syscall; ERR_FASTSOCK_NO_RDMA). */
  VerbsListener: new (addr: string, port: number, iwarpPort: number, backlog: number, options: Record<string, unknown>,
    onconnection: (ep: VerbsEndpointNative, info: VerbsInfo) => void) => { close (): void, transport: 'ib' | 'iwarp', port: number, device: string }
  /**
   * One-shot, for a socket whose non-blocking connect is in progress: cb(0) once connected,
   * cb(-errno) when it failed (SO_ERROR: -ECONNREFUSED...), cb(-ETIMEDOUT) after timeoutMs.
   */
  waitConnected (fd: number, timeoutMs: number, cb: (status: number) => void): void
  /**
   * socket(family, SOCK_STREAM, protocol) non-blocking, buffers of bufferBytes (> 0), connect to addr:port (csrc/kernelsock.h):
   * the fd, connected or in progress (see waitConnected), or -errno.
   */
  connectStream (family: number, protocol: number, ipFamily: 4 | 6, addr: Uint8Array, port: number, bufferBytes?: number): number
  /** socket(family, SOCK_STREAM, protocol), SO_REUSEADDR, IPV6_V6ONLY, bind: the fd (not listening), or -errno. */
  bindStream (family: number, protocol: number, ipFamily: 4 | 6, addr: Uint8Array, port: number, v6only: boolean, bufferBytes?: number): number
  /** Bytes written to the socket and not yet sent by the kernel (SIOCOUTQNSD), or -errno. */
  unsentBytes (fd: number): number
  /** smc_diag's view of the AF_SMC socket fd (mode 0 SMC-R, 1 TCP fallback, 2 SMC-D), or -errno (-ENOENT: not listed). */
  smcDiag (fd: number): { mode: number, state: number, fallbackReason: number, peerDiagnosis: number } | number
  /** What rdma-core offers here (csrc/rdma/probe.h); loaded=false when it cannot be opened. */
  rdmaProbe (): RdmaProbe
  /**
   * Rung rsocket (csrc/rdma/bridge.h): connects in a helper thread within timeoutMs, then bridges
   * the rsocket to a socketpair; cb gets the JS end's fd and the rsocket's names, or why not.
   * rsocketConnect and rsocketListen throw ERR_FASTSOCK_NO_RDMA when rsockets cannot be loaded.
   */
  rsocketConnect? (address: string, port: number, timeoutMs: number, cb: (o: RsocketOutcome) => void): void
  /** rbind + rlisten (throws with code/errno/syscall); cb per accepted, bridged connection. The listener id. */
  rsocketListen? (address: string, port: number, backlog: number, cb: (o: RsocketOutcome) => void): number
  /** Stops an rsocket listener; false when it had already ended. */
  rsocketClose? (id: number): boolean
  /** The RDMA device owning a local address (rdma_bind_addr), or null. */
  rdmaDeviceForAddress? (address: string): { name: string, transport: 'ib' | 'iwarp' | 'other' } | null
  /** rsocket helper threads alive in this process (bridges, accept and connect threads). */
  rsocketThreads? (): number
  /** Raises the V8 platform's worker threads to nice value `nice` (0..19): threads changed, or -errno (csrc/helper_threads.h). */
  niceHelperThreads? (nice: number): number
  /** The bits of StreamEndpoint.state() (csrc/stream_state.h), defined once natively. */
  streamState: { EOF: number, RESET: number, GONE: number, CLOSED: number, READABLE: number }
  /** sha256 of csrc/ when this binary was built (scripts/source-hash.js). */
  sourceHash: string
  napiVersion: number
}

/** Addresses of a verbs connection (RDMA CM's view) and its device. */
export interface VerbsInfo {
  localAddress: string, localPort: number, localFamily: string
  remoteAddress: string, remotePort: number, remoteFamily: string
  device: string
}

/** csrc/rdma/verbs.cc's endpoint: the stream surface the stream core drives, plus its own. */
export interface VerbsEndpointNative extends StreamEndpoint {
  /** Protocol counters: credits, rndvThreshold, eager/rendezvous counts, registration cache. */
  stats (): Record<string, number | string | boolean>
}

/** rdmaProbe(): rdma-core's presence and its devices. */
export interface RdmaProbe {
  loaded: boolean
  rsocket: boolean
  /** rdma-core's release as the loaded librdmacm's file name gives it ('44.0'), '' when it does not. */
  rdmacmVersion: string
  /**
   * This librdmacm predates rdma-core's fix of the rsocket service thread (v53, stable 44.7...):
   * csrc/rdma/bridge/svc.h works around it (up to 67 rsocket connections and listeners per process).
   */
  rsocketSvcBug: boolean
  error: string
  /** rdma-core's fork protection (ibv_is_fork_initialized): present when rdma-core loaded. */
  fork?: 'unneeded' | 'enabled' | 'disabled'
  devices: Array<{ name: string, transport: 'ib' | 'iwarp' | 'other', ports: Array<{ port: number, active: boolean, linkLayer: string }> }>
}

/** What an rsocket helper thread reports: a bridged connection (fd set), or a failure (errno set). */
export interface RsocketOutcome {
  fd?: number
  local?: { address: string, port: number }
  remote?: { address: string, port: number }
  /** The RDMA device carrying the connection (client side). */
  device?: string
  /** Negative errno, the failing call, and a sentence for the error message. */
  errno?: number
  syscall?: string
  reason?: string
  /** Nobody answers with rsockets there (no RDMA route, iWARP, REJECTED). */
  notOffered?: boolean
}

/**
 * The JS face of csrc/shm/endpoint.h (see its contract): a stream endpoint over a shared ring,
 * with the optional members it has (sync I/O, loans); its events go to the constructor's
 * `onevent`, and `setOnEvent` is the JS relay lib/transports/shm/endpoint.ts newShmEndpoint adds
 * over it (the only way an shm endpoint is made).
 */
export interface ShmEndpointNative extends StreamEndpoint {
  writeSync (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin?: boolean): number
  readIntoSync (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin?: boolean): number
  /** One ArrayBuffer over the transmit ring's mirrored mapping (2 x ring bytes). */
  txRegion (): ArrayBuffer
  /** Offset in txRegion() of the next byte to send, in [0, ring bytes). */
  txHeadOffset (): number
  /** Publishes n bytes already placed at txHeadOffset(); 0 when n bytes are not free. */
  commit (n: number): number
  /** True: another connection of the loop is ready first; this one is queued behind it. */
  yieldRead (): boolean
}

/**
 * What this JS needs from the binary: a binary without all of it is stale, and not used. The
 * benchmarks' floors are not in it (the library does not use them).
 */
const REQUIRED: Array<keyof NativeCore> = [
  'listenAbstract', 'connectAbstract', 'peerCred', 'verifyListener', 'closeFd', 'growSocketBuffers',
  'probeSocketFamily', 'ShmEndpoint', 'shmCreateSegment', 'shmLoopDoorbell', 'shmFdRoom', 'isEventfd',
  'sendFds', 'recvFds', 'dupFd', 'eventFlagCreate', 'eventFlagRaise', 'eventFlagTake', 'waitReadable', 'rdmaProbe',
  'waitConnected', 'connectStream', 'bindStream', 'smcDiag', 'unsentBytes', 'streamState'
]

let loaded: NativeCore | null = null
let error: Error | null = null
try {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const load = require('node-gyp-build') as (dir: string) => NativeCore
  const addon = load(path.join(__dirname, '..'))
  const missing = REQUIRED.filter(k => addon[k] === undefined)
  if (missing.length) throw new Error(`the native addon is stale (no ${missing.join(', ')}): rebuild it (npm run build:native)`)
  loaded = addon
} catch (err) {
  error = err as Error
}

/** The native core, or null when it could not be loaded (see `loadError`). */
export const native: NativeCore | null = loaded
/** Why the native core did not load, or null. */
export const loadError: Error | null = error

/** Why a rung that needs the addon is unavailable: "native addon not loaded: <first line of the load error>". */
export function nativeMissingReason (): string {
  return `native addon not loaded: ${error?.message.split('\n')[0] ?? 'unknown'}`
}
