/**
 * fastsock/mpi collectives and communicator creation (issue 18). Every function takes the
 * communicator first: `fn(comm: CollComm, ...args)`; lib/mpi/comm.ts wires Comm's methods to them.
 * Buffer arguments follow mpi4py's buffer tier in camelCase (plan: "Buffer-argument conventions").
 * Counts and displacements are in ELEMENTS of the array they index. Every function takes its
 * collective sequence number(s) from `comm._collSeq()` synchronously, before its first await, so
 * collectives started back to back without awaiting still match across ranks.
 *
 * Errors: bad arguments throw (synchronously for the non-async i* functions, as a rejection for
 * the others) TypeError ERR_INVALID_ARG_TYPE / RangeError ERR_OUT_OF_RANGE; ERR_MPI_OP for an op
 * that does not apply; ERR_MPI_COLL_ALGORITHM for a bad forced algorithm; ERR_MPI_COLL_MISMATCH
 * when a rank receives a message whose call descriptor (check.ts: collective, algorithm, root,
 * op, element kind, count) or size differs from its own, or another rank's abort notice; the
 * point-to-point layer's errors (ERR_MPI_PEER_LOST, ...) pass through. Every algorithm runs on a
 * CheckedComm (check.ts) wrapping `comm`, which adds and checks the descriptors.
 * Algorithms (one record each, with their wire ids, steps and direct paths) and thresholds:
 * select.ts and docs/mpi-collectives.md ("The records"). Barrier, bcast and allreduce have two
 * tiers, run by invokeBlocking / invokeAwaited from one preamble per collective
 * (barrierCall, bcastCall, allreduceCall); what a call keeps for the next one is on the
 * communicator (state.ts).
 */
import { invalidArgType, outOfRange } from '../errors'
import { Request } from '../request'
import { Status } from '../status'
import { CollError, IN_PLACE, UNDEFINED } from './types'
import type { CollComm, CollHandle, CollOptions, InPlace, NumericArray } from './types'
import { Op, SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC } from './ops'
import type { UserOpFunction } from './ops'
import { COLLECTIVE_IDS, algorithmTable, choose, envName, THRESHOLDS } from './select'
import { DEFAULT_SEGMENT_BYTES, bytes, collTag, copyBytes, keepable, mismatch, recv, release, scratch, send, viewLike } from './util'
import { later, runAsync, runSync } from './drive'
import type { CollSteps, Later } from './drive'
import { bound, unbound } from './tier'
import { stateOf } from './state'
import { allreduceRecursiveDoubling, reduceBinomial, reduceRabenseifner, ringReduceScatter, scanLinear, scanRecursiveDoubling } from './reduce'
import { allgatherBruck, allgatherRecursiveDoubling, allgatherRing, gatherBinomial, gatherLinear, scatterBinomial, scatterLinear } from './gather'
import { alltoallBruck, alltoallLinear, alltoallPairwise } from './alltoall'
import { CheckedComm, kindOf } from './check'

declare module './state' {
  interface CollState {
    /** The last call's shape of barrier, bcast and allreduce (LastShape). */
    lastBarrier?: LastShape
    lastBcast?: LastShape
    lastAllreduce?: LastShape
  }
}

export { Op, SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, IN_PLACE, UNDEFINED, CollError, algorithmTable, envName, THRESHOLDS }
export type { CollComm, CollHandle, CollOptions, InPlace, NumericArray, UserOpFunction }
export { bcastObject, gatherObject, allgatherObject, dup, split, splitLocal, free } from './comms'

const NUMERIC = new Set(['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'])

function view (v: unknown, what: string, name: string): ArrayBufferView {
  if (!ArrayBuffer.isView(v)) throw invalidArgType(`${what}: ${name} must be a TypedArray, DataView or Buffer`)
  return v
}
function numeric (v: unknown, what: string, name: string): NumericArray {
  if (kindOf(v) === 0) throw invalidArgType(`${what}: ${name} must be a numeric TypedArray`)
  return v as NumericArray
}
function checkRoot (comm: CollComm, root: number, what: string): void {
  if (!Number.isInteger(root) || root < 0 || root >= comm.size) throw outOfRange(`${what}: root ${root} is not a rank of this communicator (size ${comm.size})`)
}
function checkOp (op: unknown, arr: NumericArray, what: string): Op {
  if (!(op instanceof Op)) throw invalidArgType(`${what}: op must be an Op (SUM, MAX, ..., Op.create(fn))`)
  op.check(arr)
  return op
}
function sameKind (a: NumericArray, b: NumericArray, what: string): void {
  if (a.constructor !== b.constructor) throw invalidArgType(`${what}: sendbuf (${a.constructor.name}) and recvbuf (${b.constructor.name}) must be the same kind`)
}
function segBytes (opts: CollOptions | undefined): number {
  const s = opts?.segmentBytes ?? DEFAULT_SEGMENT_BYTES
  if (!Number.isInteger(s) || s < 8) throw outOfRange(`segmentBytes must be an integer ≥ 8, got ${String(s)}`)
  return s
}
function counts (c: ArrayLike<number> | null | undefined, P: number, what: string, name: string): ArrayLike<number> {
  if (c === null || c === undefined || typeof c.length !== 'number' || c.length < P) throw invalidArgType(`${what}: ${name} must have one entry per rank (${P})`)
  for (let i = 0; i < P; i++) if (!Number.isInteger(c[i]) || c[i] < 0) throw outOfRange(`${what}: ${name}[${i}] = ${c[i]} is not a non-negative integer`)
  return c
}
function within (buf: ArrayBufferView, off: number, len: number, what: string): void {
  if (off + len > buf.byteLength) throw outOfRange(`${what}: counts/displacements reach byte ${off + len} of a ${buf.byteLength}-byte buffer`)
}
/** Wait for the algorithm and the rooted fan-in's descriptor notice (check.ts); the first rejection rejects. */
async function withNotice (note: Promise<unknown> | null, p: Promise<unknown>): Promise<void> {
  if (note === null) { await p; return }
  p.catch(() => {})
  await Promise.all([p, note])
}
/** Why a blocking collective with `opts.check` goes to the awaited tier. */
const CHECK_ROUND = 'the argument check (opts.check) is a round of its own in the awaited tier'
/**
 * The blocking barrier (P = 2; the linear one at any P), the blocking bcast of a small array
 * (one segment, any P) and the blocking allreduce of a small array at P = 2 run their messages
 * directly (barrierPairSync, barrierLinearNow, bcastTreeNow, allreducePairSync;
 * docs/mpi-collectives.md, "Direct paths"); FASTSOCK_MPI_PAIR=0 runs the steps instead
 * (measurement: bench/mpi-waits.js's "shm, steps" rows).
 */
