/**
 * The shm rung's set-up over the verified side channel (docs/wire-protocol.md, SHM_SETUP /
 * SHM_READY): the client makes a sealed memfd for two SPSC byte rings (one per direction) and
 * hands it to the server with its loop's doorbell and ready list (SCM_RIGHTS); the server answers
 * with its own loop's. Each end closes the memfd once mapped and keeps one copy of a peer loop's
 * doorbell (and one mapping of its ready list) however many connections share it, so a
 * connection end holds one fd of its own: the side-channel socket, which stays open, silent, as
 * the liveness signal. Both ends end with a
 * native ShmEndpoint (csrc/shm/endpoint.h) that the stream core (lib/stream/endpoint-stream.ts)
 * drives.
 *
 * Out of fds (EMFILE/ENFILE at any step, or fewer than FD_HEADROOM left before one starts), either
 * end gives up with ServerBusyError (REJECT Busy on the wire): the chain moves on to the next
 * rung (TCP) and caches nothing, as the shortage passes.
 */
import { native } from '../../native'
import { errnoError, ERRNO, AttemptTimeoutError, HandshakeError, RejectedError, ServerBusyError } from '../../errors'
import * as wire from '../../wire'
import { underFdPressure } from '../fd-pressure'
import { takeSegment } from './pool'
import { newShmEndpoint, ShmEndpoint } from './endpoint'
import { readFrames } from '../../sidechannel/framed-read'

const { EPROTO } = ERRNO

/** `err` as the chain should see it: an fd shortage becomes ServerBusyError (fall back, cache nothing). */
function fdShortage (err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException)?.code
  if (code === 'EMFILE' || code === 'ENFILE') {
    return new ServerBusyError(wire.RejectReason.Busy, `shm set-up ran out of fds (${code}): ${(err as Error).message}`)
  }
  return err
}

/**
 * Reads exactly one side-channel message (with at most maxFds fds) from a raw fd, with a timeout:
 * one recvmsg holds it whole (the peer sends it in one sendmsg), anything else is malformed.
 */
function readMessage (fd: number, timeoutMs: number, maxFds: number, signal?: AbortSignal): Promise<{ message: wire.Message, fds: number[] }> {
  return new Promise((resolve, reject) => {
    readFrames(fd, { maxFds, deadline: Date.now() + timeoutMs, aborted: signal && (() => signal.aborted) }, read => {
      const parsed = wire.decode(read.acc)
      if (!parsed || parsed.bytes !== read.acc.length) throw new HandshakeError('shm setup: truncated message')
      resolve({ message: parsed.message, fds: read.fds })
      return true
    }, (why, read) => {
      for (const f of read.fds) native!.closeFd(f)
      if (why instanceof Error) return reject(why)
      if (why === 'timeout') return reject(new AttemptTimeoutError(`shm setup took longer than ${timeoutMs} ms`))
      if (why === 'closed') return reject(new HandshakeError('shm setup: side channel closed'))
      if (why === 'aborted') return reject(signal!.reason) // the socket's destroy, or the chain's timer
      // MSG_CTRUNC: the fds did not fit, often because this process has no fd numbers left.
      if (why === EPROTO && underFdPressure()) return reject(new ServerBusyError(wire.RejectReason.Busy, 'shm setup: fds truncated (EMFILE)'))
      reject(new HandshakeError(`shm setup: ${errnoError(why, 'recvmsg').message}`))
    })
  })
}

/** A client's segment, made before SHM_SETUP goes out: its memfd and this loop's doorbell and ready list. */
export interface ClientSegment {
  memfd: number
  ringBytes: number
  /** SHM_SETUP for it (the fds to send with it: memfd, the doorbell, the ready list). */
  bytes: Buffer
  fds: number[]
}

/**
 * The segment (made ahead, ./pool.ts, or now) and its SHM_SETUP. Throws (errno codes) when it
 * cannot; nothing is left open.
 */
export function clientSegment (ringBytes: number): ClientSegment {
  const bell = native!.shmLoopDoorbell()
  const memfd = takeSegment(ringBytes)
  return {
    memfd,
    ringBytes,
    bytes: wire.encodeShmSetup(ringBytes, ringBytes, bell.id, bell.readyNodes),
    fds: [memfd, bell.fd, bell.readyFd]
  }
}

/**
 * Client side, once the server's answer to SHM_SETUP is in (`message`, with `fds`): SHM_READY
 * makes the connected endpoint; REJECT (ServerBusyError when the server is out of fds) or
 * anything else throws. Owns `fd` (the side channel), the segment's memfd and `fds` from the
 * call on: they end in the endpoint or are closed.
 */
