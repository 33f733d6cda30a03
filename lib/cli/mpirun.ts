/**
 * `fastsock mpirun -n N [options] [--] <command> [args...]`: runs N ranks of a command on this
 * host for users without an MPI installation, with torch.distributed's env:// variables (RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port; and
 * FASTSOCK_MPI_JOB_ID), which fastsock/mpi's init() reads (lib/mpi/launch.ts).
 *
 * - Every line a rank writes to stdout/stderr is prefixed `[rank] ` (--no-prefix: raw output).
 * - SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to every rank (each rank
 *   is its own process group, so a rank's children get them too); a second SIGINT kills.
 * - When a rank exits non-zero or by a signal, the other ranks get SIGTERM, then SIGKILL after
 *   2 s; mpirun exits with that rank's code (128 + n for signal n). All exit 0: 0. A command that
 *   cannot be started: 127. --timeout expired: the ranks are killed, status 124.
 * - The ranks' stdin is /dev/null.
 * - When this process's stdout is closed under it (`fastsock mpirun ... | head -1`: EPIPE), the
 *   ranks' output stops being forwarded and the job is stopped as a SIGPIPE would stop a filter
 *   (SIGTERM, then SIGKILL), quietly: status 141 (128 + SIGPIPE), as the shell reports for
 *   `yes | head -1`. A closed stderr only stops the forwarding of stderr lines.
 *
 * `spawnRanks` is the reusable part (used by `fastsock osu` too).
 */
import { type ChildProcess, spawn } from 'child_process'
import { newSecret } from '../mpi/auth'
import * as net from 'net'
import * as os from 'os'
import { parseOptions, splitAtCommand, UsageError } from './args'

/** Options of spawnRanks. */
export interface SpawnRanksOptions {
  /** Number of ranks, >= 1. */
  np: number
  /** The program to run (no shell). */
  command: string
  /** Its arguments. */
  args?: string[]
  /** Base environment of every rank (default process.env); the env:// variables are added. */
  env?: NodeJS.ProcessEnv
  /** With stdio 'inherit': prefix every output line with `[rank] ` (default true). */
  prefix?: boolean
  /**
   * 'inherit' (default): output goes to this process's stdout/stderr (prefixed or raw);
   * 'pipe': `children[r].stdout/stderr` are left for the caller to read.
   */
  stdio?: 'inherit' | 'pipe'
  /** MASTER_ADDR (default '127.0.0.1'). */
  masterAddr?: string
  /** MASTER_PORT (default: a port free on masterAddr now). */
  masterPort?: number
  /** Working directory of the ranks (default: this process's). */
  cwd?: string
  /** Delay between SIGTERM and SIGKILL when the job is torn down, ms (default 2000). */
  killGraceMs?: number
  /** Forward SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 to the ranks (default true). */
  forwardSignals?: boolean
  /** Kill the job after this many ms (status 124); default none. */
  timeoutMs?: number
  /** Called with each complete output line (without its newline) of each rank, both modes. */
  onLine?: (rank: number, stream: 'stdout' | 'stderr', line: string) => void
}

/** How one rank ended. `code` 127: could not be started. */
export interface RankExit { rank: number, code: number | null, signal: NodeJS.Signals | null }

/** The job's outcome. */
export interface JobResult {
  /** 0 when every rank exited 0; else the first failing rank's code (128 + n for signal n), 124 on timeout, 127 when a rank could not start. */
  code: number
  /** The first rank that failed (null when none did, or on timeout). */
  failedRank: number | null
  /** True when timeoutMs ended the job. */
  timedOut: boolean
  /** True when this process's stdout was closed (EPIPE) and the job was stopped for it (code 141). */
  outputClosed?: boolean
  exits: RankExit[]
}

/** A running job. */
export interface RankJob {
  /** The ranks' processes, in rank order. */
  children: ChildProcess[]
  /** MASTER_ADDR and MASTER_PORT given to the ranks. */
  masterAddr: string
  port: number
  /** Resolves when every rank has exited; never rejects. */
  done: Promise<JobResult>
  /** Sends `signal` (default SIGTERM) to every rank still running (to its process group). */
  kill: (signal?: NodeJS.Signals) => void
}

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2']

