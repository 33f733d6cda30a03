/**
 * Rung `shm`: two single-producer/single-consumer byte rings in a shared memfd, one per
 * direction, negotiated over the verified side channel (lib/sidechannel/, shared with unix) and
 * set up with SHM_SETUP / SHM_READY (./setup.ts). No kernel socket in the data path: the socket
 * has no `_handle`, the stream core drives the endpoint. Each event loop has one doorbell
 * eventfd shared by its connections; a doorbell is rung only when the other side said it sleeps
 * (csrc/shm/ring.h). Near the fd limit the chain declines it (lib/transports/fd-pressure.ts), and a set-up that runs out
 * of fds falls back to the next rung (./setup.ts).
 */
import { native, nativeMissingReason } from '../../native'
import { errnoError, ServerBusyError } from '../../errors'
import * as wire from '../../wire'
import { channel, Capabilities, NO_CAPABILITIES, Rung } from '../contract'
import { connectSideChannel, skipSideChannel } from '../../sidechannel/client'
import { listenSideChannel } from '../../sidechannel/serve'
import { clientSetup, serverSetup, eventRelay } from './setup'

/** -EMFILE or -ENFILE. */
const outOfFds = (negErrno: number): boolean => negErrno === -24 || negErrno === -23

/** A ring this thread may busy-poll, and loan from. */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, syncIo: true, zeroCopyLoan: true, adaptivePolling: true })

export const shm: Rung<'shm'> = {
  name: 'shm',
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    if (process.platform !== 'linux' || typeof native.ShmEndpoint !== 'function') return { available: false, reason: 'needs Linux (memfd, eventfd)' }
    return { available: true, reason: 'shared-memory rings (memfd + eventfd doorbells) negotiated over the side channel' }
  },
  skip: skipSideChannel,
  connect (req, ctx) { return connectSideChannel(shm, req, ctx) },
  sideChannel: {
    cap: wire.CAP_SHM,
    wireTransport: wire.TRANSPORT_SHM,
    carriesData: false,
    async complete (side) {
      // The side channel leaves libuv: keep a dup for the set-up and as the liveness signal.
      const fd = native!.dupFd(side.handle.fd)
      side.probe.destroy() // closes the original fd; the dup keeps the socket
      if (fd < 0) throw outOfFds(fd) ? new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message) : errnoError(fd, 'dup')
      const relay = eventRelay()
      const ep = await clientSetup(fd, side.shmRingBytes, side.remainingMs, relay.emit)
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    },
    async accept (side) {
      // The side channel leaves libuv: a dup carries SHM_SETUP, then stays as liveness.
      const fd = native!.dupFd(side.handle.fd)
      if (fd < 0 && !outOfFds(fd)) {
        side.raw.destroy()
        throw errnoError(fd, 'dup')
      }
      if (fd < 0) {
        // Out of fds: REJECT Busy, so that the client falls back without caching a failure.
        side.raw.end(wire.encodeReject(wire.RejectReason.Busy, 'the server is out of fds'))
        throw new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message)
      }
      side.raw.destroy()
      const relay = eventRelay()
      const ep = await serverSetup(fd, side.handshakeTimeoutMs, relay.emit)
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    }
  },
  listen: listenSideChannel
}
