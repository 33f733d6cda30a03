/**
 * The accessors fastsock's Socket defines over Node's (lib/socket.ts installs them).
 */
import type * as net from 'net'
import { originals } from '../originals'
import type { KernelHandle, TcpView } from '../contract'
import type { EndpointStream } from '../stream/endpoint-stream'
import { kState, SocketState } from './state'
import { nodeSymbol } from './adopt'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
type FsSocket = net.Socket & { [kState]: SocketState }

const NodeSocket = originals.Socket
const duplexWrite = NodeSocket.prototype.write

/** A Buffer over a TypedArray's or DataView's bytes (no copy); anything else as it is. */
export function asBuffer (chunk: unknown): unknown {
  if (ArrayBuffer.isView(chunk) && !(chunk instanceof Uint8Array)) {
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  }
  return chunk
}

/**
 * `write()` that takes any TypedArray or DataView. An accessor, because Node assigns
 * `socket.write` itself (Node's write again on connect, `writeAfterFIN` after the peer's FIN),
 * and so do logging and APM shims (`const o = s.write; s.write = (...a) => o.apply(s, a)`): an
 * assigned function is what `socket.write` reads until Node's own write is assigned back, as an
 * own property would be; the `fastWrite` it captured stays the write it wraps.
 */
function fastWrite (this: FsSocket, chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
  return (duplexWrite as AnyFn).call(this, asBuffer(chunk), encoding, cb)
}
/** A function assigned to the prototype's `write` (a shim wrapping it for every socket), or null. */
let protoWrite: AnyFn | null = null
const kBytesWrittenName = 'kBytesWritten'
const nodePending = Object.getOwnPropertyDescriptor(NodeSocket.prototype, 'pending')!.get!
const nodeBufferSize = Object.getOwnPropertyDescriptor(NodeSocket.prototype, 'bufferSize')!.get!
const nodeBytesWritten = Object.getOwnPropertyDescriptor(NodeSocket.prototype, 'bytesWritten')!.get!
/**
 * Installs on fastsock's Socket prototype the accessors Node defines on net.Socket's and that a
 * socket without a handle must answer itself (docs/design.md, "The stream core"): `pending`, `bufferSize`,
 * `bytesRead`, `bytesWritten`, `_bytesDispatched`; and the `write` accessor.
 */
export function installAccessors (proto: object): void {
  Object.defineProperties(proto, {
    /**
     * Node's: no handle or connecting. On a handle-less channel (no handle by design): connecting,
     * or destroyed (Node drops the handle in destroy()).
     */
    pending: {
      configurable: true,
      enumerable: true,
      get (this: FsSocket): boolean { return this[kState].stream ? this.connecting || this.destroyed : nodePending.call(this) }
    },
    /**
     * Node's: the writable length once the socket has a handle. Node makes the handle in
     * connect(), before any DNS; a fastsock socket has none while the chain runs, nor on a
     * handle-less channel: the writable length then too.
     */
    bufferSize: {
      configurable: true,
      enumerable: true,
      get (this: FsSocket): number | undefined {
        return this[kState]?.stream || this.connecting ? this.writableLength : nodeBufferSize.call(this)
      }
    },
    /**
     * Node's: bytes dispatched plus bytes still queued in the stream. On a handle-less channel
     * without the write queued while connecting (`_pendingData`), which Node clears when it
     * dispatches that write and the stream core now holds (counted by `_bytesDispatched`).
     */
    bytesWritten: {
      configurable: true,
      enumerable: true,
      get (this: FsSocket): number | undefined {
        // On the prototype itself (no state), Node's getter answers (undefined).
        if (!this[kState]?.stream || this.connecting) return nodeBytesWritten.call(this)
        const buffered = (this as unknown as { writableBuffer?: Array<{ chunk: Buffer | string, encoding: BufferEncoding }> }).writableBuffer
        if (!buffered) return undefined
        let bytes = (this as unknown as { _bytesDispatched: number })._bytesDispatched
        for (const el of buffered) bytes += typeof el.chunk === 'string' ? Buffer.byteLength(el.chunk, el.encoding) : el.chunk.length
        return bytes
      }
    },
    /** Bytes received from the peer: application bytes only (handshakes are not counted). */
    bytesRead: {
      configurable: true,
      enumerable: true,
      get (this: FsSocket): number {
        const st = this[kState]
        if (st.stream) return st.stream.bytesRead
        const h = (this as unknown as { _handle: KernelHandle | null })._handle
        const got = h ? h.bytesRead : ((this as unknown as Record<symbol, number>)[nodeSymbol(this, 'kBytesRead')!] ?? 0)
        return got - st.hsRead
      }
    },
    /**
     * @deprecated For lib/register.ts only, until it reads `tcpViewOf()` / `hasKernelHandle()`:
     * the TCP view of a fast channel, or null.
     */
    _fsView: {
      configurable: true,
      enumerable: false,
      get (this: FsSocket): TcpView | null { return this[kState].view }
    },
    /** @deprecated For lib/register.ts only (see _fsView): truthy on a handle-less channel. */
    _fsShm: {
      configurable: true,
      enumerable: false,
      get (this: FsSocket): EndpointStream | null { return this[kState].stream }
    },
    /** The base of Node's bytesWritten getter, which adds the queued bytes to it. */
    _bytesDispatched: {
      configurable: true,
      enumerable: false,
      get (this: FsSocket): number {
        const st = this[kState]
        if (!st) return 0 // the prototype itself: Node's bytesWritten getter then answers undefined
        if (st.stream) return st.stream.bytesWritten
        const h = (this as unknown as { _handle: KernelHandle | null })._handle
        const sent = h ? h.bytesWritten : ((this as unknown as Record<symbol, number>)[nodeSymbol(this, kBytesWrittenName)!] ?? 0)
        return sent - st.hsWritten
      }
    }
  })

  Object.defineProperty(proto, 'write', {
    configurable: true,
    enumerable: false,
    get (this: FsSocket) { return this[kState]?.writeImpl ?? protoWrite ?? fastWrite },
    set (this: FsSocket, fn: AnyFn) {
      const st = this[kState]
      // On the prototype itself (shimmer-style wrapping of Socket.prototype.write): every socket's default.
      if (st === undefined) return void (protoWrite = fn === fastWrite ? null : fn)
      // Node's own write assigned back (connect) restores the default.
      st.writeImpl = fn === duplexWrite || fn === fastWrite || fn === protoWrite ? null : fn
    }
  })
}
