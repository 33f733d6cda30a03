/**
 * The shm rung's set-up over the verified side channel (docs/wire-protocol.md, SHM_SETUP /
 * SHM_READY): the client makes a sealed memfd for two SPSC byte rings (one per direction) and
 * hands it to the server with its loop's doorbell (SCM_RIGHTS); the server answers with its own
 * loop's doorbell. Each end closes the memfd once mapped and keeps one copy of a peer loop's
 * doorbell however many connections share it, so a connection end holds one fd of its own: the
 * side-channel socket, which stays open, silent, as the liveness signal. Both ends end with a
 * native ShmEndpoint (csrc/shm/endpoint.h) that the stream core (lib/stream/endpoint-stream.ts)
 * drives.
 *
 * Out of fds (EMFILE/ENFILE at any step, or fewer than FD_HEADROOM left before one starts), either
 * end gives up with ServerBusyError (REJECT Busy on the wire): the chain moves on to the next
 * rung (TCP) and caches nothing, as the shortage passes.
 */
import { native, ShmEndpointNative } from '../../native'
import { errnoError, AttemptTimeoutError, HandshakeError, RejectedError, ServerBusyError } from '../../errors'
import * as wire from '../../wire'
import { underFdPressure } from '../fd-pressure'

const EAGAIN = -11
const EPROTO = -71
const ETIMEDOUT = -110


/** `err` as the chain should see it: an fd shortage becomes ServerBusyError (fall back, cache nothing). */
function fdShortage (err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException)?.code
  if (code === 'EMFILE' || code === 'ENFILE') {
    return new ServerBusyError(wire.RejectReason.Busy, `shm set-up ran out of fds (${code}): ${(err as Error).message}`)
  }
  return err
}

/**
 * The endpoint's `onevent` before its stream core exists: the endpoint is made during the
 * set-up, the stream (which needs the socket) only when it is adopted. `emit` goes to the
 * native side; `bind(fn)` routes it to the connection once there is one.
 */
export function eventRelay (): { emit: () => void, bind: (fn: () => void) => void } {
  let target: (() => void) | null = null
  return { emit: () => target?.(), bind: fn => { target = fn } }
}

/** Reads exactly one side-channel message (with at most maxFds fds) from a raw fd, with a timeout. */
function readMessage (fd: number, timeoutMs: number, maxFds: number): Promise<{ message: wire.Message, fds: number[] }> {
  return new Promise((resolve, reject) => {
    native!.waitReadable(fd, timeoutMs, status => {
      if (status === ETIMEDOUT) {
        return reject(new AttemptTimeoutError(`shm setup took longer than ${timeoutMs} ms`))
      }
      const r = native!.recvFds(fd, wire.MAX_MESSAGE_BYTES, maxFds)
      if (typeof r === 'number') {
        if (r === EAGAIN) return reject(new HandshakeError('shm setup: spurious wake-up'))
        // MSG_CTRUNC: the fds did not fit, often because this process has no fd numbers left.
        if (r === EPROTO && underFdPressure()) return reject(new ServerBusyError(wire.RejectReason.Busy, 'shm setup: fds truncated (EMFILE)'))
        return reject(new HandshakeError(`shm setup: ${errnoError(r, 'recvmsg').message}`))
      }
      const closeFds = (): void => { for (const f of r.fds) native!.closeFd(f) }
      if (r.bytes.length === 0) {
        closeFds()
        return reject(new HandshakeError('shm setup: side channel closed'))
      }
      try {
        const parsed = wire.decode(r.bytes)
        if (!parsed || parsed.bytes !== r.bytes.length) throw new HandshakeError('shm setup: truncated message')
        resolve({ message: parsed.message, fds: r.fds })
      } catch (err) {
        closeFds()
        reject(err)
      }
    })
  })
}

/**
 * Client side, after ACCEPT(shm) on the side channel `fd` (a dup the caller hands over):
 * creates and sends the segment with this loop's doorbell, waits for SHM_READY and the server
 * loop's doorbell. Resolves with the connected endpoint; rejects (closing everything) with
 * ERR_FASTSOCK_REJECTED (ServerBusyError when either end is out of fds) / _HANDSHAKE /
 * _TRANSPORT_TIMEOUT.
 */
