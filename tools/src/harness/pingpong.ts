/**
 * NetPIPE's ping-pong, measuring side: write n bytes, wait until n bytes came back, repeat. Each
 * round trip is timed with process.hrtime.bigint() into a preallocated sample buffer (ns); the
 * timed loop allocates nothing of its own (Node's 'data' chunks are the stream's). A round trip
 * ends when the last byte arrives and the next one starts at that same instant, so the samples
 * of one run add up to its elapsed time.
 *
 * Runs append to the sample buffer until reset(): a size is measured in several slices
 * interleaved with the other channels, and its samples are pooled.
 */
import type * as net from 'net'

/** How many round trips one run makes: stop after `budgetNs` once `minIters` ran, or at `maxIters`. */
export interface Repetitions {
  budgetNs: bigint
  minIters: number
  maxIters: number
}

export class PingPongClient {
  /** Round-trip times since the last reset(), ns; the first `count` entries are valid. */
  readonly samplesNs: Float64Array
  count = 0

  private readonly payloadStore: Buffer
  private payload: Buffer
  private bytes = 0
  private received = 0
  private runCount = 0
  private reps: Repetitions = { budgetNs: 0n, minIters: 0, maxIters: 0 }
  private runStart = 0n
  private t0 = 0n
  private done: ((err: Error | null) => void) | null = null

  /**
   * Listens on `socket` for the echoed bytes. `maxBytes` is the largest size to be sent,
   * `capacity` the most samples kept between resets.
   */
  constructor (private readonly socket: net.Socket, maxBytes: number, capacity: number) {
    this.samplesNs = new Float64Array(capacity)
    this.payloadStore = Buffer.alloc(Math.max(1, maxBytes), 0xa5)
    this.payload = this.payloadStore.subarray(0, 1)
    socket.on('data', this.onData)
    socket.on('error', (err) => this.finish(err))
    socket.on('close', () => this.finish(new Error('connection closed during ping-pong')))
  }

  /** Forgets the samples (next size). */
  reset (): void {
    this.count = 0
  }

  /**
   * Runs round trips of `bytes` bytes under `reps`, appending samples (fewer when the buffer is
   * full); resolves with the number of round trips made, or rejects when the connection fails
   * or no round trip completes for `stallMs`.
   */
  async run (bytes: number, reps: Repetitions, stallMs: number, keep = true): Promise<number> {
    this.bytes = bytes
    this.payload = this.payloadStore.subarray(0, bytes)
    this.reps = keep ? { ...reps, maxIters: Math.min(reps.maxIters, this.samplesNs.length - this.count) } : reps
    this.runCount = 0
    this.received = 0
    if (this.reps.maxIters <= 0) return 0
    const countAtStart = this.count
    let seen = 0
    return await new Promise<number>((resolve, reject) => {
      const watchdog = setInterval(() => {
        if (this.runCount === seen) this.finish(new Error(`ping-pong of ${bytes} B stalled for ${stallMs} ms after ${this.runCount} round trips`))
        seen = this.runCount
      }, stallMs)
      this.done = (err) => {
        clearInterval(watchdog)
        if (!keep) this.count = countAtStart
        if (err === null) resolve(this.runCount)
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
    // Warm-up runs (keep = false) may exceed the buffer: they write modulo its length.
    this.samplesNs[this.count % this.samplesNs.length] = Number(t1 - this.t0)
    this.count++
    this.runCount++
    this.t0 = t1
    const r = this.reps
    if (this.runCount >= r.maxIters || (this.runCount >= r.minIters && t1 - this.runStart >= r.budgetNs)) {
      this.finish(null)
      return
    }
    this.socket.write(this.payload)
  }
}

/**
 * NetPIPE's receiver, the peer's side of the ping-pong: waits for a whole message of the current
 * size, then sends one of the same size back. The size applies to every connection it serves,
 * from the next byte on.
 */
export class PingPongEcho {
  /** One reply buffer, grown on demand; `reply` is its first `bytes`. */
  private store = Buffer.alloc(64, 0x5a)
  private reply = this.store.subarray(0, 1)

  /** Sets the message size (bytes, >= 1). */
  setSize (bytes: number): void {
    if (this.store.length < bytes) this.store = Buffer.alloc(bytes, 0x5a)
    this.reply = this.store.subarray(0, bytes)
  }

  /** Echoes on `socket` until it closes. */
  serve (socket: net.Socket): void {
    let pending = 0
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.length
      while (pending >= this.reply.length) {
        pending -= this.reply.length
        socket.write(this.reply)
      }
    })
  }
}
