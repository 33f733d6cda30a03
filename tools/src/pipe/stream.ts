/**
 * Streaming one-way bandwidth (NetPIPE -s), measuring side: keep the pipe full with n-byte writes,
 * honouring backpressure ('drain'), until `messages` writes are out; the peer counts the bytes and
 * sends one ack byte when all arrived. The time runs from the first write to the ack.
 */
import type * as net from 'net'

export class StreamClient {
  private readonly payloadStore: Buffer
  private payload: Buffer
  private messages = 0
  private sent = 0
  private done: ((err: Error | null) => void) | null = null

  constructor (private readonly socket: net.Socket, maxBytes: number) {
    this.payloadStore = Buffer.alloc(Math.max(1, maxBytes), 0x3c)
    this.payload = this.payloadStore.subarray(0, 1)
    socket.on('data', () => this.finish(null)) // the ack: one byte per run
    socket.on('error', (err) => this.finish(err))
    socket.on('close', () => this.finish(new Error('connection closed during stream')))
  }

  /**
   * Sends `messages` writes of `bytes` bytes; resolves with the elapsed ns until the peer's ack.
   * The peer must have been told to expect messages × bytes. Rejects after `timeoutMs`.
   */
  async run (bytes: number, messages: number, timeoutMs: number): Promise<number> {
    this.payload = this.payloadStore.subarray(0, bytes)
    this.messages = messages
    this.sent = 0
    const t0 = process.hrtime.bigint()
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.finish(new Error(`stream of ${messages} × ${bytes} B not acked within ${timeoutMs} ms`)), timeoutMs)
      this.done = (err) => {
        clearTimeout(timer)
        if (err === null) resolve()
        else reject(err)
      }
      this.pump()
    })
    return Number(process.hrtime.bigint() - t0)
  }

  private readonly pump = (): void => {
    while (this.sent < this.messages) {
      this.sent++
      if (!this.socket.write(this.payload)) {
        this.socket.once('drain', this.pump)
        return
      }
    }
  }

  private finish (err: Error | null): void {
    const done = this.done
    this.done = null
    if (done !== null) done(err)
  }
}
