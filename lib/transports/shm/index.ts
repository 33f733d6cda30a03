/**
 * Rung `shm`: two single-producer/single-consumer byte rings in a shared memfd, one per
 * direction, negotiated over the verified side channel (lib/sidechannel/, shared with unix) and
 * set up with SHM_SETUP / SHM_READY (./setup.ts). The rung is an endpoint factory: the side
 * channel's connector (lib/sidechannel/connector.ts) attempts, skips and listens for it. No kernel socket in the data path: the socket
 * has no `_handle`, the stream core drives the endpoint. Each event loop has one doorbell
 * eventfd shared by its connections; a doorbell is rung only when the other side said it sleeps
 * (csrc/shm/ring.h). Near the fd limit the chain declines it (lib/transports/fd-pressure.ts), and a set-up that runs out
 * of fds falls back to the next rung (./setup.ts).
 */
import { native, nativeMissingReason } from '../../native'
import { errnoError, ERRNO, ServerBusyError } from '../../errors'
import * as wire from '../../wire'
import { channel, Capabilities, Channel, NO_CAPABILITIES, Rung, TcpView } from '../../contract'
import { sideChannel } from '../../sidechannel/connector'
import { step } from '../../debug'
import { clientSetup, serverSetup, clientSegment, clientFinish, serverEarlySetup } from './setup'
import type { ShmEndpoint } from './endpoint'

/** -EMFILE or -ENFILE. */
const outOfFds = (negErrno: number): boolean => negErrno === ERRNO.EMFILE || negErrno === ERRNO.ENFILE

/**
 * Busy-polled by its loop's progress engine by default; syncIo and zeroCopyLoan come from the
 * endpoint's members (contract.ts endpointCaps).
 */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, adaptivePolling: true })

/** The Channel of a set-up endpoint, on either end. */
function shmChannel (ep: ShmEndpoint, view: TcpView): Channel {
  return channel({ transport: 'shm', endpoint: ep, view, caps: CAPS })
}

export const shm: Rung<'shm'> = {
  name: 'shm',
  handleless: true,
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    if (process.platform !== 'linux' || typeof native.ShmEndpoint !== 'function') return { available: false, reason: 'needs Linux (memfd, eventfd)' }
    return { available: true, reason: 'shared-memory rings (memfd + eventfd doorbells) negotiated over the side channel' }
  },
  connector: sideChannel,
  sideChannel: {
    cap: wire.CAP_SHM,
    wireTransport: wire.TRANSPORT_SHM,
    async complete (side) {
      // The side channel leaves libuv: keep a dup for the set-up and as the liveness signal.
      const fd = native!.dupFd(side.handle.fd)
      side.probe.destroy() // closes the original fd; the dup keeps the socket
      if (fd < 0) throw outOfFds(fd) ? new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message) : errnoError(fd, 'dup')
      return shmChannel(await clientSetup(fd, side.shmRingBytes, side.remainingMs, side.signal), side.view)
    },
    async accept (side) {
      // The side channel leaves libuv: a dup carries SHM_SETUP, then stays as liveness.
      const fd = native!.dupFd(side.handle.fd)
      if (fd < 0 && !outOfFds(fd)) {
        side.close()
        throw errnoError(fd, 'dup')
      }
      if (fd < 0) {
        // Out of fds: REJECT Busy, so that the client falls back without caching a failure.
        side.raw.end(wire.encodeReject(wire.RejectReason.Busy, 'the server is out of fds'))
        throw new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message)
      }
      side.close()
      return shmChannel(await serverSetup(fd, side.handshakeTimeoutMs), side.view)
    },
    // SHM_SETUP pipelined behind HELLO (docs/wire-protocol.md, "Pipelined SHM_SETUP").
    early: {
      cap: wire.CAP_SHM_EARLY,
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
            return shmChannel(clientFinish(fd, seg, reply as wire.Message, replyFds), view)
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
          side.close()
          throw busy ? new ServerBusyError(wire.RejectReason.Busy, errnoError(fd, 'dup').message) : errnoError(fd, 'dup')
        }
        try {
          const ep = serverEarlySetup(fd, side.handle.fd, accept, setup, fds)
          step('server', 'ACCEPT+SHM_READY written')
          return shmChannel(ep, side.view)
        } finally {
          side.close()
        }
      }
    }
  }
}
