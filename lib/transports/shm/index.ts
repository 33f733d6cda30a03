/**
 * Rung `shm`: two single-producer/single-consumer byte rings in a shared memfd, one per
 * direction, negotiated over the verified side channel (lib/sidechannel/, shared with unix) and
 * set up with SHM_SETUP / SHM_READY (./setup.ts). No kernel socket in the data path: the socket
 * has no `_handle`, the stream core drives the endpoint. Each end's doorbell eventfd is on a
 * uv_poll; a doorbell is rung only when the other side said it sleeps (csrc/shm/ring.h).
 */
import { native, nativeMissingReason } from '../../native'
import { errnoError } from '../../errors'
import * as wire from '../../wire'
import { channel, Capabilities, NO_CAPABILITIES, Rung } from '../contract'
import { connectSideChannel, skipSideChannel } from '../../sidechannel/client'
import { listenSideChannel } from '../../sidechannel/serve'
import { clientSetup, serverSetup, eventRelay } from './setup'

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
      if (fd < 0) throw errnoError(fd, 'dup')
      const relay = eventRelay()
      const ep = await clientSetup(fd, side.shmRingBytes, side.remainingMs, relay.emit)
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    },
    async accept (side) {
      // The side channel leaves libuv: a dup carries SHM_SETUP, then stays as liveness.
      const fd = native!.dupFd(side.handle.fd)
      side.raw.destroy()
      if (fd < 0) throw errnoError(fd, 'dup')
      const relay = eventRelay()
      const ep = await serverSetup(fd, side.handshakeTimeoutMs, relay.emit)
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    }
  },
  listen: listenSideChannel
}
