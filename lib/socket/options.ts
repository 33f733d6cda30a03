/**
 * The Socket's options: Node's, plus the chain's, validated and split from Node's before any
 * stream state exists.
 */
import type * as net from 'net'
import { parseTransports, defaultTransports, TransportName } from '../transports/names'
import type { Channel } from '../contract'
import { outOfRange } from '../errors'
import { configuredPollUs, configuredRingBytes, validRingBytes } from '../config'
import { onreadSpec } from '../stream/onread'
import { newState, SocketState } from './state'

/**
 * Options of `new Socket()` and `connect()`: Node's, plus the chain's. `onread` is Node's
 * widened (any typed array), so Node's own is left out of the base: @types/node 22 and later
 * type its callback's buffer as Uint8Array, which a wider one does not extend (TS2430).
 */
export interface SocketOptions extends Omit<net.SocketConstructorOpts, 'onread'> {
  /** Rungs to try, in order (default: FASTSOCK_TRANSPORTS, else the whole chain). */
  transports?: TransportName[] | string
  /** Upper bound for one fast rung's attempt, in ms (default 1000); TCP keeps Node's own. */
  transportTimeoutMs?: number
  /** shm ring size per direction in bytes, a power of two (default 1 MiB or FASTSOCK_SHM_RING_BYTES). */
  shmRingBytes?: number
  /**
   * shm and verbs: the cap, in µs, of the adaptive busy-polling window: a waiting connection is
   * polled (its ring, its completion queue) by its event loop's progress engine for a window
   * learned from its recent wait times (KVM haltpoll's x2/÷2 rule) before it sleeps on its
   * doorbell, under a per-process CPU cap (docs/polling.md). Default 200
   * (DEFAULT_POLL_WINDOW_US), or FASTSOCK_SHM_POLL_US; 0 never spins. In [0, 1e6], else
   * RangeError ERR_OUT_OF_RANGE.
   */
  pollUs?: number
  /** @deprecated The old name of `pollUs` (still accepted; `pollUs` wins when both are given). */
  shmPollUs?: number
  /** Node's caller-supplied receive buffer, extended: `buffer` may be any typed array. */
  onread?: { buffer: ArrayBufferView | (() => ArrayBufferView), callback: (bytes: number, buf: ArrayBufferView) => boolean | void }
}

/** Internal option: what a server hands a socket it accepted. */
export const kAccepted = Symbol('fastsock.accepted')

/** A connection a server accepted: its channel, and the server's polling budget (µs). */
export interface AcceptedInfo {
  channel: Channel
  pollUs?: number
}

const DEFAULT_TRANSPORT_TIMEOUT_MS = 1000

/** What the constructor keeps from the options until Node's own initialization has run. */
export interface PreparedOptions {
  nodeOptions: net.SocketConstructorOpts
  state: SocketState
  accepted: AcceptedInfo | undefined
}

/** True when none of fastsock's own options (nor `onread`, which it wraps) is set. */
function ownsNoFastsockOption (o: SocketOptions): boolean {
  return o.transports === undefined && o.transportTimeoutMs === undefined && o.shmRingBytes === undefined &&
    o.pollUs === undefined && o.shmPollUs === undefined && o.onread === undefined
}

/**
 * Validates fastsock's options (throws ERR_FASTSOCK_UNKNOWN_TRANSPORT, RangeError
 * ERR_OUT_OF_RANGE) and splits them from Node's: Node's options, and the socket's state.
 */
export function prepareOptions (options?: SocketOptions | number): PreparedOptions {
  const given = options == null ? undefined : (options as { [kAccepted]?: AcceptedInfo })[kAccepted]
  if (options == null || (typeof options === 'object' && given?.pollUs === undefined && ownsNoFastsockOption(options))) {
    // Node's options only (net.connect's, a TCP connection a server accepted): passed on as
    // they are (Node's constructor copies them), the state from the process's settings.
    const state = newState(defaultTransports(), DEFAULT_TRANSPORT_TIMEOUT_MS, configuredRingBytes(), configuredPollUs(), null)
    return { nodeOptions: (options ?? {}) as net.SocketConstructorOpts, state, accepted: given }
  }
  let opts: SocketOptions & { [kAccepted]?: AcceptedInfo } = typeof options === 'number' ? { fd: options } : { ...options }
  const transports = opts.transports !== undefined ? parseTransports(opts.transports) : null
  const timeoutMs = opts.transportTimeoutMs ?? DEFAULT_TRANSPORT_TIMEOUT_MS
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) throw outOfRange(`options.transportTimeoutMs must be a positive number of ms, got ${String(timeoutMs)}`)
  // Node's onread takes a Uint8Array (or a function returning one): hand it a byte view of
  // the caller's typed array and give the caller's callback its own array back.
  const onread = onreadSpec(opts.onread)
  if (onread) opts = { ...opts, onread: onread.nodeOption as never }
  const accepted = opts[kAccepted]
  const ringBytes = opts.shmRingBytes ?? configuredRingBytes()
  if (!validRingBytes(ringBytes)) {
    throw outOfRange(`options.shmRingBytes must be a power of two from 4096 to 268435456, got ${String(ringBytes)}`)
  }
  delete opts.transports
  delete opts.transportTimeoutMs
  delete opts.shmRingBytes
  const pollName = opts.pollUs !== undefined ? 'pollUs' : 'shmPollUs'
  const pollUs = opts.pollUs ?? opts.shmPollUs ?? accepted?.pollUs ?? configuredPollUs()
  if (pollUs !== undefined && (typeof pollUs !== 'number' || !(pollUs >= 0) || pollUs > 1e6)) throw outOfRange(`options.${pollName} must be a number of µs in [0, 1e6], got ${String(pollUs)}`)
  delete opts.pollUs
  delete opts.shmPollUs
  const state = newState(transports ?? defaultTransports(), timeoutMs, ringBytes, pollUs, onread?.spec ?? null)
  return { nodeOptions: opts as net.SocketConstructorOpts, state, accepted }
}
