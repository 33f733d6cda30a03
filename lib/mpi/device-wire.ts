/**
 * The wire format of fastsock/mpi's device (docs/mpi.md, "Protocol"). All integers are
 * little-endian. A connection starts with a handshake, then carries frames: a fixed 32-byte
 * header, followed by `length` payload bytes for EAGER and DATA frames.
 *
 * Handshake (once per connection, before any frame):
 *   dialer -> acceptor  HELLO, 52 bytes: u32 magic 0x504d5346 ('FSMP'), u16 version (3),
 *                       u16 0, u32 dialer's world rank, u32 job key (FNV-1a of the job id),
 *                       u32 the dialer's eager threshold (bytes, at most MAX_EAGER),
 *                       nonceA (32 random bytes)
 *   acceptor -> dialer  REPLY, 76 bytes: u32 magic, u32 verdict (1 ACCEPT, 0 REJECT), u32 the
 *                       acceptor's eager threshold, nonceB (32 random bytes),
 *                       proofB = HMAC-SHA256(secret, 'hello', 'B', nonceA, nonceB) (lib/mpi/auth.ts)
 *   dialer -> acceptor  PROVE, 32 bytes (after an ACCEPT whose proofB verified):
 *                       proofA = HMAC-SHA256(secret, 'hello', 'A', nonceA, nonceB)
 *   The secret is the job's (lib/mpi/auth.ts; a zero-length key for a job without one, which runs
 *   on one host only): it never travels, and each side checks the other's proof before a frame.
 *   A same-host peer must also run as this user: the side channel's SO_PEERCRED check (shm, unix)
 *   or the socket's owner in /proc/net/tcp (tcp).
 *   Each side's threshold bounds the EAGER frames it may send on the connection (the receiver
 *   buffers an unexpected EAGER payload: it allocates no more than that).
 *   When two ranks dial each other at once, the connection dialed by the lower rank is kept:
 *   the acceptor answers REJECT when it already has a connection to the dialer, or is itself
 *   dialing it and is the lower rank. Frames flow only after PROVE.
 *
 * Frame header, 32 bytes (8 x u32):
 *   [0] kind (1 EAGER, 2 RTS, 3 CTS, 4 DATA, 5 BYE)   [1] context id
 *   [2] source: the sender's rank in the communicator  [3] tag
 *   [4] length, low 32 bits   [5] length, high bits (payload size in bytes)
 *   [6] sreq: the sender's request id (RTS, CTS, DATA)  [7] rreq: the receiver's (CTS, DATA)
 * EAGER: header + payload (message below the eager threshold). RTS: header only (ready to
 * send). CTS: the receiver matched the RTS and posted its array. DATA: header + payload, the
 * rendezvous payload, read straight into the posted array. BYE: orderly goodbye (finalize).
 *
 * Every header is checked before use (frameProblem, below, for Device.checkFrame): its kind; EAGER length at most the
 * sender's threshold, every length at most MAX_LENGTH; EAGER/RTS tag >= 0, source a rank of the
 * communicator and the sender's own rank there when the context is known; CTS/DATA request ids
 * of requests this side has open on the connection, with their lengths; BYE without payload. A
 * bad header closes the connection and reports the sender lost with ERR_MPI_PROTOCOL.
 */

export const MAGIC = 0x504d5346
export const VERSION = 3
export const HELLO_BYTES = 52
export const REPLY_BYTES = 76
/** PROVE: the dialer's proof, after REPLY. */
export const PROVE_BYTES = 32
/** Where HELLO's nonce starts; REPLY's nonce and proof. */
export const HELLO_NONCE = 20
export const REPLY_NONCE = 12
export const REPLY_PROOF = 44
/** The largest eager threshold a HELLO or REPLY may announce (InitOptions.eagerThresholdBytes' bound). */
export const MAX_EAGER = 2 ** 30
/** The largest message length a header may carry: the largest exact integer of a double. */
export const MAX_LENGTH = Number.MAX_SAFE_INTEGER
export const HEADER_BYTES = 32

