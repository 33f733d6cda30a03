/**
 * How a Socket takes over a Channel a rung made: a native endpoint goes to the stream core; a
 * kernel handle becomes the socket's own `_handle`, as if Node had created it (owner, async id,
 * the onread buffer). Then the events Node's afterConnect emits: 'lookup' (when a host name was
 * resolved), 'connect', 'ready'.
 */
import type * as net from 'net'
import { discardChannel, Channel } from '../contract'
import { EndpointStream } from '../stream/endpoint-stream'
import { DEFAULT_POLL_WINDOW_US } from '../config'
import { kState, SocketState, applyChannel } from './state'
import type { LookupEvent } from '../chain'

/** The parts of a fastsock Socket adoption touches. */
export type AdoptingSocket = net.Socket & { [kState]: SocketState, transport: string | null, _unrefTimer (): void }

/** A Node-internal symbol found by its description on an object that carries it. */
export function nodeSymbol (obj: object, description: string): symbol | undefined {
  return Object.getOwnPropertySymbols(obj).find(s => s.description === description)
}

/** An endpoint's event callback once its stream is closed. */
function noEvents (): void {}

/** Gives a handle-less channel's endpoint to a new stream core for `sock`, and routes its events there. */
export function attachEndpoint (sock: AdoptingSocket, ch: Channel): EndpointStream {
  const st = sock[kState]
  // The option (or FASTSOCK_SHM_POLL_US) when given, else the channel's default.
  const pollUs = st.pollUs ?? (ch.caps.adaptivePolling ? DEFAULT_POLL_WINDOW_US : 0)
  const stream = new EndpointStream(ch.endpoint!, sock, st, pollUs)
  st.stream = stream
  const ep = ch.endpoint!
  ep.setOnEvent(() => stream.onevent())
  // Unbound at close: the endpoint's strong reference to the callback would keep the stream,
  // the socket and the endpoint alive after the connection is gone.
  stream.onClose = () => ep.setOnEvent(noEvents)
  sock.transport = ch.transport
  applyChannel(st, ch)
  return stream
}

/**
 * Client side: takes over the channel the chain established (see the module comment), with the
 * 'lookup' events to emit (address, family, host) and the addresses tried, in Node's
 * `autoSelectFamilyAttemptedAddresses` form, when Node would have tried several (else null).
 */
export function adoptChannel (sock: AdoptingSocket, ch: Channel, lookups: LookupEvent[], attempted: string[] | null): void {
  const st = sock[kState]
  if (attempted !== null) (sock as unknown as { autoSelectFamilyAttemptedAddresses: string[] }).autoSelectFamilyAttemptedAddresses = attempted
  if (ch.endpoint) {
    if (sock.destroyed) return discardChannel(ch)
    const stream = attachEndpoint(sock, ch)
    connected(sock, lookups)
    stream.pump()
    return
  }
  const handle = ch.handle!
  if (sock.destroyed) return discardChannel(ch)
  const owner = nodeSymbol(handle, 'owner_symbol')
  if (!owner) {
    discardChannel(ch)
    throw new Error('cannot adopt a connected handle on this Node version (no owner_symbol)')
  }
  const self = sock as unknown as Record<string | symbol, unknown>
  ;(handle as unknown as Record<symbol, unknown>)[owner] = sock
  self._handle = handle
  const asyncId = nodeSymbol(sock, 'async_id_symbol')
  if (asyncId) self[asyncId] = handle.getAsyncId()
  const ob = st.onread
  if (ob) {
    // What Node's initSocketHandle does for a handle it creates: the first buffer.
    let u8 = ob.buffer
    if (ob.gen) {
      u8 = ob.gen()
      const kBuffer = nodeSymbol(sock, 'kBuffer')
      if (kBuffer) self[kBuffer] = u8
    }
    handle.useUserBuffer(u8!)
  }
  self._sockname = null
  self._peername = null
  sock.transport = ch.transport
  applyChannel(st, ch)
  connected(sock, lookups)
}

/** Node's afterConnect, for a channel adopted while connecting. */
function connected (sock: AdoptingSocket, lookups: LookupEvent[]): void {
  const st = sock[kState]
  ;(sock as unknown as { connecting: boolean }).connecting = false
  sock._unrefTimer()
  for (const [address, family, host] of lookups) sock.emit('lookup', null, address, family, host)
  sock.emit('connect')
  sock.emit('ready')
  if (!sock.isPaused() || (st.readQueue && st.readQueue.length > 0)) sock.read(0)
}

