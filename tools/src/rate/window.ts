/**
 * The data path of `fastsock rate`, shared by the measuring process and its peers. A message of
 * n bytes is one n-byte write on the byte stream; the receiver only counts bytes. The sender
 * writes a window of messages back to back (cork ... uncork: one writev where the transport
 * takes it), so that throughput is not one round trip per message, and the receiver acknowledges
 * per window (osu_mbw_mr's method). The few control bytes of the protocol (barrier, go, ack: see
 * protocol.ts) are told apart from data by count alone: each side knows exactly how many bytes it
 * expects next, and control bytes travel only where the stream is otherwise quiet.
 */
import type * as net from 'net'

/**
 * The send buffers of one process: one window of messages in one allocation, with a view per
 * message prepared up front (no allocation per message while sending).
 */
export class Payload {
  private store: Buffer = Buffer.alloc(0)
  /** One view of `bytes` bytes per message of the window. */
  views: Buffer[] = []
  private seed = 0

  /** Sizes the buffers for `window` messages of `bytes` bytes (reuses the allocation when it fits). */
  resize (window: number, bytes: number): void {
    if (this.store.length < window * bytes) this.store = Buffer.alloc(window * bytes, 0x5a)
    this.views = []
    for (let i = 0; i < window; i++) this.views.push(this.store.subarray(i * bytes, (i + 1) * bytes))
  }

  /** Writes every byte of the window (msgrate: send buffers are written just before the sends). */
  touch (): void {
    this.seed = (this.seed + 1) & 0xff
    const end = this.views.length === 0 ? 0 : this.views[this.views.length - 1].byteOffset - this.store.byteOffset + this.views[this.views.length - 1].length
    this.store.fill(this.seed, 0, end)
  }
}

/**
 * Writes `messages` messages from `payload` (cycling through its window), one window per corked
 * batch, with `prefix` (a control byte) first when given. Waits for 'drain' whenever the socket
 * says its buffer is full, so a long stream (bidirectional) keeps memory bounded. Resolves when
 * every write was handed to the socket (not when it arrived: the receiver's ack tells that).
 */
export async function sendMessages (socket: net.Socket, payload: Payload, messages: number, prefix: Buffer | null = null): Promise<void> {
  const views = payload.views
  const window = views.length
  let sent = 0
  let first = prefix
  while (sent < messages) {
    const batch = Math.min(window, messages - sent)
    socket.cork()
    if (first !== null) socket.write(first)
    first = null
    let ok = true
    for (let i = 0; i < batch; i++) ok = socket.write(views[i])
    socket.uncork()
    sent += batch
    if (!ok && sent < messages) await drained(socket)
  }
  if (first !== null) socket.write(first)
}

async function drained (socket: net.Socket): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => { socket.off('close', onClose); resolve() }
    const onClose = (): void => { socket.off('drain', onDrain); reject(new Error('connection closed while sending')) }
    socket.once('drain', onDrain)
    socket.once('close', onClose)
  })
}

/**
 * Counts the bytes arriving on a socket and resolves `expect(n)` once n more have arrived (bytes
 * beyond n count toward the next expectation). One pending expectation at a time.
 */
export class ByteCounter {
  private have = 0
  private need = 0
  private waiter: { resolve: () => void, reject: (err: Error) => void } | null = null
  private failure: Error | null = null

  constructor (socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.have += chunk.length
      if (this.waiter !== null && this.have >= this.need) {
        const w = this.waiter
        this.waiter = null
        this.have -= this.need
        w.resolve()
      }
    })
    const fail = (err: Error): void => {
      this.failure ??= err
      const w = this.waiter
      this.waiter = null
      w?.reject(this.failure)
    }
    socket.on('error', fail)
    socket.on('close', () => fail(new Error('connection closed during the measurement')))
  }

  /** Resolves when `bytes` more bytes have arrived; rejects when the connection fails. */
  async expect (bytes: number): Promise<void> {
    if (this.failure !== null) throw this.failure
    if (this.have >= bytes) {
      this.have -= bytes
      return
    }
    this.need = bytes
    await new Promise<void>((resolve, reject) => { this.waiter = { resolve, reject } })
  }

  /** Rejects a pending expectation with `err` (a watchdog fired); later bytes are counted anew. */
  abort (err: Error): void {
    const w = this.waiter
    this.waiter = null
    this.have = 0
    w?.reject(err)
  }
}
