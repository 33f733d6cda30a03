/**
 * The `sdp` rung: the Sockets Direct Protocol of legacy OFED kernels (AF_INET_SDP = 27, IPv4
 * addresses; mainline Linux never had it). The same kernel-fd client as `smc`
 * (lib/transports/kernelfd.ts): the connected fd becomes Node's own TCP handle. Where the kernel
 * lacks the family (everywhere current), availability says so and the chain skips the rung at no
 * cost. No listener: an SDP server is whatever listens with AF_INET_SDP on that port (with
 * OFED's libsdp, any TCP server run under it).
 */
import { registerRemoteRung } from './remote'
import { connectKernelFd, KernelFamily } from './kernelfd'

const AF_INET_SDP = 27

const SDP: KernelFamily = { rung: 'sdp', family: AF_INET_SDP, protocol: f => f === 4 ? 0 : null, bufferBytes: 0 }

registerRemoteRung({
  name: 'sdp',
  connect: req => connectKernelFd(SDP, req)
})