const PAIR_PATH = process.env.FASTSOCK_MPI_PAIR !== '0'
/**
 * A call of barrier, bcast or allreduce in the blocking tier, its preamble done (`call`: its
 * record, arguments and descriptor): its record's direct path (PAIR_PATH), else its steps, driven
 * with blocking waits (runSync). Null when the call completed (`last`, null for a call with opts,
 * then keeps its shape when it completed in the direct path), else the Later of its rest (the
 * event loop's: a wait that needs it, a record whose steps do not serve the call).
 */
function invokeBlocking (call: CheckedComm, last: LastShape | null): Later | null {
  const rec = call.rec
  if (!call.stepsServe()) {
    return later((rec.awaited as (c: CheckedComm) => Promise<void>)(call), `the ${rec.name} ${rec.collective}${call.n > 0 ? ` of ${call.n} bytes` : ''} runs in the awaited tier only`)
  }
  if (PAIR_PATH && rec.direct !== undefined) {
    const r = rec.direct(call)
    if (r === true) { if (last !== null) last.keep(call, call.buf); return null }
    if (r !== null) return runSync(r)
  }
  return runSync((rec.steps as (c: CheckedComm) => CollSteps)(call))
}

/**
 * The same call in the awaited tier: the record's own run where its steps do not serve the call;
 * else the blocking tier's run (invokeBlocking) at once, under the awaited tier's bound on each
 * wait (tier.ts), its rest (if any) awaited; where the bound cannot apply (no hook,
 * FASTSOCK_MPI_AWAIT_BLOCK_MS=0), the steps with wait(). (Not deferred to a microtask as
 * Request.wait's spin is: that costs ~0.2 µs per call, and a call started before the caller's
 * own send that its peer waits for costs at most the bound per wait, then goes on.)
 */
function invokeAwaited (call: CheckedComm, last: LastShape | null): Promise<void> | null {
  const rec = call.rec
  if (!call.stepsServe()) return (rec.awaited as (c: CheckedComm) => Promise<void>)(call)
  if (!bound(call)) return runAsync((rec.steps as (c: CheckedComm) => CollSteps)(call))
  let l: Later | null
  try { l = invokeBlocking(call, last) } finally { unbound(call) }
  return l === null ? null : l.rest as Promise<void>
}

/**
 * An awaited call's promise: resolved with `v` at once when the call completed (`p` null), else
 * once `p` resolves. (The awaited entry points are not async functions: a promise per frame costs
 * ~0.2 µs each, and the 8-byte call is about 1 µs.)
 */
function settled<T> (p: Promise<void> | null, v: T): Promise<T> {
  return p === null ? Promise.resolve(v) : p.then(() => v)
}

/**
 * The last blocking call of one collective (barrierSync, bcastSync, allreduceSync) that
 * completed in its direct path (PAIR_PATH): its communicator, array kind and length, op and root, and the
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
/** The communicator's LastShape of barrier, bcast, allreduce (state.ts), made at its first use. */
const lastBarrier = (comm: CollComm): LastShape => { const st = stateOf(comm); return st.lastBarrier ??= new LastShape() }
const lastBcast = (comm: CollComm): LastShape => { const st = stateOf(comm); return st.lastBcast ??= new LastShape() }
const lastAllreduce = (comm: CollComm): LastShape => { const st = stateOf(comm); return st.lastAllreduce ??= new LastShape() }
/** The barrier's stand-in view for LastShape (a barrier has no array). */
const EMPTY_VIEW = new Uint8Array(0)
/** The blocking tier's answer to a Later: ERR_MPI_WOULD_BLOCK, its message the Later's cause's, with the rest as a Request (`count`: bytes, for its Status). */
function blocked (l: Later, count: number): never {
  const e = l.cause
  Object.defineProperty(e, 'request', { value: new CollectiveRequest(l.rest as Promise<unknown>, count), writable: true, configurable: true, enumerable: false })
  throw e
}
/** FASTSOCK_MPI_COLL_CHECK=1, read when the module loads. */
const CHECK_ENV = process.env.FASTSOCK_MPI_COLL_CHECK === '1'
/** Whether this call agrees on its arguments first: opts.check, else FASTSOCK_MPI_COLL_CHECK=1. */
function checking (opts: CollOptions | undefined): boolean {
  return opts?.check ?? CHECK_ENV
}
const kindId = (v: unknown): number => v === null || v === undefined || v === IN_PLACE ? -1 : [...NUMERIC].indexOf((v as object).constructor.name) + 1

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
  await allreduceRecursiveDoubling(comm, v, MAX, cseq)
  const bad = f.filter((_, i) => v[i] !== -v[5 + i]).map(([name]) => name)
  if (bad.length > 0) throw mismatch(what, `${bad.join(', ')} differ between ranks (found by the argument check)`)
}

