/**
 * L2, admission in accept order for the side-channel listener: a loopback TCP server sees its
 * connections in the order they were opened (the kernel's accept queue is FIFO, the handshake is
 * the kernel's); a side-channel connection is ready only after its own handshake and rung set-up
 * (shm maps a segment), whose durations differ. So each accepted side-channel client takes a
 * slot, in accept order, and a connection that is ready is handed to the server only after every
 * earlier slot was admitted or failed. A slot that keeps later ones waiting longer than
 * `holdMs` (a client that connected and sent nothing) stops holding them: order is kept where
 * the set-up allows, and a slow or silent client delays others by `holdMs` at most.
 */

/** One accepted client's place in the queue. */
export interface AdmissionSlot<T> {
  /** The connection is ready: hand `value` over once every earlier slot is settled. */
  admit (value: T): void
  /** The connection failed or was turned away: later slots need not wait for it. */
  fail (): void
}

interface Entry<T> {
  settled: boolean
  failed: boolean
  value: T | null
  /** When it was accepted (ms, Date.now()). */
  since: number
  /** Out of the queue (it held later slots past holdMs): admitted as soon as it is ready. */
  detached: boolean
}

/** Slots in accept order; `deliver` gets each admitted value, in order (see the module comment). */
export class AdmissionQueue<T> {
  private readonly queue: Array<Entry<T>> = []
  private timer: NodeJS.Timeout | null = null

  /** `deliver(value)` receives admitted values; `holdMs` bounds how long one slot holds later ones. */
  constructor (private readonly deliver: (value: T) => void, private readonly holdMs: number) {}

  /** A slot for the client accepted now (after every slot handed out before). */
  enter (): AdmissionSlot<T> {
    const e: Entry<T> = { settled: false, failed: false, value: null, since: Date.now(), detached: false }
    this.queue.push(e)
    return {
      admit: value => {
        if (e.settled) return
        e.settled = true
        if (e.detached) return this.deliver(value)
        e.value = value
        this.flush()
      },
      fail: () => {
        if (e.settled) return
        e.settled = true
        e.failed = true
        if (!e.detached) this.flush()
      }
    }
  }

  /** Hands over every settled slot at the head; arms the hold timer for an unsettled head. */
  private flush (): void {
    this.disarm()
    while (this.queue.length > 0) {
      const head = this.queue[0]
      if (!head.settled) {
        // Later ones may be ready and waiting for the head: wait at most holdMs for it.
        if (this.queue.some(e => e.settled)) this.arm(head)
        return
      }
      this.queue.shift()
      const value = head.value
      head.value = null
      if (!head.failed) this.deliver(value as T)
    }
  }

  private arm (head: Entry<T>): void {
    const waitMs = Math.max(0, head.since + this.holdMs - Date.now())
    this.timer = setTimeout(() => {
      this.timer = null
      if (this.queue[0] === head && !head.settled) {
        this.queue.shift()
        head.detached = true
      }
      this.flush()
    }, waitMs)
    this.timer.unref()
  }

  private disarm (): void {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
  }
}
