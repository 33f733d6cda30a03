/**
 * L2, the side channel's listening as the server sees it: the server calls the side channel's
 * connector once per TCP listener (./connector.ts `listen`), which starts one listener offering
 * all of that server's side-channel rungs. Cluster
 * round-robin (lib/cluster.ts): a worker serves the clients its primary hands over, a primary
 * whose TCP handle cluster took hands its clients to the workers.
 */
import { debug } from '../debug'
import { SideChannelListener, ClientPorts } from './listener'
import { dispatchToWorkers, serveFromPrimary, keyOf } from '../cluster'
import type { Connector, ListenRequest, RungListener } from '../contract'

/** The side-channel listener for this server's TCP listener, offering the rungs of `connector`, or null. */
export function listenSideChannel (req: ListenRequest, connector: Connector, clientPorts: ClientPorts): RungListener | null {
  const offers = req.rungs.filter(r => r.connector === connector && r.sideChannel).map(r => ({ name: r.name, offer: r.sideChannel! }))
  if (offers.length === 0) return null
  const why = req.roundRobinWorker ? null : req.listenHandleProblem
  if (why) {
    debug('server', 'no side channel for %s:%d: %s', req.address, req.port, why)
    return null
  }
  const server = req.server
  const handleOf = (): unknown => (server as unknown as { _handle: unknown })._handle
  let current: SideChannelListener | null = null
  const sc: SideChannelListener = new SideChannelListener({
    address: req.address,
    port: req.port,
    v6only: req.v6only,
    offers,
    sameUidOnly: req.sameUidOnly,
    handshakeTimeoutMs: req.handshakeTimeoutMs,
    busy: () => {
      if (!handleOf()) {
        // Someone took the listen handle away (cluster's round-robin primary does, to accept
        // and distribute itself): this server no longer accepts, so neither does its side channel.
        if (current === sc) current = null
        setImmediate(() => sc.close())
      }
      return req.busy()
    },
    accept: req.accept,
    clientPorts
  })
  const key = keyOf(req.address, req.port)
  if (req.roundRobinWorker) {
    // Round-robin worker: the primary owns the name and hands its clients over (lib/cluster.ts).
    serveFromPrimary(server, sc, key)
    return null
  }
  if (!sc.listen()) return null
  current = sc
  // cluster's round-robin primary takes the listen handle away in its own 'listening' listener
  // (registered after this one) to accept and distribute connections itself: the side channel
  // then hands its clients to the workers the same way (lib/cluster.ts).
  server.once('listening', () => process.nextTick(() => {
    if (!handleOf() && current === sc) dispatchToWorkers(sc, key)
  }))
  return { close: () => { current = null; sc.close() } }
}
