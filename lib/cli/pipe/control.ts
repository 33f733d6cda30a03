/**
 * The measuring side's handle on the peer process: starts it (child_process.fork of peer.js),
 * sends requests over IPC with a timeout each, and kills it when done. The child is tracked by
 * ../children so that it dies with this process on any exit path.
 */
import { fork, type ChildProcess } from 'child_process'
import * as path from 'path'
import { track } from '../children'
import type { ChannelAddress } from './channels'
import { onCpu } from './pinning'
import type { PeerConfig, PeerHello, PeerReply, PeerRequest } from './protocol'
import type { ChannelSpec } from './types'

type Pending = { resolve: (rep: unknown) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }

/** Distributes a request without its id (added by Peer.request). */
type Request = PeerRequest extends infer R ? R extends { id: number } ? Omit<R, 'id'> : never : never

/**
 * A request of another tool's peer script that speaks the same envelope (an `id` added here, a
 * `cmd`, one reply `{ id, ok, ... }` per request): `fastsock rate`'s peer.
 */
export type ForeignRequest = { cmd: string } & Record<string, unknown>

export class Peer {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private exited: Error | null = null

  private constructor (private readonly child: ChildProcess, readonly pid: number) {
    child.on('message', (msg: PeerReply) => {
      const p = this.pending.get(msg.id)
      if (p === undefined) return
      this.pending.delete(msg.id)
      clearTimeout(p.timer)
      if (msg.ok) p.resolve(msg)
      else p.reject(new Error(`peer: ${msg.error}`))
    })
    child.on('exit', (code, signal) => {
      this.exited = new Error(`peer process exited (code ${String(code)}, signal ${String(signal)})`)
      for (const p of this.pending.values()) {
        clearTimeout(p.timer)
        p.reject(this.exited)
      }
      this.pending.clear()
    })
  }

  /**
   * Forks the peer (on CPU `cpu` when not null, through taskset) and waits for its hello (at
   * most `timeoutMs`). `script`: the peer program, `pipe`'s peer.js unless another tool's.
   */
  static async start (timeoutMs: number, cpu: number | null = null, script = path.join(__dirname, 'peer.js')): Promise<Peer> {
    const prefix = onCpu(cpu)
    const child = track(fork(script, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // fork runs `execPath ...execArgv peer.js`: with taskset, that is `taskset -c N node peer.js`.
      ...(prefix.length > 0 ? { execPath: prefix[0], execArgv: [...prefix.slice(1), process.execPath] } : { execArgv: [] }),
      serialization: 'json'
    }))
    const pid = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`peer process did not start within ${timeoutMs} ms`))
      }, timeoutMs)
      child.once('message', (msg: PeerHello) => { clearTimeout(timer); resolve(msg.pid) })
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`peer process exited at start (code ${String(code)})`)) })
      child.once('error', (err) => { clearTimeout(timer); reject(err) })
    })
    return new Peer(child, pid)
  }

  /**
   * Sends one request; rejects on an error reply, a timeout or the peer's exit. `T`: the reply's
   * shape, for a ForeignRequest.
   */
  async request<T extends { ok: true } = PeerReply & { ok: true }> (req: Request | ForeignRequest, timeoutMs = 10_000): Promise<T> {
    if (this.exited !== null) throw this.exited
    const id = this.nextId++
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`peer did not answer '${req.cmd}' within ${timeoutMs} ms`))
      }, timeoutMs)
      // The reply is whatever the peer sent; T is the caller's word for its shape.
      this.pending.set(id, { resolve: resolve as (rep: unknown) => void, reject, timer })
      this.child.send({ ...req, id } as PeerRequest)
    })
  }

  async listen (channel: ChannelSpec): Promise<ChannelAddress> {
    const rep = await this.request({ cmd: 'listen', channel })
    if (rep.address === undefined) throw new Error('peer: listen returned no address')
    return rep.address
  }

  async configure (config: PeerConfig): Promise<void> {
    await this.request({ cmd: 'configure', config })
  }

  async cpuMark (): Promise<void> {
    await this.request({ cmd: 'cpu-mark' })
  }

  /** The peer's CPU time (user + sys) since the last cpuMark, µs. */
  async cpuRead (): Promise<number> {
    const rep = await this.request({ cmd: 'cpu-read' })
    return rep.cpuUs === undefined ? NaN : rep.cpuUs.user + rep.cpuUs.system
  }

  /** Closes the peer's listeners and kills it; waits at most `timeoutMs` for it to go. */
  async stop (timeoutMs = 2000): Promise<void> {
    if (this.exited !== null) return
    try { await this.request({ cmd: 'close' }, timeoutMs) } catch { /* killing anyway */ }
    const gone = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs)
      this.child.once('exit', () => { clearTimeout(timer); resolve() })
    })
    this.child.kill('SIGKILL')
    await gone
  }
}
