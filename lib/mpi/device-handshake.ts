/**
 * The device handshake's bytes and checks (docs/mpi.md, "Handshake"; lib/mpi/device-wire.ts has
 * the layout): HELLO and REPLY as the device writes them, the REPLY's proof, the same-user rule,
 * and reading a handshake message exactly. The device (device.ts) decides what to accept.
 */
import type { Socket } from '../index'
import { MAGIC, VERSION, HELLO_BYTES, REPLY_BYTES, HELLO_NONCE, REPLY_NONCE, REPLY_PROOF, MAX_EAGER } from './device-wire'
import { NONCE_BYTES, PROOF_BYTES, myUid, newNonce, peerUid, proof, verify } from './auth'

/** HELLO of world rank `rank` (job key, eager threshold in bytes) with a fresh nonce A at HELLO_NONCE. */
export function helloOf (rank: number, jobKey: number, eagerBytes: number): Buffer {
  const hello = Buffer.alloc(HELLO_BYTES)
  hello.writeUInt32LE(MAGIC, 0)
  hello.writeUInt16LE(VERSION, 4)
  hello.writeUInt32LE(rank, 8)
  hello.writeUInt32LE(jobKey, 12)
  hello.writeUInt32LE(eagerBytes, 16)
  newNonce().copy(hello, HELLO_NONCE)
  return hello
}

/**
 * The HELLO's dialer (world rank) and eager threshold, or null when it is not a HELLO of this
 * job's (magic, version, job key), of a rank of its `size` other than `self`, with a threshold
 * of at most MAX_EAGER: such a dialer is turned away without a word (nothing to report).
 */
export function helloFrom (hello: Buffer, jobKey: number, size: number, self: number): { w: number, eager: number } | null {
  const w = hello.readUInt32LE(8)
  const eager = hello.readUInt32LE(16)
  if (hello.readUInt32LE(0) !== MAGIC || hello.readUInt16LE(4) !== VERSION || hello.readUInt32LE(12) !== jobKey ||
      w >= size || w === self || eager > MAX_EAGER) return null
  return { w, eager }
}

/** REPLY: the verdict, this side's eager threshold, nonce B and this side's proof over (A, B) under `secret`. */
export function replyOf (accept: boolean, eagerBytes: number, secret: Buffer, nonceA: Buffer, nonceB: Buffer): Buffer {
  const reply = Buffer.alloc(REPLY_BYTES)
  reply.writeUInt32LE(MAGIC, 0)
  reply.writeUInt32LE(accept ? 1 : 0, 4)
  reply.writeUInt32LE(eagerBytes, 8)
  nonceB.copy(reply, REPLY_NONCE)
  proof(secret, 'hello', 'B', nonceA, nonceB).copy(reply, REPLY_PROOF)
  return reply
}

/** Whether `reply`'s proof is the acceptor's over (nonceA, its nonce B) under `secret`. */
export function replyProves (secret: Buffer, nonceA: Uint8Array, reply: Buffer): boolean {
  return verify(secret, 'hello', 'B', nonceA, reply.subarray(REPLY_NONCE, REPLY_NONCE + NONCE_BYTES), reply.subarray(REPLY_PROOF, REPLY_PROOF + PROOF_BYTES))
}

  /**
   * Whether `sock`'s peer may be a rank of this job as far as its user goes: a same-host TCP peer
   * must run as this user (the socket's owner in /proc/net/tcp); the side channel's rungs (shm,
   * unix) checked it already (SO_PEERCRED, servers' sameUidOnly); a peer on another host cannot
   * be told (its proof of the secret is what counts).
   */
export function sameUser (sock: Socket): boolean {
    if (sock.transport !== 'tcp') return true
    const uid = peerUid(sock)
    return uid === null || uid === myUid()
  }

/**
 * Reads exactly `n` bytes from `sock` through a temporary 'data' listener, then calls
 * `done(bytes, rest)` (`rest`: what came after, or null) with the listener removed; `prefix`:
 * bytes already read from it (a previous readExactly's rest), taken first.
 */
export function readExactly (sock: Socket, n: number, done: (bytes: Buffer, rest: Buffer | null) => void, prefix: Buffer | null = null): void {
  let got: Buffer = Buffer.alloc(0)
  if (prefix !== null && prefix.length >= n) { done(prefix.subarray(0, n), prefix.length > n ? prefix.subarray(n) : null); return }
  if (prefix !== null) got = Buffer.from(prefix)
  const onData = (chunk: Buffer): void => {
    got = got.length === 0 ? chunk : Buffer.concat([got, chunk])
    if (got.length < n) return
    sock.off('data', onData)
    done(got.subarray(0, n), got.length > n ? got.subarray(n) : null)
  }
  sock.on('data', onData)
}
