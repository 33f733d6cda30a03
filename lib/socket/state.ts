/**
 * The fastsock state of one Socket, behind one symbol-keyed object (nothing else of fastsock's
 * sits on the socket): the chain's configuration, the adopted channel's view, capabilities and
 * hooks, the stream core of a handle-less channel, and the read-side requests it serves.
 */
import type { TransportName } from '../transports/names'
import { NO_CAPABILITIES, Capabilities, ChannelHooks, TcpView, Channel, ResetFlag } from '../contract'
import type { EndpointStream, StreamState } from '../stream/endpoint-stream'
import type { OnreadSpec } from '../stream/onread'
import type { LifetimeHistory } from '../lifetime'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** The key of a socket's SocketState (Symbol.for: a second copy of fastsock in the process sees it too). */
export const kState = Symbol.for('fastsock.socket.state')

/** See the module comment. */
export interface SocketState extends StreamState {
  /** The chain this socket walks (its `transports` option, else the process's). */
  transports: TransportName[]
  /** Upper bound of one fast rung's attempt (ms). */
  timeoutMs: number
  /** shm ring bytes per direction. */
  shmRingBytes: number
  /** In-loop polling budget (µs) handed to a handle-less endpoint. */
  pollUs: number | undefined
  /** The TCP view of a channel without a TCP socket; null: the handle's own addresses. */
  view: TcpView | null
  caps: Capabilities
  hooks: ChannelHooks
  /** Handshake bytes on the handle's counters. */
  hsRead: number
  hsWritten: number
  /** What was assigned to `socket.write` (Node's writeAfterFIN, a user's wrapper), or null for fastsock's write. */
  writeImpl: AnyFn | null
  /** The stream core of a handle-less channel (shm, verbs); null on a kernel handle. */
  stream: EndpointStream | null
  /** pipeStandIn: the first EPIPE after the peer left was already swallowed. */
  peerGone: boolean
  /** pipeStandIn: the channel's sendBufferBytes (0: unknown). */
  sendBufferBytes: number
  /** pipeStandIn: the channel's reset flag (closed with the socket), or null. */
  resetFlag: ResetFlag | null
  /** The onread option as Node sees it (no 'data', no readInto then). */
  onread: OnreadSpec | null
  /** Stops the chain's attempt in flight for this connection (ChainHost.onDestroy); destroy() calls it. */
  stopAttempt: (() => void) | null
  /** The destination's history this socket adds its lifetime to at close (lib/lifetime.ts), or null. */
  life: LifetimeHistory | null
  /** performance.now() at connect() when `life` is set (ms). */
  lifeStart: number
}

/** A fresh state: no channel yet. */
export function newState (transports: TransportName[], timeoutMs: number, shmRingBytes: number, pollUs: number | undefined,
  onread: OnreadSpec | null): SocketState {
  return {
    transports,
    timeoutMs,
    shmRingBytes,
    pollUs,
    view: null,
    caps: NO_CAPABILITIES,
    hooks: {},
    hsRead: 0,
    hsWritten: 0,
    writeImpl: null,
    stream: null,
    peerGone: false,
    sendBufferBytes: 0,
    resetFlag: null,
    readQueue: null,
    onread,
    stopAttempt: null,
    life: null,
    lifeStart: 0
  }
}

/** Records what the socket reads of a channel it adopted (view, capabilities, hooks, counters). */
export function applyChannel (st: SocketState, ch: Channel): void {
  st.view = ch.view
  st.caps = ch.caps
  st.hooks = ch.hooks
  st.hsRead = ch.handshakeRead
  st.hsWritten = ch.handshakeWritten
  st.sendBufferBytes = ch.sendBufferBytes
  st.resetFlag = ch.resetFlag
}
