/**
 * Figures derived from the measured rows of a `fastsock rate` run: the ratio of each row to
 * Node net over TCP in the same cell, the cold-cache ÷ warm ratio, the issue's targets, and what
 * each rung's protocol overhead consists of. Pure functions over a RateResult.
 */
import { fmt, formatBytes } from '../harness/units'
import type { RateResult, RateRow, TargetCheck } from './types'

/** The key of a row's cell (everything but the channel). */
export function cellKey (r: Pick<RateRow, 'pattern' | 'direction' | 'bytes' | 'peers' | 'coldCache'>): string {
  return `${r.pattern}|${r.direction}|${r.bytes}|${r.peers}|${r.coldCache ? 'cold' : 'warm'}`
}

/** What can be observed of a rung's protocol overhead from user space, in a sentence. */
export function overheadNote (transport: string, kind: 'fastsock' | 'net'): string {
  if (kind === 'net' || transport === 'tcp' || transport === 'unix') return 'no framing beyond the kernel\'s; its cost is the system calls per message'
  switch (transport) {
    case 'shm': return 'the ring carries payload bytes only (no framing); eventfd doorbells count in the system calls; the control block\'s head/tail updates are not counted by the library'
    case 'verbs': return 'frames per message from transportStats() (eager, rendezvous and credit frames the measuring process sent)'
    default: return 'the rung\'s internal frames are not observable from user space; system calls per message only'
  }
}

/** Sets ratioVsNetTcp and coldOverWarm of every row, and the targets. */
export function derive (r: RateResult): void {
  const netTcp = new Map<string, RateRow>()
  const warm = new Map<string, RateRow>()
  for (const row of r.rows) {
    if (row.channel === 'net:tcp') netTcp.set(cellKey(row), row)
    if (!row.coldCache) warm.set(`${row.channel}|${cellKey(row)}`, row)
  }
  for (const row of r.rows) {
    const base = netTcp.get(cellKey(row))
    row.ratioVsNetTcp = base === undefined ? null : row.msgPerSec / base.msgPerSec
    const w = row.coldCache ? warm.get(`${row.channel}|${cellKey({ ...row, coldCache: false })}`) : undefined
    row.coldOverWarm = w === undefined ? null : row.msgPerSec / w.msgPerSec
  }
  r.targets = targets(r.rows)
}

const M = (x: number): string => `${fmt(x / 1e6)} M msg/s`

/**
 * The issue's targets: (1) 64 B, one pair, single-direction with a window: fastsock:shm ≥ 1 M
 * msg/s and ≥ 3× net:tcp; (2) pair-based and all-start with 2 and 4 peers: shm ahead of net:tcp
 * and net:unix at every size measured (up to 64 KiB), in the warm cells (msgrate's default; the
 * cold cells' standing is added to the detail, as the issue asks only to print them beside).
 */
export function targets (rows: RateRow[]): TargetCheck[] {
  const out: TargetCheck[] = []
  const find = (channel: string, pattern: string, direction: string, bytes: number, peers: number, cold: boolean): RateRow | undefined =>
    rows.find((x) => x.channel === channel && x.pattern === pattern && x.direction === direction && x.bytes === bytes && x.peers === peers && x.coldCache === cold)
  const shm = find('fastsock:shm', 'single-direction', 'fan-out', 64, 1, false)
  const tcp = find('net:tcp', 'single-direction', 'fan-out', 64, 1, false)
  if (shm === undefined || tcp === undefined) {
    out.push({ target: '64 B single-direction, 1 pair: shm ≥ 1 M msg/s and ≥ 3× net:tcp', met: null, detail: 'not measured in this run (needs 64 B, 1 peer, fan-out, warm, fastsock:shm and net:tcp)' })
  } else {
    const ratio = shm.msgPerSec / tcp.msgPerSec
    out.push({
      target: '64 B single-direction, 1 pair: shm ≥ 1 M msg/s and ≥ 3× net:tcp',
      met: shm.msgPerSec >= 1e6 && ratio >= 3,
      detail: `fastsock:shm ${M(shm.msgPerSec)} counted sent + received (${M(shm.deliveredPerSec)} delivered, osu_mbw_mr's count), ` +
        `net:tcp ${M(tcp.msgPerSec)}: ${ratio.toFixed(2)}×; posting the window took ${fmt(shm.postUsPerMsg)} µs/msg on shm, ` +
        `${fmt(tcp.postUsPerMsg)} on net:tcp (${fmt(100 * shm.postShare)}% and ${fmt(100 * tcp.postShare)}% of the time; the rest is waiting for the peer's ack)`
    })
  }
  for (const pattern of ['pair-based', 'all-start']) {
    for (const peers of [2, 4]) {
      const cells = rows.filter((x) => x.channel === 'fastsock:shm' && x.pattern === pattern && x.peers === peers)
      const target = `${pattern}, ${peers} peers: shm ahead of net:tcp and net:unix at every size (warm)`
      const compare = (coldCache: boolean): { behind: string[], worst: number, n: number } => {
        const behind: string[] = []
        let worst = Infinity
        let n = 0
        for (const s of cells.filter((x) => x.coldCache === coldCache)) {
          n++
          for (const net of ['net:tcp', 'net:unix']) {
            const other = find(net, pattern, s.direction, s.bytes, peers, coldCache)
            if (other === undefined) continue
            const ratio = s.msgPerSec / other.msgPerSec
            worst = Math.min(worst, ratio)
            if (ratio <= 1) behind.push(`${formatBytes(s.bytes)} vs ${net} (${ratio.toFixed(2)}×)`)
          }
        }
        return { behind, worst, n }
      }
      const warm = compare(false)
      const cold = compare(true)
      if (warm.n === 0) {
        out.push({ target, met: null, detail: 'no warm cell measured in this run' })
        continue
      }
      const coldNote = cold.n === 0 || !Number.isFinite(cold.worst)
        ? ''
        : `; cold cells (printed beside, not part of the target): ${cold.behind.length === 0 ? `ahead, lowest ${fmt(cold.worst)}×` : `behind at ${cold.behind.join(', ')}`}`
      out.push({
        target,
        met: Number.isFinite(warm.worst) ? warm.behind.length === 0 : null,
        detail: (warm.behind.length === 0 ? `lowest ratio ${fmt(warm.worst)}× over ${warm.n} cells` : `behind at ${warm.behind.join(', ')}`) + coldNote
      })
    }
  }
  const cold = rows.filter((x) => x.coldOverWarm !== null && x.channel === 'fastsock:shm')
  if (cold.length > 0) {
    const ratios = cold.map((x) => x.coldOverWarm as number).sort((a, b) => a - b)
    out.push({ target: 'cold cache beside warm', met: true, detail: `fastsock:shm cold ÷ warm from ${fmt(ratios[0])} to ${fmt(ratios[ratios.length - 1])} over ${cold.length} cells (tables: "warm / cold (c/w)")` })
  }
  return out
}
