/**
 * Who am I in the job, and where is the job's store? `detectLaunch` reads, in this order, the
 * first source that is present (docs/mpi-launch.md has the table):
 *
 * 1. explicit options (`rank`, `size`, ...);
 * 2. env://, as torch.distributed: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
 *    `MASTER_ADDR`, `MASTER_PORT` (what `fastsock mpirun` sets);
 * 3. Open MPI's mpirun: `OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE`; job id
 *    `PMIX_NAMESPACE`, else `OMPI_MCA_ess_base_jobid`, else `OMPI_MCA_orte_ess_jobid`;
 * 4. MPICH Hydra's mpiexec: `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`; job id
 *    `PMI_KVSNAME`, else `PMI_JOBID`, else `PMI_PORT`, else the pid of the hydra_pmi_proxy the
 *    rank descends from;
 * 5. Slurm's srun, only inside a step (`SLURM_STEP_ID` set: the batch script's own shell is no
 *    rank): `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` (else `SLURM_NTASKS`), `SLURM_LOCALID`,
 *    `SLURM_STEP_TASKS_PER_NODE` + `SLURM_NODEID` for the local size; job id
 *    `SLURM_JOB_ID.SLURM_STEP_ID`;
 * 6. else a singleton: rank 0 of 1, no store.
 *
 * The store (lib/mpi/store.ts, served by rank 0) is at `MASTER_ADDR:MASTER_PORT` when both are
 * set (options `masterAddr`/`masterPort` first). Otherwise: under Slurm with every task on one
 * node, a UNIX socket as below; on several nodes, the first host of
 * `SLURM_STEP_NODELIST` (task 0 always runs there) and the step's first reserved port
 * (`SLURM_STEP_RESV_PORTS`), else a port derived from the job and step ids (20000-29999); under
 * mpirun/mpiexec with every rank on one host, a UNIX socket `job-<hash of the job id>.sock` in
 * `<tmpdir>/fastsock-mpi-<uid>` (mode 700, owned by this user; /tmp when tmpdir would make the
 * path longer than a socket address allows). Ranks on several hosts without MASTER_ADDR:
 * ERR_MPI_LAUNCH (set MASTER_ADDR/MASTER_PORT). Where a TCP store moves when its port is taken:
 * storeCandidates.
 *
 * Errors (thrown synchronously): TypeError code ERR_INVALID_ARG_TYPE for an option of the wrong
 * type; RangeError code ERR_OUT_OF_RANGE for an option out of range; Error code ERR_MPI_LAUNCH
 * MpiError code ERR_MPI_LAUNCH for inconsistent or malformed variables (naming them).
 *
 * Imports only Node built-ins, its siblings (errors.ts, hostlist.ts) and a type from '../index'.
 */
import * as crypto from 'crypto'
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import type { TransportName } from '../index'
import { type MpiError, invalidArgType, mpiError, outOfRange } from './errors'
import { expandTasksPerNode, firstHost } from './hostlist'

/** Options of `mpi.init()` (and of `bootstrap`, `detectLaunch`). */
export interface InitOptions {
  /** This process's rank, 0 <= rank < size. Given with `size`, overrides every launcher. */
  rank?: number
  /** The number of ranks (>= 1). */
  size?: number
  /** This process's rank among the ranks on its host (default: derived at bootstrap). */
  localRank?: number
  /** The number of ranks on this host. */
  localSize?: number
  /** Host name or IP address of the store (rank 0's host). */
  masterAddr?: string
  /** TCP port of the store, 1-65535. */
  masterPort?: number
  /** UNIX socket path of the store (one host), instead of masterAddr/masterPort. */
  storePath?: string
  /** Deadline of the start-up (store connection, cards), ms; default 30000. */
  timeoutMs?: number
  /** fastsock rungs for the mesh (default: fastsock's default chain). */
  transports?: TransportName[]
}

/** Where the store is: TCP host and port, or a UNIX socket path. */
export type StoreAddress = { host: string, port: number } | { path: string }

