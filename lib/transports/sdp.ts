/**
 * The `sdp` rung: the Sockets Direct Protocol of legacy OFED kernels (AF_INET_SDP = 27, IPv4
 * addresses; mainline Linux never had it). The same kernel-fd client as `smc`
 * (lib/transports/kernelfd.ts): the connected fd becomes Node's own TCP handle. Where the kernel
 * lacks the family (everywhere current), availability says so and the chain skips the rung at no
 * cost. No listener: an SDP server is whatever listens with AF_INET_SDP on that port (with
 * OFED's libsdp, any TCP server run under it).
 */
import { AF_INET_SDP, channel, Rung } from '../contract'
import { connectKernelFd, familyAvailability, KernelFamily } from './kernelfd'

const SDP: KernelFamily = { rung: 'sdp', label: 'AF_INET_SDP', family: AF_INET_SDP, protocol: f => f === 4 ? 0 : null, bufferBytes: 0 }

export const sdp: Rung<'sdp'> = {
  name: 'sdp',
  probe: () => familyAvailability(SDP),
  connect: async req => channel({ transport: 'sdp', handle: await connectKernelFd(SDP, req) })
}
