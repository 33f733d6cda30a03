/**
 * The native limits printed beside every result of the same run (the addon's floors, through
 * fastsock/internal):
 * - the busy-poll floor: a shared-memory cache-line ping-pong between two threads
 *   (floors.spinPingPongNs), whose half round trip also tells the cross-core placement of this
 *   VM's vCPUs (~50 ns: cores share a cache; ~200 ns: they do not);
 * - memcpy time and bandwidth for each message size (floors.memcpyTimeNs): the ceiling of a
 *   shared-memory copy;
 * - NetPIPE's own NPtcp (Debian package netpipe-tcp) between two C processes, when on PATH.
 */
import { spawn } from 'child_process'
import * as fs from 'fs'
import * as net from 'net'
import * as os from 'os'
import * as path from 'path'
import { track } from '../harness/children'
import { loadInternal } from '../harness/library'
import { onCpu } from '../harness/pinning'
import { median } from '../harness/stats'
import type { NptcpRow, PlacementProbe } from './types'
import { mbPerSec } from '../harness/units'

type Internal = ReturnType<typeof loadInternal>

let internal: { mod: Internal | null, error: string | null } | null = null

/** fastsock/internal, or null with why (the library is not found, or did not load). Cached. */
function internalOrNull (): { mod: Internal | null, error: string | null } {
  if (internal === null) {
    try {
      internal = { mod: loadInternal(), error: null }
    } catch (err) {
      internal = { mod: null, error: `fastsock/internal did not load: ${(err as Error).message.split('\n')[0]}` }
    }
  }
  return internal
}

/** The addon's floors, or null (see floorsUnavailable). */
export function floors (): Internal['floors'] {
  return internalOrNull().mod?.floors ?? null
}

/** Why floors() is null, or null. */
export function floorsUnavailable (): string | null {
  const { mod, error } = internalOrNull()
  return mod === null ? error : mod.floorsUnavailable
}

/** Whether the library's native addon loaded, and why not: the `native` fields of pipe's JSON. */
export function nativeState (): { loaded: boolean, loadError: string | null } {
  const { mod, error } = internalOrNull()
  return mod === null ? { loaded: false, loadError: error } : { ...mod.addon }
}

/** Half round trips below this (ns) mean the two threads' cores share a cache. */
export const NEAR_THRESHOLD_NS = 110
/** A run above this (ns) had a spinning thread preempted: the CPUs are not ours alone. */
export const BUSY_THRESHOLD_NS = 1000

/**
 * Runs the busy-poll ping-pong `runs` times of `iterations` round trips; returns the median half
 * round trip (ns) and the placement it implies. Blocks this thread for ~runs × 3 ms.
 */
export function probePlacement (runs = 7, iterations = 20_000): PlacementProbe | null {
  const native = floors()
  if (native === null) return null
  // Two spinning threads on one CPU would take a scheduler tick per round trip (minutes).
  if (os.availableParallelism() < 2) return null
  const runsNs: number[] = []
  native.spinPingPongNs(iterations) // wake both vCPUs up first (a halted vCPU reads ~1 µs)
  for (let i = 0; i < runs; i++) runsNs.push(native.spinPingPongNs(iterations) / iterations / 2)
  const halfRttNs = median(runsNs)
  const preempted = runsNs.filter((ns) => ns > BUSY_THRESHOLD_NS).length
  const state = !Number.isFinite(halfRttNs) || halfRttNs <= 0
    ? 'unknown'
    : preempted >= 2 || halfRttNs > BUSY_THRESHOLD_NS ? 'busy' : halfRttNs < NEAR_THRESHOLD_NS ? 'near' : 'far'
  return { halfRttNs, state, runsNs }
}

