/**
 * Open MPI's C beside fastsock: the project's own OSU-style program (native/osu_native.c, shipped
 * in lib/ with the package) compiled with `mpicc -O2` at run time into a private cache directory
 * under os.tmpdir() (mode 700, owned by this user; the binary is keyed by a hash of the source
 * and the compiler's command line, so it is built once), and run with `mpirun -np P` (as root
 * with `--allow-run-as-root`; with `--oversubscribe` as root or when P exceeds the CPUs).
 * Skipped with the reason when mpicc or mpirun is not on PATH.
 */
import { execFile, spawn } from 'child_process'
import { createHash } from 'crypto'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { track, which } from '../harness/children'
import type { JobConfig, RawRow } from './types'

/** The C source: tools/src/osu/native/osu_native.c, found from tools/dist/osu/ or tools/src/osu/. */
export function sourcePath (): string {
  const candidates = [
    path.join(__dirname, 'native', 'osu_native.c'),
    path.join(__dirname, '..', '..', 'src', 'osu', 'native', 'osu_native.c')
  ]
  const found = candidates.find((p) => fs.existsSync(p))
  if (found === undefined) throw Object.assign(new Error(`osu_native.c not found (looked in ${candidates.join(', ')})`), { code: 'ERR_OSU_NATIVE_SOURCE' })
  return found
}

function run (file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60000): Promise<{ stdout: string, stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err != null) reject(Object.assign(new Error(`${path.basename(file)} ${args.join(' ')}: ${err.message.trim()}${stderr.trim() !== '' ? `\n${stderr.trim().slice(-2000)}` : ''}`), { code: 'ERR_OSU_NATIVE' }))
      else resolve({ stdout, stderr })
    })
  })
}

/** Open MPI on this machine: where its tools are, its version, or why it cannot be used. */
export interface OpenMpi {
  mpicc: string | null
  mpirun: string | null
  version: string | null
  /** null when usable; else the reason it is skipped (printed in the report). */
  skipped: string | null
}

/** The first line of `file args` (stdout), or null when it cannot be run. */
async function firstLine (file: string, args: string[], env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    return (await run(file, args, env, 15000)).stdout.split('\n')[0].trim()
  } catch {
    return null
  }
}

/**
 * Finds Open MPI's mpicc and mpirun on PATH: `mpicc`/`mpirun`, or Debian's `mpicc.openmpi`/
 * `mpirun.openmpi` when the plain names belong to another MPI (MPICH installed beside it), told
 * apart by `mpicc --showme:version` and `mpirun --version`. Never throws: `skipped` says why not.
 */
export async function detectOpenMpi (env: NodeJS.ProcessEnv = process.env): Promise<OpenMpi> {
  const found = { mpicc: which('mpicc', env) ?? which('mpicc.openmpi', env), mpirun: which('mpirun', env) ?? which('mpirun.openmpi', env) }
  const missing = [found.mpicc === null ? 'mpicc' : null, found.mpirun === null ? 'mpirun' : null].filter((x) => x !== null)
  if (missing.length > 0) {
    return { ...found, version: null, skipped: `${missing.join(' and ')} not found on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)` }
  }
  let mpirun: string | null = null
  let version: string | null = null
  let seen = ''
  for (const name of ['mpirun', 'mpirun.openmpi']) {
    const file = which(name, env)
    const line = file === null ? null : await firstLine(file, ['--version'], env)
    const m = line === null ? null : /\(Open MPI\)\s*(\S+)/.exec(line)
    if (m !== null) { mpirun = file; version = m[1]; break }
    if (line !== null && seen === '') seen = line
  }
  if (mpirun === null) return { ...found, version: null, skipped: `mpirun is not Open MPI's (${seen !== '' ? `'${seen}'` : 'mpirun --version failed'}); the C side needs Open MPI` }
  let mpicc: string | null = null
  for (const name of ['mpicc', 'mpicc.openmpi']) {
    const file = which(name, env)
    const line = file === null ? null : await firstLine(file, ['--showme:version'], env)
    if (line !== null && line.includes('Open MPI')) { mpicc = file; break }
  }
  if (mpicc === null) return { mpicc: found.mpicc, mpirun, version, skipped: "mpicc is not Open MPI's (mpicc --showme:version does not say Open MPI)" }
  return { mpicc, mpirun, version, skipped: null }
}

/**
 * A private directory under os.tmpdir() for the compiled program: created mode 700; reused only
 * when it is a real directory owned by this user with no group/other access, else a fresh one.
 */
export function cacheDir (): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0
  const dir = path.join(os.tmpdir(), `fastsock-osu-${uid}`)
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err
  }
  const st = fs.lstatSync(dir)
  if (st.isDirectory() && !st.isSymbolicLink() && st.uid === uid && (st.mode & 0o077) === 0) return dir
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-osu-'))
}

/**
 * Compiles osu_native.c (or the C file `source`, its binaries named `name`-<key>) with mpicc -O2
 * into the cache directory (once per source and compiler; older builds of that name there are
 * removed) and returns the binary's path. Rejects with code ERR_OSU_NATIVE and the compiler's
 * output. bench/mpi-exchange-tails.js builds its program with it too.
 */
