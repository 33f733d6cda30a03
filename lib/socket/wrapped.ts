/**
 * L6, sockets that Node's own C++ stream consumers wrap: TLSWrap (tls, https) and nghttp2
 * (http2, so gRPC). Those consumers drive a StreamBase handle natively; a socket without one (a
 * handle-less rung: shm, verbs; or any fastsock socket while the chain still runs) reaches them
 * only through Node's JSStreamSocket, which moves every read and write through JS, one write at
 * a time, each completed a loop turn later (setImmediate). Measured, that costs more than the
 * fast rung saves (docs/transparency.md, "Sockets TLS and HTTP/2 wrap"), so:
 *
 * - such a socket prefers the rungs with a kernel handle (`kernelHandleFirst`: unix before shm);
 * - `tls.connect` over fastsock (lib/register.ts) creates its TLSSocket at once (Node's API
 *   returns it synchronously) over the socket still running the chain, hence through a
 *   JSStreamSocket; `rewrapOnConnect` moves TLS onto the socket's kernel handle when the chain
 *   lands on a rung that has one, before TLS wrote a byte, so TLSWrap drives it natively, as
 *   Node's own tls.connect does over its TCP handle.
 */
import type * as net from 'net'
import type * as tls from 'tls'
import { debug } from '../debug'
import { tlsOnHandle } from '../transports/registry'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** The parts of Node's TLSWrap (the TLSSocket's `_handle`) this module touches. */
interface TlsWrapHandle {
  _parentWrap: JsStreamSocketLike | null
  getServername (): string | false | undefined
  getSession (): Buffer | undefined
  destroySSL (): void
  onread: unknown
  [k: symbol]: unknown
}

/** The parts of Node's JSStreamSocket (internal/js_stream_socket) this module touches. */
interface JsStreamSocketLike {
  stream: unknown
  writableLength: number
  destroy (): void
  removeAllListeners (): void
  [k: symbol]: unknown
}

type TlsSocketInternals = tls.TLSSocket & {
  _handle: TlsWrapHandle | null
  ssl: unknown
  connecting: boolean
  _wrapHandle (wrap: unknown, handle: unknown, wrapHasActiveWriteFromPrevOwner: boolean): TlsWrapHandle
  _init (): void
  _emitTLSError (err: Error): void
  _sockname: unknown
}

const EVENTS = ['data', 'end', 'close', 'error'] as const

/** The listeners `socket` has now for the events JSStreamSocket listens to. */
export function listenersOf (socket: net.Socket): Map<string, AnyFn[]> {
  return new Map(EVENTS.map(e => [e, socket.listeners(e) as AnyFn[]]))
}

/** A stand-in for the stream of a JSStreamSocket being discarded: its close must not reach the socket. */
const DETACHED = Object.freeze({
  destroy () {},
  end (cb?: () => void) { if (cb) process.nextTick(cb) },
  pause () {},
  resume () {},
  cork () {},
  uncork () {},
  write () { return true }
})

function symbolNamed (obj: object, name: string): symbol | undefined {
  return Object.getOwnPropertySymbols(obj).find(s => s.description === name)
}

/**
 * Call right after `tls.connect({ socket })` returned `tlssock` over `socket` (a fastsock socket
 * still running the chain), with `before`, the socket's listeners just before that call. When
 * `socket` connects on a rung with a kernel handle, before TLS's own 'connect' handler starts the
 * handshake, TLS is re-wrapped over that handle: a new TLSWrap over `socket._handle` (as Node's
 * tls.connect({ socket }) does over a connected net.Socket), the servername and session carried
 * over, and the JSStreamSocket (which never carried a byte: TLS writes nothing before 'connect')
 * and its listeners on `socket` discarded. On a handle-less rung TLS stays on the JSStreamSocket.
 */
export function rewrapOnConnect (socket: net.Socket, tlssock: tls.TLSSocket, before: Map<string, AnyFn[]>): void {
  const t = tlssock as TlsSocketInternals
  const old = t._handle
  const jss = old?._parentWrap
  if (!old || !jss || jss.stream !== socket) return
  // The listeners JSStreamSocket put on the socket (data, end, close, error).
  const added = new Map<string, AnyFn[]>()
  for (const e of EVENTS) {
    const was = before.get(e) ?? []
    added.set(e, (socket.listeners(e) as AnyFn[]).filter(f => !was.includes(f)))
  }
  socket.prependOnceListener('connect', () => {
    const s = socket as net.Socket & { _handle: { isStreamBase?: boolean } | null, transport?: string | null }
    const rung = s.transport ?? 'none'
    if (!s._handle || s._handle.isStreamBase !== true) {
      debug('tls', 'client on %s (no kernel handle): TLS runs through Node\'s JSStreamSocket', rung)
      return
    }
    // Only where it is tested (Rung.tlsOnHandle, lib/contract.ts).
    if (!tlsOnHandle(s.transport)) {
      debug('tls', 'client on %s: TLS stays on JSStreamSocket (the rung does not take TLS on its handle)', rung)
      return
    }
    const why = t.destroyed ? 'the TLSSocket is destroyed'
      : t._handle !== old ? 'TLS changed its handle'
        : !t.connecting ? 'TLS is not waiting for connect'
          : jss.writableLength > 0 || socket.readableLength > 0 || socket.writableLength > 0 ? 'bytes already in flight'
            : null
    if (why) {
      debug('tls', 'client on %s: TLS stays on JSStreamSocket (%s)', rung, why)
      return
    }
    const ownerSymbol = symbolNamed(old, 'owner_symbol')
    if (ownerSymbol === undefined) return
    const servername = old.getServername()
    const session = old.getSession()
    // Discard the JSStreamSocket: its listeners on the socket, then itself, its close kept
    // from reaching the socket (it would destroy it).
    for (const [e, fns] of added) for (const f of fns) socket.removeListener(e, f)
    jss.removeAllListeners()
    jss.stream = DETACHED
    t._handle = null
    jss.destroy()
    old.destroySSL()
    // TLS over the kernel handle, as Node's TLSSocket over a connected net.Socket: the socket is
    // the wrap (TLSWrap's close destroys it), its errors are TLS's.
    const res = t._wrapHandle(socket, s._handle, false)
    res[ownerSymbol] = t
    res.onread = old.onread
    t._handle = res
    t.ssl = res
    t._sockname = null
    t._init() // sets connecting; TLS's own 'connect' handler (next) clears it and starts the handshake
    // What the TLSSocket enabled on the handle it had when listeners came ('session': the session
    // callbacks, which the agent's session cache needs; 'keylog'), or its options asked for.
    const h = res as unknown as Record<string, AnyFn | undefined>
    if (t.listenerCount('session') > 0) h.enableSessionCallbacks?.call(res)
    if (t.listenerCount('keylog') > 0) h.enableKeylogCallback?.call(res)
    if ((t as unknown as { _tlsOptions?: { enableTrace?: boolean } })._tlsOptions?.enableTrace) h.enableTrace?.call(res)
    socket.on('error', (err: Error) => t._emitTLSError(err))
    if (servername) (t as unknown as { setServername: AnyFn }).setServername(servername)
    if (session) (t as unknown as { setSession: AnyFn }).setSession(session)
    debug('tls', 'client on %s: TLS re-wrapped over its kernel handle (native TLSWrap, no JSStreamSocket)', rung)
  })
}