/**
 * %TypedArray%.prototype.set, called as it is: reading `dst.set` is a LoadIC call in the
 * optimized code on Node 20 (node --print-opt-code), as a typed array's `constructor` is.
 */
const typedArraySet = (Object.getPrototypeOf(Uint8Array.prototype) as { set: (this: NumericArray, src: NumericArray) => void }).set

function copyInto (dst: NumericArray, src: NumericArray): void {
  // (set() copies correctly between overlapping views too; `.buffer` is not read: for a small
  // array V8 keeps on its heap, every read is a runtime call)
  if (dst !== src) typedArraySet.call(dst, src)
}

/** MPI_Barrier. Algorithms: dissemination, linear (select.ts chooses), tree. On shm the barrier runs as barrierSync's code under the awaited tier's bound (invokeAwaited). */
export function barrier (comm: CollComm, opts?: CollOptions): Promise<void> {
  try {
    const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
    if (comm.size === 1) return Promise.resolve()
    if (cseq >= 0) return barrierChecked(comm, opts, seq, cseq)
    return settled(invokeAwaited(barrierCall(comm, opts, seq), opts === undefined ? lastBarrier(comm) : null), undefined)
  } catch (e) { return Promise.reject(e) }
}

/** The barrier with the argument check (opts.check) first. */
async function barrierChecked (comm: CollComm, opts: CollOptions | undefined, seq: number, cseq: number): Promise<void> {
  await agree(comm, cseq, 'barrier', 0, 0, 0, 0)
  await invokeAwaited(barrierCall(comm, opts, seq), null)
}

/** The barrier's call (the last one's when this one, without opts, has its shape: LastShape). */
function barrierCall (comm: CollComm, opts: CollOptions | undefined, seq: number): CheckedComm {
  const call = (opts === undefined ? lastBarrier(comm).hit(comm, EMPTY_VIEW, 0, null, 0) : null) ??
    new CheckedComm(comm, 'barrier', choose('barrier', { bytes: 0, total: 0, P: comm.size, commute: true, items: 0 }, opts?.algorithm), 0, 0, 0, 0)
  call.seq = seq
  return call
}

/**
 * MPI_Barrier in the blocking tier (as a C program's MPI_Barrier): returns once every rank has
 * entered, without the event loop (drive.ts, runSync). Throws MpiError ERR_MPI_WOULD_BLOCK, the
 * barrier going on (`await err.request.wait()` completes it), when it cannot finish without the
 * event loop now: a connection still being set up or without synchronous I/O (not shm), the
 * tree algorithm, `opts.check`. Ranks may mix barrier() and barrierSync(): the messages are the same.
 */
export function barrierSync (comm: CollComm, opts?: CollOptions): void {
  if (checking(opts)) blocked(later(barrier(comm, opts), CHECK_ROUND), 0)
  const seq = comm._collSeq()
  if (comm.size === 1) return
  const l = invokeBlocking(barrierCall(comm, opts, seq), opts === undefined ? lastBarrier(comm) : null)
  if (l !== null) blocked(l, 0)
}

/**
 * MPI_Bcast: root's `buf` into every rank's `buf` (same byteLength on every rank); resolves with
 * buf. Algorithms: binomial, scatterAllgather, linear. On shm a one-segment tree broadcast runs
 * as bcastSync's code under the awaited tier's bound (invokeAwaited).
 */
export function bcast<T extends ArrayBufferView> (comm: CollComm, buf: T, root = 0, opts?: CollOptions): Promise<T> {
  try {
    const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
    if (cseq >= 0) return bcastChecked(comm, buf, root, opts, seq, cseq)
    const call = bcastCall(comm, buf, root, opts, seq)
    return settled(call === null ? null : invokeAwaited(call, opts === undefined ? lastBcast(comm) : null), buf)
  } catch (e) { return Promise.reject(e) }
}

/** The bcast with the argument check (opts.check) first. */
async function bcastChecked<T extends ArrayBufferView> (comm: CollComm, buf: T, root: number, opts: CollOptions | undefined, seq: number, cseq: number): Promise<T> {
  view(buf, 'bcast', 'buf'); checkRoot(comm, root, 'bcast')
  if (comm.size === 1) return buf
  await agree(comm, cseq, 'bcast', buf.byteLength, root, 0, 0)
  const call = bcastCall(comm, buf, root, opts, seq)
  if (call !== null) await invokeAwaited(call, null)
  return buf
}

/** The bcast's arguments checked and its call (the last one's when this one has its shape: LastShape); null at P = 1. */
function bcastCall (comm: CollComm, buf: ArrayBufferView, root: number, opts: CollOptions | undefined, seq: number): CheckedComm | null {
  const len = buf?.byteLength
  let call = opts === undefined ? lastBcast(comm).hit(comm, buf, len, null, root) : null
  if (call === null) {
    view(buf, 'bcast', 'buf'); checkRoot(comm, root, 'bcast')
    if (comm.size === 1) return null
    call = new CheckedComm(comm, 'bcast', choose('bcast', { bytes: len, total: len, P: comm.size, commute: true, items: 0 }, opts?.algorithm), root, 0, 0, len)
    call.n = len; call.seg = segBytes(opts)
  }
  call.seq = seq; call.buf = buf
  return call
}

/**
 * MPI_Bcast in the blocking tier: returns `buf` once it holds the root's bytes, without the
 * event loop, for the binomial and linear algorithms in one segment (eager or rendezvous messages). Throws
 * ERR_MPI_WOULD_BLOCK as barrierSync, also for the other algorithms and segmented messages (they
 * run in the awaited tier; `await err.request.wait()`), and when a rendezvous payload cannot be
 * written without the event loop (larger than the room in the shm ring).
 */
