/**
 * The Socket's side of connecting: fastsock's part of the constructor (a channel a server
 * accepted), Node's own connect, and the ChainHost the chain runs over.
 */
import * as diagnostics from 'diagnostics_channel'
import type * as net from 'net'
import { blocks } from '../address'
import type { TransportName } from '../transports/names'
import { NODE_TRANSPORT } from '../transports/registry'
import type { ChainHost, LookupEvent } from '../chain'
import { discardChannel, Channel } from '../contract'
import { originals } from '../originals'
import { kState, applyChannel, newState, SocketState } from './state'
import type { PreparedOptions } from './options'
import { adoptChannel, attachEndpoint, AdoptingSocket, nodeSymbol } from './adopt'
import { startConnectEntry, recordConnectEntry } from './perf'
import { recordLifetime, LifetimeHistory } from '../lifetime'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
type FsSocket = AdoptingSocket & { transport: TransportName | null }

const NodeSocket = originals.Socket
const noop = (): void => {}
const clientSocketChannel = diagnostics.channel('net.client.socket')

/**
 * Where Node publishes 'net.client.socket': in Socket#connect from Node 24 on (every connect,
 * `new net.Socket().connect()` too), in `net.connect()` before. Read from Node's own connect, so
 * that a backport is followed as well as the major that moved it.
 */
export const NODE_CONNECT_PUBLISHES = Function.prototype.toString.call(NodeSocket.prototype.connect).includes('netClientSocketChannel')

/** Publishes 'net.client.socket' for `sock`, as Node's connect (APM tools see every client socket, on every rung). */
export function publishClientSocket (sock: net.Socket): void {
  if (clientSocketChannel.hasSubscribers) clientSocketChannel.publish({ socket: sock })
}

/** fastsock's part of the constructor, once Node's net.Socket constructor has run on `self`. */
export function initFastsock (self: FsSocket, p: PreparedOptions): void {
  const opts = p.nodeOptions as net.SocketConstructorOpts & { handle?: unknown, pauseOnCreate?: boolean }
  const ch = p.accepted?.channel
  self.transport = ch?.transport as TransportName ?? (opts.fd !== undefined || opts.handle ? NODE_TRANSPORT : null)
  if (!ch) return
  if (ch.endpoint) {
    // Accepted without a handle: start the flow Node would start for one.
    attachEndpoint(self, ch)
    if (opts.pauseOnCreate) self.pause()
    else self.read(0)
  } else {
    applyChannel(self[kState], ch)
  }
}

/**
 * `connect()` on a socket that was destroyed (reuse after 'close'): what Node's connect does for
 * it (a new handle, initSocketHandle's `_undestroy()`), fastsock's state included. The new
 * connection starts from a fresh state (no channel, view, capabilities, stream core or handshake
 * counts of the old one, whose closed stream core keeps the old state object to itself) with the
 * socket's own chain settings, and zero byte counters until it has a handle or stream core.
 * A chain still running for the old connection sees its socket destroyed (chainHost).
 */
export function reinitialize (sock: FsSocket): void {
  const old = sock[kState]
  sock[kState] = newState(old.transports, old.timeoutMs, old.shmRingBytes, old.pollUs, old.onread)
  sock.transport = null
  const self = sock as unknown as Record<string | symbol, unknown> & { _undestroy (): void }
  self._handle = null
  self._peername = null
  self._sockname = null
  for (const name of ['kBytesRead', 'kBytesWritten']) {
    const sym = nodeSymbol(sock, name)
    if (sym) self[sym] = 0
  }
  self._undestroy()
}

/**
 * What Node's `_destroy` does to the idle timer (`setTimeout()`) of the socket and its parents:
 * clears it, so that a late `_unrefTimer()` (a write or read completing after destroy()) cannot
 * re-arm it and emit 'timeout' on a destroyed socket. `setTimeout(0)` does nothing once the socket
 * is destroyed. The timer sits under Node's `kTimeout` symbol (description 'timeout').
 */
export function clearIdleTimer (sock: net.Socket): void {
  for (let s: (net.Socket & { _parent?: net.Socket | null }) | null | undefined = sock; s; s = s._parent) {
    const kTimeout = nodeSymbol(s, 'timeout')
    if (kTimeout) clearTimeout((s as unknown as Record<symbol, NodeJS.Timeout | null>)[kTimeout] ?? undefined)
  }
}

