/**
 * Observatory's latency phase for `fastsock rate`: full round-trip times of one message of each
 * size on each channel, with their percentiles (p50, p90, p99, p99.9). It runs NetPIPE's
 * ping-pong (the harness's PingPongClient against a rate peer's ping-pong listeners) on a warm
 * connection per channel, sizes in turn, channels interleaved within each size.
 */
import type { Socket } from 'net'
import * as path from 'path'
import type * as SimpleStatistics from 'simple-statistics'
import { connect, labelFor, type ChannelAddress } from '../harness/channels'
import { loadOptional } from '../harness/optional'
import { PeerProcess } from '../harness/peer-process'
import { PingPongClient } from '../harness/pingpong'
import type { Progress } from '../harness/progress'
import { formatBytes } from '../harness/units'
import type { RatePeerRequest } from './protocol'
import type { RateChannel, RateConfig, RttRow } from './types'

/** p50, p90, p99, p99.9, min and mean of `samplesNs[0 .. count)`, in µs (simple-statistics, linear interpolation). */
export function percentilesUs (samplesNs: Float64Array, count: number): Pick<RttRow, 'p50Us' | 'p90Us' | 'p99Us' | 'p999Us' | 'minUs' | 'meanUs'> {
  const ss = loadOptional<typeof SimpleStatistics>('simple-statistics', 'the RTT percentiles of fastsock rate')
  const sorted = samplesNs.slice(0, count).sort() as unknown as number[]
  const q = (p: number): number => ss.quantileSorted(sorted, p) / 1e3
  return { p50Us: q(0.5), p90Us: q(0.9), p99Us: q(0.99), p999Us: q(0.999), minUs: sorted[0] / 1e3, meanUs: ss.mean(sorted) / 1e3 }
}

/**
 * Measures the round trips of every channel that connected in the rate phases. Failures are
 * reported through `onError` per channel; resolves with the rows measured.
 */
export async function measureRtt (channels: RateChannel[], config: RateConfig, peerCpu: number | null, progress: Progress,
  onError: (what: string, err: unknown) => void): Promise<RttRow[]> {
  const rows: RttRow[] = []
  const usable = channels.filter((c) => c.actual !== null && c.error === null)
  if (usable.length === 0 || config.rttIterations === 0) return rows
  const peer = await PeerProcess.start(path.join(__dirname, 'peer.js'), 10_000, peerCpu)
  const ask = async <T extends object = object>(req: RatePeerRequest): Promise<T> => await peer.request<T & { ok: true }>(req)
  const open: Array<{ ch: RateChannel, socket: Socket, client: PingPongClient, failed: boolean }> = []
  const maxBytes = Math.max(...config.sizes)
  try {
    await ask({ cmd: 'pingpong', bytes: 1 })
    for (const ch of usable) {
      try {
        const { actual: _a, error: _e, connectMs: _c, ...spec } = ch
        const { address } = await ask<{ address: ChannelAddress }>({ cmd: 'listen', channel: spec, serve: 'pingpong' })
        const { socket } = await connect(spec, address, config.timeoutMs)
        open.push({ ch, socket, client: new PingPongClient(socket, maxBytes, config.rttIterations), failed: false })
      } catch (err) {
        onError(`${ch.id} round trips`, err)
      }
    }
    /** Runs `fn` on channel `o` unless it failed before; a failure ends the channel, reported as `what`. */
    const attempt = async (o: typeof open[number], what: string, fn: () => Promise<void>): Promise<void> => {
      if (o.failed) return
      try {
        o.client.reset()
        await fn()
      } catch (err) {
        o.failed = true
        o.socket.destroy()
        onError(`${o.ch.id} ${what}`, err)
      }
    }
    // The peer process and these connections are new: before anything is timed, `jitWarmupMs`
    // of round trips per channel over every size (as the rate phases' warm-up), so that neither
    // process still compiles the ping-pong path (V8's workers preempting a polling main thread)
    // while the first size is timed. Without it the first size's p99 carried the peer's start-up:
    // 64 B p99 137-717 µs against 15-31 µs at 4 KiB, timed second.
    const perSize = config.jitWarmupMs / config.sizes.length
    for (const bytes of perSize > 0 ? config.sizes : []) {
      await ask({ cmd: 'pingpong', bytes })
      for (const o of open) {
        await attempt(o, `round trips ${formatBytes(bytes)} (warm-up)`, async () => {
          await o.client.run(bytes, { budgetNs: BigInt(Math.round(perSize * 1e6)), minIters: 10, maxIters: 1_000_000 }, config.timeoutMs, false)
        })
      }
    }
    for (const bytes of config.sizes) {
      await ask({ cmd: 'pingpong', bytes })
      for (const o of open) {
        progress.step(`round trips ${formatBytes(bytes)}: ${o.ch.id}`)
        await attempt(o, `round trips ${formatBytes(bytes)}`, async () => {
          // Warm-up at this size (buffers), not kept.
          await o.client.run(bytes, { budgetNs: 20_000_000n, minIters: 10, maxIters: 500 }, config.timeoutMs, false)
          const n = config.rttIterations
          await o.client.run(bytes, { budgetNs: 60_000_000_000n, minIters: n, maxIters: n }, config.timeoutMs)
          const actual = o.ch.actual as string
          rows.push({ channel: o.ch.id, transport: actual, label: labelFor(o.ch, actual), bytes, samples: o.client.count, ...percentilesUs(o.client.samplesNs, o.client.count) })
        })
        progress.tick()
      }
    }
  } finally {
    for (const o of open) o.socket.destroy()
    await peer.stop()
  }
  return rows
}