export function bcastSync<T extends ArrayBufferView> (comm: CollComm, buf: T, root = 0, opts?: CollOptions): T {
  if (checking(opts)) blocked(later(bcast(comm, buf, root, opts), CHECK_ROUND), buf?.byteLength ?? 0)
  const call = bcastCall(comm, buf, root, opts, comm._collSeq())
  if (call === null) return buf
  const l = invokeBlocking(call, opts === undefined ? lastBcast(comm) : null)
  if (l !== null) blocked(l, call.n)
  return buf
}

/**
 * MPI_Reduce: the op applied over every rank's sendbuf (rank order), into recvbuf at the root
 * (length ≥ sendbuf's; IN_PLACE at the root takes the root's input from recvbuf); resolves with
 * recvbuf at the root, null elsewhere. Algorithms: binomial, rabenseifner.
 */
export async function reduce (comm: CollComm, sendbuf: NumericArray | InPlace, recvbuf: NumericArray | null, op: Op = SUM, root = 0, opts?: CollOptions): Promise<NumericArray | null> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  checkRoot(comm, root, 'reduce')
  const P = comm.size; const r = comm.rank; const isRoot = r === root
  if (sendbuf === IN_PLACE && !isRoot) throw invalidArgType('reduce: IN_PLACE is only for the root')
  const src = sendbuf === IN_PLACE ? numeric(recvbuf, 'reduce', 'recvbuf') : numeric(sendbuf, 'reduce', 'sendbuf')
  checkOp(op, src, 'reduce')
  const n = src.length
  let result: NumericArray | null = null
  if (isRoot) {
    const rb = numeric(recvbuf, 'reduce', 'recvbuf'); sameKind(src, rb, 'reduce')
    if (rb.length < n) throw outOfRange(`reduce: recvbuf has ${rb.length} elements, sendbuf ${n}`)
    result = rb.length === n ? rb : rb.subarray(0, n) as NumericArray
    copyInto(result, src)
  }
  if (P === 1) return recvbuf
  if (cseq >= 0) await agree(comm, cseq, 'reduce', n, root, op.id, kindId(src))
  const alg = choose('reduce', { bytes: src.byteLength, total: src.byteLength, P, commute: op.commute, items: n / op.unit }, opts?.algorithm)
  const seg = segBytes(opts)
  const cc = new CheckedComm(comm, 'reduce', alg, root, op.id, kindOf(src), n)
  let ab: ArrayBuffer | null = null
  const fresh = (): NumericArray => { ab = scratch(comm, Math.max(1, src.byteLength)); const a = viewLike(src, ab, 0, n); a.set(src as never); return a }
  const note = cc.rootNotice(root, collTag(seq, 0))
  const run = async (): Promise<void> => {
    if (alg === 'rabenseifner') {
      const acc = isRoot ? result as NumericArray : fresh()
      await reduceRabenseifner(cc, acc, result, op, root, seq, seg)
    } else if (!op.commute && root !== 0) {
      // order-preserving: reduce to rank 0 (relative order = rank order), then rank 0 → root
      const acc = r === 0 ? fresh() : (isRoot ? result as NumericArray : fresh())
      await reduceBinomial(cc, acc, op, 0, seq, 0, seg)
      if (r === 0) await send(cc, acc, root, collTag(seq, 1))
      if (isRoot) await recv(cc, result as NumericArray, 0, collTag(seq, 1), 'reduce')
    } else {
      const v = (r - root + P) % P
      const leaf = (v & 1) === 1 || v + 1 >= P
      const acc = isRoot ? result as NumericArray : (leaf ? src : fresh())
      await reduceBinomial(cc, acc, op, root, seq, 0, seg)
    }
  }
  try {
    await withNotice(note, run())
  } finally { if (ab !== null) release(comm, ab) }
  return isRoot ? recvbuf : null
}

/**
 * MPI_Allreduce: the op over every rank's sendbuf (rank order) into every recvbuf (same kind and
 * length; IN_PLACE takes the input from recvbuf); resolves with recvbuf.
 * Algorithms: recursiveDoubling, rabenseifner, ring, reduceBcast. On shm recursive doubling and a
 * one-segment Rabenseifner run as allreduceSync's code under the awaited tier's bound (invokeAwaited).
 */
export function allreduce<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  try {
    const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
    if (cseq >= 0) return allreduceChecked(comm, sendbuf, recvbuf, op, opts, seq, cseq)
    const call = allreduceCall(comm, sendbuf, recvbuf, op, opts, seq)
    return settled(call === null ? null : invokeAwaited(call, opts === undefined ? lastAllreduce(comm) : null), recvbuf)
  } catch (e) { return Promise.reject(e) }
}

/** The allreduce with the argument check (opts.check) first. */
async function allreduceChecked<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op, opts: CollOptions | undefined, seq: number, cseq: number): Promise<T> {
  allreduceInput(sendbuf, recvbuf, op)
  if (comm.size === 1) return recvbuf
  await agree(comm, cseq, 'allreduce', recvbuf.length, 0, op.id, kindId(recvbuf))
  const call = allreduceCall(comm, sendbuf, recvbuf, op, opts, seq)
  if (call !== null) await invokeAwaited(call, null)
  return recvbuf
}

/** allreduce's argument checks; recvbuf then holds this rank's input. */
function allreduceInput<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op: Op): void {
  numeric(recvbuf, 'allreduce', 'recvbuf')
  checkOp(op, recvbuf, 'allreduce')
  if (sendbuf !== IN_PLACE) {
    // The same constructor as a numeric recvbuf's is numeric: the kind lookup only to name an error.
    if (sendbuf === null || typeof sendbuf !== 'object' || sendbuf.constructor !== recvbuf.constructor) {
      numeric(sendbuf, 'allreduce', 'sendbuf'); sameKind(sendbuf, recvbuf, 'allreduce')
    }
    if (sendbuf.length !== recvbuf.length) throw outOfRange(`allreduce: sendbuf has ${sendbuf.length} elements, recvbuf ${recvbuf.length}`)
    copyInto(recvbuf, sendbuf)
  }
}

