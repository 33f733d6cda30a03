/**
 * Runs one job of P Node ranks (tools/dist/osu/rank.js) for `fastsock osu` and collects rank 0's
 * rows. The ranks are started by `startRanks` (env:// variables: RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); their JobConfig travels in FASTSOCK_OSU_CONFIG and
 * rank 0 appends its rows to a file in a private (mode 700) temporary directory, which this
 * process reads as it grows (progress) and at the end.
 *
 * Never a hang: a rank that exits with an error ends the job at once (the others are killed) and
 * the promise rejects with that rank's message (ERR_OSU_RANK_FAILED); a job whose output does not
 * grow for `timeoutMs` is killed and rejects (ERR_OSU_TIMEOUT).
 */
import * as fs from 'fs'
import * as os from 'os'
import * as path from 'path'
import { startRanks, type RankExit } from '../harness/ranks'
import type { JobConfig, RawRow } from './types'

/** What a Node job reports: its rows, and the transport rank 0 used to each peer. */
export interface NodeJobResult { rows: RawRow[], transports: Record<string, string>, jitWarmupPasses: number }

/** The rank script next to this file (tools/dist/osu/rank.js). */
export function rankScript (): string {
  return path.join(__dirname, 'rank.js')
}

function failure (message: string, code: string): Error {
  return Object.assign(new Error(message), { code })
}

/**
 * The useful part of a rank's stderr: the lines that name an error (a stack trace's message line
 * comes first, its frames after) and then the last `lines` lines, without repeats.
 */
function tail (text: string, lines = 8): string {
  const all = text.trim().split('\n')
  const named = all.filter((l) => /(Error|ERR_)\b|^fastsock/.test(l) && !/^\s+at /.test(l)).slice(0, 3)
  const last = all.slice(-lines).filter((l) => !named.includes(l))
  return [...named, ...(named.length > 0 && last.length > 0 ? ['…'] : []), ...last].join('\n')
}

/**
 * Runs `config` (its `out` is set here) on `np` Node ranks. `onRow` sees each row as it arrives.
 */
export async function runNodeJob (np: number, config: Omit<JobConfig, 'out'>, timeoutMs: number, onRow?: (row: RawRow) => void): Promise<NodeJobResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-osu-job-'))
  fs.chmodSync(dir, 0o700)
  const out = path.join(dir, 'rows.jsonl')
  fs.writeFileSync(out, '', { mode: 0o600 })
  const full: JobConfig = { ...config, out }
  const rows: RawRow[] = []
  let transports: Record<string, string> = {}
  let jitWarmupPasses = 0
  let done = false
  let consumed = 0
  const readNew = (): void => {
    const text = fs.readFileSync(out, 'utf8')
    const end = text.lastIndexOf('\n') + 1
    for (const line of text.slice(consumed, end).split('\n')) {
      if (line.trim() === '') continue
      const msg = JSON.parse(line) as { row?: RawRow, done?: boolean, transports?: Record<string, string>, jitWarmupPasses?: number }
      if (msg.row !== undefined) {
        rows.push(msg.row)
        onRow?.(msg.row)
      }
      if (msg.done === true) {
        done = true
        transports = msg.transports ?? {}
        jitWarmupPasses = msg.jitWarmupPasses ?? 0
      }
    }
    consumed = end
  }
  const job = startRanks(rankScript(), np, { FASTSOCK_OSU_CONFIG: JSON.stringify(full) })
  let lastSize = 0
  let lastChange = Date.now()
  let timedOut = false
  const poll = setInterval(() => {
    const size = fs.statSync(out).size
    if (size !== lastSize) {
      lastSize = size
      lastChange = Date.now()
      try { readNew() } catch { /* a partial line: next time */ }
    } else if (Date.now() - lastChange > timeoutMs) {
      timedOut = true
      job.killAll()
    }
  }, 100)
  let exits: RankExit[]
  try {
    exits = await job.exited
  } finally {
    clearInterval(poll)
  }
  try {
    readNew()
    const failed = exits.find((e) => e.failedFirst) ?? exits.find((e) => e.code !== 0)
    if (timedOut) {
      throw failure(`the job of ${np} ranks made no progress for ${timeoutMs / 1e3} s and was killed` +
        `${exits.map((e) => (e.stderr.trim() !== '' ? `\n  rank ${e.rank}: ${tail(e.stderr, 4)}` : '')).join('')}`, 'ERR_OSU_TIMEOUT')
    }
    if (failed !== undefined) {
      const how = failed.signal !== null ? `was killed by ${failed.signal}` : `exited with status ${String(failed.code)}`
      throw failure(`rank ${failed.rank} of ${np} ${how}${failed.stderr.trim() !== '' ? `:\n${tail(failed.stderr)}` : ''}`, 'ERR_OSU_RANK_FAILED')
    }
    if (!done || rows.length !== config.sizes.length) {
      throw failure(`the job of ${np} ranks ended after ${rows.length} of ${config.sizes.length} sizes`, 'ERR_OSU_RANK_FAILED')
    }
    return { rows, transports, jitWarmupPasses }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
