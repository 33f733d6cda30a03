/**
 * readInto: reading a byte stream straight into a caller's typed array (JFS 3.1.1: arrays are
 * their raw bytes, no serialization). Bytes are the host's byte order (little-endian on x86-64
 * and arm64 Linux): a Float64Array written by one fastsock end reads back as the same numbers at
 * the other end on hosts of the same byte order.
 *
 * Requests are served in call order, each filled completely before the next. While any request
 * is pending, arriving bytes go to it and are not emitted as 'data'; bytes that arrive when no
 * request is pending stay with the stream ('data' listeners, read(), pipe()), and the next
 * readInto takes those first.
 */
import { ReadIntoError, outOfRange } from '../errors'

/** One pending readInto: `bytes` is the caller's element range seen as bytes. */
export interface ReadIntoRequest {
  view: ArrayBufferView
  bytes: Uint8Array
  filled: number
  settle: (err: Error | null) => void
}

/** The byte range [offsetElements, offsetElements + lengthElements) of `view`, validated. */
export function targetBytes (view: unknown, offsetElements?: number, lengthElements?: number): Uint8Array {
  if (!ArrayBuffer.isView(view)) {
    throw new TypeError('readInto: view must be a TypedArray or DataView') as TypeError & { code: string }
  }
  const elementSize = (view as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1
  const totalElements = view.byteLength / elementSize
  const off = offsetElements ?? 0
  const len = lengthElements ?? totalElements - off
  if (!Number.isInteger(off) || off < 0 || off > totalElements) {
    throw outOfRange(`readInto: offsetElements must be an integer in [0, ${totalElements}], got ${off}`)
  }
  if (!Number.isInteger(len) || len < 0 || off + len > totalElements) {
    throw outOfRange(`readInto: lengthElements must be an integer in [0, ${totalElements - off}], got ${len}`)
  }
  return new Uint8Array(view.buffer, view.byteOffset + off * elementSize, len * elementSize)
}


/**
 * Copies as much of `chunk` as the queue wants, completing requests in order.
 * Returns how many bytes of `chunk` were taken.
 */
export function feed (queue: ReadIntoRequest[], chunk: Uint8Array): number {
  let off = 0
  while (queue.length > 0 && off < chunk.length) {
    const r = queue[0]
    const n = Math.min(r.bytes.length - r.filled, chunk.length - off)
    r.bytes.set(chunk.subarray(off, off + n), r.filled)
    r.filled += n
    off += n
    if (r.filled === r.bytes.length) {
      queue.shift()
      r.settle(null)
    }
  }
  // Zero-length requests at the head complete at once.
  while (queue.length > 0 && queue[0].bytes.length === 0) queue.shift()!.settle(null)
  return off
}

/** Completes the requests at the head of the queue that need no more bytes (zero-length). */
export function settleFull (queue: ReadIntoRequest[]): void {
  while (queue.length > 0 && queue[0].filled === queue[0].bytes.length) queue.shift()!.settle(null)
}

/** Fails every pending request (stream ended, errored or closed before they were filled). */
export function failAll (queue: ReadIntoRequest[], why: string, cause?: Error | null): void {
  const pending = queue.splice(0)
  for (const r of pending) {
    const err = new ReadIntoError(`readInto: ${why} after ${r.filled} of ${r.bytes.length} bytes`, r.filled, cause ? { cause } : undefined)
    r.settle(err)
  }
}
