/**
 * Typed mode, measuring side: a ping-pong of whole typed arrays. Each round trip sends this
 * process's array, the peer stores it into its own typed array and sends that back, and this side
 * stores it into a third array: RTT/2 is the one-way cost of encode + transfer + decode. The first
 * round trip is checked byte for byte, so every method is known to deliver the same array.
 */
import type * as net from 'net'
import { createCodec, ELEMENT_TYPES, fillPattern, sameBytes, type AnyTypedArray } from './codecs'
import type { ElementType, TypedMethod } from './types'

export interface TypedRun {
  /** Round-trip times, ns. */
  samplesNs: Float64Array
  count: number
}

/**
 * Runs round trips of one array with `method` on a fresh connection: one checked round trip,
 * up to `warmup` more untimed, then timed ones until `budgetMs` is spent and `minIters` ran (at
 * most `maxIters`). A round trip that takes longer than `stallMs` fails the cell. `onTimedStart`
 * runs between warm-up and the timed loop (CPU-time marks).
 */
export async function runTyped (socket: net.Socket, method: TypedMethod, elementType: ElementType, elements: number,
  opts: { budgetMs: number, minIters: number, maxIters: number, warmup: number, stallMs: number, onTimedStart?: () => Promise<void> }): Promise<TypedRun> {
  const Ctor = ELEMENT_TYPES[elementType]
  const src: AnyTypedArray = new Ctor(elements)
  const dst: AnyTypedArray = new Ctor(elements)
  fillPattern(src)
  const codec = createCodec(method, socket)
  const what = `${method} ${elementType}[${elements}]`
  // One watchdog for the whole cell (no timer per round trip): no progress for stallMs fails it.
  let progress = 0
  let seen = 0
  let stalled: Error | null = null
  const watchdog = setInterval(() => {
    if (progress === seen) {
      stalled = new Error(`${what}: no reply within ${opts.stallMs} ms`)
      socket.destroy(stalled)
    }
    seen = progress
  }, opts.stallMs)
  try {
    codec.send(src)
    await codec.receive(dst)
    progress++
    if (!sameBytes(src, dst)) throw new Error(`${what}: the array came back different`)
    const warmStart = process.hrtime.bigint()
    const warmBudget = BigInt(Math.round(opts.budgetMs * 0.25 * 1e6))
    for (let i = 0; i < opts.warmup && process.hrtime.bigint() - warmStart < warmBudget; i++) {
      codec.send(src)
      await codec.receive(dst)
      progress++
    }

    const samplesNs = new Float64Array(opts.maxIters)
    if (opts.onTimedStart !== undefined) await opts.onTimedStart()
    const budgetNs = BigInt(Math.round(opts.budgetMs * 1e6))
    const start = process.hrtime.bigint()
    let t0 = start
    let count = 0
    while (count < opts.maxIters) {
      codec.send(src)
      await codec.receive(dst)
      const t1 = process.hrtime.bigint()
      samplesNs[count++] = Number(t1 - t0)
      t0 = t1
      progress++
      if (count >= opts.minIters && t1 - start >= budgetNs) break
    }
    return { samplesNs, count }
  } catch (err) {
    // The receive fails with the socket's error; say that it was a stall when it was.
    throw stalled ?? err
  } finally {
    clearInterval(watchdog)
  }
}