export async function clientSetup (fd: number, ringBytes: number, timeoutMs: number,
  onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  let memfd = -1
  let fds: number[] = []
  try {
    const bell = n.shmLoopDoorbell()
    memfd = n.shmCreateSegment(ringBytes, ringBytes).memfd
    const sent = n.sendFds(fd, wire.encodeShmSetup(ringBytes, ringBytes, bell.id), [memfd, bell.fd])
    if (sent < 0) throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
    const got = await readMessage(fd, timeoutMs, wire.SHM_READY_FDS)
    fds = got.fds
    const message = got.message
    if (message.type === wire.MessageType.Reject) {
      const Err = message.reason === wire.RejectReason.Busy ? ServerBusyError : RejectedError
      throw new Err(message.reason, `server refused the shm segment: ${message.text}`)
    }
    if (message.type !== wire.MessageType.ShmReady) throw new HandshakeError(`expected SHM_READY, got type ${message.type}`)
    if (fds.length !== wire.SHM_READY_FDS || !n.isEventfd(fds[0])) throw new HandshakeError('SHM_READY must carry the server loop\'s doorbell (an eventfd)')
    // The endpoint owns the memfd, the doorbell and the side channel from here on, also when it throws.
    const [doorbell] = fds
    const args = [memfd, doorbell, fd] as const
    memfd = fd = -1
    fds = []
    return new n.ShmEndpoint(args[0], ringBytes, ringBytes, true, args[1], message.doorbellId, args[2], onevent)
  } catch (err) {
    for (const f of [memfd, fd, ...fds]) if (f >= 0) n.closeFd(f)
    throw fdShortage(err)
  }
}

/**
 * Server side, after ACCEPT(shm) went out on the side channel `fd` (a dup the caller hands
 * over): receives SHM_SETUP with its fds, validates them (a hostile client gets REJECT and the
 * server carries on), answers SHM_READY with this loop's doorbell. Resolves with the endpoint.
 * Out of fds it answers REJECT Busy (the client falls back to TCP) and rejects with
 * ServerBusyError.
 */
export async function serverSetup (fd: number, timeoutMs: number, onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  let fds: number[] = []
  const refuse = (text: string, reason = wire.RejectReason.Malformed): never => {
    n.sendFds(fd, wire.encodeReject(reason, text), [])
    if (reason === wire.RejectReason.Busy) throw new ServerBusyError(reason, `shm setup refused: ${text}`)
    throw new HandshakeError(`shm setup refused: ${text}`)
  }
  try {
    if (underFdPressure()) refuse('the server is out of fds', wire.RejectReason.Busy)
    let got
    try {
      got = await readMessage(fd, timeoutMs, wire.SHM_SETUP_FDS)
    } catch (err) {
      if (err instanceof ServerBusyError) refuse('the server is out of fds', wire.RejectReason.Busy)
      throw err
    }
    fds = got.fds
    const m = got.message
    if (m.type !== wire.MessageType.ShmSetup) refuse(`expected SHM_SETUP, got type ${m.type}`)
    if (m.version !== wire.PROTOCOL_VERSION) refuse(`protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
    const setup = m as wire.ShmSetup
    if (fds.length !== wire.SHM_SETUP_FDS) refuse(`SHM_SETUP carries ${fds.length} fds, not ${wire.SHM_SETUP_FDS}`)
    if (!n.isEventfd(fds[1])) refuse('the doorbell must be an eventfd')
    let bell: { fd: number, id: string }
    try {
      bell = n.shmLoopDoorbell()
    } catch (err) {
      refuse(`the server is out of fds (${(err as Error).message})`, wire.RejectReason.Busy)
    }
    const [memfd, clientDoorbell] = fds
    fds = [] // the endpoint constructor owns them now, also when it throws
    const side = fd // the endpoint's liveness fd; SHM_READY still goes out on it first
    let ep: ShmEndpointNative
    try {
      ep = new n.ShmEndpoint(memfd, setup.c2sBytes, setup.s2cBytes, false, clientDoorbell, setup.doorbellId, side, onevent)
    } catch (err) {
      // The constructor closed `side` too: nothing more can be said to the client (it sees
      // the side channel close).
      fd = -1
      throw new HandshakeError(`shm setup refused: ${(err as Error).message}`, { cause: err })
    }
    fd = -1
    const sent = n.sendFds(side, wire.encodeShmReady(bell!.id), [bell!.fd])
    if (sent < 0) {
      ep.close(true)
      throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
    }
    return ep
  } catch (err) {
    for (const f of fds) n.closeFd(f)
    if (fd >= 0) n.closeFd(fd)
    throw fdShortage(err)
  }
}