/**
 * At destroy (with its error, if any): adds this connection's lifetime (from connect(), ms) and
 * bytes (read + written) to its destination's history (lib/lifetime.ts), once. A connect that
 * never completed (destroyed while connecting, or failed: Node's error from its 'connect'
 * syscall) adds nothing.
 */
export function recordClose (sock: FsSocket, st: SocketState, err: Error | null): void {
  const h = st.life!
  st.life = null
  if (sock.connecting || (err as { syscall?: string } | null)?.syscall === 'connect') return
  recordLifetime(h, sock.bytesRead + sock.bytesWritten, performance.now() - st.lifeStart)
}

/** Node's own connect, without re-initializing stream state set since (a chain that ran first). */
function nodeConnect (sock: FsSocket, normalized: unknown[], transport: TransportName): void {
  sock.transport = transport
  const self = sock as unknown as { _undestroy: AnyFn }
  const queued = sock.connecting
  if (queued) self._undestroy = noop // a write()/end() queued while the chain ran stays queued
  // fastsock's connect() published 'net.client.socket' already (Socket#connect, Node 24 on):
  // Node's, called now or after the chain's fast rungs, must not publish it a second time. Its
  // connect runs no subscriber code synchronously, so shadowing the channel's publish for the
  // call silences only this one.
  const quiet = NODE_CONNECT_PUBLISHES && clientSocketChannel.hasSubscribers
  if (quiet) (clientSocketChannel as unknown as { publish: AnyFn }).publish = noop
  try {
    ;(NodeSocket.prototype.connect as AnyFn).call(sock, normalized)
  } finally {
    if (queued) delete (self as { _undestroy?: AnyFn })._undestroy
    if (quiet) delete (clientSocketChannel as unknown as { publish?: AnyFn }).publish
  }
}

/**
 * The socket as the chain sees it: one small object per connect, its methods on the prototype
 * (a closure per method made per connect cost ~3 µs of a short connection's set-up on TCP).
 */
class SocketHost implements ChainHost {
  /** The 'net' PerformanceEntry's start (./perf): the first rung's attempt, as Node's from its handle's connect. */
  private perfStart: number | null = null
  constructor (private readonly sock: FsSocket, private readonly st: SocketState) {}
  /** A connect() after the socket was destroyed and reused (reinitialize) ends this one's chain. */
  private current (): boolean { return this.sock[kState] === this.st }
  get destroyed (): boolean { return this.sock.destroyed || !this.current() }
  onDestroy (stop: (() => void) | null): void { this.st.stopAttempt = stop }
  get transports (): readonly TransportName[] { return this.st.transports }
  get timeoutMs (): number { return this.st.timeoutMs }
  get shmRingBytes (): number { return this.st.shmRingBytes }
  get pollUs (): number | undefined { return this.st.pollUs }
  hasHandleOrParent (): boolean {
    const s = this.sock as unknown as { _parent: unknown, _handle: unknown }
    return !!(s._parent || s._handle)
  }
  blocks (address: string): boolean { return blocks((this.sock as unknown as { blockList?: net.BlockList }).blockList, address) }
  emit (event: string, payload: unknown): boolean {
    if (event === 'transportAttempt' && this.perfStart === null) this.perfStart = startConnectEntry()
    return this.sock.emit(event, payload)
  }
  once (event: 'connect', cb: AnyFn): unknown { return this.sock.once(event, cb) }
  destroy (err?: Error): unknown { return this.sock.destroy(err) }
  track (history: LifetimeHistory): void {
    this.st.life = history
    this.st.lifeStart = performance.now()
  }
  beginConnecting (): void {
    this.st.writeImpl = null
    ;(this.sock as unknown as { connecting: boolean }).connecting = true
    this.sock._unrefTimer()
  }
  nodeConnect (normalized: unknown[], transport: TransportName): void { nodeConnect(this.sock, normalized, transport) }
  adopt (ch: Channel, lookups: LookupEvent[], attempted: string[] | null): void {
    if (!this.current()) return discardChannel(ch)
    adoptChannel(this.sock, ch, lookups, attempted)
    if (this.perfStart !== null && !this.sock.destroyed) recordConnectEntry(this.perfStart, this.sock.remoteAddress, this.sock.remotePort)
  }
}

/** The socket as the chain sees it (see SocketHost). */
export function chainHost (sock: FsSocket): ChainHost {
  return new SocketHost(sock, sock[kState])
}
