/**
 * The read side of one device connection: the frame parser over 'data' chunks (handshake done:
 * header, payload), as a small state machine. Payloads are copied from the chunk straight into
 * their target (the posted receive's array, or an unexpected message's buffer); the rest of a
 * rendezvous payload is read with `socket.readInto(array)` (on shm: one copy, ring to array).
 * Every header, whichever path read it (this parser, or Conn's synchronous reads in
 * device-conn.ts), goes through `header()`, which has the device check it
 * (FrameHandler.checkFrame) before any field is used.
 *
 * The layers of a connection: ConnWriter (device-write.ts: writing) < ConnReader (this file:
 * parsing and the event loop's reads) < Conn (device-conn.ts: the synchronous reads and their
 * polling).
 */
import type { Socket } from '../index'
import { HEADER_BYTES, EAGER, DATA } from './device-wire'
import { ConnWriter, type WriteHandler } from './device-write'

/** What the device does with parsed frames (implemented by Device; no import cycle). */
export interface FrameHandler extends WriteHandler {
  /**
   * Why a header from `conn` is not this protocol (its kind, length, context, source, tag or
   * request ids), or null: every header goes through it before the device uses any field.
   */
  checkFrame (conn: ConnReader, kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number): string | null
  /** `conn`'s peer sent a header checkFrame refused (`why`): the connection is closed, the peer lost (ERR_MPI_PROTOCOL). */
  onBadFrame (conn: ConnReader, why: string): void
  /** A frame header arrived; for EAGER/DATA, sets `conn.target` (and `conn.sink`) for its payload. */
  onHeader (conn: ConnReader, kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number): void
  /** The payload of the current frame is complete in `conn.target`. */
  onPayload (conn: ConnReader): void
  /**
   * True when a synchronous spin on `conn` could stall other work: asynchronous writes queued, or
   * another connection with protocol state in flight (rendezvous waiting for CTS or DATA, receives
   * posted for other ranks): progress there needs the event loop.
   */
  othersBusy (conn: ConnReader): boolean
  /** A rendezvous payload being read by readInto failed (connection lost). */
  onPayloadError (conn: ConnReader, sink: unknown, err: Error): void
}

/** A rendezvous payload larger than this is finished with socket.readInto (no chunk copies). */
const READINTO_MIN = 16 * 1024

/** The parser's state: reading a header, or the current frame's payload. */
export const enum St { Header, Payload }

/** The read side of a connection to one peer (world rank `peer`); see the module comment. */
export class ConnReader extends ConnWriter {
  declare readonly handler: FrameHandler
  /** Lost (closed without BYE, or failed to connect). */
  lost = false
  /** The peer said BYE (finalized). */
  departed = false
  /** The peer's eager threshold, bytes (from the handshake): its EAGER frames are at most this long. */
  peerEager = 0
  // Parser state.
  protected st = St.Header
  /** The header being read (sync reads and headers split across chunks), with its u32 view. */
  protected readonly hdr = Buffer.from(new ArrayBuffer(HEADER_BYTES))
  protected readonly hdr32 = new Uint32Array(this.hdr.buffer, 0, HEADER_BYTES / 4)
  protected hdrFill = 0
  /** The current payload's destination and how much of it is filled. */
  target: Uint8Array | null = null
  filled = 0
  /** What the payload belongs to (the device's record: posted receive, unexpected, rendezvous). */
  sink: unknown = null
  /** The device's tag for `sink`'s type. */
  sinkType = 0
  /** The current frame's header fields (valid from onHeader to onPayload). */
  kind = 0
  ctx = 0
  source = 0
  tag = 0
  length = 0
  /** A readInto of a rendezvous payload is pending (sync reads must wait). */
  readIntoPending = 0
  /** Inside the 'data' handler (no nested fast path). */
  parsing = false
  /** The blocking tier read the peer's end of stream (Device.waitSync reports the loss). */
  atEof = false

  /** Takes `socket` (handshake done, `rest`: bytes that followed the handshake) and flushes queued frames. */
  attach (socket: Socket, rest: Buffer | null): void {
    this.socket = socket
    this.syncIo = socket.transport === 'shm'
    this.ready = true
    socket.on('data', this.onData)
    const q = this.queued
    this.queued = []
    for (const f of q) this.writeAsync(f.head, f.payload, f.cb)
    if (rest !== null && rest.length > 0) this.onData(rest)
  }