export async function buildNative (ompi: OpenMpi, env: NodeJS.ProcessEnv = process.env, source = sourcePath(), name = 'osu_native'): Promise<string> {
  const src = fs.readFileSync(source)
  const { stdout: showme } = await run(ompi.mpicc as string, ['--showme'], env, 15000).catch(() => ({ stdout: ompi.mpicc as string }))
  const key = createHash('sha256').update(src).update(showme).update(ompi.version ?? '').digest('hex').slice(0, 16)
  const dir = cacheDir()
  const bin = path.join(dir, `${name}-${key}`)
  if (fs.existsSync(bin)) return bin
  const tmpSrc = path.join(dir, `${name}-${key}-${process.pid}.c`)
  const tmpBin = `${bin}.${process.pid}.tmp`
  fs.writeFileSync(tmpSrc, src, { mode: 0o600 })
  try {
    await run(ompi.mpicc as string, ['-O2', '-o', tmpBin, tmpSrc], env, 120000)
    fs.renameSync(tmpBin, bin) // atomic: a concurrent run sees the old state or the whole binary
    // Builds of older sources or compilers are not needed any more.
    for (const f of fs.readdirSync(dir)) {
      const build = f.startsWith(`${name}-`) && /^[0-9a-f]{16}$/.test(f.slice(name.length + 1))
      if (build && path.join(dir, f) !== bin) fs.rmSync(path.join(dir, f), { force: true })
    }
  } finally {
    fs.rmSync(tmpSrc, { force: true })
    fs.rmSync(tmpBin, { force: true })
  }
  return bin
}

/** `mpirun`'s flags for P ranks here: --allow-run-as-root as root, --oversubscribe as root or when P exceeds the CPUs. */
export function mpirunFlags (np: number): string[] {
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  return [
    ...(root ? ['--allow-run-as-root'] : []),
    ...(root || np > os.cpus().length ? ['--oversubscribe'] : [])
  ]
}

/** `mpirun`'s arguments for P ranks of `bin` measuring `config`. */
export function mpirunArgs (bin: string, np: number, config: JobConfig): string[] {
  return [...mpirunFlags(np), '-np', String(np), bin, config.benchmark, config.sizes.join(','),
    String(config.iterations), String(config.warmup), String(config.iterationsLarge), String(config.warmupLarge),
    String(config.largeBytes), String(config.window), String(config.measurements)]
}

/**
 * Runs the C program under mpirun; resolves with one RawRow per size. `onRow` is called as rows
 * arrive. A job that prints nothing for `timeoutMs` is killed and rejects (ERR_OSU_TIMEOUT); a
 * failing mpirun rejects with its exit status and the end of its stderr (ERR_OSU_NATIVE).
 */
export function runNative (ompi: OpenMpi, bin: string, np: number, config: JobConfig, timeoutMs: number, onRow?: (row: RawRow) => void): Promise<RawRow[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(ompi.mpirun as string, mpirunArgs(bin, np, config), { stdio: ['ignore', 'pipe', 'pipe'] })
    track(child)
    const rows: RawRow[] = []
    let stdout = ''
    let stderr = ''
    let timedOut = false
    let timer: NodeJS.Timeout
    const arm = (): void => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        timedOut = true
        child.kill('SIGTERM')
        setTimeout(() => { if (child.exitCode === null) child.kill('SIGKILL') }, 2000).unref()
      }, timeoutMs)
    }
    arm()
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', (d: string) => {
      arm()
      stdout += d
      let nl: number
      while ((nl = stdout.indexOf('\n')) >= 0) {
        const line = stdout.slice(0, nl).trim()
        stdout = stdout.slice(nl + 1)
        if (!line.startsWith('{')) continue
        try {
          const row = JSON.parse(line) as RawRow
          rows.push(row)
          onRow?.(row)
        } catch { /* not one of ours */ }
      }
    })
    child.stderr.on('data', (d: string) => { stderr = (stderr + d).slice(-8000) })
    child.once('error', (err) => { clearTimeout(timer); reject(Object.assign(err, { code: 'ERR_OSU_NATIVE' })) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const tail = stderr.trim().split('\n').slice(-12).join('\n')
      if (timedOut) reject(Object.assign(new Error(`Open MPI job (np ${np}) made no progress for ${timeoutMs / 1e3} s and was killed${tail !== '' ? `:\n${tail}` : ''}`), { code: 'ERR_OSU_TIMEOUT' }))
      else if (code !== 0) reject(Object.assign(new Error(`mpirun -np ${np} exited with ${signal ?? `status ${String(code)}`}${tail !== '' ? `:\n${tail}` : ''}`), { code: 'ERR_OSU_NATIVE' }))
      else if (rows.length !== config.sizes.length) reject(Object.assign(new Error(`Open MPI job reported ${rows.length} of ${config.sizes.length} sizes`), { code: 'ERR_OSU_NATIVE' }))
      else resolve(rows)
    })
  })
}
