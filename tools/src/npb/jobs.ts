/**
 * Running one NPB job of `fastsock npb`: P ranks of the TypeScript kernels (tools/dist/npb/
 * rank-main.js) started by one of four launchers, or the NAS reference binary under Open MPI's
 * mpirun. Each resolves with one JobOutcome or rejects with a message and a code
 * (ERR_NPB_RANK_FAILED, ERR_NPB_TIMEOUT, ERR_NPB_REFERENCE); never hangs: a job that has not
 * finished in `timeoutMs` is killed.
 *
 * Launchers of the Node ranks:
 * - fastsock: `fastsock mpirun`'s spawnRanks (from fastsock/internal, as `fastsock osu` starts its
 *   ranks: env:// variables, each rank in its own process group, the first failing rank ends
 *   the job);
 * - mpirun: Open MPI's mpirun (as root with --allow-run-as-root; --oversubscribe), the config
 *   passed with -x;
 * - srun: Slurm's srun --overcommit -n P (more ranks than CPUs allowed; SLURM_CONF etc. from
 *   the environment);
 * - env: P `node` processes started here with torch-style env:// variables (RANK, WORLD_SIZE,
 *   LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
 */
import { spawn } from 'child_process'
import * as fs from 'fs'
import * as net from 'net'
import * as os from 'os'
import * as path from 'path'
import { track, which } from '../harness/children'
import { LIBRARY_ENV } from '../harness/library'
import { startRanks, type RankExit } from '../harness/ranks'
import type { RankConfig, RankOutput } from './rank-main'
import type { KernelName, NpbClass } from './types'

/** How the Node ranks are started. */
export type Launcher = 'fastsock' | 'mpirun' | 'srun' | 'env'
export const LAUNCHERS: Launcher[] = ['fastsock', 'mpirun', 'srun', 'env']

/** One job's figures, as rank 0 (or the reference's output) reported them. */
export interface JobOutcome {
  seconds: number
  mops: number
  verified: boolean
  transport: string
  /** The report as printed (the NAS format). */
  report: string
}

function failure (message: string, code: string): Error {
  return Object.assign(new Error(message), { code })
}

/** The last lines of a process' output that say what went wrong. */
function tail (text: string, lines = 6): string {
  return text.trim().split('\n').slice(-lines).join('\n')
}

/** True when this process runs as root (Open MPI's mpirun then needs --allow-run-as-root). */
function isRoot (): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0
}

/** Open MPI's mpirun on PATH (mpirun, or Debian's mpirun.openmpi), or null. */
export function findMpirun (env: NodeJS.ProcessEnv = process.env): string | null {
  return which('mpirun', env) ?? which('mpirun.openmpi', env)
}

/** mpirun's flags for P ranks on this host: as root --allow-run-as-root, and --oversubscribe (root, or more ranks than CPUs). */
export function mpirunFlags (np: number): string[] {
  const root = isRoot()
  return [...(root ? ['--allow-run-as-root'] : []), ...(root || np > os.availableParallelism() ? ['--oversubscribe'] : []), '-np', String(np)]
}

interface Exit { code: number | null, signal: string | null, stdout: string, stderr: string, timedOut: boolean }

/** Runs `cmd args` to its end (killed after `timeoutMs`), its output collected. */
function runProcess (cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true }))
    let stdout = ''
    let stderr = ''
    let timedOut = false
    child.stdout?.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.stderr?.setEncoding('utf8').on('data', (d: string) => { stderr = (stderr + d).slice(-16000) })
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-(child.pid as number), 'SIGKILL') } catch { child.kill('SIGKILL') }
    }, timeoutMs)
    child.on('error', (err) => { clearTimeout(timer); reject(err) })
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr, timedOut }) })
  })
}

/** A free TCP port on 127.0.0.1 (for env://'s MASTER_PORT). */
async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

/** The per-rank script next to this file. */
export function rankScript (): string {
  return path.join(__dirname, 'rank-main.js')
}

/**
 * Runs `config` (its `out` set here) on `np` Node ranks started by `launcher`; resolves with
 * rank 0's figures and report.
 */
