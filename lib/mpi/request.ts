/**
 * Request: a pending point-to-point operation (MPI_Request), returned by isend/irecv (and the
 * collectives' internal sends/receives). It completes once, with a Status or an error; no
 * promise exists until someone waits (the layer's hot path allocates none it can avoid).
 *
 * - `wait({ signal?, timeout? })`: Promise<Status>; rejects with the operation's error, with
 *   MpiError ERR_MPI_TIMEOUT after `timeout` ms (the operation itself goes on), or with an
 *   AbortError when `signal` aborts.
 * - `test()`: the Status when done, null while pending; throws the operation's error.
 * - `waitAll`, `waitAny`, `testAll`: over arrays of requests (MPI_Waitall/Waitany/Testall).
 */
import { Status } from './status'
import { abortError, invalidArgType, timedOut, wouldBlock } from './errors'

type Listener = (req: Request) => void

/**
 * The event loop stays alive while someone awaits a request. The job's connections are unref'd
 * (device-init.ts: a rank whose program is done finalizes by itself at 'beforeExit'), so without
 * this an awaited receive could leave the loop with no ref'd handle: libuv's run then returns,
 * Node drains V8's background tasks (it blocks until concurrent compile jobs finish: milliseconds
 * in a cold process; in Node 20 it can deadlock with a job waiting for a GC) and emits
 * 'beforeExit', whose handler kept the loop going with a 50 ms timer. One timer that never fires
 * is ref'd while at least one wait is pending and unref'd when none is (`Timeout.ref()` and
 * `unref()` are flag flips; libuv's timer is toggled only when the process-wide count crosses 0).
 */
let waiting = 0
let keeper: NodeJS.Timeout | null = null

function noop (): void {}

/** One more pending wait: the loop stays alive until the matching release(). */
function hold (): void {
  if (waiting++ === 0) {
    if (keeper === null) keeper = setInterval(noop, 0x7fffffff)
    else keeper.ref()
  }
}

/** A pending wait settled. */
function release (): void {
  if (--waiting === 0) keeper!.unref()
}

/** @internal how many waits hold the event loop (tests). */
export function waitsHoldingLoop (): number { return waiting }

/** A pending operation; see the module comment. */
export class Request {
  /** @internal the result once done */
  _status: Status | null = null
  /** @internal the error once failed */
  _error: Error | null = null
  /** @internal completion listeners (wait, waitAny), run once at completion */
  private listeners: Listener[] | null = null
  /** @internal the operation's detail for the device (posted receive, send record) */
  _op: unknown = null
  /**
   * @internal the device's fast path for this request (a receive on shm): run for wait() once
   * the caller's synchronous code is over (spinLater), or by waitAll at once, it may complete the
   * request synchronously (device-conn.ts pollFrames).
   */
  _spin: ((req: Request, limitUs: number) => void) | null = null
  /** @internal a send's Status, given when its bytes are written */
  _sendStatus: Status | null = null
  /** @internal the connection `_spin` polls */
  _conn: unknown = null
  /** @internal what waitSync drives (the device), set on the requests it can complete synchronously */
  _driver: { waitSync (req: Request, timeoutMs: number): void } | null = null
  /** The plain wait()'s promise and its settlers (one per request, no listener closures). */
  private promise: Promise<Status> | null = null
  private res: ((s: Status) => void) | null = null
  private rej: ((e: Error) => void) | null = null

  /** True once the operation completed or failed. */
  get done (): boolean { return this._status !== null || this._error !== null }

  /** @internal completes with `status` (first completion wins). */
  _complete (status: Status): void {
    if (this._status !== null || this._error !== null) return
    this._status = status
    this.fire()
  }

  /** @internal fails with `err` (first completion wins). */
  _fail (err: Error): void {
    if (this._status !== null || this._error !== null) return
    this._error = err
    this.fire()
  }

  private fire (): void {
    const res = this.res
    if (res !== null) {
      this.res = null
      release()
      if (this._error !== null) this.rej!(this._error)
      else res(this._status!)
    }
    const ls = this.listeners
    if (ls === null) return
    this.listeners = null
    for (const l of ls) l(this)
  }

  /** @internal runs `fn` at completion (at once when already done). */
  _onDone (fn: Listener): void {
    if (this.done) { fn(this); return }
    if (this.listeners === null) this.listeners = [fn]
    else this.listeners.push(fn)
  }

  /** @internal removes a listener added by _onDone. */
  _offDone (fn: Listener): void {
    if (this.listeners === null) return
    const i = this.listeners.indexOf(fn)
    if (i >= 0) this.listeners.splice(i, 1)
  }

