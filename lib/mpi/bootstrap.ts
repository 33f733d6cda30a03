/**
 * The start of `mpi.init()`: find the launch (lib/mpi/launch.ts), serve the store in rank 0,
 * connect every rank to it (lib/mpi/store.ts), and fill in what the launcher did not say (the
 * local rank and size, from the host names the ranks publish). The caller (lib/mpi/index.ts)
 * then publishes its endpoint card in the store and builds the world communicator.
 *
 * Errors: detectLaunch's (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE, ERR_MPI_LAUNCH); MpiError
 * ERR_MPI_INIT_TIMEOUT when the store cannot be reached (or the other ranks do not show up for
 * the local-rank exchange) within `timeoutMs`, its message naming the variables read and the
 * address tried; ERR_MPI_LAUNCH when rank 0 cannot serve the store (every candidate address in
 * use: launch.ts storeCandidates), or when every candidate is held by something else.
 */
import * as os from 'os'
import { type MpiError, mpiError } from './errors'
import { DEFAULT_TIMEOUT_MS, describeStore, describeVars, detectLaunch, storeCandidates, type InitOptions, type LaunchInfo } from './launch'
import { MAX_UNPROVEN, StoreClient, StoreServer } from './store'
import { candidateKey, discoverSecret } from './auth'
import { findMunge, openSecret, SealedSecret } from './munge'

/** What bootstrap found and opened. `store`/`server` are null for a singleton; `server` is rank 0's only. */
export interface Bootstrap {
  info: LaunchInfo
  store: StoreClient | null
  server: StoreServer | null
  /** The job's secret key (lib/mpi/auth.ts), null when the launch gives none (one host only). */
  secret: Buffer | null
}

/** Key under which each rank publishes its host name for the local-rank exchange. */
export const HOST_KEY_PREFIX = 'fastsock/host/'

function isLoopback (a: string): boolean {
  return a === '' || a === '::1' || a.startsWith('127.')
}

/**
 * An address of this host that other hosts may reach: the first non-internal IPv4 address, else
 * the first non-internal IPv6 address (link-local excluded), else `fallback`.
 */
export function externalAddress (fallback: string): string {
  const all = Object.values(os.networkInterfaces()).flat().filter(a => a !== undefined && !a.internal)
  const v4 = all.find(a => a?.family === 'IPv4')
  if (v4 !== undefined) return v4.address
  const v6 = all.find(a => a?.family === 'IPv6' && !a.address.startsWith('fe80'))
  return v6?.address ?? fallback
}

function initTimeout (info: LaunchInfo, env: NodeJS.ProcessEnv, what: string, timeoutMs: number, cause: unknown): MpiError {
  return mpiError('ERR_MPI_INIT_TIMEOUT',
    `init: rank ${info.rank} of ${info.size} (launcher: ${info.launcher}) ${what} within ${timeoutMs} ms; ` +
    `store address tried: ${describeStore(info.store)}; variables read: ${describeVars(info, env)}`,
    { rank: info.rank, cause })
}

/**
 * A rank keeps V8's worker threads at their priority (FASTSOCK_HELPER_NICE=0 unless set). The
 * socket layer raises them to nice 19 when a process's first polling connection starts
 * (docs/polling.md), which shortens the tail of a request/response server, but a rank computes
 * between its messages: its garbage collector's and JIT's concurrent work runs on those
 * threads, and at nice 19 beside a busy CPU (its own main thread, a peer rank, any other
 * process) they hardly run, so that work falls to the main thread in long pauses. Measured (NPB
 * IS class A, 2 ranks on 2 vCPUs, other processes at load 7, 5 interleaved runs, medians):
 * 1.35 s with the workers at nice 19, 0.53 s at nice 0 (Node net: 0.68 s); with four ranks on two
 * CPUs (`fastsock osu allreduce --np 4 -m 64K:1M`, three runs each): 0.9-3.0 ms at nice 0,
 * 1.9-4.4 ms at nice 19. FASTSOCK_HELPER_NICE=19 restores the socket layer's choice.
 */
function rankHelpers (env: NodeJS.ProcessEnv): void {
  if (env !== process.env || env.FASTSOCK_HELPER_NICE !== undefined) return
  env.FASTSOCK_HELPER_NICE = '0'
}

