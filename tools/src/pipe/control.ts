/**
 * The measuring side's handle on `fastsock pipe`'s peer process (./peer.ts): the harness's
 * PeerProcess with the pipe protocol's requests (./protocol.ts) as methods.
 */
import * as path from 'path'
import type { ChannelAddress } from '../harness/channels'
import { PeerProcess } from '../harness/peer-process'
import type { PeerConfig, PeerReply, PeerRequest } from './protocol'
import type { ChannelSpec } from './types'

export class Peer extends PeerProcess {
  /** Forks pipe's peer (on CPU `cpu` when not null) and waits for its hello (at most `timeoutMs`). */
  static async startPipe (timeoutMs: number, cpu: number | null = null): Promise<Peer> {
    const { child, pid } = await PeerProcess.fork(path.join(__dirname, 'peer.js'), timeoutMs, cpu)
    return new Peer(child, pid)
  }

  private async ask (req: PeerRequest, timeoutMs?: number): Promise<PeerReply> {
    return await this.request<PeerReply & { ok: true }>(req, timeoutMs)
  }

  async listen (channel: ChannelSpec): Promise<ChannelAddress> {
    const rep = await this.ask({ cmd: 'listen', channel })
    if (rep.address === undefined) throw new Error('peer: listen returned no address')
    return rep.address
  }

  async configure (config: PeerConfig): Promise<void> {
    await this.ask({ cmd: 'configure', config })
  }

  async cpuMark (): Promise<void> {
    await this.ask({ cmd: 'cpu-mark' })
  }

  /** The peer's CPU time (user + sys) since the last cpuMark, µs. */
  async cpuRead (): Promise<number> {
    const rep = await this.ask({ cmd: 'cpu-read' })
    return rep.cpuUs === undefined ? NaN : rep.cpuUs.user + rep.cpuUs.system
  }
}