/**
 * The allreduce's arguments checked, recvbuf holding this rank's input, and its call (the last
 * one's when this one, without opts, has its shape: LastShape, and then only the send buffer is
 * new: anything but its kind and length throws); null at P = 1.
 */
function allreduceCall<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op, opts: CollOptions | undefined, seq: number): CheckedComm | null {
  const len = recvbuf?.length
  const last = opts === undefined ? lastAllreduce(comm) : null
  let call = last !== null ? last.hit(comm, recvbuf, len, op, 0) : null
  if (call !== null) {
    if (sendbuf !== IN_PLACE && !(last as LastShape).sendOk(sendbuf, len)) allreduceInput(sendbuf, recvbuf, op)
    else if (sendbuf !== IN_PLACE) copyInto(recvbuf, sendbuf)
  } else {
    allreduceInput(sendbuf, recvbuf, op)
    if (comm.size === 1) return null
    const nb = recvbuf.byteLength
    const alg = choose('allreduce', { bytes: nb, total: nb, P: comm.size, commute: op.commute, items: len / op.unit }, opts?.algorithm)
    call = new CheckedComm(comm, 'allreduce', alg, 0, op.id, kindOf(recvbuf), len)
    call.op = op; call.n = nb; call.seg = segBytes(opts)
  }
  call.seq = seq; call.buf = recvbuf
  return call
}

/**
 * MPI_Allreduce in the blocking tier (as a C program's MPI_Allreduce): returns recvbuf once it
 * holds the result, without the event loop, for recursive doubling and for Rabenseifner's
 * algorithm in one segment (eager or rendezvous messages). Throws ERR_MPI_WOULD_BLOCK as
 * barrierSync, also for the ring, reduce + bcast and a segmented Rabenseifner (they run in the
 * awaited tier) and when a rendezvous payload cannot be written without the event loop (larger
 * than the room in the shm ring).
 */
export function allreduceSync<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): T {
  if (checking(opts)) blocked(later(allreduce(comm, sendbuf, recvbuf, op, opts), CHECK_ROUND), recvbuf?.byteLength ?? 0)
  const call = allreduceCall(comm, sendbuf, recvbuf, op, opts, comm._collSeq())
  if (call === null) return recvbuf
  const l = invokeBlocking(call, opts === undefined ? lastAllreduce(comm) : null)
  if (l !== null) blocked(l, call.n)
  return recvbuf
}

/**
 * MPI_Gather: rank i's sendbuf (n bytes, same n everywhere) into bytes [i·n, (i+1)·n) of the root's
 * recvbuf (IN_PLACE at the root: its block is already there); resolves with recvbuf at the root,
 * null elsewhere. Algorithms: binomial, linear.
 */
export async function gather (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  checkRoot(comm, root, 'gather')
  const P = comm.size; const isRoot = comm.rank === root
  if (sendbuf === IN_PLACE && !isRoot) throw invalidArgType('gather: IN_PLACE is only for the root')
  const out = isRoot ? bytes(view(recvbuf, 'gather', 'recvbuf')) : null
  const block = sendbuf === IN_PLACE ? Math.floor((out as Uint8Array).byteLength / P) : view(sendbuf, 'gather', 'sendbuf').byteLength
  if (out !== null && out.byteLength < P * block) throw outOfRange(`gather: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
  const own = sendbuf === IN_PLACE ? (out as Uint8Array).subarray(root * block, (root + 1) * block) : bytes(sendbuf)
  if (P === 1) { if (out !== null) copyBytes(out, 0, own, 0, block); return recvbuf }
  if (cseq >= 0) await agree(comm, cseq, 'gather', block, root, 0, 0)
  const alg = choose('gather', { bytes: block, total: P * block, P, commute: true, items: 0 }, opts?.algorithm)
  const cc = new CheckedComm(comm, 'gather', alg, root, 0, 0, block)
  const note = cc.rootNotice(root, collTag(seq, 0))
  if (alg === 'linear') await withNotice(note, gatherLinear(cc, own, out, (i) => [i * block, block], root, seq))
  else await withNotice(note, gatherBinomial(cc, own, out, block, root, seq))
  return isRoot ? recvbuf : null
}

/**
 * MPI_Gatherv: rank i's sendbuf into recvbuf[displs[i], + counts[i]) at the root (elements of
 * recvbuf; rank i must send exactly counts[i] elements' bytes). IN_PLACE at the root: its part is
 * already in place. Resolves with recvbuf at the root, null elsewhere. Algorithm: linear.
 */
export async function gatherv (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, counts_: ArrayLike<number> | null, displs: ArrayLike<number> | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  checkRoot(comm, root, 'gatherv')
  const P = comm.size; const isRoot = comm.rank === root
  if (sendbuf === IN_PLACE && !isRoot) throw invalidArgType('gatherv: IN_PLACE is only for the root')
  const own = sendbuf === IN_PLACE ? null : bytes(view(sendbuf, 'gatherv', 'sendbuf'))
  let out: Uint8Array | null = null
  let place = (i: number): [number, number] => [0, i]
  if (isRoot) {
    const rb = view(recvbuf, 'gatherv', 'recvbuf'); out = bytes(rb)
    const c = counts(counts_, P, 'gatherv', 'counts'); const d = counts(displs, P, 'gatherv', 'displs')
    const e = (rb as NumericArray).BYTES_PER_ELEMENT ?? 1
    place = (i) => [d[i] * e, c[i] * e]
    for (let i = 0; i < P; i++) within(rb, d[i] * e, c[i] * e, 'gatherv')
    if (own !== null && own.byteLength !== c[root] * e) throw outOfRange(`gatherv: the root's sendbuf has ${own.byteLength} bytes, counts[${root}] says ${c[root] * e}`)
  }
  if (cseq >= 0) await agree(comm, cseq, 'gatherv', 0, root, 0, 0)
  choose('gatherv', { bytes: own?.byteLength ?? 0, total: 0, P, commute: true, items: 0 }, opts?.algorithm)
  const cc = new CheckedComm(comm, 'gatherv', 'linear', root, 0, 0, 0)
  await withNotice(cc.rootNotice(root, collTag(seq, 0)), gatherLinear(cc, own, out, place, root, seq))
  return isRoot ? recvbuf : null
}