export const EAGER = 1
export const RTS = 2
export const CTS = 3
export const DATA = 4
export const BYE = 5

/** FNV-1a 32-bit of a string (the job key of HELLO). */
export function jobKey (s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/** Writes a header into `buf` at `off` (a Buffer: writeUInt32LE is the fast path). */
export function putHeader (buf: Buffer, off: number, kind: number, ctx: number, source: number, tag: number,
  length: number, sreq: number, rreq: number): void {
  buf.writeUInt32LE(kind, off)
  buf.writeUInt32LE(ctx >>> 0, off + 4)
  buf.writeInt32LE(source, off + 8)
  buf.writeInt32LE(tag, off + 12)
  buf.writeUInt32LE(length % 0x100000000, off + 16)
  buf.writeUInt32LE(Math.floor(length / 0x100000000), off + 20)
  buf.writeUInt32LE(sreq >>> 0, off + 24)
  buf.writeUInt32LE(rreq >>> 0, off + 28)
}

/** A frame kind's name, for messages. */
export function kindName (kind: number): string {
  return kind === EAGER ? 'EAGER' : kind === RTS ? 'RTS' : kind === CTS ? 'CTS' : kind === DATA ? 'DATA' : kind === BYE ? 'BYE' : `kind ${kind}`
}

/** What frameProblem reads of the connection a header came on (the device's Conn). */
export interface CheckedConn {
  /** The sender's world rank and announced eager threshold (bytes). */
  readonly peer: number
  readonly peerEager: number
  /** This side's open rendezvous sends and receives on the connection, by request id. */
  readonly sends: ReadonlyMap<number, unknown>
  readonly recvs: ReadonlyMap<number, unknown>
}

/**
 * Why a header that came on `c` is not this protocol, or null (the rules in this module's
 * comment): `size` the job's ranks, `ranks` the world ranks of its context when known. Nothing
 * a peer claims is trusted before this: no allocation beyond its eager threshold, no request
 * id this side did not give.
 */
export function frameProblem (c: CheckedConn, size: number, ranks: readonly number[] | undefined, kind: number, ctx: number,
  source: number, tag: number, length: number, sreq: number, rreq: number): string | null {
  if (length > MAX_LENGTH) return `${kindName(kind)} frame claiming ${length} bytes (above ${MAX_LENGTH})`
  if (kind === EAGER || kind === RTS) {
    if (kind === EAGER && length > c.peerEager) return `EAGER frame of ${length} bytes above its eager threshold of ${c.peerEager}`
    if (kind === RTS && sreq === 0) return 'RTS without a request id'
    if (tag < 0) return `${kindName(kind)} frame with tag ${tag}`
    if (source < 0 || source >= size) return `${kindName(kind)} frame with source ${source} (a job of ${size} ranks)`
    if (ranks !== undefined && ranks[source] !== c.peer) return `${kindName(kind)} frame on context ${ctx} claiming source ${source}, not its own rank there`
    return null
  }
  if (kind === CTS) {
    const s = c.sends.get(sreq) as { bytes: Uint8Array, ctx: number } | undefined
    if (s === undefined) return `CTS for unknown request ${sreq}`
    if (length !== s.bytes.length || ctx !== s.ctx || rreq === 0) return `CTS for request ${sreq} with length ${length}, context ${ctx} (the send has ${s.bytes.length} bytes on context ${s.ctx})`
    return null
  }
  if (kind === DATA) {
    const r = c.recvs.get(rreq) as { bytes: Uint8Array } | undefined
    if (r === undefined) return `DATA for unknown request ${rreq}`
    if (length !== r.bytes.length) return `DATA of ${length} bytes for request ${rreq} of ${r.bytes.length}`
    return null
  }
  if (kind === BYE) return length === 0 ? null : `BYE with ${length} payload bytes`
  return `unknown frame kind ${kind}`
}