/** A TCP port free on `host` now (listen on 0, read it, close). The rank 0 store binds it next. */
export function freePort (host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, host, () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
  })
}

/** Calls `emit(line)` for each complete line of a stream; the unterminated tail at 'end'. */
function lines (stream: NodeJS.ReadableStream, emit: (line: string) => void): void {
  let tail = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    const parts = (tail + chunk).split('\n')
    tail = parts.pop() ?? ''
    for (const p of parts) emit(p)
  })
  stream.on('end', () => { if (tail !== '') emit(tail); tail = '' })
}

function signalStatus (signal: NodeJS.Signals): number {
  return 128 + (os.constants.signals[signal] ?? 0)
}

/**
 * Starts `np` ranks of `command args` on this host with env:// variables (module comment), each
 * in its own process group. Resolves once they are spawned; `done` resolves with the job's
 * result after the last rank exits, the others having been killed as soon as one failed.
 * Throws RangeError (code ERR_OUT_OF_RANGE) for np < 1.
 */
export async function spawnRanks (opts: SpawnRanksOptions): Promise<RankJob> {
  const { np, command, args = [], prefix = true, stdio = 'inherit', killGraceMs = 2000, forwardSignals = true } = opts
  if (!Number.isInteger(np) || np < 1) {
    const e = new RangeError(`np must be an integer >= 1. Received ${String(np)}`) as RangeError & { code: string }
    e.code = 'ERR_OUT_OF_RANGE'
    throw e
  }
  const masterAddr = opts.masterAddr ?? '127.0.0.1'
  const port = opts.masterPort ?? await freePort(masterAddr)
  const jobId = `mpirun-${process.pid}-${Date.now().toString(36)}`
  const base = { ...(opts.env ?? process.env) }
  // The job's secret (lib/mpi/auth.ts): 256 random bits in the ranks' environment, which only
  // this user and root can read (/proc/PID/environ is mode 400); one the caller set is kept.
  const secret = (base.FASTSOCK_MPI_SECRET ?? '') !== '' || (base.FASTSOCK_MPI_SECRET_FILE ?? '') !== '' ? {} : { FASTSOCK_MPI_SECRET: newSecret() }
  const piped = stdio === 'pipe' || prefix || opts.onLine !== undefined
  const children: ChildProcess[] = []
  const exits: RankExit[] = []
  let failedRank: number | null = null
  let status = 0
  let timedOut = false
  let tearingDown = false
  let killTimer: NodeJS.Timeout | null = null
  let interrupts = 0
  // Forwarded output whose reader is gone (EPIPE: `| head -1`) is dropped; a closed stdout stops
  // the job as SIGPIPE stops a filter (module comment).
  let outputClosed = false
  const closedOut = { stdout: false, stderr: false }
  const outErrors: Array<[NodeJS.WriteStream, (err: NodeJS.ErrnoException) => void]> = []
  if (piped && stdio === 'inherit') {
    for (const name of ['stdout', 'stderr'] as const) {
      const out = name === 'stdout' ? process.stdout : process.stderr
      const h = (err: NodeJS.ErrnoException): void => {
        closedOut[name] = true
        if (name === 'stdout' && (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') && !outputClosed) {
          outputClosed = true
          tearDown()
        }
      }
      out.on('error', h)
      outErrors.push([out, h])
    }
  }

  const running = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null && c.pid !== undefined
  const signalAll = (signal: NodeJS.Signals): void => {
    for (const c of children) {
      if (!running(c)) continue
      try { process.kill(-(c.pid as number), signal) } catch {
        try { c.kill(signal) } catch { /* gone */ }
      }
    }
  }
  const tearDown = (): void => {
    if (tearingDown) return
    tearingDown = true
    signalAll('SIGTERM')
    killTimer = setTimeout(() => signalAll('SIGKILL'), killGraceMs)
  }
  const onExit = (): void => signalAll('SIGKILL')
  process.on('exit', onExit)
  const handlers = new Map<NodeJS.Signals, () => void>()
  if (forwardSignals) {
    for (const sig of FORWARDED) {
      const h = (): void => {
        if (sig === 'SIGINT' && ++interrupts > 1) signalAll('SIGKILL')
        else signalAll(sig)
      }
      handlers.set(sig, h)
      process.on(sig, h)
    }
  }

  let finish: (r: JobResult) => void = () => {}
  const done = new Promise<JobResult>(resolve => { finish = resolve })
  let left = np
  const ended = (rank: number, code: number | null, signal: NodeJS.Signals | null): void => {
    exits[rank] = { rank, code, signal }
    const bad = signal !== null || code !== 0
    if (bad && failedRank === null && !timedOut && !tearingDown) {
      failedRank = rank
      status = signal !== null ? signalStatus(signal) : (code ?? 1)
      tearDown()
    }
    if (--left > 0) return
    if (killTimer !== null) clearTimeout(killTimer)
    if (jobTimer !== null) clearTimeout(jobTimer)
    process.removeListener('exit', onExit)
    for (const [sig, h] of handlers) process.removeListener(sig, h)
    // Left on: a write still in flight may yet fail with EPIPE, and must not throw.
    for (const [out, h] of outErrors) { out.removeListener('error', h); out.on('error', () => {}) }
    // A job ended by a forwarded signal (no rank failed first) reports the first rank's status.
    if (failedRank === null && !timedOut) {
      const first = exits.find(e => e.signal !== null || e.code !== 0)
      if (first !== undefined) status = first.signal !== null ? signalStatus(first.signal) : (first.code ?? 1)
    }
    if (outputClosed && failedRank === null && !timedOut) status = signalStatus('SIGPIPE')
    finish({ code: timedOut ? 124 : status, failedRank, timedOut, exits, outputClosed })
  }

  let jobTimer: NodeJS.Timeout | null = null
  if (opts.timeoutMs !== undefined) {
    jobTimer = setTimeout(() => {
      if (failedRank !== null) return
      timedOut = true
      process.stderr.write(`fastsock mpirun: the job exceeded its timeout (${opts.timeoutMs} ms); killing the ranks\n`)
      tearDown()
    }, opts.timeoutMs)
  }

  for (let rank = 0; rank < np; rank++) {
    const env: NodeJS.ProcessEnv = {
      ...base,
      RANK: String(rank),
      WORLD_SIZE: String(np),
      LOCAL_RANK: String(rank),
      LOCAL_WORLD_SIZE: String(np),
      MASTER_ADDR: masterAddr,
      MASTER_PORT: String(port),
      FASTSOCK_MPI_JOB_ID: jobId,
      ...secret
    }
    const child = spawn(command, args, {
      env,
      cwd: opts.cwd,
      detached: true, // its own process group: signals reach the rank's children too
      stdio: ['ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit']
    })
    children.push(child)
    let reported = false
    child.once('error', err => {
      if (reported) return
      reported = true
      process.stderr.write(`fastsock mpirun: rank ${rank}: cannot run ${command}: ${(err as NodeJS.ErrnoException).code ?? err.message}\n`)
      ended(rank, 127, null)
    })
    child.once('exit', (code, signal) => {
      // The status is final now; 'close' (stdio drained) normally follows at once, but a
      // grandchild left holding the pipes must not keep the job alive: 1 s at most.
      const report = (): void => {
        if (reported) return
        reported = true
        ended(rank, code, signal)
      }
      const timer = setTimeout(report, 1000)
      child.once('close', () => { clearTimeout(timer); report() })
    })
    if (piped && stdio === 'inherit') {
      const tag = prefix ? `[${rank}] ` : ''
      for (const name of ['stdout', 'stderr'] as const) {
        const out = name === 'stdout' ? process.stdout : process.stderr
        const stream = child[name]
        if (stream === null) continue
        lines(stream, line => {
          opts.onLine?.(rank, name, line)
          if (!closedOut[name] && !out.destroyed) out.write(tag + line + '\n')
        })
      }
    } else if (opts.onLine !== undefined) {
      // stdio 'pipe' with a line callback: the caller may read the streams too (data events are shared).
      for (const name of ['stdout', 'stderr'] as const) {
        const stream = child[name]
        if (stream !== null) lines(stream, line => opts.onLine?.(rank, name, line))
      }
    }
  }
  return { children, masterAddr, port, done, kill: (signal = 'SIGTERM') => signalAll(signal) }
}

/** `value` as an integer in 1..max; UsageError otherwise (status 2). */
function positiveInt (name: string, max: number, value: string): number {
  // Open MPI's spelling `-np 4` reaches here as `-n p`.
  if (name === 'N' && value === 'p') throw new UsageError('write -n 4 or --np 4 (Open MPI\'s -np is not supported).')
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1 || n > max) throw new UsageError(`${name} must be an integer from 1 to ${max}.`)
  return n
}