  /** The 'data' listener: runs the parser over a chunk. */
  readonly onData = (chunk: Buffer): void => {
    if (this.lost) return // a bad frame closed it: what follows is not read
    this.chunkArrived()
    this.parsing = true
    try {
      this.parse(chunk)
    } finally {
      this.parsing = false
    }
  }

  private parse (chunk: Buffer): void {
    const n = chunk.length
    let off = 0
    while (off < n) {
      if (this.st === St.Header) {
        if (this.hdrFill === 0 && n - off >= HEADER_BYTES) {
          this.header(chunk.readUInt32LE(off), chunk.readUInt32LE(off + 4), chunk.readInt32LE(off + 8), chunk.readInt32LE(off + 12),
            chunk.readUInt32LE(off + 16) + chunk.readUInt32LE(off + 20) * 0x100000000, chunk.readUInt32LE(off + 24), chunk.readUInt32LE(off + 28))
          off += HEADER_BYTES
        } else {
          const take = Math.min(HEADER_BYTES - this.hdrFill, n - off)
          chunk.copy(this.hdr, this.hdrFill, off, off + take)
          this.hdrFill += take
          off += take
          if (this.hdrFill < HEADER_BYTES) return
          this.hdrFill = 0
          this.headerFromHdr()
        }
        if (this.lost) return
      } else {
        const target = this.target!
        const take = Math.min(target.length - this.filled, n - off)
        target.set(take === n && off === 0 ? chunk : chunk.subarray(off, off + take), this.filled)
        this.filled += take
        off += take
        if (this.filled === target.length) {
          this.st = St.Header
          this.handler.onPayload(this)
        } else if (this.kind === DATA && target.length - this.filled >= READINTO_MIN) {
          this.readRest() // off === n here: the chunk is used up
        }
      }
    }
  }

  /** Hands the header in `hdr` to the device. */
  protected headerFromHdr (): void {
    const h = this.hdr32
    this.header(h[0], h[1], h[2] | 0, h[3] | 0, h[4] + h[5] * 0x100000000, h[6], h[7])
  }

  /** Hands a decoded header to the device and sets up its payload. */
  private header (kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number): void {
    const bad = this.handler.checkFrame(this, kind, ctx, source, tag, length, sreq, rreq)
    if (bad !== null) { this.refuse(bad); return }
    this.kind = kind
    this.ctx = ctx
    this.source = source
    this.tag = tag
    this.length = length
    this.target = null
    this.filled = 0
    this.handler.onHeader(this, kind, ctx, source, tag, length, sreq, rreq)
    if ((kind === EAGER || kind === DATA) && this.target !== null) {
      if ((this.target as Uint8Array).length === 0) this.handler.onPayload(this)
      else this.st = St.Payload
    }
  }

  /** The peer is lost: drops the staging buffer and what the parser held (nothing more is read or written). */
  override release (): void {
    super.release()
    this.target = null
    this.sink = null
  }

  /** A bad header (`why`): nothing more is read from this connection; the device reports the peer lost. */
  protected refuse (why: string): void {
    this.lost = true
    this.st = St.Header
    this.hdrFill = 0
    this.target = null
    this.socket?.destroy()
    this.handler.onBadFrame(this, why)
  }

  /** Reads the rest of the current DATA payload with socket.readInto (straight into the array). */
  private readRest (): void {
    const sink = this.sink
    const target = this.target!
    const rest = target.subarray(this.filled)
    this.st = St.Header
    this.readIntoPending++
    const conn = this
    const { kind, ctx, source, tag, length } = this
    this.socket!.readInto(rest, (err: Error | null) => {
      conn.readIntoPending--
      if (err !== null) { conn.handler.onPayloadError(conn, sink, err); return }
      // Restore the frame's fields for onPayload (later frames may have been parsed since).
      const saved = [conn.kind, conn.ctx, conn.source, conn.tag, conn.length, conn.target, conn.filled, conn.sink] as const
      conn.kind = kind; conn.ctx = ctx; conn.source = source; conn.tag = tag; conn.length = length
      conn.target = target; conn.filled = target.length; conn.sink = sink
      conn.handler.onPayload(conn)
      ;[conn.kind, conn.ctx, conn.source, conn.tag, conn.length, conn.target, conn.filled, conn.sink] = saved
    })
  }

  /** A chunk arrived through the event loop (Conn learns its polling budget from it). */
  protected chunkArrived (): void {}
}