export function clientFinish (fd: number, seg: ClientSegment, message: wire.Message, fds: number[]): ShmEndpoint {
  const n = native!
  let memfd = seg.memfd
  try {
    if (message.type === wire.MessageType.Reject) {
      const Err = message.reason === wire.RejectReason.Busy ? ServerBusyError : RejectedError
      throw new Err(message.reason, `server refused the shm segment: ${message.text}`)
    }
    if (message.type !== wire.MessageType.ShmReady) throw new HandshakeError(`expected SHM_READY, got type ${message.type}`)
    if (fds.length !== wire.SHM_READY_FDS || !n.isEventfd(fds[0])) {
      throw new HandshakeError('SHM_READY must carry the server loop\'s doorbell (an eventfd) and ready list')
    }
    // The endpoint owns the memfd, the doorbell, the ready list and the side channel from here
    // on, also when it throws (it checks the ready list: a memfd sealed, of its announced size).
    const [doorbell, ready] = fds
    const args = [memfd, doorbell, ready, fd] as const
    memfd = fd = -1
    fds = []
    return newShmEndpoint(args[0], seg.ringBytes, seg.ringBytes, true, args[1], message.doorbellId, args[2], message.readyNodes, args[3])
  } catch (err) {
    for (const f of [memfd, fd, ...fds]) if (f >= 0) n.closeFd(f)
    throw fdShortage(err)
  }
}

/**
 * Client side, after ACCEPT(shm) on the side channel `fd` (a dup the caller hands over):
 * creates and sends the segment with this loop's doorbell, waits for SHM_READY and the server
 * loop's doorbell. Resolves with the connected endpoint; rejects (closing everything) with
 * ERR_FASTSOCK_REJECTED (ServerBusyError when either end is out of fds) / _HANDSHAKE /
 * _TRANSPORT_TIMEOUT, or `signal`'s reason once it aborts (ConnectRequest.signal).
 */
export async function clientSetup (fd: number, ringBytes: number, timeoutMs: number, signal?: AbortSignal): Promise<ShmEndpoint> {
  const n = native!
  let seg: ClientSegment | null = null
  try {
    seg = clientSegment(ringBytes)
    const sent = n.sendFds(fd, seg.bytes, seg.fds)
    if (sent < 0) throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
  } catch (err) {
    if (seg) n.closeFd(seg.memfd)
    n.closeFd(fd)
    throw fdShortage(err)
  }
  let got
  try {
    got = await readMessage(fd, timeoutMs, wire.SHM_READY_FDS, signal)
  } catch (err) {
    n.closeFd(seg.memfd)
    n.closeFd(fd)
    throw fdShortage(err)
  }
  return clientFinish(fd, seg, got.message, got.fds)
}

/** A refused SHM_SETUP: what to tell the client, and the error the server's side rejects with. */
class Refusal extends Error {
  constructor (readonly reason: wire.RejectReason, readonly text: string) { super(text) }
  /** The error the server's set-up rejects with. */
  get error (): Error {
    return this.reason === wire.RejectReason.Busy
      ? new ServerBusyError(this.reason, `shm setup refused: ${this.text}`)
      : new HandshakeError(`shm setup refused: ${this.text}`)
  }
}

/**
 * Server side, with SHM_SETUP in (`m`, with `fds`, owned from the call on): validates it (a
 * hostile client is refused), maps the segment into an endpoint whose liveness fd is `side` and
 * returns it with SHM_READY and this loop's doorbell to send. Throws a Refusal (`fds` closed,
 * `side` still the caller's) or, when the endpoint refused the segment, a HandshakeError (`side`
 * closed with it).
 */
