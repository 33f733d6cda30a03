/**
 * Typed-array transfer methods for typed mode: how an array gets from one process's typed array
 * into the other process's own typed array. Both ends use the same codec.
 *
 * - `fastsock`: `socket.write(view)` + `await socket.readInto(dst)`: raw bytes, no framing (the
 *   receiver knows the length), no serialization.
 * - `raw`: what a careful Node user writes over `net` today: a 4-byte little-endian length
 *   prefix, then the array's bytes; the receiver reassembles the chunks into its aligned array.
 * - `v8`: `v8.serialize(array)` behind a 4-byte length prefix; `v8.deserialize` + `dst.set`.
 * - `json`: `JSON.stringify(Array.from(array))` + '\n'; split on newline, `JSON.parse` +
 *   `dst.set`.
 */
import type * as net from 'net'
import * as v8 from 'v8'
import type { FastsockSocket } from '../harness/library'
import type { ElementType, TypedMethod } from './types'

export type AnyTypedArray = Uint8Array | Int32Array | Float64Array

export const ELEMENT_TYPES: Record<ElementType, { new (n: number): AnyTypedArray, BYTES_PER_ELEMENT: number }> = {
  Uint8Array,
  Int32Array,
  Float64Array
}

/** Sends and receives whole arrays over one socket. One receive may be pending at a time. */
export interface ArrayCodec {
  send: (view: AnyTypedArray) => void
  /** Resolves when one whole array has been stored into `dst` (same type and length). */
  receive: (dst: AnyTypedArray) => Promise<void>
}

/** Fills `view` with a deterministic pattern (full-precision doubles for Float64Array). */
export function fillPattern (view: AnyTypedArray): void {
  if (view instanceof Float64Array) {
    for (let i = 0; i < view.length; i++) view[i] = Math.sin(i + 1) * 1000
  } else if (view instanceof Int32Array) {
    for (let i = 0; i < view.length; i++) view[i] = Math.imul(i + 1, 2654435761)
  } else {
    for (let i = 0; i < view.length; i++) view[i] = (i * 31 + 7) & 0xff
  }
}

/** True when the two arrays hold the same bytes. */
export function sameBytes (a: AnyTypedArray, b: AnyTypedArray): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength)
    .equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength))
}

/** A Buffer over the array's own bytes (no copy). */
function bytesOf (view: ArrayBufferView): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength)
}

export function createCodec (method: TypedMethod, socket: net.Socket): ArrayCodec {
  switch (method) {
    case 'fastsock': return fastsockCodec(socket as FastsockSocket)
    case 'raw': return new LengthPrefixed(socket, 'raw')
    case 'v8': return new LengthPrefixed(socket, 'v8')
    case 'json': return new JsonLines(socket)
  }
}

function fastsockCodec (socket: FastsockSocket): ArrayCodec {
  const readInto = socket.readInto
  if (typeof readInto !== 'function') throw new Error('socket.readInto is not a function: the fastsock core lacks it')
  return {
    send: (view) => { socket.write(view as unknown as Uint8Array) },
    receive: async (dst) => { await readInto.call(socket, dst) }
  }
}

/** Chunks that arrived while no receive was pending, and the pending receive. */
abstract class ChunkedReceiver implements ArrayCodec {
  protected queue: Buffer[] = []
  protected dst: AnyTypedArray | null = null
  private resolve: (() => void) | null = null
  private reject: ((err: Error) => void) | null = null
  private failure: Error | null = null

  constructor (protected readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      if (this.dst === null) this.queue.push(chunk)
      else this.consume(chunk)
    })
    const fail = (err: Error): void => {
      this.failure = err
      const reject = this.reject
      this.dst = null
      this.resolve = this.reject = null
      if (reject !== null) reject(err)
    }
    socket.on('error', fail)
    socket.on('close', () => fail(new Error('socket closed during receive')))
  }

  abstract send (view: AnyTypedArray): void

  async receive (dst: AnyTypedArray): Promise<void> {
    if (this.failure !== null) throw this.failure
    return await new Promise<void>((resolve, reject) => {
      this.dst = dst
      this.resolve = resolve
      this.reject = reject
      const queued = this.queue
      this.queue = []
      for (const chunk of queued) {
        if (this.dst === null) this.queue.push(chunk)
        else this.consume(chunk)
      }
    })
  }

  /** Takes bytes of `chunk` for the current array; pushes what is left to the queue. */
  protected abstract consume (chunk: Buffer): void

  /** The current array is complete; `rest` belongs to the next one. */
  protected complete (rest: Buffer | null): void {
    const resolve = this.resolve
    this.dst = null
    this.resolve = this.reject = null
    if (rest !== null && rest.length > 0) this.queue.push(rest)
    if (resolve !== null) resolve()
  }

  protected fail (err: Error): void {
    this.socket.destroy(err)
  }
}

