/**
 * One entry for every collective, as Open MPI's coll/tuned has one decision and one dispatch
 * over its algorithm table: `invoke(collective, tier, comm, x, y, z, opts)` runs the preamble once,
 * the same for barrier, bcast, reduce, ..., scan (the sequence number and any second one, the
 * collective's argument checks and local part, the optional agreement of `opts.check`, the
 * choice of algorithm and the checked communicator, check.ts CheckedComm, which is the call), then
 * dispatches by tier through the chosen algorithm's record (select.ts): its steps (drive.ts)
 * with blocking waits, its direct path, or its run in the event loop. A collective is a
 * `Collective` (index.ts: its argument checks, what its records read, its result); an
 * algorithm is one record.
 *
 * The tiers (docs/mpi-collectives.md, "The tiers"): BLOCKING (barrierSync, bcastSync,
 * allreduceSync) returns when done or throws MpiError ERR_MPI_WOULD_BLOCK whose `request` is the
 * call going on; AWAITED (every collective) returns a Promise, and on shm runs the blocking
 * tier's code at once under a bound on each wait (tier.ts).
 *
 * "Not finished now" has one shape inside the collectives: the rest of a call as steps
 * (CollSteps; null: finished), which a tier drives; and once the blocking tier hands the rest
 * to the event loop, a Later (drive.ts). Only the blocking entry points turn a Later into the
 * thrown ERR_MPI_WOULD_BLOCK.
 */
import { Request } from '../request'
import { Status } from '../status'
import type { CollComm, CollHandle, CollOptions, NumericArray } from './types'
import type { Op } from './ops'
import { MAX } from './ops'
import { COLLECTIVE_IDS, choose } from './select'
import type { Case } from './select'
import { collTag, keepable, mismatch } from './util'
import { later, runAsync, runSync } from './drive'
import type { CollSteps, Later } from './drive'
import { bound, unbound } from './tier'
import { stateOf } from './state'
import { allreduceRecursiveDoublingSteps } from './reduce'
import { CheckedComm } from './check'

declare module './state' {
  interface CollState {
    /** The last call's shape of each collective that keeps one (barrier, bcast, allreduce: Collective `slot`). */
    lasts?: Array<LastShape | null>
  }
}

/** The blocking tier (barrierSync, bcastSync, allreduceSync). */
export const BLOCKING = 0
/** The awaited tier (every collective's Promise). */
export const AWAITED = 1
export type Tier = typeof BLOCKING | typeof AWAITED

/**
 * What a collective's preamble found (Collective.prepare): what choose() looks at, the
 * descriptor's fields (check.ts: root, op id, element kind, count; the opt-in agreement compares
 * the same), and what the records read: `buf`, `op`, `n` (buf's bytes), `seg` (the pipeline
 * segment), `data` (the other collectives' prepared arguments).
 */
export interface Prep {
  readonly case: Case
  readonly root: number
  readonly opId: number
  readonly kind: number
  readonly count: number
  readonly buf?: ArrayBufferView
  readonly op?: Op
  readonly n?: number
  readonly seg?: number
  readonly data?: unknown
}

/**
 * One collective as invoke() runs it (made by `collective`): its arguments are three values
 * `x`, `y`, `z` (each collective says which: e.g. allreduce's sendbuf, recvbuf, op; a
 * collective of more arguments passes an object as `z`), passed as they are (no object per call
 * on the small paths); `R`: its result.
 */
export interface Collective<X, Y, Z, R> {
  /** Its name (select.ts records, COLLECTIVE_IDS). */
  readonly name: string
  /** Its index in the communicator's last shapes (state.ts `lasts`), -1 when it keeps none. */
  readonly slot: number
  /** It takes a second sequence number (after the check's), for a second phase (Call `seq2`). */
  readonly seq2: boolean
  /** Rooted fan-in: the root's descriptor goes to rank root + 1 first (check.ts rootNotice). */
  readonly notice: boolean
  /**
   * The argument checks (throwing ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE, ERR_MPI_OP) and this
   * rank's local part (its own block copied); null when that completed the call (P = 1).
   */
  readonly prepare: (comm: CollComm, x: X, y: Y, z: Z, opts: CollOptions | undefined) => Prep | null
  /** (slot ≥ 0) The last call, made ready for this one, when the arguments have its shape (LastShape.hit), else null. */
  readonly hit: ((last: LastShape, comm: CollComm, x: X, y: Y, z: Z) => CheckedComm | null) | null
  /** What the call returns (resolves with). */
  readonly result: (comm: CollComm, x: X, y: Y, z: Z) => R
  /** Bytes of the call's array (the Status count of the blocking tier's Request). */
  readonly bytes: (x: X, y: Y) => number
}