  /**
   * The blocking wait (MPI_Wait as a C program calls it): returns the Status once the operation
   * is complete (throws its error), reading and writing its connections synchronously instead of
   * waiting for the event loop, which does not run meanwhile (timers, I/O, other sockets wait).
   * On shm only: it spins for the connection's polling window, then sleeps on the peer's
   * doorbell (no CPU); receives from ANY_SOURCE spin over every connection. `timeout` (ms):
   * throws ERR_MPI_TIMEOUT after it (the operation goes on). Throws MpiError
   * ERR_MPI_WOULD_BLOCK, the operation going on (`err.request` is this request; `await
   * req.wait()` completes it), when it cannot complete without the event loop now: its
   * connection is still being set up (the first message to a rank), is not shm, has
   * asynchronous writes queued, or bytes of it wait in the event loop's path; ERR_MPI_PEER_LOST
   * when the peer's connection ends. See docs/mpi.md, "Blocking calls".
   */
  waitSync (options?: { timeout?: number }): Status {
    if (this._status === null && this._error === null) {
      const timeout = options?.timeout
      if (options !== undefined && (options === null || typeof options !== 'object')) throw invalidArgType('options must be an object')
      if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout >= 0))) throw invalidArgType('options.timeout must be a number of ms >= 0')
      if (this._driver === null) throw wouldBlock(this, 'nothing drives this request synchronously')
      this._driver.waitSync(this, timeout ?? Infinity)
    }
    if (this._error !== null) throw this._error
    return this._status!
  }

  /**
   * Waits for completion. `timeout` (ms, > 0): reject with ERR_MPI_TIMEOUT after it (the
   * operation stays pending); `signal`: reject with an AbortError when it aborts.
   * Resolves with the Status; rejects with the operation's error.
   */
  wait (options?: { signal?: AbortSignal, timeout?: number }): Promise<Status> {
    if (options === undefined) {
      // The hot path (recv, send): one promise per request, settled by fire(); the bounded fast
      // path runs once this tick's synchronous code is over (see spinLater).
      if (this._status !== null) return Promise.resolve(this._status)
      if (this._error !== null) return Promise.reject(this._error)
      if (this.promise === null) {
        this.promise = new Promise<Status>((resolve, reject) => { this.res = resolve; this.rej = reject })
        hold()
      }
      if (this._spin !== null) spinLater(this, Infinity)
      return this.promise
    }
    const signal = options?.signal
    const timeout = options?.timeout
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidArgType('options.signal must be an AbortSignal')
    if (timeout !== undefined && (typeof timeout !== 'number' || !(timeout >= 0))) throw invalidArgType('options.timeout must be a number of ms >= 0')
    if (this._status === null && this._error === null && signal?.aborted !== true && this._spin !== null) {
      // The fast path, bounded by the polling window and by the wait's own timeout (a spin is
      // synchronous: the timer could not fire inside it).
      spinLater(this, timeout === undefined ? Infinity : timeout * 1000)
    }
    if (this._status !== null) return Promise.resolve(this._status)
    if (this._error !== null) return Promise.reject(this._error)
    if (signal?.aborted) return Promise.reject(abortError(signal.reason))
    return new Promise<Status>((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null
      const onAbort = (): void => { cleanup(); reject(abortError(signal!.reason)) }
      const listener = (r: Request): void => {
        cleanup()
        if (r._error !== null) reject(r._error)
        else resolve(r._status!)
      }
      hold()
      let held = true
      const cleanup = (): void => {
        if (held) { held = false; release() }
        if (timer !== null) clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this._offDone(listener)
      }
      if (timeout !== undefined) {
        timer = setTimeout(() => { cleanup(); reject(timedOut(timeout)) }, timeout)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this._onDone(listener)
    })
  }

  /** The Status when done, null while pending; throws the operation's error if it failed. */
  test (): Status | null {
    if (this._error !== null) throw this._error
    return this._status
  }
}

/**
 * Requests whose wait() was called and whose receive fast path (Request._spin) has not run yet,
 * with each wait's bound (µs). wait() does not spin at once: it queues the request and the queue
 * runs in a microtask, once the caller's synchronous code is over, i.e. when it awaits. Code that
 * posts a receive, waits on it, and only then sends (`const p = r.wait(); s = isend(...); await
 * p`, the collectives' pattern) would otherwise spin for a message its peer cannot send yet,
 * because the peer spins the same way before its own send: each rank then lost a whole polling
 * slice per step (measured: a 2-rank barrier took 195 µs with the spin on, 48 µs with it off).
 * The queue runs last first, as waitAll: a spin on the last of a window of receives from one
 * peer reads the frames of the ones before it.
 */