/** The result of `detectLaunch`. */
export interface LaunchInfo {
  rank: number
  size: number
  localRank: number
  localSize: number
  launcher: 'options' | 'env' | 'openmpi' | 'hydra' | 'slurm' | 'singleton'
  /** The launcher's job id ('' for a singleton or when the launcher gives none). */
  jobId: string
  /** The store's address; null for a singleton. */
  store: StoreAddress | null
  /** Names of the environment variables consulted (for error messages), in reading order. */
  varsRead: string[]
  /**
   * False when no variable gave the local rank/size: `localRank`/`localSize` are then provisional
   * (rank/size) and bootstrap derives them from the host names the ranks publish in the store.
   */
  localKnown?: boolean
}

/** Default start-up deadline, ms. */
export const DEFAULT_TIMEOUT_MS = 30000

/** MpiError 'ERR_MPI_LAUNCH' (inconsistent or malformed launcher variables). */
export function launchError (message: string): MpiError {
  return mpiError('ERR_MPI_LAUNCH', message)
}

function typeError (name: string, expected: string, value: unknown): TypeError & { code: string } {
  const shown = value === null ? 'null' : typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
  return invalidArgType(`The "${name}" option must be ${expected}. Received ${shown}`)
}

function rangeError (name: string, expected: string, value: unknown): RangeError & { code: string } {
  return outOfRange(`The value of "${name}" is out of range. It must be ${expected}. Received ${String(value)}`)
}

/** Checks an optional integer option: type (ERR_INVALID_ARG_TYPE), then min..max (ERR_OUT_OF_RANGE). */
function optInt (options: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const v = options[name]
  if (v === undefined) return undefined
  if (typeof v !== 'number') throw typeError(name, 'of type number', v)
  if (!Number.isInteger(v) || v < min || v > max) throw rangeError(name, `an integer >= ${min} and <= ${max}`, v)
  return v
}

function optString (options: Record<string, unknown>, name: string): string | undefined {
  const v = options[name]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw typeError(name, 'of type string', v)
  if (v.length === 0) throw outOfRange(`The "${name}" option must not be empty`)
  return v
}

/** Validates the options' types and ranges; returns them typed. Throws as the module comment says. */
export function validateOptions (options: unknown): InitOptions {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) throw typeError('options', 'of type object', options)
  const o = options as Record<string, unknown>
  const size = optInt(o, 'size', 1, 2 ** 31 - 1)
  const rank = optInt(o, 'rank', 0, 2 ** 31 - 2)
  const localSize = optInt(o, 'localSize', 1, 2 ** 31 - 1)
  const localRank = optInt(o, 'localRank', 0, 2 ** 31 - 2)
  const masterPort = optInt(o, 'masterPort', 1, 65535)
  const masterAddr = optString(o, 'masterAddr')
  const storePath = optString(o, 'storePath')
  let timeoutMs: number | undefined
  if (o.timeoutMs !== undefined) {
    if (typeof o.timeoutMs !== 'number') throw typeError('timeoutMs', 'of type number', o.timeoutMs)
    if (!(o.timeoutMs > 0) || o.timeoutMs > 2 ** 31 - 1) throw rangeError('timeoutMs', '> 0 and <= 2147483647', o.timeoutMs)
    timeoutMs = o.timeoutMs
  }
  let transports: TransportName[] | undefined
  if (o.transports !== undefined) {
    if (!Array.isArray(o.transports) || o.transports.some(t => typeof t !== 'string')) {
      throw typeError('transports', 'an array of transport names', o.transports)
    }
    if (o.transports.length === 0) throw outOfRange('The "transports" option must not be empty')
    transports = o.transports as TransportName[]
  }
  if (rank !== undefined && size !== undefined && rank >= size) throw rangeError('rank', `< size (${size})`, rank)
  if (localRank !== undefined && localSize !== undefined && localRank >= localSize) throw rangeError('localRank', `< localSize (${localSize})`, localRank)
  if (localSize !== undefined && size !== undefined && localSize > size) throw rangeError('localSize', `<= size (${size})`, localSize)
  if ((rank === undefined) !== (size === undefined)) {
    throw invalidArgType(`The "${rank === undefined ? 'rank' : 'size'}" option is required when "${rank === undefined ? 'size' : 'rank'}" is given`)
  }
  return { rank, size, localRank, localSize, masterAddr, masterPort, storePath, timeoutMs, transports }
}

/** Reads environment variables and records every name read (in order, once). */
class EnvReader {
  readonly read: string[] = []
  constructor (private readonly env: NodeJS.ProcessEnv) {}

