/**
 * The side-channel handshake, byte for byte as docs/wire-protocol.md specifies it.
 * All multi-byte integers are little-endian. Every message starts with an 8-byte header:
 *
 *   0      4    5     6        8
 *   +------+----+-----+--------+
 *   | FSCK | ver| type| length |   length = whole message in bytes, header included
 *   +------+----+-----+--------+
 */
import { HandshakeError } from './errors'

export const MAGIC = 0x4b435346 // 'FSCK' read as a little-endian u32
export const PROTOCOL_VERSION = 1
export const MAX_MESSAGE_BYTES = 512

export enum MessageType { Hello = 1, Accept = 2, Reject = 3, ShmSetup = 4, ShmReady = 5 }

/** Capability bits a client offers in HELLO. */
export const CAP_UNIX = 1 << 0
export const CAP_SHM = 1 << 1
/**
 * SHM_SETUP follows this HELLO without waiting for ACCEPT (docs/wire-protocol.md, "Pipelined
 * SHM_SETUP"). Sent only with CAP_SHM, and only to a server whose ACCEPT announced
 * ACCEPT_SHM_EARLY.
 */
export const CAP_SHM_EARLY = 1 << 2
/**
 * The client takes a reset flag (an eventfd, SCM_RIGHTS) with ACCEPT(unix) (docs/wire-protocol.md,
 * "Reset flag"). A server that predates it sends none, and the connection has no reset.
 */
export const CAP_UNIX_RESET = 1 << 3

/** ACCEPT flag bits (its last u32). This server reads a SHM_SETUP pipelined behind HELLO. */
export const ACCEPT_SHM_EARLY = 1 << 0

/** The ACCEPT flag of a server that reads a set-up pipelined behind HELLO (any rung's). */
export const ACCEPT_READS_PIPELINED = ACCEPT_SHM_EARLY

/**
 * What may follow a HELLO with these capability bits before ACCEPT (docs/wire-protocol.md,
 * "Pipelined SHM_SETUP"): the set-up message's HELLO bit (`cap`), the bit that must come with it
 * (`with`), its length and its fds; null when HELLO comes alone. The listener reads it whole
 * whether or not it offers that rung (dropping it when another rung is chosen).
 */
export function pipelinedSetup (capabilities: number): { cap: number, with: number, bytes: number, fds: number } | null {
  if ((capabilities & CAP_SHM_EARLY) === 0) return null
  return { cap: CAP_SHM_EARLY, with: CAP_SHM, bytes: SHM_SETUP_BYTES, fds: SHM_SETUP_FDS }
}

/** Transport ids chosen in ACCEPT. */
export const TRANSPORT_UNIX = 1
export const TRANSPORT_SHM = 2

/** REJECT reasons. BUSY (maxConnections reached) is not cached by clients as a failure. */
export enum RejectReason { Version = 1, Busy = 2, Forbidden = 3, Malformed = 4, NoTransport = 5 }

export interface Hello {
  type: MessageType.Hello
  version: number
  capabilities: number
  /** The address the client dialed (after DNS), and the port. */
  family: 4 | 6
  address: Uint8Array
  port: number
}
export interface Accept {
  type: MessageType.Accept
  version: number
  transport: number
  /** The port both ends report as the client's (there is no TCP socket to own one). */
  clientPort: number
  /** ACCEPT_* bits (0 from a server that predates them). */
  flags: number
}
export interface Reject {
  type: MessageType.Reject
  version: number
  reason: RejectReason
  text: string
}
/**
 * SHM_SETUP (its third layout: docs/wire-protocol.md): the client's rings, its loop's doorbell
 * and ready list; travels with SCM_RIGHTS [memfd, client loop doorbell, client loop ready list].
 */
export interface ShmSetup {
  type: MessageType.ShmSetup
  version: number
  c2sBytes: number
  s2cBytes: number
  /** The client loop doorbell's id: 16 hex digits (a u64 on the wire). */
  doorbellId: string
  /** The node count of the client loop's ready list (checked against the memfd when mapped). */
  readyNodes: number
}
/**
 * SHM_READY (its second layout): the server mapped the segment; the rings are live. Travels with
 * SCM_RIGHTS [server loop doorbell, server loop ready list].
 */