const spinQueue: Request[] = []
const spinLimits: number[] = []
let spinScheduled = false

function spinLater (req: Request, limitUs: number): void {
  spinQueue.push(req)
  spinLimits.push(limitUs)
  if (!spinScheduled) { spinScheduled = true; queueMicrotask(runSpins) }
}

function runSpins (): void {
  spinScheduled = false
  while (spinQueue.length > 0) runSpin(spinQueue.pop()!, spinLimits.pop()!)
}

/** The fast path of `r` (at most once), bounded by `limitUs`, when it is still pending. */
function runSpin (r: Request, limitUs: number): void {
  const spin = r._spin
  if (spin === null || r._status !== null || r._error !== null) return
  r._spin = null
  spin(r, limitUs)
}

/** A Request already complete with `status` (PROC_NULL operations, self messages). */
export function completedRequest (status: Status): Request {
  const r = new Request()
  r._status = status
  return r
}

function checkRequests (reqs: unknown): Request[] {
  if (!Array.isArray(reqs) || !reqs.every(r => r instanceof Request)) throw invalidArgType('requests must be an array of Request')
  return reqs as Request[]
}

/**
 * MPI_Waitall: resolves with every Status in order once all completed; rejects with the error of
 * the first failed request (in array order) once every request is done (none is left running
 * unobserved). With `options` ({ signal, timeout }), each request's wait takes them.
 */
export async function waitAll (requests: Request[], options?: { signal?: AbortSignal, timeout?: number }): Promise<Status[]> {
  const reqs = checkRequests(requests)
  if (options === undefined) {
    // The common case without a promise per request: run each one's fast path in order; only
    // the requests still pending after that are awaited.
    // The last first: its spin reads the frames of the ones before it on its connection (a
    // window of receives from one peer is then one spin, not one per request).
    for (let i = reqs.length - 1; i >= 0; i--) runSpin(reqs[i], Infinity)
    const out = new Array<Status>(reqs.length)
    let rest: Request[] | null = null
    for (let i = 0; i < reqs.length; i++) {
      const r = reqs[i]
      if (r._status !== null) out[i] = r._status
      else if (r._error === null) (rest ??= []).push(r)
    }
    if (rest !== null) await Promise.allSettled(rest.map(r => r.wait()))
    const bad = reqs.find(r => r._error !== null)
    if (bad !== undefined) throw bad._error
    for (let i = 0; i < reqs.length; i++) out[i] = reqs[i]._status!
    return out
  }
  const settled = await Promise.allSettled(reqs.map(r => r.wait(options)))
  const bad = settled.find(s => s.status === 'rejected') as PromiseRejectedResult | undefined
  if (bad) throw bad.reason
  return settled.map(s => (s as PromiseFulfilledResult<Status>).value)
}

/**
 * MPI_Waitany: resolves with `{ index, status }` of the first request to complete (the lowest
 * index among those already done); rejects with that request's error. An empty array resolves
 * `{ index: -1, status: null }` (MPI_UNDEFINED).
 */
export function waitAny (requests: Request[]): Promise<{ index: number, status: Status | null }> {
  const reqs = checkRequests(requests)
  if (reqs.length === 0) return Promise.resolve({ index: -1, status: null })
  for (let i = 0; i < reqs.length; i++) {
    const r = reqs[i]
    if (r._error !== null) return Promise.reject(r._error)
    if (r._status !== null) return Promise.resolve({ index: i, status: r._status })
  }
  return new Promise((resolve, reject) => {
    const listeners: Listener[] = []
    hold()
    const finish = (i: number, r: Request): void => {
      release()
      reqs.forEach((q, j) => q._offDone(listeners[j]))
      if (r._error !== null) reject(r._error)
      else resolve({ index: i, status: r._status })
    }
    reqs.forEach((r, i) => { listeners[i] = q => finish(i, q); r._onDone(listeners[i]) })
  })
}

/** MPI_Testall: every Status when all are done, else null; throws the first failed request's error. */
export function testAll (requests: Request[]): Status[] | null {
  const reqs = checkRequests(requests)
  for (const r of reqs) if (r._error !== null) throw r._error
  for (const r of reqs) if (r._status === null) return null
  return reqs.map(r => r._status!)
}
