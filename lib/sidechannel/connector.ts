/**
 * L2, the side channel as one connector (contract.ts `Connector`; undici's `buildConnector` and
 * UCX's wire-up are the models): the set-up the rungs negotiated over it (shm, unix) share. It
 * decides whether to attempt a destination (./client.ts skipSideChannel), makes one attempt that
 * offers the rung the chain is at and the later ones it carries (./client.ts
 * connectSideChannel), keeps the tried set in the connect's own context (`AttemptContext.tried`),
 * bounds the handshake by the attempt's time, and listens once per server for all its rungs
 * (./serve.ts). Its rungs are endpoint factories: a `sideChannel` offer and `connector: sideChannel`.
 */
import type { AttemptContext, Channel, Connector, ConnectRequest, ListenRequest, Rung, RungListener } from '../transports/contract'
import { connectSideChannel, skipSideChannel, EarlyServers } from './client'
import { listenSideChannel } from './serve'

/** The side channel's connector; its one piece of state across connects is its own field. */
class SideChannelConnector implements Connector {
  readonly name = 'side channel'
  /** Servers that said they read a set-up pipelined behind HELLO (./client.ts). */
  readonly earlyServers = new EarlyServers()

  skip (_rung: Rung, req: ConnectRequest, ctx: AttemptContext): string | null {
    return skipSideChannel(this, req, ctx)
  }

  connect (rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel> {
    return connectSideChannel(this, this.earlyServers, rung, req, ctx)
  }

  listen (req: ListenRequest): RungListener | null {
    return listenSideChannel(req, this)
  }
}

export const sideChannel: Connector = new SideChannelConnector()
