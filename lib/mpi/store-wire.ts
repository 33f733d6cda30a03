/**
 * The store's wire format (docs/mpi-launch.md, "Store protocol"; lib/mpi/store.ts serves and
 * speaks it): frames of u32le length (of what follows) | u8 op | u32le id | body; strings are
 * u16le byte length + UTF-8, numbers i32le / i64le. The frame builders, the body reader, the
 * stream's frame decoder, the argument checks of keys and values, and the label of the store's
 * proof.
 */
import { invalidArgType, mpiError, outOfRange } from './errors'
import type { StoreAddress } from './launch'

/** Protocol magic in HELLO ('FSMS') and version. */
export const STORE_MAGIC = 0x534d5346
export const STORE_VERSION = 3
/** Largest frame accepted (64 MiB); a larger length is a protocol error. */
export const MAX_FRAME = 64 * 1024 * 1024
/** Largest frame accepted before the peer proved the job's secret (HELLO, PROVE). */
export const MAX_HELLO_FRAME = 4096
/** How long a connection may take to prove itself before the server hangs up, ms. */
export const HANDSHAKE_MS = 10000
/**
 * Default bound on the connections that have not proved the job's secret yet (StoreServerOptions
 * .maxUnproven): past it, each new connection evicts the oldest one that has not even sent a valid
 * HELLO, else the oldest unproven one. A flood of connections that never send (or dribble
 * garbage) then holds at most this many descriptors, and the newest (a rank retrying) gets in.
 */
export const MAX_UNPROVEN = 128
/** Longest key in UTF-8 bytes. */
export const MAX_KEY = 4096

export const Op = {
  HELLO: 1, SET: 2, GET: 3, WAIT: 4, ADD: 5, CHECK: 6, DELETE: 7, FINALIZING: 8, ABORT: 9, CANCEL: 10, PROVE: 11,
  OK: 0x81, CHALLENGE: 0x85, VALUE: 0x82, NUMBER: 0x83, ERROR: 0x84, RANK_LOST: 0x90, EVENT_ABORT: 0x91
} as const

/** Builds one frame. */
export function frame (op: number, id: number, ...parts: Uint8Array[]): Buffer {
  let body = 0
  for (const p of parts) body += p.byteLength
  const out = Buffer.allocUnsafe(9 + body)
  out.writeUInt32LE(5 + body, 0)
  out.writeUInt8(op, 4)
  out.writeUInt32LE(id >>> 0, 5)
  let at = 9
  for (const p of parts) { out.set(p, at); at += p.byteLength }
  return out
}

export function str (s: string): Buffer {
  const b = Buffer.from(s, 'utf8')
  const out = Buffer.allocUnsafe(2 + b.length)
  out.writeUInt16LE(b.length, 0)
  b.copy(out, 2)
  return out
}

export function i32 (v: number): Buffer { const b = Buffer.allocUnsafe(4); b.writeInt32LE(v, 0); return b }
export function u32 (v: number): Buffer { const b = Buffer.allocUnsafe(4); b.writeUInt32LE(v >>> 0, 0); return b }
export function i64 (v: bigint): Buffer { const b = Buffer.allocUnsafe(8); b.writeBigInt64LE(v, 0); return b }

/** A cursor over one frame's body; reading past its end throws ERR_MPI_PROTOCOL. */
export class Reader {
  at = 0
  constructor (readonly buf: Buffer) {}
  need (n: number): void {
    if (this.at + n > this.buf.length) throw mpiError('ERR_MPI_PROTOCOL', 'store frame too short')
  }

  str (): string { this.need(2); const n = this.buf.readUInt16LE(this.at); this.at += 2; this.need(n); const s = this.buf.toString('utf8', this.at, this.at + n); this.at += n; return s }
  i32 (): number { this.need(4); const v = this.buf.readInt32LE(this.at); this.at += 4; return v }
  u32 (): number { this.need(4); const v = this.buf.readUInt32LE(this.at); this.at += 4; return v }
  i64 (): bigint { this.need(8); const v = this.buf.readBigInt64LE(this.at); this.at += 8; return v }
  rest (): Buffer { const b = this.buf.subarray(this.at); this.at = this.buf.length; return b }
}

/**
 * Splits a byte stream into frames: calls `onFrame(op, id, body)` for each complete one. Throws
 * (from push) ERR_MPI_PROTOCOL on an oversized length.
 */
export class FrameDecoder {
  private chunks: Buffer[] = []
  private have = 0
  /** The largest frame length accepted now. */
  max = MAX_FRAME
  constructor (private readonly onFrame: (op: number, id: number, body: Buffer) => void) {}
  push (chunk: Buffer): void {
    this.chunks.push(chunk)
    this.have += chunk.length
    while (this.have >= 4) {
      let head = this.chunks[0]
      if (head.length < 4) { head = Buffer.concat(this.chunks); this.chunks = [head] }
      const len = head.readUInt32LE(0)
      if (len < 5 || len > this.max) throw mpiError('ERR_MPI_PROTOCOL', `store frame length ${len} out of range`)
      if (this.have < 4 + len) return
      const all = this.chunks.length === 1 ? head : Buffer.concat(this.chunks)
      const f = all.subarray(4, 4 + len)
      const rest = all.subarray(4 + len)
      this.chunks = rest.length > 0 ? [rest] : []
      this.have = rest.length
      this.onFrame(f.readUInt8(0), f.readUInt32LE(1), f.subarray(5))
    }
  }
}

export function checkKey (key: unknown, name = 'key'): string {
  if (typeof key !== 'string') {
    throw invalidArgType(`The "${name}" argument must be of type string. Received ${typeof key}`)
  }
  if (Buffer.byteLength(key) > MAX_KEY) {
    throw outOfRange(`The "${name}" argument is longer than ${MAX_KEY} bytes`)
  }
  return key
}

export function toBytes (value: unknown): Uint8Array {
  if (typeof value === 'string') return Buffer.from(value, 'utf8')
  if (value instanceof Uint8Array) return value
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  throw invalidArgType('The "value" argument must be a string or a Uint8Array')
}

/** Strips the IPv4-mapped prefix (`::ffff:10.0.0.1` → `10.0.0.1`). */
export function plainAddress (a: string | undefined): string {
  if (a === undefined) return ''
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a
}

export function isLoopbackHost (h: string): boolean {
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h)
}

/**
 * The label of the store's proof (lib/mpi/auth.ts proof): over TCP it names the port the store
 * listens on, so that a proof relayed from the real store by a process that took another port
 * (a squatter on the job's first port, docs/mpi-launch.md "When the port is taken") does not verify for a
 * client that dialed that other port.
 */
export function proofLabel (addr: StoreAddress): string {
  return 'path' in addr ? 'store' : `store:${addr.port}`
}