  /** The variable's value, or undefined when unset or blank. */
  get (name: string): string | undefined {
    if (!this.read.includes(name)) this.read.push(name)
    const v = this.env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }

  /** The variable as an integer in min..max, undefined when unset; ERR_MPI_LAUNCH when malformed. */
  int (name: string, min: number, max = 2 ** 31 - 1): number | undefined {
    const v = this.get(name)
    if (v === undefined) return undefined
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      throw launchError(`${name}=${v} is not an integer in ${min}..${max}`)
    }
    return Number(v)
  }

  /** Like int() but the variable must be set (ERR_MPI_LAUNCH naming `because` otherwise). */
  need (name: string, min: number, because: string, max?: number): number {
    const v = this.int(name, min, max)
    if (v === undefined) throw launchError(`${because} is set but ${name} is not`)
    return v
  }
}

/**
 * A launcher's rank, size, local rank and local size from its variables `names` (rank, size,
 * local rank, local size; the rank already read as `rank`), checked consistent. Without both local
 * variables the local pair is a guess (`known` false: bootstrap derives it through the store).
 * Throws ERR_MPI_LAUNCH for a missing size or inconsistent values.
 */
function launcherRanks<L extends string> (e: EnvReader, rank: number, launcher: L, names: [string, string, string, string]): { info: { rank: number, size: number, localRank: number, localSize: number, launcher: L }, known: boolean } {
  const size = e.need(names[1], 1, `${names[0]}=${rank}`)
  const lr = e.int(names[2], 0)
  const ls = e.int(names[3], 1)
  const known = lr !== undefined && ls !== undefined
  const info = { rank, size, localRank: known ? lr : rank, localSize: known ? ls : size, launcher }
  checkConsistent(info, names)
  return { info, known }
}

/** Checks rank < size and localRank < localSize <= size; ERR_MPI_LAUNCH naming the variables. */
function checkConsistent (r: { rank: number, size: number, localRank: number, localSize: number }, names: [string, string, string, string]): void {
  const [rn, sn, lrn, lsn] = names
  if (r.size < 1) throw launchError(`${sn}=${r.size}: the size must be >= 1`)
  if (r.rank >= r.size) throw launchError(`${rn}=${r.rank} is not below ${sn}=${r.size}`)
  if (r.localSize > r.size) throw launchError(`${lsn}=${r.localSize} is above ${sn}=${r.size}`)
  if (r.localRank >= r.localSize) throw launchError(`${lrn}=${r.localRank} is not below ${lsn}=${r.localSize}`)
  if (r.localRank > r.rank) throw launchError(`${lrn}=${r.localRank} is above ${rn}=${r.rank}`)
}

/** MASTER_ADDR/MASTER_PORT (options first); undefined when neither is given. */
function masterStore (opts: InitOptions, env: EnvReader): { host: string, port: number } | undefined {
  const host = opts.masterAddr ?? env.get('MASTER_ADDR')
  const port = opts.masterPort ?? env.int('MASTER_PORT', 1, 65535)
  if (host === undefined && port === undefined) return undefined
  if (host === undefined) throw launchError(`MASTER_PORT=${port} is set but MASTER_ADDR is not`)
  if (port === undefined) throw launchError(`MASTER_ADDR=${host} is set but MASTER_PORT is not`)
  return { host, port }
}

/** Longest UNIX socket path Linux accepts (sun_path is 108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH = 107

/**
 * The private directory for this user's store sockets: `<base>/fastsock-mpi-<uid>`, base being
 * os.tmpdir() (TMPDIR) or, when a socket path under it would exceed MAX_SOCKET_PATH, /tmp.
 * Pure: creates nothing (see ensurePrivateDir).
 */
export function storeDir (env: NodeJS.ProcessEnv = process.env): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0
  const name = `fastsock-mpi-${uid}`
  const tmp = (env.TMPDIR !== undefined && env.TMPDIR !== '' ? env.TMPDIR : os.tmpdir()).replace(/\/+$/, '') || '/'
  const candidate = path.join(tmp, name)
  // job-<16 hex>.sock is 25 bytes, plus the slash.
  if (Buffer.byteLength(candidate) + 26 <= MAX_SOCKET_PATH) return candidate
  return path.join('/tmp', name)
}

