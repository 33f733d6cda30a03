/**
 * One rank of a `fastsock osu` job (run as `node tools/dist/osu/rank.js`, started P times by the
 * command through `fastsock mpirun`'s spawnRanks with env:// variables). Reads its JobConfig from
 * the environment variable FASTSOCK_OSU_CONFIG (JSON), joins the job with fastsock/mpi's `init`
 * (`{ transports }` for the Node net baseline), runs the benchmark size by size, and rank 0
 * appends one JSON line per size to `config.out` ({"row": RawRow}), then {"done": true,
 * "transports": {peer: transport}}. Any error: a message on stderr and exit status 1 (the
 * launcher then ends the job; the other ranks see ERR_MPI_PEER_LOST).
 */
import * as fs from 'fs'
import { loadMpi } from '../harness/library'
import { collective, pointToPoint, type BodyContext, type OsuComm, type OsuRequest } from './bodies'
import { isCollective } from './options'
import type { JobConfig } from './types'

/** fastsock/mpi as this script uses it (the module satisfies it: Comm is an OsuComm). */
export interface MpiModule {
  init (options?: { transports?: string[] }): Promise<OsuComm>
  finalize (): Promise<void>
  SUM: unknown
  waitAll (reqs: OsuRequest[]): Promise<unknown>
}

/** Parses and checks FASTSOCK_OSU_CONFIG; throws with code ERR_OSU_CONFIG. */
export function readConfig (env: NodeJS.ProcessEnv = process.env): JobConfig {
  const text = env.FASTSOCK_OSU_CONFIG
  const bad = (why: string): never => { throw Object.assign(new Error(`fastsock osu rank: ${why}`), { code: 'ERR_OSU_CONFIG' }) }
  if (text === undefined || text === '') return bad('FASTSOCK_OSU_CONFIG is not set (this script is started by `fastsock osu`)')
  let config: JobConfig
  try {
    config = JSON.parse(text) as JobConfig
  } catch (err) {
    return bad(`FASTSOCK_OSU_CONFIG is not JSON: ${(err as Error).message}`)
  }
  if (!Array.isArray(config.sizes) || typeof config.out !== 'string' || typeof config.benchmark !== 'string') bad('FASTSOCK_OSU_CONFIG lacks benchmark, sizes or out')
  return config
}

/** The tag of jitWarmup's go/stop message (the bodies' tags are small). */
const TAG_WARMUP = 9000

/**
 * Untimed passes of `body` over every size (OSU's warm-up count as iterations, rows dropped)
 * until rank 0 has spent `ms`: V8 optimizes the data path before anything is timed. The passes
 * get the same context and config objects as the timed ones (`untimed` changes the counts): a
 * copy of them had other hidden classes, and the optimized code was thrown away ("wrong map")
 * and compiled again (OSR, on a thread competing with two spinning ranks for 2 vCPUs) in the
 * middle of the first timed sizes, stalling them by up to ~40 ms.
 * After each pass rank 0 tells every rank whether another follows, so all make the same calls.
 * Returns the passes made (0 when `ms` is 0).
 */
export async function jitWarmup (ctx: BodyContext, body: typeof collective, ms: number): Promise<number> {
  if (!(ms > 0)) return 0
  const { comm, config } = ctx
  const go = new Uint8Array(1)
  const t0 = performance.now()
  let passes = 0
  do {
    for (const bytes of config.sizes) await body(ctx, bytes, true)
    passes++
    if (comm.rank === 0) {
      go[0] = performance.now() - t0 < ms ? 1 : 0
      for (let r = 1; r < comm.size; r++) await comm.send(go, r, TAG_WARMUP)
    } else {
      await comm.recv(go, 0, TAG_WARMUP)
    }
  } while (go[0] === 1)
  return passes
}

/** Runs the job's benchmark on this rank. */
export async function runRank (config: JobConfig, lib: MpiModule): Promise<void> {
  const comm = await lib.init(config.transports === null ? undefined : { transports: config.transports })
  const ctx: BodyContext = { comm, sum: lib.SUM, config, waitAll: lib.waitAll }
  const body = isCollective(config.benchmark) ? collective : pointToPoint
  const jitWarmupPasses = await jitWarmup(ctx, body, config.jitWarmupMs ?? 0)
  for (const bytes of config.sizes) {
    const row = await body(ctx, bytes)
    if (row !== null) fs.appendFileSync(config.out, JSON.stringify({ row }) + '\n')
  }
  if (comm.rank === 0) {
    const transports: Record<string, string> = {}
    for (let r = 1; r < comm.size; r++) {
      const t = comm.transportOf(r)
      if (typeof t === 'string') transports[String(r)] = t
    }
    fs.appendFileSync(config.out, JSON.stringify({ done: true, transports, jitWarmupPasses }) + '\n')
  }
  await lib.finalize()
}

if (require.main === module) {
  (async () => {
    // The library fastsock osu found, pinned in FASTSOCK_TOOLS_LIBRARY (../harness/library.ts).
    await runRank(readConfig(), loadMpi())
  })().then(
    () => process.exit(0),
    (err: unknown) => {
      const e = err as { code?: string, message?: string }
      process.stderr.write(`fastsock osu rank ${process.env.RANK ?? '?'}: ${e?.code !== undefined ? `${e.code}: ` : ''}${e?.message ?? String(err)}\n`)
      process.exit(1)
    }
  )
}