/**
 * Detects the launch, serves the store (rank 0) and connects to it, retrying until
 * `options.timeoutMs` (default 30000 ms). For a singleton it opens nothing. Resolves with the
 * launch info (local rank/size derived when the launcher gave none) and the open store client and
 * server; the caller closes them at finalize (client.finalizing(), client.close(), then
 * server.close()). `env` defaults to process.env (a parameter for tests).
 */
export async function bootstrap (options?: InitOptions, env: NodeJS.ProcessEnv = process.env): Promise<Bootstrap> {
  const info = detectLaunch(options, env)
  rankHelpers(env)
  if (info.store === null) return { info, store: null, server: null, secret: null }
  let secret = discoverSecret(env, info.jobId)?.key ?? null
  // The secret every rank knows before the store's handshake (not MUNGE's): it hides where the
  // store moves when its port is taken (storeCandidates).
  const known = secret
  const timeoutMs = options?.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const deadline = Date.now() + timeoutMs
  // Under Slurm without a given secret, rank 0 seals one in MUNGE credentials where munged runs
  // (lib/mpi/munge.ts); the other ranks open it during the store's handshake.
  let munge = secret === null && info.launcher === 'slurm' ? findMunge(env) : null
  const oneHost = info.localKnown !== false && info.localSize === info.size
  let sealed: SealedSecret | null = null
  if (munge !== null && info.rank === 0) {
    try {
      sealed = await SealedSecret.create(munge, info.jobId)
      secret = sealed.key
    } catch (err) {
      // One host: the job runs without a secret (loopback, uid checks); several: it cannot.
      if (!oneHost) throw mpiError('ERR_MPI_LAUNCH', `init: ${(err as Error).message}; the ${info.size} ranks of this job span several hosts and need a job secret: ${HOW_SECRET}`, { rank: 0, cause: err })
      munge = null
    }
  }
  // Where the store is served and reached: the launcher's address, or loopback for a job without
  // a secret or on one host (info.store keeps the launcher's, for messages).
  const local = !('path' in info.store) && (secret === null || munge !== null) && (munge === null || oneHost)
  const addr = local ? loopbackStore(info, info.store as { host: string, port: number }, env, munge !== null) : info.store
  // A path detectLaunch or storeCandidates chose lives in this user's private directory: the
  // server creates it mode 700, the clients check it (a directory of someone else's could host a
  // fake store).
  const privatePath = options?.storePath === undefined
  // Where the store may be when another process took its port (or its directory) first
  // (docs/mpi-launch.md, "When the port is taken"): on one host, a UNIX socket in that directory
  // and a loopback port; across hosts, other ports. A socket path the user gave: only it.
  const sameHost = oneHost || local || ('host' in addr && (isLoopback(addr.host) || addr.host === 'localhost'))
  // Without a secret known up front, the user's per-user key (in the home directory, which
  // other users cannot write) hides them instead; no key: they come from the job id alone.
  const userKey = privatePath && known === null ? candidateKey(env) : null
  const candidates = privatePath ? storeCandidates(addr, { jobId: info.jobId, key: known, userKey, oneHost: sameHost }, env) : [addr]
  let server: StoreServer | null = null
  let store: StoreClient | null = null
  try {
    if (info.rank === 0) {
      try {
        server = await StoreServer.listen(candidates, { privateDir: privatePath, secret, sealed, maxUnproven: Math.max(MAX_UNPROVEN, 2 * info.size), ...(local ? { listenHost: (addr as { host: string }).host } : {}) })
      } catch (err) {
        const e = err as MpiError
        throw mpiError(e.code === 'ERR_MPI_LAUNCH' ? 'ERR_MPI_LAUNCH' : 'ERR_MPI_INIT_TIMEOUT',
          `init: rank 0 cannot serve the store at ${describeStore(info.store)}: ${e.message}; variables read: ${describeVars(info, env)}`,
          { rank: 0, cause: err })
      }
    }
    try {
      const m = munge
      const openSealed = m === null ? null : (cred: Buffer): Promise<Buffer> => openSecret(m, cred, info.jobId)
      store = await StoreClient.connect(server !== null ? server.address : candidates, { rank: info.rank, timeoutMs: Math.max(1, deadline - Date.now()), verifyDir: privatePath, secret, openSealed })
    } catch (err) {
      if ((err as MpiError).code === 'ERR_MPI_INIT_TIMEOUT') {
        const held = (err as { held?: string[] }).held ?? []
        const squat = held.length > 0 ? ` (store addresses held by processes that are not this job's store: ${held.join('; ')})` : ''
        throw initTimeout(info, env, `could not reach the store (is rank 0 running, and are MASTER_ADDR/MASTER_PORT right?)${squat}`, timeoutMs, err)
      }
      throw err
    }
    let result = info
    if (info.localKnown === false) result = await deriveLocal(info, store, deadline, timeoutMs, env)
    // Over loopback (a host name that resolves to 127.0.1.1, as Debian's /etc/hosts does) the
    // store connection says nothing about how other hosts reach this one.
    if (isLoopback(store.localAddress) && result.localSize < result.size && !('path' in info.store)) {
      store.localAddress = externalAddress(store.localAddress)
    }
    return { info: result, store, server, secret: store.secret }
  } catch (err) {
    if (store !== null) await store.close()
    if (server !== null) await server.close({ graceMs: 0 })
    throw err
  }
}