export interface ShmReady { type: MessageType.ShmReady, version: number, doorbellId: string, readyNodes: number }
export type Message = Hello | Accept | Reject | ShmSetup | ShmReady
export const SHM_SETUP_BYTES = 32
export const SHM_READY_BYTES = 24
/** How many fds travel with SHM_SETUP, in this order: memfd, client loop doorbell, client loop ready list. */
export const SHM_SETUP_FDS = 3
/** How many fds travel with SHM_READY, in this order: server loop doorbell, server loop ready list. */
export const SHM_READY_FDS = 2

/** The most fds that may travel with the bytes of a handshake before ACCEPT (a pipelined set-up's). */
export const MAX_HELLO_FDS = SHM_SETUP_FDS

/** The header every message starts with (magic, version, type, length). */
export const HEADER_BYTES = 8
export const HELLO_BYTES = 32
export const ACCEPT_BYTES = 16
const REJECT_HEAD_BYTES = 12
const MAX_REJECT_TEXT = 256

/** The `length` field of the message at the start of `buf` (the whole message's bytes), or null before its header is complete. Unvalidated: decode() checks it. */
export function messageLength (buf: Buffer): number | null {
  return buf.length < HEADER_BYTES ? null : buf.readUInt16LE(6)
}

function header (buf: Buffer, type: MessageType, length: number, version = PROTOCOL_VERSION): void {
  buf.writeUInt32LE(MAGIC, 0)
  buf.writeUInt8(version, 4)
  buf.writeUInt8(type, 5)
  buf.writeUInt16LE(length, 6)
}

/** HELLO: header, u32 capabilities, u8 family, u8 0, u16 port, 16 bytes address. */
export function encodeHello (h: Omit<Hello, 'type' | 'version'>, version = PROTOCOL_VERSION): Buffer {
  const b = Buffer.alloc(HELLO_BYTES)
  header(b, MessageType.Hello, HELLO_BYTES, version)
  b.writeUInt32LE(h.capabilities >>> 0, 8)
  b.writeUInt8(h.family, 12)
  b.writeUInt16LE(h.port, 14)
  b.set(h.address.subarray(0, h.family === 4 ? 4 : 16), 16)
  return b
}

/** ACCEPT: header, u8 transport, u8 0, u16 client port, u32 flags (ACCEPT_*; 0 when omitted). */
export function encodeAccept (a: Omit<Accept, 'type' | 'version' | 'flags'> & { flags?: number }): Buffer {
  const b = Buffer.alloc(ACCEPT_BYTES)
  header(b, MessageType.Accept, ACCEPT_BYTES)
  b.writeUInt8(a.transport, 8)
  b.writeUInt16LE(a.clientPort, 10)
  b.writeUInt32LE((a.flags ?? 0) >>> 0, 12)
  return b
}

const DOORBELL_ID = /^[0-9a-f]{16}$/

function writeDoorbellId (b: Buffer, id: string, offset: number): void {
  if (!DOORBELL_ID.test(id)) throw new TypeError(`doorbell id must be 16 lower-case hex digits, got ${id}`)
  b.writeBigUInt64LE(BigInt('0x' + id), offset)
}

function readDoorbellId (b: Buffer, offset: number): string {
  return b.readBigUInt64LE(offset).toString(16).padStart(16, '0')
}

/**
 * SHM_SETUP: header, u32 ring bytes client->server, u32 ring bytes server->client, u64 id of
 * the client loop's doorbell (`doorbellId`: 16 hex digits), u32 node count of the client loop's
 * ready list, u32 0.
 */
export function encodeShmSetup (c2sBytes: number, s2cBytes: number, doorbellId: string, readyNodes: number): Buffer {
  const b = Buffer.alloc(SHM_SETUP_BYTES)
  header(b, MessageType.ShmSetup, SHM_SETUP_BYTES)
  b.writeUInt32LE(c2sBytes, 8)
  b.writeUInt32LE(s2cBytes, 12)
  writeDoorbellId(b, doorbellId, 16)
  b.writeUInt32LE(readyNodes >>> 0, 24)
  return b
}