export async function runNodeJob (np: number, config: Omit<RankConfig, 'out'>, launcher: Launcher, timeoutMs: number): Promise<JobOutcome> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-npb-job-'))
  fs.chmodSync(dir, 0o700)
  const out = path.join(dir, 'result.jsonl')
  fs.writeFileSync(out, '', { mode: 0o600 })
  const full: RankConfig = { ...config, out }
  const envVars: Record<string, string> = { FASTSOCK_NPB_CONFIG: JSON.stringify(full) }
  if (process.env[LIBRARY_ENV] !== undefined) envVars[LIBRARY_ENV] = process.env[LIBRARY_ENV] as string
  const script = rankScript()
  try {
    let failed: string | null = null
    let timedOut = false
    if (launcher === 'fastsock') {
      const job = startRanks(script, np, envVars)
      const timer = setTimeout(() => { timedOut = true; job.killAll() }, timeoutMs)
      let exits: RankExit[]
      try {
        exits = await job.exited
      } finally {
        clearTimeout(timer)
      }
      const bad = exits.find((e) => e.failedFirst) ?? exits.find((e) => e.code !== 0)
      if (bad !== undefined) failed = `rank ${bad.rank} of ${np} ${bad.signal !== null ? `was killed by ${bad.signal}` : `exited with status ${String(bad.code)}`}${bad.stderr.trim() !== '' ? `:\n${tail(bad.stderr)}` : ''}`
    } else if (launcher === 'env') {
      const port = await freePort()
      const ranks = Array.from({ length: np }, (_v, r) => runProcess(process.execPath, [script], {
        ...process.env,
        ...envVars,
        RANK: String(r),
        WORLD_SIZE: String(np),
        LOCAL_RANK: String(r),
        LOCAL_WORLD_SIZE: String(np),
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port)
      }, timeoutMs))
      const exits = await Promise.all(ranks)
      timedOut = exits.some((e) => e.timedOut)
      const bad = exits.findIndex((e) => e.code !== 0)
      if (bad >= 0) failed = `rank ${bad} of ${np} exited with ${exits[bad].signal ?? `status ${String(exits[bad].code)}`}:\n${tail(exits[bad].stderr)}`
    } else {
      let cmd: string
      let args: string[]
      if (launcher === 'mpirun') {
        const mpirun = findMpirun()
        if (mpirun === null) throw failure("--launcher mpirun: Open MPI's mpirun is not on PATH", 'ERR_NPB_LAUNCHER')
        cmd = mpirun
        args = [...mpirunFlags(np), ...Object.keys(envVars).flatMap((k) => ['-x', k]), process.execPath, script]
      } else {
        const srun = which('srun')
        if (srun === null) throw failure('--launcher srun: srun is not on PATH (Slurm)', 'ERR_NPB_LAUNCHER')
        cmd = srun
        args = ['--overcommit', '-n', String(np), '--export=ALL', process.execPath, script]
      }
      const e = await runProcess(cmd, args, { ...process.env, ...envVars }, timeoutMs)
      timedOut = e.timedOut
      if (e.code !== 0) failed = `${path.basename(cmd)} -n ${np} exited with ${e.signal ?? `status ${String(e.code)}`}:\n${tail(e.stderr + e.stdout)}`
    }
    if (timedOut) throw failure(`the job of ${np} ranks did not finish in ${timeoutMs / 1e3} s and was killed`, 'ERR_NPB_TIMEOUT')
    if (failed !== null) throw failure(failed, 'ERR_NPB_RANK_FAILED')
    const line = fs.readFileSync(out, 'utf8').split('\n').find((l) => l.trim() !== '')
    if (line === undefined) throw failure(`the job of ${np} ranks ended without rank 0's result`, 'ERR_NPB_RANK_FAILED')
    const r = JSON.parse(line) as RankOutput
    return { seconds: r.result.seconds, mops: r.result.mops, verified: r.result.verified, transport: r.transport, report: r.report }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The reference binary of `kernel` at class `cls` in `dir` (NPB's naming: cg.A.x). */
export function referenceBinary (dir: string, kernel: KernelName, cls: NpbClass): string {
  return path.join(dir, `${kernel}.${cls}.x`)
}

/**
 * Parses a NAS reference report: `Time in seconds` (EP: the 4-decimal `CPU Time`),
 * `Mop/s total`, `Verification`. Null when the report lacks them.
 */
export function parseReference (text: string): { seconds: number, mops: number, verified: boolean } | null {
  const time = /Time in seconds\s*=\s*([\d.]+)/.exec(text)
  const cpu = /CPU Time\s*=\s*([\d.]+)/.exec(text)
  const mops = /Mop\/s total\s*=\s*([\d.]+)/.exec(text)
  const ver = /Verification\s*=\s*(\w+)/.exec(text)
  if (time === null || mops === null || ver === null) return null
  return { seconds: Number(cpu?.[1] ?? time[1]), mops: Number(mops[1]), verified: ver[1] === 'SUCCESSFUL' }
}

/** Runs the NAS reference `bin` on `np` ranks with Open MPI's mpirun. */
export async function runReferenceJob (np: number, bin: string, timeoutMs: number): Promise<JobOutcome> {
  const mpirun = findMpirun()
  if (mpirun === null) throw failure("Open MPI's mpirun is not on PATH", 'ERR_NPB_REFERENCE')
  const e = await runProcess(mpirun, [...mpirunFlags(np), bin], process.env, timeoutMs)
  if (e.timedOut) throw failure(`${path.basename(bin)} on ${np} ranks did not finish in ${timeoutMs / 1e3} s and was killed`, 'ERR_NPB_TIMEOUT')
  const parsed = parseReference(e.stdout)
  if (e.code !== 0 || parsed === null) throw failure(`mpirun -np ${np} ${bin} exited with ${e.signal ?? `status ${String(e.code)}`}${parsed === null ? ' without a NAS report' : ''}:\n${tail(e.stderr + e.stdout)}`, 'ERR_NPB_REFERENCE')
  const report = e.stdout.slice(0, Math.max(0, e.stdout.indexOf(' Version ')))
  return { ...parsed, transport: 'Open MPI (vader shared memory)', report }
}