/**
 * MPI_Scatter: bytes [i·n, (i+1)·n) of the root's sendbuf into rank i's recvbuf (n = recvbuf's
 * byteLength; IN_PLACE at the root keeps its block in sendbuf). Resolves with recvbuf.
 * Algorithms: binomial, linear.
 */
export async function scatter (comm: CollComm, sendbuf: ArrayBufferView | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  checkRoot(comm, root, 'scatter')
  const P = comm.size; const isRoot = comm.rank === root
  if (recvbuf === IN_PLACE && !isRoot) throw invalidArgType('scatter: IN_PLACE is only for the root')
  const src = isRoot ? bytes(view(sendbuf, 'scatter', 'sendbuf')) : null
  const block = recvbuf === IN_PLACE ? Math.floor((src as Uint8Array).byteLength / P) : view(recvbuf, 'scatter', 'recvbuf').byteLength
  if (src !== null && src.byteLength < P * block) throw outOfRange(`scatter: sendbuf has ${src.byteLength} bytes, ${P} × ${block} needed`)
  const own = recvbuf === IN_PLACE ? (src as Uint8Array).subarray(root * block, (root + 1) * block) : bytes(recvbuf)
  if (P === 1) { if (src !== null) copyBytes(own, 0, src, 0, block); return recvbuf }
  if (cseq >= 0) await agree(comm, cseq, 'scatter', block, root, 0, 0)
  const alg = choose('scatter', { bytes: block, total: P * block, P, commute: true, items: 0 }, opts?.algorithm)
  const cc = new CheckedComm(comm, 'scatter', alg, root, 0, 0, block)
  if (alg === 'linear') await scatterLinear(cc, src, own, (i) => [i * block, block], root, seq)
  else await scatterBinomial(cc, src, own, block, root, seq)
  return recvbuf
}

/**
 * MPI_Scatterv: the root's sendbuf[displs[i], + counts[i]) (elements of sendbuf) into rank i's
 * recvbuf (which must be exactly that many bytes). Resolves with recvbuf. Algorithm: linear.
 */
export async function scatterv (comm: CollComm, sendbuf: ArrayBufferView | null, counts_: ArrayLike<number> | null, displs: ArrayLike<number> | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  checkRoot(comm, root, 'scatterv')
  const P = comm.size; const isRoot = comm.rank === root
  if (recvbuf === IN_PLACE && !isRoot) throw invalidArgType('scatterv: IN_PLACE is only for the root')
  const own = recvbuf === IN_PLACE ? null : bytes(view(recvbuf, 'scatterv', 'recvbuf'))
  let src: Uint8Array | null = null
  let place = (i: number): [number, number] => [0, i]
  if (isRoot) {
    const sb = view(sendbuf, 'scatterv', 'sendbuf'); src = bytes(sb)
    const c = counts(counts_, P, 'scatterv', 'counts'); const d = counts(displs, P, 'scatterv', 'displs')
    const e = (sb as NumericArray).BYTES_PER_ELEMENT ?? 1
    place = (i) => [d[i] * e, c[i] * e]
    for (let i = 0; i < P; i++) within(sb, d[i] * e, c[i] * e, 'scatterv')
    if (own !== null && own.byteLength !== c[root] * e) throw outOfRange(`scatterv: the root's recvbuf has ${own.byteLength} bytes, counts[${root}] says ${c[root] * e}`)
  }
  if (cseq >= 0) await agree(comm, cseq, 'scatterv', 0, root, 0, 0)
  choose('scatterv', { bytes: own?.byteLength ?? 0, total: 0, P, commute: true, items: 0 }, opts?.algorithm)
  await scatterLinear(new CheckedComm(comm, 'scatterv', 'linear', root, 0, 0, 0), src, own, place, root, seq)
  return recvbuf
}

/**
 * MPI_Allgather: rank i's sendbuf (n bytes) into bytes [i·n, (i+1)·n) of every recvbuf (IN_PLACE:
 * each rank's block is already in its recvbuf). Resolves with recvbuf.
 * Algorithms: recursiveDoubling (power-of-two P), bruck, ring.
 */