/** A Collective from its parts (every one the same object shape: invoke's reads of it stay monomorphic). */
export function collective<X, Y, Z, R> (c: Pick<Collective<X, Y, Z, R>, 'name' | 'slot' | 'prepare' | 'result' | 'bytes'> & Partial<Pick<Collective<X, Y, Z, R>, 'seq2' | 'notice' | 'hit'>>): Collective<X, Y, Z, R> {
  return { name: c.name, slot: c.slot, seq2: c.seq2 ?? false, notice: c.notice ?? false, prepare: c.prepare, hit: c.hit ?? null, result: c.result, bytes: c.bytes }
}

/** FASTSOCK_MPI_COLL_CHECK=1, read when the module loads. */
const CHECK_ENV = process.env.FASTSOCK_MPI_COLL_CHECK === '1'
/** Why a blocking collective with `opts.check` goes to the awaited tier. */
const CHECK_ROUND = 'the argument check (opts.check) is a round of its own in the awaited tier'
/**
 * The blocking barrier (P = 2; the linear one at any P), the blocking bcast of a small array
 * (one segment, any P) and the blocking allreduce of a small array at P = 2 run their messages
 * directly (the records' `direct`; docs/mpi-collectives.md, "Direct paths");
 * FASTSOCK_MPI_PAIR=0 runs the steps instead (measurement: bench/mpi-waits.js's "shm, steps" rows).
 */
const PAIR_PATH = process.env.FASTSOCK_MPI_PAIR !== '0'

/**
 * Runs collective `c` with arguments x, y, z in `tier`: BLOCKING returns its result or throws
 * (ERR_MPI_WOULD_BLOCK with `.request` when it must go on in the event loop); AWAITED returns a
 * Promise of it (bad arguments reject). Every rank takes its sequence numbers here,
 * synchronously, so collectives started back to back without awaiting match across ranks.
 */
export function invoke<X, Y, Z, R> (c: Collective<X, Y, Z, R>, tier: Tier, comm: CollComm, x: X, y: Y, z: Z, opts: CollOptions | undefined): R | Promise<R> {
  const check = opts?.check ?? CHECK_ENV
  if (tier === BLOCKING && check) blocked(later(invoke(c, AWAITED, comm, x, y, z, opts) as Promise<R>, CHECK_ROUND), c.bytes(x, y))
  try {
    const seq = comm._collSeq()
    const cseq = check ? comm._collSeq() : -1
    const seq2 = c.seq2 ? comm._collSeq() : -1
    const last = opts === undefined && c.slot >= 0 ? lastShape(comm, c.slot) : null
    let call = last !== null && c.hit !== null ? c.hit(last, comm, x, y, z) : null
    if (call === null) {
      const p = c.prepare(comm, x, y, z, opts)
      if (p === null) { const v = c.result(comm, x, y, z); return tier === AWAITED ? Promise.resolve(v) : v }
      if (cseq >= 0) return agreed(c, comm, x, y, z, opts, p, seq, cseq, seq2)
      call = callOf(c.name, comm, p, opts)
    }
    call.seq = seq; call.seq2 = seq2
    if (tier === AWAITED) return awaited(c, call, last, comm, x, y, z)
    const l = invokeBlocking(call, last)
    if (l !== null) blocked(l, c.bytes(x, y))
    return c.result(comm, x, y, z)
  } catch (e) {
    if (tier === AWAITED) return Promise.reject(e)
    throw e
  }
}

/** The call `p` describes: its algorithm chosen (select.ts), its descriptor, what its record reads. */
function callOf (name: string, comm: CollComm, p: Prep, opts: CollOptions | undefined): CheckedComm {
  const call = new CheckedComm(comm, name, choose(name, p.case, opts?.algorithm), p.root, p.opId, p.kind, p.count)
  if (p.buf !== undefined) call.buf = p.buf
  call.op = p.op ?? null
  call.n = p.n ?? 0
  call.seg = p.seg ?? 0
  call.data = p.data ?? null
  return call
}

