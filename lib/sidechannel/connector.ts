/**
 * L2, the side channel as one connector (contract.ts `Connector`; undici's `buildConnector` and
 * UCX's wire-up are the models): the set-up the rungs negotiated over it (shm, unix) share. It
 * decides whether to attempt a destination (./client.ts skipSideChannel), makes one attempt that
 * offers the rung the chain is at and the later ones it carries (./client.ts
 * connectSideChannel), keeps the tried set in the connect's own context (`AttemptContext.tried`),
 * bounds the handshake by the attempt's time, and listens once per server for all its rungs
 * (./serve.ts). Its rungs are endpoint factories: a `sideChannel` offer and `connector: sideChannel`.
 */
import type { AttemptContext, Channel, Connector, ConnectRequest, ListenRequest, Rung, RungListener } from '../contract'
import { connectSideChannel, skipSideChannel, EarlyServers, ClientMemory } from './client'
import { ClientPorts } from './listener'
import { ReplyWindow } from './framed-read'
import { listenSideChannel } from './serve'

/** The side channel's connector; what it keeps across connects are its own fields. */
class SideChannelConnector implements Connector, ClientMemory {
  readonly name = 'side channel'
  /** Servers that said they read a set-up pipelined behind HELLO (./client.ts). */
  readonly early = new EarlyServers()
  /** How soon recent replies came: the busy poll's window (./framed-read.ts). */
  readonly replies = new ReplyWindow()
  /** The clients' TCP view ports its listeners hand out (./listener.ts). */
  readonly clientPorts = new ClientPorts()

  skip (_rung: Rung, req: ConnectRequest, ctx: AttemptContext): string | null {
    return skipSideChannel(this, req, ctx)
  }

  connect (rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel> {
    return connectSideChannel(this, this, rung, req, ctx)
  }

  listen (req: ListenRequest): RungListener | null {
    return listenSideChannel(req, this, this.clientPorts)
  }
}

export const sideChannel: Connector & ClientMemory = new SideChannelConnector()
