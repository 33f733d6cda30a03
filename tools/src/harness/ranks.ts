/**
 * Starting the P Node ranks of a tool's job (`fastsock osu`, `fastsock npb`) on this host, through `fastsock mpirun`'s
 * spawnRanks (the library's lib/cli/mpirun.ts, from fastsock/internal): env:// variables (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT, FASTSOCK_MPI_JOB_ID), each rank in its
 * own process group, the first rank to fail ends the job (the others get SIGTERM, then SIGKILL).
 * This file adapts it to what the tools' jobs need: each rank's exit with the end of its stderr,
 * and which rank failed first.
 */
import type { JobResult } from 'fastsock/internal'
import { track } from './children'
import { loadInternal } from './library'

/** How one rank ended. `failedFirst`: the first rank that failed (the cause of the job's end). */
export interface RankExit {
  rank: number
  code: number | null
  signal: string | null
  stderr: string
  failedFirst: boolean
}

/** A started job: `exited` resolves when every rank has exited; `killAll()` ends it. */
export interface RankJob {
  exited: Promise<RankExit[]>
  killAll: () => void
}

/** Starts `np` ranks of `node script` with the env:// variables plus `env`. */
export function startRanks (script: string, np: number, env: Record<string, string>): RankJob {
  const stderr: string[] = Array.from({ length: np }, () => '')
  let kill: () => void = () => {}
  let killed = false
  const exited = (async () => {
    const job = await loadInternal().spawnRanks({
      np,
      command: process.execPath,
      args: [script],
      env: { ...process.env, ...env },
      stdio: 'pipe',
      prefix: false,
      killGraceMs: 500,
      onLine: (rank, stream, line) => { if (stream === 'stderr') stderr[rank] = (stderr[rank] + line + '\n').slice(-8000) }
    })
    for (const c of job.children) track(c)
    kill = () => job.kill('SIGKILL')
    if (killed) kill()
    const result: JobResult = await job.done
    return result.exits.map((e): RankExit => ({
      rank: e.rank,
      code: e.code,
      signal: e.signal,
      stderr: stderr[e.rank],
      failedFirst: e.rank === result.failedRank
    }))
  })()
  return { exited, killAll: () => { killed = true; kill() } }
}