/** The awaited tier's end of a call: a Promise of its result (with the rooted fan-in's notice). */
function awaited<X, Y, Z, R> (c: Collective<X, Y, Z, R>, call: CheckedComm, last: LastShape | null, comm: CollComm, x: X, y: Y, z: Z): Promise<R> {
  const note = c.notice ? call.rootNotice(call.root, collTag(call.seq, 0)) : null
  let p = invokeAwaited(call, last)
  if (note !== null) p = withNotice(note, p ?? Promise.resolve())
  return p === null ? Promise.resolve(c.result(comm, x, y, z)) : p.then(() => c.result(comm, x, y, z))
}

/** The call with the argument check (opts.check) first: one round, then the call in the awaited tier. */
async function agreed<X, Y, Z, R> (c: Collective<X, Y, Z, R>, comm: CollComm, x: X, y: Y, z: Z, opts: CollOptions | undefined, p: Prep, seq: number, cseq: number, seq2: number): Promise<R> {
  await agree(comm, cseq, c.name, p.count, p.root, p.opId, p.kind)
  const call = callOf(c.name, comm, p, opts)
  call.seq = seq; call.seq2 = seq2
  return await awaited(c, call, null, comm, x, y, z)
}

/** The record's run in the event loop: its steps with wait(), or its `awaited` run. */
function eventLoopRun (call: CheckedComm): Promise<void> {
  const rec = call.rec
  return rec.steps !== undefined ? runAsync(rec.steps(call)) : (rec.awaited as (c: CheckedComm) => Promise<void>)(call)
}

/**
 * A call in the blocking tier, its preamble done: its record's direct path (PAIR_PATH), else its
 * steps, driven with blocking waits (runSync). Null when the call completed (`last`, null for a
 * call with opts, then keeps its shape when it completed in the direct path), else the Later of
 * its rest (the event loop's: a wait that needs it, or a record whose steps do not serve the
 * call, or that has none).
 */
function invokeBlocking (call: CheckedComm, last: LastShape | null): Later | null {
  const rec = call.rec
  if (!call.stepsServe()) return later(eventLoopRun(call), `the ${rec.name} ${rec.collective}${call.n > 0 ? ` of ${call.n} bytes` : ''} runs in the awaited tier only`)
  if (PAIR_PATH && rec.direct !== undefined) {
    const rest = rec.direct(call)
    if (rest === null) { if (last !== null) last.keep(call, call.buf); return null }
    return runSync(rest)
  }
  return runSync((rec.steps as (c: CheckedComm) => CollSteps)(call))
}

/**
 * The same call in the awaited tier: the record's run in the event loop where the blocking
 * tier's waits do not serve the call; else the blocking tier's run (invokeBlocking) at once,
 * under the awaited tier's bound on each wait (tier.ts), its rest (if any) awaited; where the
 * bound cannot apply (no hook, FASTSOCK_MPI_AWAIT_BLOCK_MS=0), the steps with wait(). Null: done.
 * (Not deferred to a microtask as Request.wait's spin is: that costs ~0.2 µs per call, and a
 * call started before the caller's own send that its peer waits for costs at most the bound per
 * wait, then goes on.)
 */
function invokeAwaited (call: CheckedComm, last: LastShape | null): Promise<void> | null {
  if (!call.stepsServe()) return eventLoopRun(call)
  if (!bound(call)) return eventLoopRun(call)
  let l: Later | null
  try { l = invokeBlocking(call, last) } finally { unbound(call) }
  return l === null ? null : l.rest as Promise<void>
}

/** Wait for the algorithm and the rooted fan-in's descriptor notice (check.ts); the first rejection rejects. */
async function withNotice (note: Promise<unknown>, p: Promise<unknown>): Promise<void> {
  p.catch(() => {})
  await Promise.all([p, note])
}

/** The blocking tier's answer to a Later: ERR_MPI_WOULD_BLOCK, its message the Later's cause's, with the rest as a Request (`count`: bytes, for its Status). */
function blocked (l: Later, count: number): never {
  const e = l.cause
  Object.defineProperty(e, 'request', { value: new CollectiveRequest(l.rest as Promise<unknown>, count), writable: true, configurable: true, enumerable: false })
  throw e
}

/**
 * Argument check (opts.check or FASTSOCK_MPI_COLL_CHECK=1): one recursive-doubling allreduce of
 * (collective, count, root, op, kind) and their negations with MAX, so every rank learns the
 * maximum and minimum of each; any difference rejects on every rank with ERR_MPI_COLL_MISMATCH
 * naming the fields. Costs one small allreduce per collective; off by default (without it the
 * per-message descriptors of check.ts catch what reaches a receiving rank; see check.ts for what
 * only this check sees).
 */