/** A sentence for the report. */
export function describePlacement (p: PlacementProbe | null): string {
  if (p === null) return floors() === null ? `unknown (${floorsUnavailable() ?? 'no native floors'})` : 'unknown (this process may use only one CPU)'
  const ns = p.halfRttNs.toFixed(0)
  switch (p.state) {
    case 'near': return `near: core-to-core ${ns} ns (RTT/2), the two vCPUs share a cache (~50 ns state)`
    case 'far': return `far: core-to-core ${ns} ns (RTT/2), the vCPUs sit on cores without a shared cache (~200 ns state)`
    case 'busy': return `busy: core-to-core runs of ${p.runsNs.map((x) => x.toFixed(0)).join(', ')} ns: other processes compete for the CPUs, figures are disturbed`
    default: return `unknown (${ns} ns)`
  }
}

/**
 * memcpy time (ns per copy) for each size, warm in cache, about `targetNs` of copying per size.
 * Returns an empty list without the addon.
 */
export function measureMemcpy (sizes: number[], targetNs = 3e6): Array<{ bytes: number, ns: number, mbPerSec: number }> {
  const native = floors()
  if (native === null) return []
  return [...new Set(sizes)].sort((a, b) => a - b).map((bytes) => {
    // ~20 ns call + ~20 GB/s when out of L1: enough iterations for targetNs, at least 10.
    const iterations = Math.max(10, Math.min(1_000_000, Math.ceil(targetNs / (20 + bytes / 20))))
    const ns = native.memcpyTimeNs(bytes, iterations) / iterations
    return { bytes, ns, mbPerSec: mbPerSec(bytes, ns) }
  })
}


async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as net.AddressInfo
      s.close(() => resolve(a.port))
    })
  })
}

/**
 * Runs NPtcp (receiver on `receiverCpu`, transmitter here) over TCP loopback up to
 * `maxBytes`, `repeats` round trips per size, with its ±3-byte perturbations. Its output file
 * holds: bytes, Mbit/s, seconds per half round trip. Resolves with the rows, or rejects on
 * failure or after `timeoutMs`.
 */
export async function runNptcp (exe: string, maxBytes: number, repeats: number, timeoutMs: number, receiverCpu: number | null = null): Promise<NptcpRow[]> {
  const port = String(await freePort())
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-nptcp-'))
  const out = path.join(dir, 'np.out')
  const quiet = { stdio: ['ignore', 'ignore', 'pipe'] as Array<'ignore' | 'pipe'> }
  // The receiver is placed like the peer; the transmitter inherits this process's CPU.
  const prefix = onCpu(receiverCpu)
  const receiver = track(prefix.length > 0 ? spawn(prefix[0], [...prefix.slice(1), exe, '-P', port], quiet) : spawn(exe, ['-P', port], quiet))
  try {
    await new Promise((resolve) => setTimeout(resolve, 200)) // let the receiver bind
    // -p 3: NPtcp's default perturbation; with -p 0 this build stalls at 16 bytes.
    const sender = track(spawn(exe, ['-h', '127.0.0.1', '-P', port, '-u', String(maxBytes), '-n', String(repeats), '-p', '3', '-o', out], quiet))
    let stderr = ''
    sender.stderr?.on('data', (d: Buffer) => { stderr += d.toString() })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        sender.kill('SIGKILL')
        reject(new Error(`NPtcp did not finish within ${timeoutMs} ms`))
      }, timeoutMs)
      sender.once('error', (err) => { clearTimeout(timer); reject(err) })
      sender.once('exit', (code, signal) => {
        clearTimeout(timer)
        if (code === 0) resolve()
        else reject(new Error(`NPtcp exited with ${String(code ?? signal)}: ${stderr.trim().slice(-200)}`))
      })
    })
    return parseNpOut(fs.readFileSync(out, 'utf8'))
  } finally {
    receiver.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Parses NPtcp's output file (bytes, Mbit/s, seconds per RTT/2) into rows. */
export function parseNpOut (text: string): NptcpRow[] {
  const rows: NptcpRow[] = []
  for (const line of text.split('\n')) {
    const [b, , s] = line.trim().split(/\s+/).map(Number)
    if (!Number.isFinite(b) || !Number.isFinite(s) || s <= 0) continue
    const halfRttUs = s * 1e6
    rows.push({ bytes: b, halfRttUs, mbPerSec: b / halfRttUs })
  }
  return rows
}
