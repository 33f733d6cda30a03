/**
 * NetPIPE's ping-pong, measuring side: write n bytes, wait until n bytes came back, repeat. Each
 * round trip is timed with process.hrtime.bigint() into a preallocated sample buffer (ns); the
 * timed loop allocates nothing of its own (Node's 'data' chunks are the stream's). A round trip
 * ends when the last byte arrives, and the next one starts at that same instant, so the samples
 * add up to the elapsed time.
 */
import type * as net from 'net'

/** How many round trips one size gets: stop after `budgetNs` once `minIters` ran, or at `maxIters`. */
export interface Repetitions {
  budgetNs: bigint
  minIters: number
  maxIters: number
}

export class PingPongClient {
  /** Round-trip times of the last run, ns; the first `count` entries are valid. */
  readonly samplesNs: Float64Array
  count = 0

  private readonly payloadStore: Buffer
  private payload: Buffer
  private bytes = 0
  private received = 0
  private reps: Repetitions = { budgetNs: 0n, minIters: 0, maxIters: 0 }
  private runStart = 0n
  private t0 = 0n
  private done: ((err: Error | null) => void) | null = null

  /**
   * Listens on `socket` for the echoed bytes. `maxBytes` is the largest size to be sent,
   * `maxIters` the largest repetition count (sizes the sample buffer).
   */
  constructor (private readonly socket: net.Socket, maxBytes: number, maxIters: number) {
    this.samplesNs = new Float64Array(maxIters)
    this.payloadStore = Buffer.alloc(Math.max(1, maxBytes), 0xa5)
    this.payload = this.payloadStore.subarray(0, 1)
    socket.on('data', this.onData)
    socket.on('error', (err) => this.finish(err))
    socket.on('close', () => this.finish(new Error('connection closed during ping-pong')))
  }

  /**
   * Runs round trips of `bytes` bytes under `reps`; resolves with the number of round trips, or
   * rejects when the connection fails or stalls for `stallMs`.
   */
  async run (bytes: number, reps: Repetitions, stallMs: number): Promise<number> {
    if (reps.maxIters > this.samplesNs.length) throw new RangeError(`maxIters ${reps.maxIters} > ${this.samplesNs.length}`)
    this.bytes = bytes
    this.payload = this.payloadStore.subarray(0, bytes)
    this.reps = reps
    this.count = 0
    this.received = 0
    let lastCount = 0
    return await new Promise<number>((resolve, reject) => {
      const watchdog = setInterval(() => {
        if (this.count === lastCount) this.finish(new Error(`ping-pong of ${bytes} B stalled for ${stallMs} ms after ${this.count} round trips`))
        lastCount = this.count
      }, stallMs)
      this.done = (err) => {
        clearInterval(watchdog)
        if (err === null) resolve(this.count)
        else reject(err)
      }
      this.runStart = this.t0 = process.hrtime.bigint()
      this.socket.write(this.payload)
    })
  }

  private finish (err: Error | null): void {
    const done = this.done
    this.done = null
    if (done !== null) done(err)
  }

  private readonly onData = (chunk: Buffer): void => {
    this.received += chunk.length
    if (this.received < this.bytes || this.done === null) return
    const t1 = process.hrtime.bigint()
    this.received -= this.bytes
    this.samplesNs[this.count++] = Number(t1 - this.t0)
    this.t0 = t1
    const r = this.reps
    if (this.count >= r.maxIters || (this.count >= r.minIters && t1 - this.runStart >= r.budgetNs)) {
      this.finish(null)
      return
    }
    this.socket.write(this.payload)
  }
}