/** The UNIX socket path of the store of job `jobId` (hashed: any job id fits). */
export function storePathFor (jobId: string, env: NodeJS.ProcessEnv = process.env): string {
  const hash = crypto.createHash('sha256').update(jobId).digest('hex').slice(0, 16)
  return path.join(storeDir(env), `job-${hash}.sock`)
}

/** Creates `dir` with mode 700 unless it exists (anything at that path: the caller lstat()s it). */
export function makeDir (dir: string): void {
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
}

/**
 * Why `dir` (its lstat `st`) is not this user's own directory: not a real directory (a symbolic
 * link?), or owned by another uid; null when it is (its mode is the caller's rule).
 */
export function notOwnDir (dir: string, st: fs.Stats): string | null {
  const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid
  if (!st.isDirectory()) return `${dir} is not a directory (a symbolic link?)`
  if (st.uid !== uid) return `${dir} belongs to uid ${st.uid}, not to this user (${uid})`
  return null
}

/**
 * Creates `dir` (mode 700) if absent and checks that it is a real directory owned by this user
 * with no access for group or others; throws ERR_MPI_LAUNCH otherwise (someone else's directory
 * could host a fake store). `create: false` only checks, returning false when it does not exist.
 */
export function ensurePrivateDir (dir: string, create = true): boolean {
  if (create) makeDir(dir)
  let st: fs.Stats
  try {
    st = fs.lstatSync(dir)
  } catch (err) {
    if (!create && (err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
  const problem = notOwnDir(dir, st)
  if (problem !== null) throw launchError(`${problem}: refusing to use it for the store`)
  if ((st.mode & 0o077) !== 0) {
    if (!create) throw launchError(`${dir} has mode ${(st.mode & 0o777).toString(8)}, not 700: refusing to use it for the store`)
    fs.chmodSync(dir, 0o700)
  }
  return true
}

/** How many ports a TCP store may move to when its own is taken (storeCandidates). */
export const STORE_FALLBACK_PORTS = 7

/**
 * Where the store of a job may be, in the order the clients try them (docs/mpi-launch.md,
 * "When the port is taken"): rank 0 serves at the first that is free (StoreServer.listen), the
 * clients race them all (StoreClient.connect) and take the one that proves to be the job's store.
 *
 * - every rank on this host (`oneHost`; a UNIX socket store is one): the store's address, a UNIX
 *   socket in the user's private directory (`storePathFor` of the job id and the address; for a
 *   TCP store), and one loopback port derived as below (for a directory another user made first);
 * - several hosts: the store's address, then STORE_FALLBACK_PORTS ports of its host.
 *
 * Derived ports are in 20000..32767, from HMAC-SHA256 (RFC 2104) of the job id and address,
 * keyed by the first of:
 * - `key`, the job's secret when every rank knows it before the store's handshake (message
 *   `fastsock-mpi/store-port/<job id>/<where>`): another user cannot foretell them;
 * - `userKey`, the user's per-user candidate key (lib/mpi/auth.ts candidateKey, in the user's
 *   home; message `fastsock-mpi/store-port-user/<job id>/<where>`, a label of its own): another
 *   user cannot foretell them either, and ranks whose homes hold different keys derive
 *   different ports;
 * - neither (no secret up front: under Slurm with MUNGE the ranks learn it in the handshake;
 *   and no usable home): a public constant, so another user can foretell them.
 * A store whose UNIX socket path the user gave (`storePath`) has no other candidate: the caller
 * passes it alone. Pure (no I/O); `env` for TMPDIR (storeDir).
 */
export function storeCandidates (store: StoreAddress, { jobId, key, userKey = null, oneHost }: { jobId: string, key: Buffer | null, userKey?: Buffer | null, oneHost: boolean }, env: NodeJS.ProcessEnv = process.env): StoreAddress[] {
  const where = 'path' in store ? 'unix' : `${store.host}/${store.port}`
  const label = key === null && userKey !== null ? 'store-port-user' : 'store-port'
  const mac = crypto.createHmac('sha256', key ?? userKey ?? 'fastsock-mpi/store-port/public').update(`fastsock-mpi/${label}/${jobId}/${where}`).digest()
  const seen = new Set('path' in store ? [] : [store.port])
  const ports: number[] = []
  for (let i = 0; i + 2 <= mac.length && ports.length < STORE_FALLBACK_PORTS; i += 2) {
    const port = 20000 + (mac.readUInt16LE(i) % 12768)
    if (!seen.has(port)) { seen.add(port); ports.push(port) }
  }
  if ('path' in store) return [store, { host: '127.0.0.1', port: ports[0] }]
  if (!oneHost) return [store, ...ports.map(port => ({ host: store.host, port }))]
  const loopback = store.host === '::1' ? '::1' : '127.0.0.1'
  return [store, { path: storePathFor(`tcp:${jobId}:${store.host}:${store.port}`, env) }, { host: loopback, port: ports[0] }]
}

/** A port in 20000..29999 derived from a job id (FNV-1a): stable across the ranks of a job. */
export function portForJob (jobId: string): number {
  let h = 0x811c9dc5
  for (const b of Buffer.from(jobId)) {
    h ^= b
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return 20000 + (h % 10000)
}

/**
 * The pid of the nearest ancestor named hydra_pmi_proxy (through /proc/<pid>/stat), so that
 * ranks started through a wrapper script agree too; the parent's pid when none is found.
 */
export function hydraProxyPid (): number {
  let pid = process.ppid
  for (let depth = 0; depth < 32 && pid > 1; depth++) {
    let stat: string
    try { stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8') } catch { break }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')')
    const comm = stat.slice(stat.indexOf('(') + 1, close)
    if (comm.startsWith('hydra_pmi_prox')) return pid // comm is cut at 15 bytes
    pid = Number(stat.slice(close + 2).split(' ')[1])
  }
  return process.ppid
}

/** The local store of a one-host launch, or ERR_MPI_LAUNCH when the ranks span several hosts. */
function localStore (opts: InitOptions, env: EnvReader, jobId: string, oneHost: boolean, launcher: string): StoreAddress {
  const master = masterStore(opts, env)
  if (master !== undefined) return master
  if (opts.storePath !== undefined) return { path: opts.storePath }
  if (!oneHost) {
    throw launchError(`the ranks of this ${launcher} job span several hosts: set MASTER_ADDR and MASTER_PORT ` +
      '(the host and a free port of rank 0) for the store, e.g. mpirun -x MASTER_ADDR=node1 -x MASTER_PORT=29500')
  }
  const tmp = env.get('TMPDIR')
  return { path: storePathFor(jobId, tmp === undefined ? {} : { TMPDIR: tmp }) }
}

/**
 * Finds this process's place in the job: rank, size, local rank and size, launcher, job id and
 * the store's address, from `options` and the launcher's variables in `env` (order and rules in
 * the module comment). Reads `env` (and, under Hydra without a job id variable, /proc to find
 * the proxy); no network.
 *
 * Throws: ERR_INVALID_ARG_TYPE / ERR_OUT_OF_RANGE for bad options, ERR_MPI_LAUNCH for
 * inconsistent variables (a rank not below the size, MASTER_ADDR without MASTER_PORT, ranks on
 * several hosts with no MASTER_ADDR, a malformed Slurm list...).
 */
export function detectLaunch (options?: InitOptions, env: NodeJS.ProcessEnv = process.env): LaunchInfo {
  const opts = validateOptions(options)
  const e = new EnvReader(env)

  // 1. Explicit options.
  if (opts.rank !== undefined && opts.size !== undefined) {
    const known = opts.localRank !== undefined && opts.localSize !== undefined
    const info = {
      rank: opts.rank,
      size: opts.size,
      localRank: known ? opts.localRank as number : opts.rank,
      localSize: known ? opts.localSize as number : opts.size,
      launcher: 'options' as const,
      jobId: ''
    }
    checkConsistent(info, ['rank', 'size', 'localRank', 'localSize'])
    let store: StoreAddress | null = null
    if (opts.size > 1) {
      store = masterStore(opts, e) ?? (opts.storePath !== undefined ? { path: opts.storePath } : null)
      if (store === null) {
        throw launchError(`rank ${opts.rank} of ${opts.size} given as options, but no store: pass masterAddr and masterPort (or storePath), or set MASTER_ADDR and MASTER_PORT`)
      }
    }
    return { ...info, store, varsRead: e.read, localKnown: known || opts.size === 1 }
  }

  // 2. env:// (torch.distributed). Old torchrun versions set LOCAL_RANK without
  // LOCAL_WORLD_SIZE: both are then derived at bootstrap.
  const envRank = e.int('RANK', 0)
  const envSize = e.int('WORLD_SIZE', 1)
  if (envRank !== undefined || envSize !== undefined) {
    if (envRank === undefined) throw launchError(`WORLD_SIZE=${envSize} is set but RANK is not`)
    if (envSize === undefined) throw launchError(`RANK=${envRank} is set but WORLD_SIZE is not`)
    const lr = e.int('LOCAL_RANK', 0)
    const ls = e.int('LOCAL_WORLD_SIZE', 1)
    if (ls !== undefined && lr === undefined) throw launchError(`LOCAL_WORLD_SIZE=${ls} is set but LOCAL_RANK is not`)
    const known = lr !== undefined && ls !== undefined
    const info = { rank: envRank, size: envSize, localRank: known ? lr : envRank, localSize: known ? ls : envSize, launcher: 'env' as const }
    checkConsistent(info, ['RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE'])
    const jobId = e.get('FASTSOCK_MPI_JOB_ID') ?? e.get('TORCHELASTIC_RUN_ID') ?? ''
    let store: StoreAddress | null = null
    if (envSize > 1) {
      store = masterStore(opts, e) ?? (opts.storePath !== undefined ? { path: opts.storePath } : null)
      if (store === null) throw launchError(`RANK=${envRank} and WORLD_SIZE=${envSize} are set but MASTER_ADDR and MASTER_PORT are not`)
    }
    return { ...info, jobId, store, varsRead: e.read, localKnown: known || envSize === 1 }
  }

  // 3. Open MPI's mpirun (ORTE in 4.x, PRRTE in 5.x).
  const ompiRank = e.int('OMPI_COMM_WORLD_RANK', 0)
  if (ompiRank !== undefined) {
    const because = `OMPI_COMM_WORLD_RANK=${ompiRank}`
    const { info, known } = launcherRanks(e, ompiRank, 'openmpi', ['OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE', 'OMPI_COMM_WORLD_LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_SIZE'])
    const size = info.size
    const jobId = e.get('PMIX_NAMESPACE') ?? e.get('OMPI_MCA_ess_base_jobid') ?? e.get('OMPI_MCA_orte_ess_jobid')
    if (jobId === undefined && size > 1 && masterStore(opts, e) === undefined) {
      throw launchError(`${because} is set but no job id (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, OMPI_MCA_orte_ess_jobid) to find the store by: set MASTER_ADDR and MASTER_PORT`)
    }
    const nodes = e.int('OMPI_MCA_orte_num_nodes', 1)
    const oneHost = known ? info.localSize === size : nodes === 1
    const store = size === 1 ? null : localStore(opts, e, `openmpi:${jobId ?? ''}`, oneHost, 'Open MPI')
    return { ...info, jobId: jobId ?? '', store, varsRead: e.read, localKnown: known || size === 1 }
  }

  // 4. MPICH Hydra's mpiexec. srun's own PMI (--mpi=pmi2) also sets PMI_RANK, but not
  // MPI_LOCALRANKID: inside a Slurm step without it, Slurm's variables win (5).
  const pmiRank = e.int('PMI_RANK', 0)
  const hydraLocal = e.get('MPI_LOCALRANKID')
  const inStep = env.SLURM_STEP_ID !== undefined && env.SLURM_STEP_ID !== '' && env.SLURM_PROCID !== undefined && env.SLURM_PROCID !== ''
  if (pmiRank !== undefined && (hydraLocal !== undefined || !inStep)) {
    const { info, known } = launcherRanks(e, pmiRank, 'hydra', ['PMI_RANK', 'PMI_SIZE', 'MPI_LOCALRANKID', 'MPI_LOCALNRANKS'])
    const size = info.size
    // Hydra gives its ranks no job id in the environment (the KVS name is asked over PMI_FD);
    // every rank on a host descends from the same hydra_pmi_proxy, so its pid names the job.
    let jobId = e.get('PMI_KVSNAME') ?? e.get('PMI_JOBID') ?? e.get('PMI_PORT')
    if (jobId === undefined) jobId = `proxy-${hydraProxyPid()}`
    const oneHost = known && info.localSize === size
    const store = size === 1 ? null : localStore(opts, e, `hydra:${jobId}`, oneHost, 'MPICH Hydra')
    return { ...info, jobId, store, varsRead: e.read, localKnown: known || size === 1 }
  }

  // 5. Slurm's srun (a step's task; not the batch script's shell).
  const stepId = e.get('SLURM_STEP_ID')
  const procId = e.int('SLURM_PROCID', 0)
  if (stepId !== undefined && procId !== undefined) {
    const because = `SLURM_STEP_ID=${stepId} and SLURM_PROCID=${procId}`
    const size = e.int('SLURM_STEP_NUM_TASKS', 1) ?? e.int('SLURM_NTASKS', 1) ?? e.int('SLURM_NPROCS', 1)
    if (size === undefined) throw launchError(`${because} are set but none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS, SLURM_NPROCS`)
    const lr = e.int('SLURM_LOCALID', 0)
    let ls: number | undefined
    const tpn = e.get('SLURM_STEP_TASKS_PER_NODE') ?? e.get('SLURM_TASKS_PER_NODE')
    const nodeId = e.int('SLURM_NODEID', 0)
    if (tpn !== undefined && nodeId !== undefined) {
      const counts = expandTasksPerNode(tpn)
      if (nodeId >= counts.length) throw launchError(`SLURM_NODEID=${nodeId} but the tasks-per-node list '${tpn}' has ${counts.length} nodes`)
      ls = counts[nodeId]
    }
    const known = lr !== undefined && ls !== undefined
    const info = { rank: procId, size, localRank: known ? lr as number : procId, localSize: known ? ls as number : size, launcher: 'slurm' as const }
    checkConsistent(info, ['SLURM_PROCID', 'SLURM_STEP_NUM_TASKS', 'SLURM_LOCALID', 'SLURM_STEP_TASKS_PER_NODE'])
    const jobNum = e.get('SLURM_JOB_ID') ?? e.get('SLURM_JOBID') ?? ''
    const jobId = `${jobNum}.${stepId}`
    let store: StoreAddress | null = null
    if (size > 1) {
      store = masterStore(opts, e) ?? (opts.storePath !== undefined ? { path: opts.storePath } : undefined) ?? null
      if (store === null && known && ls === size) {
        // Every task on this node: a UNIX socket in the user's private directory, no port that
        // another user could take first (docs/mpi-launch.md, "When the port is taken").
        const tmp = e.get('TMPDIR')
        store = { path: storePathFor(`slurm:${jobId}`, tmp === undefined ? {} : { TMPDIR: tmp }) }
      }
      if (store === null) {
        const list = e.get('SLURM_STEP_NODELIST') ?? e.get('SLURM_JOB_NODELIST') ?? e.get('SLURM_NODELIST')
        if (list === undefined) throw launchError(`${because} are set but no node list (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST) and no MASTER_ADDR`)
        const host = firstHost(list)
        if (host === undefined) throw launchError(`the Slurm node list '${list}' is empty`)
        const resv = e.get('SLURM_STEP_RESV_PORTS')
        const m = resv === undefined ? null : /^(\d+)/.exec(resv)
        const port = m !== null && Number(m[1]) > 0 && Number(m[1]) < 65536 ? Number(m[1]) : portForJob(jobId)
        store = { host, port }
      }
    }
    return { ...info, jobId, store, varsRead: e.read, localKnown: known || size === 1 }
  }

  // 6. Singleton.
  if (opts.localRank !== undefined || opts.localSize !== undefined) {
    throw invalidArgType('The "rank" and "size" options are required when "localRank" or "localSize" is given')
  }
  return { rank: 0, size: 1, localRank: 0, localSize: 1, launcher: 'singleton', jobId: '', store: null, varsRead: e.read, localKnown: true }
}

/** `varsRead` with their values, for error messages: `A=1, B unset`. */
export function describeVars (info: Pick<LaunchInfo, 'varsRead'>, env: NodeJS.ProcessEnv = process.env): string {
  if (info.varsRead.length === 0) return 'no environment variables'
  return info.varsRead.map(n => env[n] === undefined ? `${n} unset` : `${n}=${env[n] ?? ''}`).join(', ')
}

/** The store address as text: `host:port` or `unix:<path>`. */
export function describeStore (store: StoreAddress | null): string {
  if (store === null) return 'no store'
  return 'path' in store ? `unix:${store.path}` : `${store.host.includes(':') ? `[${store.host}]` : store.host}:${store.port}`
}