const HOW_SECRET = 'give every rank the same secret of at least 128 bits: FASTSOCK_MPI_SECRET=$(openssl rand -hex 32), or FASTSOCK_MPI_SECRET_FILE=<a file of mode 600>; under Slurm, munged on every node gives one (docs/mpi-launch.md, "Threat model")'

/**
 * A job without a secret runs on one host only, its store on loopback (no other host can reach
 * it; the peers' uids are checked): the store address with its host replaced by 127.0.0.1 (::1
 * for an IPv6 loopback). ERR_MPI_LAUNCH when the ranks span several hosts, or may (the launcher
 * did not say how many ranks share this host and the store address is not loopback), saying how
 * to give a secret.
 */
function loopbackStore (info: LaunchInfo, store: { host: string, port: number }, env: NodeJS.ProcessEnv, sealed = false): { host: string, port: number } {
  const how = HOW_SECRET
  if (sealed) return { host: store.host === '::1' ? '::1' : '127.0.0.1', port: store.port }
  if (info.localKnown !== false && info.localSize < info.size) {
    throw mpiError('ERR_MPI_LAUNCH', `init: the ${info.size} ranks of this job span several hosts (${info.localSize} on this one) and the launcher (${info.launcher}) gives no job secret: ${how}; variables read: ${describeVars(info, env)}`, { rank: info.rank })
  }
  if (info.localKnown === false && !isLoopback(store.host) && store.host !== 'localhost') {
    throw mpiError('ERR_MPI_LAUNCH', `init: the store is at ${describeStore(store)}, reachable from other hosts, and the launcher (${info.launcher}) gives no job secret nor says that every rank is on this host (LOCAL_WORLD_SIZE): ${how}`, { rank: info.rank })
  }
  return { host: store.host === '::1' ? '::1' : '127.0.0.1', port: store.port }
}

/**
 * Local rank and size from the host names every rank publishes under HOST_KEY_PREFIX<rank>:
 * localRank = how many lower ranks share this host name, localSize = how many ranks do.
 */
async function deriveLocal (info: LaunchInfo, store: StoreClient, deadline: number, timeoutMs: number, env: NodeJS.ProcessEnv): Promise<LaunchInfo> {
  const me = os.hostname()
  await store.set(HOST_KEY_PREFIX + String(info.rank), me)
  const hosts: string[] = []
  try {
    const left = (): number => Math.max(1, deadline - Date.now())
    const all = await Promise.all(Array.from({ length: info.size }, (_v, r) => store.get(HOST_KEY_PREFIX + String(r), { timeoutMs: left() })))
    for (const v of all) hosts.push(Buffer.from(v).toString('utf8'))
  } catch (err) {
    if ((err as MpiError).code === 'ERR_MPI_STORE_TIMEOUT') {
      const missing: number[] = []
      for (let r = 0; r < info.size; r++) if (!await store.check([HOST_KEY_PREFIX + String(r)]).catch(() => false)) missing.push(r)
      throw initTimeout(info, env, `did not hear from rank(s) ${missing.join(', ')}`, timeoutMs, err)
    }
    throw err
  }
  let localRank = 0
  let localSize = 0
  for (let r = 0; r < hosts.length; r++) {
    if (hosts[r] !== me) continue
    if (r < info.rank) localRank++
    localSize++
  }
  return { ...info, localRank, localSize, localKnown: true }
}