function serverEndpoint (side: number, m: wire.Message, fds: number[]): { ep: ShmEndpoint, ready: Buffer, readyFds: number[] } {
  const n = native!
  try {
    if (m.type !== wire.MessageType.ShmSetup) throw new Refusal(wire.RejectReason.Malformed, `expected SHM_SETUP, got type ${m.type}`)
    if (m.version !== wire.PROTOCOL_VERSION) throw new Refusal(wire.RejectReason.Malformed, `protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
    if (fds.length !== wire.SHM_SETUP_FDS) throw new Refusal(wire.RejectReason.Malformed, `SHM_SETUP carries ${fds.length} fds, not ${wire.SHM_SETUP_FDS}`)
    if (!n.isEventfd(fds[1])) throw new Refusal(wire.RejectReason.Malformed, 'the doorbell must be an eventfd')
    let bell: { fd: number, id: string, readyFd: number, readyNodes: number }
    try {
      bell = n.shmLoopDoorbell()
    } catch (err) {
      throw new Refusal(wire.RejectReason.Busy, `the server is out of fds (${(err as Error).message})`)
    }
    const [memfd, clientDoorbell, clientReady] = fds
    fds = [] // the endpoint constructor owns them and `side` now, also when it throws
    let ep: ShmEndpoint
    try {
      ep = newShmEndpoint(memfd, m.c2sBytes, m.s2cBytes, false, clientDoorbell, m.doorbellId, clientReady, m.readyNodes, side)
    } catch (err) {
      throw new HandshakeError(`shm setup refused: ${(err as Error).message}`, { cause: err })
    }
    return { ep, ready: wire.encodeShmReady(bell.id, bell.readyNodes), readyFds: [bell.fd, bell.readyFd] }
  } finally {
    for (const f of fds) n.closeFd(f)
  }
}

/**
 * Server side, after ACCEPT(shm) went out on the side channel `fd` (a dup the caller hands
 * over): receives SHM_SETUP with its fds, validates them (a hostile client gets REJECT and the
 * server carries on), answers SHM_READY with this loop's doorbell. Resolves with the endpoint.
 * Out of fds it answers REJECT Busy (the client falls back to TCP) and rejects with
 * ServerBusyError.
 */
export async function serverSetup (fd: number, timeoutMs: number): Promise<ShmEndpoint> {
  const n = native!
  let got: { message: wire.Message, fds: number[] }
  try {
    if (underFdPressure()) throw new Refusal(wire.RejectReason.Busy, 'the server is out of fds')
    try {
      got = await readMessage(fd, timeoutMs, wire.SHM_SETUP_FDS)
    } catch (err) {
      if (err instanceof ServerBusyError) throw new Refusal(wire.RejectReason.Busy, 'the server is out of fds')
      throw err
    }
  } catch (err) {
    if (err instanceof Refusal) n.sendFds(fd, wire.encodeReject(err.reason, err.text), [])
    n.closeFd(fd)
    throw fdShortage(err instanceof Refusal ? err.error : err)
  }
  return answerSetup(fd, fd, Buffer.alloc(0), got.message, got.fds)
}

/**
 * Server side, a SHM_SETUP pipelined behind HELLO (docs/wire-protocol.md, "Pipelined
 * SHM_SETUP"): `setup` and `fds` arrived with HELLO; `side` is a dup of the side channel (owned
 * from the call on: the endpoint's liveness fd), `reply` the side channel itself (the caller's:
 * not closed here). Sends `accept` and then SHM_READY, or REJECT, in one sendmsg on `reply`.
 */
export function serverEarlySetup (side: number, reply: number, accept: Buffer, setup: Buffer, fds: number[]): ShmEndpoint {
  let m: wire.Message
  try {
    if (underFdPressure()) throw new Refusal(wire.RejectReason.Busy, 'the server is out of fds')
    const parsed = wire.decode(setup)
    if (!parsed || parsed.bytes !== setup.length) throw new Refusal(wire.RejectReason.Malformed, 'truncated SHM_SETUP')
    m = parsed.message
  } catch (err) {
    for (const f of fds) native!.closeFd(f)
    native!.closeFd(side)
    const refusal = err instanceof Refusal ? err : new Refusal(wire.RejectReason.Malformed, (err as Error).message)
    native!.sendFds(reply, Buffer.concat([accept, wire.encodeReject(refusal.reason, refusal.text)]), [])
    throw refusal.error
  }
  return answerSetup(side, reply, accept, m, fds)
}

/**
 * Validates SHM_SETUP and answers it on `reply` (after `prefix`: ACCEPT when pipelined): SHM_READY
 * with the endpoint made, or REJECT. `side` (owned) becomes the endpoint's liveness fd or is
 * closed; `fds` are owned. Rejects as serverSetup does.
 */
function answerSetup (side: number, reply: number, prefix: Buffer, m: wire.Message, fds: number[]): ShmEndpoint {
  const n = native!
  const say = (bytes: Buffer, withFds: number[]): number => n.sendFds(reply, prefix.length ? Buffer.concat([prefix, bytes]) : bytes, withFds)
  let made
  try {
    made = serverEndpoint(side, m, fds)
  } catch (err) {
    if (err instanceof Refusal) {
      say(wire.encodeReject(err.reason, err.text), [])
      n.closeFd(side)
      throw fdShortage(err.error)
    }
    // The endpoint refused the segment (and closed `side`): a separate reply channel can still
    // say so; otherwise the client sees the side channel close.
    if (reply !== side) say(wire.encodeReject(wire.RejectReason.Malformed, (err as Error).message), [])
    throw fdShortage(err)
  }
  const sent = say(made.ready, made.readyFds)
  if (sent < 0) {
    made.ep.close(true)
    throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
  }
  return made.ep
}
