/**
 * Rung `unix`: the verified side channel itself carries the application's bytes, on Node's own
 * pipe handle with a TCP view (docs/design.md, "Discovery"). Negotiated over the side channel
 * (lib/sidechannel/), which shm shares: one attempt may offer both. The rung is an endpoint
 * factory: the side channel's connector attempts, skips and listens for it.
 */
import { native, nativeMissingReason } from '../native'
import * as wire from '../wire'
import { channel, Channel, Capabilities, NO_CAPABILITIES, Rung, KernelHandle, ResetFlag } from '../contract'
import { sideChannel } from '../sidechannel/connector'
import { detachHandle } from '../handles'
import { HandshakeError } from '../errors'

/**
 * Socket buffers asked for on the unix rung, per direction: about what loopback TCP autotunes to,
 * so that patterns that work over TCP (an echo nobody reads until it has written 1 MB) work here
 * too. Granted in full with CAP_NET_ADMIN; otherwise capped by net.core.{w,r}mem_max.
 */
export const UNIX_SOCKET_BUFFER_BYTES = 4 << 20

/** A UNIX stream socket standing in for TCP. */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, pipeStandIn: true })

/**
 * This end's reset flag over `fd` (an eventfd the server made and passed with ACCEPT), or null
 * without one (a server that predates it).
 */
function resetFlag (fd: number | undefined): ResetFlag | null {
  if (fd === undefined) return null
  const n = native!
  let open = true
  let raised = false
  return {
    raise () { if (open) n.eventFlagRaise(fd) },
    raised () {
      if (!raised && open) raised = n.eventFlagTake(fd) === 1
      return raised
    },
    close () {
      if (open) n.closeFd(fd)
      open = false
    }
  }
}

/** The connected side channel as the connection: sized like TCP's buffers, with its reset flag. */
function pipeChannel (handle: KernelHandle, rest: Pick<Channel, 'view' | 'handshakeRead' | 'handshakeWritten'> & { acceptFds: number[] }): Channel {
  const granted = native!.growSocketBuffers(handle.fd, UNIX_SOCKET_BUFFER_BYTES)
  const { view, handshakeRead, handshakeWritten, acceptFds } = rest
  return channel({
    transport: 'unix', handle, caps: CAPS, view, handshakeRead, handshakeWritten,
    sendBufferBytes: Math.max(0, granted), resetFlag: resetFlag(acceptFds[0])
  })
}

export const unix: Rung<'unix'> = {
  name: 'unix',
  unixPath: true,
  tlsOnHandle: true,
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    if (process.platform !== 'linux') return { available: false, reason: 'abstract UNIX sockets need Linux' }
    return { available: true, reason: 'verified side channel on an abstract UNIX socket (same host, same uid)' }
  },
  connector: sideChannel,
  sideChannel: {
    cap: wire.CAP_UNIX,
    wireTransport: wire.TRANSPORT_UNIX,
    featureCaps: wire.CAP_UNIX_RESET,
    acceptFds: 1,
    makeAcceptFds (capabilities) {
      if ((capabilities & wire.CAP_UNIX_RESET) === 0) return []
      const fd = native!.eventFlagCreate()
      return fd >= 0 ? [fd] : [] // out of fds: a connection without a reset, as with an older client
    },
    async complete (side) {
      if (side.acceptFds.length > 0 && !native!.isEventfd(side.acceptFds[0])) {
        for (const fd of side.acceptFds) native!.closeFd(fd)
        side.probe.destroy()
        throw new HandshakeError('ACCEPT(unix) must carry an eventfd (the reset flag)')
      }
      const c = pipeChannel(side.handle, side)
      detachHandle(side.probe)
      return c
    },
    async accept (side) {
      const c = pipeChannel(side.handle, side)
      detachHandle(side.raw)
      return c
    }
  }
}