export async function allgather<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  const P = comm.size; const r = comm.rank
  const out = bytes(view(recvbuf, 'allgather', 'recvbuf'))
  const block = sendbuf === IN_PLACE ? Math.floor(out.byteLength / P) : view(sendbuf, 'allgather', 'sendbuf').byteLength
  if (out.byteLength < P * block) throw outOfRange(`allgather: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
  if (sendbuf !== IN_PLACE) copyBytes(out, r * block, bytes(sendbuf), 0, block)
  if (P === 1) return recvbuf
  if (cseq >= 0) await agree(comm, cseq, 'allgather', block, 0, 0, 0)
  const alg = choose('allgather', { bytes: block, total: P * block, P, commute: true, items: 0 }, opts?.algorithm)
  const cc = new CheckedComm(comm, 'allgather', alg, 0, 0, 0, block)
  if (alg === 'recursiveDoubling') await allgatherRecursiveDoubling(cc, out, block, seq)
  else if (alg === 'bruck') await allgatherBruck(cc, out, block, seq)
  else await allgatherRing(cc, out, (i) => [i * block, block], seq)
  return recvbuf
}

/**
 * MPI_Allgatherv: rank i's sendbuf into recvbuf[displs[i], + counts[i]) on every rank (elements of
 * recvbuf). Resolves with recvbuf. Algorithm: ring.
 */
export async function allgatherv<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, counts_: ArrayLike<number>, displs: ArrayLike<number>, opts?: CollOptions): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  const P = comm.size; const r = comm.rank
  const out = bytes(view(recvbuf, 'allgatherv', 'recvbuf'))
  const c = counts(counts_, P, 'allgatherv', 'counts'); const d = counts(displs, P, 'allgatherv', 'displs')
  const e = (recvbuf as unknown as NumericArray).BYTES_PER_ELEMENT ?? 1
  for (let i = 0; i < P; i++) within(recvbuf, d[i] * e, c[i] * e, 'allgatherv')
  const place = (i: number): [number, number] => [d[i] * e, c[i] * e]
  if (sendbuf !== IN_PLACE) {
    const sb = bytes(view(sendbuf, 'allgatherv', 'sendbuf'))
    if (sb.byteLength !== c[r] * e) throw outOfRange(`allgatherv: sendbuf has ${sb.byteLength} bytes, counts[${r}] says ${c[r] * e}`)
    copyBytes(out, d[r] * e, sb, 0, sb.byteLength)
  }
  if (P === 1) return recvbuf
  if (cseq >= 0) await agree(comm, cseq, 'allgatherv', 0, 0, 0, 0)
  choose('allgatherv', { bytes: 0, total: out.byteLength, P, commute: true, items: 0 }, opts?.algorithm)
  await allgatherRing(new CheckedComm(comm, 'allgatherv', 'ring', 0, 0, 0, 0), out, place, seq)
  return recvbuf
}

/**
 * MPI_Alltoall: bytes [j·n, (j+1)·n) of rank i's sendbuf into bytes [i·n, (i+1)·n) of rank j's
 * recvbuf (n = sendbuf.byteLength / P; IN_PLACE: recvbuf is both). Resolves with recvbuf.
 * Algorithms: bruck, linear, pairwise.
 */
export async function alltoall<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  const P = comm.size
  const out = bytes(view(recvbuf, 'alltoall', 'recvbuf'))
  const inPlace = sendbuf === IN_PLACE
  const sb0 = inPlace ? out : bytes(view(sendbuf, 'alltoall', 'sendbuf'))
  if (sb0.byteLength % P !== 0) throw outOfRange(`alltoall: sendbuf's ${sb0.byteLength} bytes do not split into ${P} blocks`)
  const block = sb0.byteLength / P
  if (out.byteLength < P * block) throw outOfRange(`alltoall: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
  let ab: ArrayBuffer | null = null
  let sb = sb0
  if (inPlace) { ab = scratch(comm, Math.max(1, P * block)); sb = new Uint8Array(ab, 0, P * block); sb.set(out.subarray(0, P * block)) }
  try {
    if (P === 1) { copyBytes(out, 0, sb, 0, block); return recvbuf }
    if (cseq >= 0) await agree(comm, cseq, 'alltoall', block, 0, 0, 0)
    const alg = choose('alltoall', { bytes: block, total: P * block, P, commute: true, items: 0 }, opts?.algorithm)
    const cc = new CheckedComm(comm, 'alltoall', alg, 0, 0, 0, block)
    if (alg === 'bruck') await alltoallBruck(cc, sb, out, block, seq)
    else if (alg === 'pairwise') await alltoallPairwise(cc, sb, out, block, seq)
    else await alltoallLinear(cc, sb, (i) => [i * block, block], out, (i) => [i * block, block], seq)
  } finally { if (ab !== null) release(comm, ab) }
  return recvbuf
}

/**
 * MPI_Alltoallv: sendbuf[sendDispls[j], + sendCounts[j]) (elements of sendbuf) to rank j, which
 * receives it into recvbuf[recvDispls[i], + recvCounts[i]) (elements of recvbuf). Algorithm: linear.
 */
export async function alltoallv<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView, sendCounts: ArrayLike<number>, sendDispls: ArrayLike<number>, recvbuf: T, recvCounts: ArrayLike<number>, recvDispls: ArrayLike<number>, opts?: CollOptions): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  const P = comm.size
  const sv = view(sendbuf, 'alltoallv', 'sendbuf'); const rv = view(recvbuf, 'alltoallv', 'recvbuf')
  const sc = counts(sendCounts, P, 'alltoallv', 'sendCounts'); const sd = counts(sendDispls, P, 'alltoallv', 'sendDispls')
  const rc = counts(recvCounts, P, 'alltoallv', 'recvCounts'); const rd = counts(recvDispls, P, 'alltoallv', 'recvDispls')
  const se = (sv as NumericArray).BYTES_PER_ELEMENT ?? 1; const re = (rv as NumericArray).BYTES_PER_ELEMENT ?? 1
  for (let i = 0; i < P; i++) { within(sv, sd[i] * se, sc[i] * se, 'alltoallv'); within(rv, rd[i] * re, rc[i] * re, 'alltoallv') }
  const r = comm.rank
  if (sc[r] * se !== rc[r] * re) throw outOfRange(`alltoallv: this rank sends itself ${sc[r] * se} bytes but expects ${rc[r] * re}`)
  if (cseq >= 0) await agree(comm, cseq, 'alltoallv', 0, 0, 0, 0)
  choose('alltoallv', { bytes: 0, total: 0, P, commute: true, items: 0 }, opts?.algorithm)
  await alltoallLinear(new CheckedComm(comm, 'alltoallv', 'linear', 0, 0, 0, 0), bytes(sv), (i) => [sd[i] * se, sc[i] * se], bytes(rv), (i) => [rd[i] * re, rc[i] * re], seq)
  return recvbuf
}

/**
 * MPI_Reduce_scatter_block: the op over every rank's sendbuf (P·m elements, rank order), block i
 * (elements [i·m, (i+1)·m)) into rank i's recvbuf (m elements). IN_PLACE: recvbuf holds the P·m
 * input and receives the result in its first m elements. Algorithms: ring, reduceThenScatter.
 */
export async function reduceScatterBlock<T extends NumericArray> (comm: CollComm, sendbuf: NumericArray | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1; const seq2 = comm._collSeq()
  const P = comm.size; const r = comm.rank
  numeric(recvbuf, 'reduceScatterBlock', 'recvbuf')
  const src = sendbuf === IN_PLACE ? recvbuf : numeric(sendbuf, 'reduceScatterBlock', 'sendbuf')
  sameKind(src, recvbuf, 'reduceScatterBlock')
  checkOp(op, src, 'reduceScatterBlock')
  const m = sendbuf === IN_PLACE ? src.length / P : recvbuf.length
  if (!Number.isInteger(m) || src.length < P * m) throw outOfRange(`reduceScatterBlock: sendbuf needs ${P} × recvbuf's elements`)
  if (m % op.unit !== 0) throw outOfRange(`reduceScatterBlock: ${op.name} blocks must hold whole pairs`)
  if (P === 1) { copyInto(recvbuf.subarray(0, m) as NumericArray, src.subarray(0, m) as NumericArray); return recvbuf }
  if (cseq >= 0) await agree(comm, cseq, 'reduceScatterBlock', m, 0, op.id, kindId(src))
  const alg = choose('reduceScatterBlock', { bytes: src.byteLength, total: src.byteLength, P, commute: op.commute, items: src.length / op.unit }, opts?.algorithm)
  const ab = scratch(comm, (P * m + m) * src.BYTES_PER_ELEMENT + 8)
  const cc = new CheckedComm(comm, 'reduceScatterBlock', alg, 0, op.id, kindOf(src), m)
  try {
    const acc = viewLike(src, ab, 0, P * m); acc.set(src.subarray(0, P * m) as never)
    if (alg === 'ring') {
      const tmp = viewLike(src, ab, P * m, m)
      await ringReduceScatter(cc, acc, tmp, (b) => b * m, op, seq, Math.max(op.unit, Math.floor(segBytes(opts) / src.BYTES_PER_ELEMENT / op.unit) * op.unit))
      recvbuf.set(acc.subarray(r * m, (r + 1) * m) as never)
    } else {
      await reduceBinomial(cc, acc, op, 0, seq, 0, segBytes(opts))
      const blk = m * src.BYTES_PER_ELEMENT
      await scatterBinomial(cc, r === 0 ? bytes(acc) : null, bytes(recvbuf).subarray(0, blk), blk, 0, seq2)
    }
  } finally { release(comm, ab) }
  return recvbuf
}

async function scanCommon<T extends NumericArray> (what: 'scan' | 'exscan', comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op, opts: CollOptions | undefined): Promise<T> {
  const seq = comm._collSeq(); const cseq = checking(opts) ? comm._collSeq() : -1
  numeric(recvbuf, what, 'recvbuf')
  const mine = sendbuf === IN_PLACE ? recvbuf : numeric(sendbuf, what, 'sendbuf') as T
  sameKind(mine, recvbuf, what); checkOp(op, mine, what)
  if (mine.length !== recvbuf.length) throw outOfRange(`${what}: sendbuf has ${mine.length} elements, recvbuf ${recvbuf.length}`)
  if (comm.size === 1) { if (what === 'scan') copyInto(recvbuf, mine); return recvbuf }
  if (cseq >= 0) await agree(comm, cseq, what, mine.length, 0, op.id, kindId(mine))
  const alg = choose(what, { bytes: mine.byteLength, total: mine.byteLength, P: comm.size, commute: op.commute, items: mine.length / op.unit }, opts?.algorithm)
  const cc = new CheckedComm(comm, what, alg, 0, op.id, kindOf(mine), mine.length)
  if (alg === 'linear') await scanLinear(cc, mine, recvbuf, op, what === 'exscan', seq)
  else await scanRecursiveDoubling(cc, mine, recvbuf, op, what === 'exscan', seq)
  return recvbuf
}

/** MPI_Scan: recvbuf on rank r = sendbuf_0 ∘ ... ∘ sendbuf_r. Algorithms: recursiveDoubling, linear. */
export async function scan<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return await scanCommon('scan', comm, sendbuf, recvbuf, op, opts)
}

/** MPI_Exscan: recvbuf on rank r > 0 = sendbuf_0 ∘ ... ∘ sendbuf_{r-1}; rank 0's recvbuf untouched. Algorithms: recursiveDoubling, linear. */
export async function exscan<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return await scanCommon('exscan', comm, sendbuf, recvbuf, op, opts)
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

/** MPI_Ibarrier: starts the barrier; returns its Request (wait()/test(), waitAll...). */
export function ibarrier (comm: CollComm, opts?: CollOptions): CollectiveRequest<void> {
  return new CollectiveRequest(barrier(comm, opts), 0)
}
/** MPI_Ibcast: starts bcast; returns its Request (`result` resolves with buf). */
export function ibcast<T extends ArrayBufferView> (comm: CollComm, buf: T, root = 0, opts?: CollOptions): CollectiveRequest<T> {
  return new CollectiveRequest(bcast(comm, buf, root, opts), buf?.byteLength ?? 0)
}
/** MPI_Iallreduce: starts allreduce; returns its Request (`result` resolves with recvbuf). */
export function iallreduce<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): CollectiveRequest<T> {
  return new CollectiveRequest(allreduce(comm, sendbuf, recvbuf, op, opts), recvbuf?.byteLength ?? 0)
}