/** `raw` and `v8`: 4-byte little-endian length, then the body. */
class LengthPrefixed extends ChunkedReceiver {
  private readonly header = Buffer.alloc(4)
  private headerFill = 0
  private bodyLength = -1
  private bodyFill = 0
  /** raw: the destination's own bytes; v8: a reusable staging buffer for the serialized form. */
  private body: Buffer = Buffer.alloc(0)

  constructor (socket: net.Socket, private readonly flavour: 'raw' | 'v8') { super(socket) }

  send (view: AnyTypedArray): void {
    const body = this.flavour === 'raw' ? bytesOf(view) : v8.serialize(view)
    // A fresh 4-byte header per message: a queued write keeps a reference to its buffer.
    const header = Buffer.allocUnsafe(4)
    header.writeUInt32LE(body.length, 0)
    this.socket.cork()
    this.socket.write(header)
    this.socket.write(body)
    this.socket.uncork()
  }

  protected consume (chunk: Buffer): void {
    let at = 0
    if (this.bodyLength < 0) {
      const take = Math.min(4 - this.headerFill, chunk.length)
      chunk.copy(this.header, this.headerFill, 0, take)
      this.headerFill += take
      at = take
      if (this.headerFill < 4) return
      this.startBody(this.header.readUInt32LE(0))
      if (this.bodyLength < 0) return
    }
    const take = Math.min(this.bodyLength - this.bodyFill, chunk.length - at)
    chunk.copy(this.body, this.bodyFill, at, at + take)
    this.bodyFill += take
    at += take
    if (this.bodyFill < this.bodyLength) return
    this.finishBody()
    this.headerFill = 0
    this.bodyLength = -1
    this.bodyFill = 0
    this.complete(at < chunk.length ? chunk.subarray(at) : null)
  }

  private startBody (length: number): void {
    const dst = this.dst as AnyTypedArray
    if (this.flavour === 'raw') {
      if (length !== dst.byteLength) {
        this.fail(new Error(`raw frame of ${length} bytes, expected ${dst.byteLength}`))
        return
      }
      this.body = bytesOf(dst) // reassemble straight into the aligned destination array
    } else if (this.body.length < length) {
      this.body = Buffer.allocUnsafe(length)
    }
    this.bodyLength = length
    this.bodyFill = 0
  }

  private finishBody (): void {
    if (this.flavour === 'raw') return
    const dst = this.dst as AnyTypedArray
    const value = v8.deserialize(this.body.subarray(0, this.bodyLength)) as AnyTypedArray
    if (value?.length !== dst.length) {
      this.fail(new Error(`v8 frame holds ${String(value?.length)} elements, expected ${dst.length}`))
      return
    }
    dst.set(value)
  }
}

/** `json`: one JSON array per line. */
class JsonLines extends ChunkedReceiver {
  private parts: Buffer[] = []

  send (view: AnyTypedArray): void {
    this.socket.write(JSON.stringify(Array.from(view)) + '\n')
  }

  protected consume (chunk: Buffer): void {
    const nl = chunk.indexOf(10)
    if (nl < 0) {
      this.parts.push(chunk)
      return
    }
    this.parts.push(chunk.subarray(0, nl))
    const text = Buffer.concat(this.parts).toString('utf8')
    this.parts = []
    const dst = this.dst as AnyTypedArray
    const value = JSON.parse(text) as number[]
    if (value.length !== dst.length) {
      this.fail(new Error(`JSON line holds ${value.length} elements, expected ${dst.length}`))
      return
    }
    dst.set(value)
    this.complete(nl + 1 < chunk.length ? chunk.subarray(nl + 1) : null)
  }
}
