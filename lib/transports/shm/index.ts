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
import { closeServerEnd } from '../../sidechannel/listener'
import { offerEarly } from '../../sidechannel/early'
import { step } from '../../sidechannel/steps'
import { clientSetup, serverSetup, eventRelay, clientSegment, clientFinish, serverEarlySetup } from './setup'

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
        closeServerEnd(side)
        throw errnoError(fd, 'dup')
      }
      if (fd < 0) {
        // Out of fds: REJECT Busy, so that the client falls back without caching a failure.
        side.raw.end(wire.encodeReject(wire.RejectReason.Busy, 'the server is out of fds'))
        throw new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message)
      }
      closeServerEnd(side)
      const relay = eventRelay()
      const ep = await serverSetup(fd, side.handshakeTimeoutMs, relay.emit)
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    }
  },
  listen: listenSideChannel
}

// SHM_SETUP pipelined behind HELLO (docs/wire-protocol.md, "Pipelined SHM_SETUP").
offerEarly(shm.sideChannel!, {
  cap: wire.CAP_SHM_EARLY,
  bytes: wire.SHM_SETUP_BYTES,
  fds: wire.SHM_SETUP_FDS,
  replyFds: wire.SHM_READY_FDS,
  prepare (ringBytes) {
    const seg = clientSegment(ringBytes)
    let owned = true
    return {
      bytes: seg.bytes,
      fds: seg.fds,
      release () {
        if (owned) native!.closeFd(seg.memfd)
        owned = false
      },
      async complete (fd, reply, replyFds, view) {
        owned = false // clientFinish owns the memfd now
        const relay = eventRelay()
        const ep = clientFinish(fd, seg, reply, replyFds, relay.emit)
        return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view, caps: CAPS })
      }
    }
  },
  async accept (side, accept, setup, fds) {
    // The side channel leaves libuv: a dup stays as liveness; ACCEPT and the reply go out first.
    const fd = native!.dupFd(side.handle.fd)
    if (fd < 0) {
      for (const f of fds) native!.closeFd(f)
      const busy = outOfFds(fd)
      const reject = wire.encodeReject(busy ? wire.RejectReason.Busy : wire.RejectReason.Malformed, `the server could not keep the side channel: ${errnoError(fd, 'dup').message}`)
      native!.sendFds(side.handle.fd, Buffer.concat([accept, reject]), [])
      closeServerEnd(side)
      throw busy ? new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message) : errnoError(fd, 'dup')
    }
    const relay = eventRelay()
    try {
      const ep = serverEarlySetup(fd, side.handle.fd, accept, setup, fds, relay.emit)
      step('server', 'ACCEPT+SHM_READY written')
      return channel({ transport: 'shm', endpoint: ep, bindEvents: relay.bind, view: side.view, caps: CAPS })
    } finally {
      closeServerEnd(side)
    }
  }
})