const MPIRUN_OPTIONS = {
  np: { type: 'string', short: 'n' },
  'no-prefix': { type: 'boolean' },
  'master-addr': { type: 'string' },
  'master-port': { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' }
} as const

export const MPIRUN_USAGE = `Usage: fastsock mpirun -n <N> [options] [--] <command> [args...]

Runs N ranks of a fastsock/mpi program on this host (env:// variables; no MPI installation needed).

Options:
  -n, --np <N>            number of ranks (required)
  --no-prefix             do not prefix output lines with [rank]
  --master-addr <addr>    MASTER_ADDR: where rank 0 serves the store (default: 127.0.0.1)
  --master-port <port>    MASTER_PORT (default: a free port)
  --timeout <seconds>     kill the job after this many seconds (exit status 124)
  -h, --help              this help

Examples:
  npx fastsock mpirun -n 4 node app.js
  npx fastsock mpirun -n 2 --no-prefix -- node --expose-gc app.js --size 1M

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and
FASTSOCK_MPI_SECRET, a fresh 256-bit job secret (unless FASTSOCK_MPI_SECRET or _FILE is set).
Exit status: 0 when every rank exits 0, else the first failing rank's (128+n for signal n).
`

/**
 * `fastsock mpirun` with its arguments (options up to the command; the command's own after it):
 * resolves with the job's exit status (module comment). Throws UsageError for bad usage.
 */
export async function mpirunMain (args: string[]): Promise<number> {
  const { own, command } = splitAtCommand(args, MPIRUN_OPTIONS)
  const o = parseOptions(own, MPIRUN_OPTIONS)
  if (o.help === true) {
    process.stdout.write(MPIRUN_USAGE)
    return 0
  }
  if (typeof o.np !== 'string') throw new UsageError("required option '-n, --np <N>' not specified")
  const np = positiveInt('N', 4096, o.np)
  const masterPort = typeof o['master-port'] === 'string' ? positiveInt('port', 65535, o['master-port']) : undefined
  const timeout = typeof o.timeout === 'string' ? positiveInt('seconds', 2 ** 31 / 1000, o.timeout) : undefined
  if (command.length === 0) throw new UsageError('missing the command to run (fastsock mpirun -n 4 node app.js)')
  const job = await spawnRanks({
    np,
    command: command[0],
    args: command.slice(1),
    prefix: o['no-prefix'] !== true,
    masterAddr: typeof o['master-addr'] === 'string' ? o['master-addr'] : '127.0.0.1',
    masterPort,
    timeoutMs: timeout === undefined ? undefined : timeout * 1000
  })
  const result = await job.done
  if (result.failedRank !== null && result.code !== 127) {
    const e = result.exits[result.failedRank]
    process.stderr.write(`fastsock mpirun: rank ${result.failedRank} ${e.signal !== null ? `was killed by ${e.signal}` : `exited with code ${String(e.code)}`}; the other ranks were stopped\n`)
  }
  return result.code
}