async function agree (comm: CollComm, cseq: number, what: string, count: number, root: number, opId: number, kind: number): Promise<void> {
  const f: Array<[string, number]> = [['collective', COLLECTIVE_IDS[what] ?? 0], ['count', count], ['root', root], ['op', opId], ['array kind', kind]]
  const v = new Float64Array(10)
  for (let i = 0; i < 5; i++) { v[i] = f[i][1]; v[5 + i] = -f[i][1] }
  await runAsync(allreduceRecursiveDoublingSteps(comm, v, MAX, cseq))
  const bad = f.filter((_, i) => v[i] !== -v[5 + i]).map(([name]) => name)
  if (bad.length > 0) throw mismatch(what, `${bad.join(', ')} differ between ranks (found by the argument check)`)
}

/** The communicator's LastShape of collective slot `slot` (state.ts), made at its first use. */
function lastShape (comm: CollComm, slot: number): LastShape {
  const lasts = stateOf(comm).lasts ??= [null, null, null]
  return lasts[slot] ?? (lasts[slot] = new LastShape())
}

/**
 * The last blocking-tier run of one collective (barrier, bcast, allreduce) that completed in its
 * direct path (PAIR_PATH): its communicator, array kind and length, op and root, and the
 * CheckedComm made for it. A loop repeats one shape call after call; a call of the same shape,
 * without `opts`, takes the checks the last one passed (argument kinds, op, root), its algorithm
 * (the environment is read once per process) and its CheckedComm (the descriptor) as they were,
 * and only its sequence number and send buffer are new. `node bench/mpi-layers.js`: what the
 * layers cost. Cleared before each direct path runs and set again only when the call completed
 * there, so a CheckedComm that a rest in the awaited tier still holds, or one that sent an abort
 * notice, is never reused.
 */
export class LastShape {
  private comm: CollComm | null = null
  private ctor: unknown = null
  private length = -1
  private op: Op | null = null
  private root = -1
  private cc: CheckedComm | null = null
  /** The last call's array (keepable() only): the same array again has the same kind, read without its `constructor` (a call in optimized code on Node 20). */
  private v: unknown = null
  /** The last allreduce's send buffer that passed sendOk() (keepable() only). */
  private send: unknown = null
  /** The last call's CheckedComm when `v` (a view) and the rest have its shape, else null; clears the shape either way. */
  hit (comm: CollComm, v: unknown, length: number, op: Op | null, root: number): CheckedComm | null {
    const cc = this.cc
    this.cc = null
    if (cc !== null && v !== null && v === this.v && comm === this.comm && length === this.length && op === this.op && root === this.root) return cc
    this.v = null
    this.send = null
    const ctor = ArrayBuffer.isView(v) ? v.constructor : null
    if (ctor === null) { this.ctor = null; return null }
    if (cc !== null && comm === this.comm && ctor === this.ctor && length === this.length && op === this.op && root === this.root) return cc
    this.comm = comm; this.ctor = ctor; this.length = length; this.op = op; this.root = root
    return null
  }

  /** The call hit() looked at, on array `v`, completed in the direct path with `cc`. */
  keep (cc: CheckedComm, v: ArrayBufferView): void {
    if (this.ctor === null) return
    this.cc = cc
    if (this.v !== v && keepable(v)) this.v = v
  }

  /** After a hit: whether `s`, an allreduce's send buffer, has the kind of the array hit() took and `length` elements; the last one that did is kept. */
  sendOk (s: unknown, length: number): boolean {
    if (s !== null && s === this.send) return (s as NumericArray).length === length
    if (s === null || typeof s !== 'object' || s.constructor !== this.ctor || (s as NumericArray).length !== length) return false
    if (keepable(s as NumericArray)) this.send = s
    return true
  }
}

/**
 * The request of a non-blocking collective: part 1's Request (so waitAll/waitAny/testAll take it),
 * completed when the collective's promise settles, with Status { source: -1, tag: -1, count: bytes },
 * or failed with its error. `result` resolves with the collective's result (e.g. the buffer).
 */
export class CollectiveRequest<T> extends Request implements CollHandle<T> {
  /** The collective's promise (its result; rejects with its error). */
  readonly result: Promise<T>
  constructor (p: Promise<T>, count: number) {
    super()
    this.result = p
    p.then(() => this._complete(new Status(-1, -1, count)), (e: Error) => this._fail(e))
  }
}
