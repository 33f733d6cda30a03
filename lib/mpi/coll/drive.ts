/**
 * The two tiers of a collective algorithm written once as steps: a generator that yields each
 * point-to-point request it waits for and receives its status (or has the request's error
 * thrown in at the `yield`). `runSync` drives it with `waitSync()` (the blocking tier:
 * comm.allreduceSync ..., as a C program's MPI_Allreduce blocks, and the awaited tier on shm,
 * under a bound: tier.ts); `runAsync` with `wait()` (the awaited tier's event-loop path). When a
 * step cannot complete without the event loop (ERR_MPI_WOULD_BLOCK: a connection still being set
 * up, a transport without synchronous I/O, asynchronous writes queued, the awaited tier's bound
 * spent) runSync hands the rest of the same steps, that request first, to runAsync and says so
 * with a `Later`. Both tiers send the same messages in the same order, so ranks may mix them.
 */
import { isMpiError, wouldBlock } from '../errors'
import type { CollRequest, CollStatus } from './types'

/** A collective's steps: yields the requests to wait for, one at a time; returns its result. */
export type CollSteps<R = void> = Generator<CollRequest, R, CollStatus>

/**
 * "Not finished now", the one answer of the blocking tier's code when a call must go on in the
 * event loop: the rest, already running in the awaited tier, and the ERR_MPI_WOULD_BLOCK (or
 * the reason) that sent it there. Null means finished.
 */
export interface Later { readonly rest: Promise<unknown>, readonly cause: Error }

/** A Later for `rest`, started by the caller, with `why` as its cause. */
export function later (rest: Promise<unknown>, why: string): Later {
  rest.catch(noop) // the tier that takes the Later reports its rejection
  return { rest, cause: wouldBlock(null, why) }
}

function noop (): void {}

/** Drives `steps` with awaited waits (`first`: a request already yielded, waited for first). */
export async function runAsync<R> (steps: CollSteps<R>, first?: CollRequest): Promise<R> {
  let next: IteratorResult<CollRequest, R> = first !== undefined ? { done: false, value: first } : steps.next()
  while (next.done !== true) {
    const req = next.value
    let st: CollStatus
    try {
      const t = req.test()
      st = t === null || t === false ? await req.wait() : t
    } catch (err) {
      next = steps.throw(err)
      continue
    }
    next = steps.next(st)
  }
  return next.value
}

/**
 * `r`'s blocking wait (waitSync), the one place coll makes "not finished now" an error: a
 * request without one throws ERR_MPI_WOULD_BLOCK as a waitSync that cannot finish does, with `r`
 * as its request; runSync turns either into a Later.
 */
export function waitNow (r: CollRequest): CollStatus {
  if (r.waitSync === undefined) throw wouldBlock(r, 'a request without a blocking wait')
  return r.waitSync()
}

/**
 * Drives `steps` with blocking waits. Returns null when every step completed synchronously, or
 * a Later (the rest already running in the awaited tier) when a step threw ERR_MPI_WOULD_BLOCK
 * or its request has no blocking wait. Other errors go into the steps (their `finally` blocks
 * run) and out of this call.
 */
export function runSync (steps: CollSteps): Later | null {
  let next: IteratorResult<CollRequest, void> = steps.next()
  while (next.done !== true) {
    const req = next.value
    let st: CollStatus
    try {
      st = waitNow(req)
    } catch (err) {
      if (isMpiError(err, 'ERR_MPI_WOULD_BLOCK')) return { rest: runAsync(steps, req), cause: err as Error }
      next = steps.throw(err)
      continue
    }
    next = steps.next(st)
  }
  return null
}