/** SHM_READY: header, u64 id of the server loop's doorbell (16 hex digits), u32 node count of its ready list, u32 0. */
export function encodeShmReady (doorbellId: string, readyNodes: number): Buffer {
  const b = Buffer.alloc(SHM_READY_BYTES)
  header(b, MessageType.ShmReady, SHM_READY_BYTES)
  writeDoorbellId(b, doorbellId, 8)
  b.writeUInt32LE(readyNodes >>> 0, 16)
  return b
}

/** REJECT: header, u16 reason, u16 text length, UTF-8 text (at most 256 bytes). */
export function encodeReject (reason: RejectReason, text: string): Buffer {
  const t = Buffer.from(text, 'utf8').subarray(0, MAX_REJECT_TEXT)
  const b = Buffer.alloc(REJECT_HEAD_BYTES + t.length)
  header(b, MessageType.Reject, b.length)
  b.writeUInt16LE(reason, 8)
  b.writeUInt16LE(t.length, 10)
  t.copy(b, REJECT_HEAD_BYTES)
  return b
}

function malformed (why: string): HandshakeError {
  return new HandshakeError(`malformed side-channel message: ${why}`)
}

/**
 * Parses one message from the start of `buf`. Returns null while more bytes are needed, or the
 * message and how many bytes it used. Throws ERR_FASTSOCK_HANDSHAKE on anything malformed
 * (wrong magic as soon as 4 bytes are there, a length that does not fit its type, bad fields).
 * A version other than ours parses (so a REJECT can name it); the caller decides.
 */
export function decode (buf: Buffer): { message: Message, bytes: number } | null {
  if (buf.length >= 4 && buf.readUInt32LE(0) !== MAGIC) throw malformed('bad magic')
  if (buf.length < 8) return null
  const version = buf.readUInt8(4)
  const type = buf.readUInt8(5)
  const length = buf.readUInt16LE(6)
  if (length < 8 || length > MAX_MESSAGE_BYTES) throw malformed(`length ${length}`)
  if (type === MessageType.Hello && length !== HELLO_BYTES) throw malformed(`HELLO of ${length} bytes`)
  if (type === MessageType.Accept && length !== ACCEPT_BYTES) throw malformed(`ACCEPT of ${length} bytes`)
  if (type === MessageType.Reject && length < REJECT_HEAD_BYTES) throw malformed(`REJECT of ${length} bytes`)
  if (type === MessageType.ShmSetup && length !== SHM_SETUP_BYTES) throw malformed(`SHM_SETUP of ${length} bytes`)
  if (type === MessageType.ShmReady && length !== SHM_READY_BYTES) throw malformed(`SHM_READY of ${length} bytes`)
  if (type < MessageType.Hello || type > MessageType.ShmReady) throw malformed(`type ${type}`)
  if (buf.length < length) return null
  switch (type) {
    case MessageType.Hello: {
      const family = buf.readUInt8(12)
      if (family !== 4 && family !== 6) throw malformed(`family ${family}`)
      return {
        bytes: length,
        message: {
          type,
          version,
          capabilities: buf.readUInt32LE(8),
          family,
          port: buf.readUInt16LE(14),
          address: Uint8Array.prototype.slice.call(buf, 16, family === 4 ? 20 : 32)
        }
      }
    }
    case MessageType.ShmSetup:
      return {
        bytes: length,
        message: {
          type,
          version,
          c2sBytes: buf.readUInt32LE(8),
          s2cBytes: buf.readUInt32LE(12),
          doorbellId: readDoorbellId(buf, 16),
          readyNodes: buf.readUInt32LE(24)
        }
      }
    case MessageType.ShmReady:
      return { bytes: length, message: { type, version, doorbellId: readDoorbellId(buf, 8), readyNodes: buf.readUInt32LE(16) } }
    case MessageType.Accept:
      return { bytes: length, message: { type, version, transport: buf.readUInt8(8), clientPort: buf.readUInt16LE(10), flags: buf.readUInt32LE(12) } }
    default: {
      const n = buf.readUInt16LE(10)
      if (REJECT_HEAD_BYTES + n !== length) throw malformed('REJECT text length')
      return {
        bytes: length,
        message: { type: MessageType.Reject, version, reason: buf.readUInt16LE(8), text: buf.toString('utf8', 12, length) }
      }
    }
  }
}
