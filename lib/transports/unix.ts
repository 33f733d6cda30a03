/**
 * Rung `unix`: the verified side channel itself carries the application's bytes, on Node's own
 * pipe handle with a TCP view (docs/design.md, "Discovery"). Negotiated over the side channel
 * (lib/sidechannel/), which shm shares: one attempt may offer both.
 */
import { native, nativeMissingReason } from '../native'
import * as wire from '../wire'
import { channel, Channel, Capabilities, NO_CAPABILITIES, Rung, KernelHandle } from './contract'
import { connectSideChannel, skipSideChannel } from '../sidechannel/client'
import { listenSideChannel } from '../sidechannel/serve'
import { detachHandle } from '../handles'

/**
 * Socket buffers asked for on the unix rung, per direction: about what loopback TCP autotunes to,
 * so that patterns that work over TCP (an echo nobody reads until it has written 1 MB) work here
 * too. Granted in full with CAP_NET_ADMIN; otherwise capped by net.core.{w,r}mem_max.
 */
export const UNIX_SOCKET_BUFFER_BYTES = 4 << 20

/** A UNIX stream socket standing in for TCP. */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, pipeStandIn: true })

/** The connected side channel as the connection: sized like TCP's buffers. */
function pipeChannel (handle: KernelHandle, rest: Pick<Channel, 'view' | 'handshakeRead' | 'handshakeWritten'>): Channel {
  const granted = native!.growSocketBuffers(handle.fd, UNIX_SOCKET_BUFFER_BYTES)
  const { view, handshakeRead, handshakeWritten } = rest
  return channel({ transport: 'unix', handle, caps: CAPS, view, handshakeRead, handshakeWritten, sendBufferBytes: Math.max(0, granted) })
}

export const unix: Rung<'unix'> = {
  name: 'unix',
  unixPath: true,
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    if (process.platform !== 'linux') return { available: false, reason: 'abstract UNIX sockets need Linux' }
    return { available: true, reason: 'verified side channel on an abstract UNIX socket (same host, same uid)' }
  },
  skip: skipSideChannel,
  connect (req, ctx) { return connectSideChannel(unix, req, ctx) },
  sideChannel: {
    cap: wire.CAP_UNIX,
    wireTransport: wire.TRANSPORT_UNIX,
    async complete (side) {
      const c = pipeChannel(side.handle, side)
      detachHandle(side.probe)
      return c
    },
    async accept (side) {
      const c = pipeChannel(side.handle, side)
      detachHandle(side.raw)
      return c
    }
  },
  listen: listenSideChannel
}
