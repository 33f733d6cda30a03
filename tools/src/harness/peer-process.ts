/**
 * The measuring side's handle on a peer process of any tool: starts it (child_process.fork of the
 * tool's peer script), sends requests over IPC with a timeout each, and kills it when done. The
 * child is tracked by ./children so that it dies with this process on any exit path.
 *
 * The envelope every peer speaks (./peer-main.ts is the peer's side): the peer sends
 * `{ hello: true, pid }` once ready; each request is `{ id, cmd, ... }` and gets exactly one reply
 * `{ id, ok: true, ... }` or `{ id, ok: false, error }`. Control never travels on the measured
 * sockets: the data path carries only the benchmark's bytes.
 */
import { fork, type ChildProcess } from 'child_process'
import { track } from './children'
import { onCpu } from './pinning'

type Pending = { resolve: (rep: unknown) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }

/** A request without its id (added by PeerProcess.request): `cmd` names it, the rest is the tool's. */
export type PeerRequest = { cmd: string } & Record<string, unknown>

/** A reply as the peer sent it. */
export type PeerReplyEnvelope = { id: number, ok: true } & Record<string, unknown> | { id: number, ok: false, error: string }

/** Sent once by the peer when it is ready for requests. */
export interface PeerHello { hello: true, pid: number }

export class PeerProcess {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private exited: Error | null = null

  protected constructor (private readonly child: ChildProcess, readonly pid: number) {
    child.on('message', (msg: PeerReplyEnvelope) => {
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
   * Forks `script` (on CPU `cpu` when not null, through taskset) and waits for its hello (at
   * most `timeoutMs`); rejects when it exits or does not say hello in time. The child inherits
   * this process's environment, so it loads the same fastsock library (./library.ts).
   */
  protected static async fork (script: string, timeoutMs: number, cpu: number | null): Promise<{ child: ChildProcess, pid: number }> {
    const prefix = onCpu(cpu)
    const child = track(fork(script, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // fork runs `execPath ...execArgv script`: with taskset, that is `taskset -c N node script`.
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
    return { child, pid }
  }

  /** Starts the peer program `script` (see fork). */
  static async start (script: string, timeoutMs: number, cpu: number | null = null): Promise<PeerProcess> {
    const { child, pid } = await PeerProcess.fork(script, timeoutMs, cpu)
    return new PeerProcess(child, pid)
  }

  /**
   * Sends one request; rejects on an error reply, a timeout or the peer's exit. `T`: the reply's
   * shape, the caller's word for what its peer sends.
   */
  async request<T extends { ok: true } = { ok: true }> (req: PeerRequest, timeoutMs = 10_000): Promise<T> {
    if (this.exited !== null) throw this.exited
    const id = this.nextId++
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`peer did not answer '${req.cmd}' within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, { resolve: resolve as (rep: unknown) => void, reject, timer })
      this.child.send({ ...req, id })
    })
  }

  /** Asks the peer to close its listeners (`close`) and kills it; waits at most `timeoutMs` for it to go. */
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
