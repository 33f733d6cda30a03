/**
 * The shm rung's set-up over the verified side channel (docs/wire-protocol.md, SHM_SETUP /
 * SHM_READY): the client makes a sealed memfd for two SPSC byte rings (one per direction) and two
 * eventfd doorbells, and hands them to the server with SCM_RIGHTS; the side-channel socket then
 * stays open, silent, as the liveness signal. Both ends end with a native ShmEndpoint
 * (csrc/shm/endpoint.h) that the stream core (lib/stream/endpoint-stream.ts) drives.
 */
import { native, ShmEndpointNative } from '../../native'
import { errnoError, AttemptTimeoutError, HandshakeError, RejectedError } from '../../errors'
import * as wire from '../../wire'

const EAGAIN = -11
const ETIMEDOUT = -110

/**
 * The endpoint's `onevent` before its stream core exists: the endpoint is made during the
 * set-up, the stream (which needs the socket) only when it is adopted. `emit` goes to the
 * native side; `bind(fn)` routes it to the connection once there is one.
 */
export function eventRelay (): { emit: () => void, bind: (fn: () => void) => void } {
  let target: (() => void) | null = null
  return { emit: () => target?.(), bind: fn => { target = fn } }
}

/** Reads exactly one side-channel message (no fds expected) from a raw fd, with a timeout. */
function readMessage (fd: number, timeoutMs: number, maxFds: number): Promise<{ message: wire.Message, fds: number[] }> {
  return new Promise((resolve, reject) => {
    native!.waitReadable(fd, timeoutMs, status => {
      if (status === ETIMEDOUT) {
        return reject(new AttemptTimeoutError(`shm setup took longer than ${timeoutMs} ms`))
      }
      const r = native!.recvFds(fd, wire.MAX_MESSAGE_BYTES, maxFds)
      if (typeof r === 'number') {
        if (r === EAGAIN) return reject(new HandshakeError('shm setup: spurious wake-up'))
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
 * creates and sends the segment, waits for SHM_READY. Resolves with the connected endpoint;
 * rejects (closing everything) with ERR_FASTSOCK_REJECTED / _HANDSHAKE / _TRANSPORT_TIMEOUT.
 */
export async function clientSetup (fd: number, ringBytes: number, timeoutMs: number,
  onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  const fd2 = fd
  let seg: { memfd: number, clientDoorbell: number, serverDoorbell: number } | null = null
  try {
    seg = n.shmCreateSegment(ringBytes, ringBytes)
    const sent = n.sendFds(fd, wire.encodeShmSetup(ringBytes, ringBytes), [seg.memfd, seg.clientDoorbell, seg.serverDoorbell])
    if (sent < 0) throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
    const { message } = await readMessage(fd, timeoutMs, 0)
    if (message.type === wire.MessageType.Reject) {
      throw new RejectedError(message.reason, `server refused the shm segment: ${message.text}`)
    }
    if (message.type !== wire.MessageType.ShmReady) throw new HandshakeError(`expected SHM_READY, got type ${message.type}`)
    // The endpoint owns memfd, both doorbells and the side channel from here on.
    const { memfd, clientDoorbell, serverDoorbell } = seg
    seg = null
    fd = -1 // owned (and on failure closed) by the endpoint constructor
    return new n.ShmEndpoint(memfd, ringBytes, ringBytes, true, clientDoorbell, serverDoorbell, fd2, onevent)
  } catch (err) {
    if (seg) for (const f of [seg.memfd, seg.clientDoorbell, seg.serverDoorbell]) n.closeFd(f)
    if (fd >= 0) n.closeFd(fd)
    throw err
  }
}

/**
 * Server side, after ACCEPT(shm) went out on the side channel `fd` (a dup the caller hands
 * over): receives SHM_SETUP with its fds, validates them (a hostile client gets REJECT and the
 * server carries on), answers SHM_READY. Resolves with the endpoint.
 */
export async function serverSetup (fd: number, timeoutMs: number, onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  let fds: number[] = []
  const refuse = (text: string): never => {
    n.sendFds(fd, wire.encodeReject(wire.RejectReason.Malformed, text), [])
    throw new HandshakeError(`shm setup refused: ${text}`)
  }
  try {
    const got = await readMessage(fd, timeoutMs, wire.SHM_SETUP_FDS)
    fds = got.fds
    const m = got.message
    if (m.type !== wire.MessageType.ShmSetup) refuse(`expected SHM_SETUP, got type ${m.type}`)
    if (m.version !== wire.PROTOCOL_VERSION) refuse(`protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
    const setup = m as wire.ShmSetup
    if (fds.length !== wire.SHM_SETUP_FDS) refuse(`SHM_SETUP carries ${fds.length} fds, not ${wire.SHM_SETUP_FDS}`)
    if (!n.isEventfd(fds[1]) || !n.isEventfd(fds[2])) refuse('doorbells must be eventfds')
    let ep: ShmEndpointNative
    const [memfd, clientDoorbell, serverDoorbell] = fds
    fds = [] // the endpoint constructor owns them now, also when it throws
    const side = n.dupFd(fd) // the endpoint's liveness fd; `fd` stays ours to answer on
    if (side < 0) {
      for (const f of [memfd, clientDoorbell, serverDoorbell]) n.closeFd(f)
      throw errnoError(side, 'dup')
    }
    try {
      ep = new n.ShmEndpoint(memfd, setup.c2sBytes, setup.s2cBytes, false, serverDoorbell, clientDoorbell, side, onevent)
    } catch (err) {
      refuse((err as Error).message)
    }
    const sent = n.sendFds(fd, wire.encodeShmReady(), [])
    n.closeFd(fd)
    fd = -1
    if (sent < 0) {
      ep!.close(true)
      throw new HandshakeError(`shm setup: ${errnoError(sent, 'sendmsg').message}`)
    }
    return ep!
  } catch (err) {
    for (const f of fds) n.closeFd(f)
    if (fd >= 0) n.closeFd(fd)
    throw err
  }
}
