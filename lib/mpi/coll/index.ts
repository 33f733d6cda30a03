/**
 * fastsock/mpi collectives and communicator creation (issue 18). Every function takes the
 * communicator first: `fn(comm: CollComm, ...args)`; lib/mpi/comm.ts wires Comm's methods to them.
 * Buffer arguments follow mpi4py's buffer tier in camelCase (plan: "Buffer-argument conventions").
 * Counts and displacements are in ELEMENTS of the array they index.
 *
 * Each collective is one `Collective` here (its argument checks and local part, what its
 * algorithms' records read, its result) and each public function one line: invoke.ts
 * `invoke(collective, tier, comm, x, y, z, opts)` runs the preamble once for all of them (sequence
 * numbers, taken synchronously before any await so collectives started back to back without
 * awaiting still match across ranks; the checks; the optional agreement; the choice; the
 * CheckedComm) and dispatches by tier through the algorithm's record (select.ts).
 *
 * Errors: bad arguments throw (synchronously for the blocking and the non-async i* functions, as a
 * rejection for the others) TypeError ERR_INVALID_ARG_TYPE / RangeError ERR_OUT_OF_RANGE; ERR_MPI_OP for an op
 * that does not apply; ERR_MPI_COLL_ALGORITHM for a bad forced algorithm; ERR_MPI_COLL_MISMATCH
 * when a rank receives a message whose call descriptor (check.ts: collective, algorithm, root,
 * op, element kind, count) or size differs from its own, or another rank's abort notice; the
 * point-to-point layer's errors (ERR_MPI_PEER_LOST, ...) pass through. Every algorithm runs on a
 * CheckedComm (check.ts) wrapping `comm`, which adds and checks the descriptors.
 * Algorithms and thresholds: select.ts and docs/mpi-collectives.md ("The records").
 */
import { invalidArgType, outOfRange } from '../errors'
import { CollError, IN_PLACE, UNDEFINED } from './types'
import type { CollComm, CollHandle, CollOptions, InPlace, NumericArray } from './types'
import { Op, SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC } from './ops'
import type { UserOpFunction } from './ops'
import { algorithmTable, envName, THRESHOLDS } from './select'
import type { Case } from './select'
import { DEFAULT_SEGMENT_BYTES, EMPTY, bytes, copyBytes } from './util'
import { AWAITED, BLOCKING, CollectiveRequest, collective, invoke } from './invoke'
import type { Collective, LastShape } from './invoke'
import type { CheckedComm } from './check'
import { kindOf } from './check'
import type { Gathered, Place, Scattered, AllGathered } from './gather'
import type { Exchanged } from './alltoall'
import type { ReduceScattered, Reduced, Scanned } from './reduce'

export { Op, SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, IN_PLACE, UNDEFINED, CollError, algorithmTable, envName, THRESHOLDS, CollectiveRequest }
export type { CollComm, CollHandle, CollOptions, InPlace, NumericArray, UserOpFunction }
export { bcastObject, gatherObject, allgatherObject, dup, split, splitLocal, free } from './comms'

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
/** What choose() looks at (select.ts Case). */
function caseOf (bytes: number, total: number, P: number, commute: boolean, items: number): Case {
  return { bytes, total, P, commute, items }
}
/** Rank i's [byteOffset, byteLength] in a v-variant's buffer of `e`-byte elements. */
function placeOf (c: ArrayLike<number>, d: ArrayLike<number>, e: number): Place {
  return (i) => [d[i] * e, c[i] * e]
}
/**
 * The root's layout of a gatherv/scatterv buffer `buf`: `counts`/`displs` (elements of buf)
 * checked against it, and the root's own part (`own`, its `ownName`) against counts[root].
 */
function rootPlaces (buf: ArrayBufferView, counts_: ArrayLike<number> | null, displs: ArrayLike<number> | null, P: number, root: number, own: Uint8Array | null, what: string, ownName: string): Place {
  const c = counts(counts_, P, what, 'counts'); const d = counts(displs, P, what, 'displs')
  const e = (buf as NumericArray).BYTES_PER_ELEMENT ?? 1
  for (let i = 0; i < P; i++) within(buf, d[i] * e, c[i] * e, what)
  if (own !== null && own.byteLength !== c[root] * e) throw outOfRange(`${what}: the root's ${ownName} has ${own.byteLength} bytes, counts[${root}] says ${c[root] * e}`)
  return placeOf(c, d, e)
}
/** A non-root's place function of a v-variant (it reads none). */
const NOWHERE: Place = (i) => [0, i]
/** Rank i's block of `block` bytes. */
function blocks (block: number): Place {
  return (i) => [i * block, block]
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

// ---- the collectives: argument checks, local part, what the records read, result -------------

const BARRIER: Collective<null, null, null, void> = collective({
  name: 'barrier',
  slot: 0,
  prepare: (comm) => comm.size === 1 ? null : { case: caseOf(0, 0, comm.size, true, 0), root: 0, opId: 0, kind: 0, count: 0 },
  hit: (last, comm) => last.hit(comm, EMPTY, 0, null, 0),
  result: () => undefined,
  bytes: () => 0
})

const BCAST: Collective<ArrayBufferView, number, null, ArrayBufferView> = collective({
  name: 'bcast',
  slot: 1,
  prepare: (comm, b, root, _, opts) => {
    const buf = view(b, 'bcast', 'buf'); checkRoot(comm, root, 'bcast')
    if (comm.size === 1) return null
    const len = buf.byteLength
    return { case: caseOf(len, len, comm.size, true, 0), root, opId: 0, kind: 0, count: len, buf, n: len, seg: segBytes(opts) }
  },
  hit: (last, comm, buf, root) => {
    const call = last.hit(comm, buf, buf?.byteLength, null, root)
    if (call !== null) call.buf = buf
    return call
  },
  result: (_, buf) => buf,
  bytes: (buf) => buf?.byteLength ?? 0
})

/** reduce's op and root. */
interface OpRoot { op: Op, root: number }
const REDUCE: Collective<NumericArray | InPlace, NumericArray | null, OpRoot, NumericArray | null> = collective({
  name: 'reduce',
  slot: -1,
  notice: true,
  prepare: (comm, sendbuf, recvbuf, { op, root }, opts) => {
    checkRoot(comm, root, 'reduce')
    const P = comm.size; const isRoot = comm.rank === root
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
    if (P === 1) return null
    const data: Reduced = { src, result }
    return { case: caseOf(src.byteLength, src.byteLength, P, op.commute, n / op.unit), root, opId: op.id, kind: kindOf(src), count: n, op, seg: segBytes(opts), data }
  },
  result: (comm, _, recvbuf, { root }) => comm.rank === root ? recvbuf : null,
  bytes: (_, recvbuf) => recvbuf?.byteLength ?? 0
})

/** allreduce's argument checks; recvbuf then holds this rank's input. */
function allreduceInput (sendbuf: NumericArray | InPlace, recvbuf: NumericArray, op: Op): void {
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
const ALLREDUCE: Collective<NumericArray | InPlace, NumericArray, Op, NumericArray> = collective({
  name: 'allreduce',
  slot: 2,
  prepare: (comm, sendbuf, recvbuf, op, opts) => {
    allreduceInput(sendbuf, recvbuf, op)
    if (comm.size === 1) return null
    const nb = recvbuf.byteLength; const len = recvbuf.length
    return { case: caseOf(nb, nb, comm.size, op.commute, len / op.unit), root: 0, opId: op.id, kind: kindOf(recvbuf), count: len, buf: recvbuf, op, n: nb, seg: segBytes(opts) }
  },
  // The last call's shape: only the send buffer is new (anything but its kind and length throws).
  hit: (last: LastShape, comm, sendbuf, recvbuf, op): CheckedComm | null => {
    const len = recvbuf?.length
    const call = last.hit(comm, recvbuf, len, op, 0)
    if (call === null) return null
    if (sendbuf !== IN_PLACE) {
      if (!last.sendOk(sendbuf, len)) allreduceInput(sendbuf, recvbuf, op)
      else copyInto(recvbuf, sendbuf)
    }
    call.buf = recvbuf
    return call
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: (_, recvbuf) => recvbuf?.byteLength ?? 0
})

const GATHER: Collective<ArrayBufferView | InPlace, ArrayBufferView | null, number, ArrayBufferView | null> = collective({
  name: 'gather',
  slot: -1,
  notice: true,
  prepare: (comm, sendbuf, recvbuf, root) => {
    checkRoot(comm, root, 'gather')
    const P = comm.size; const isRoot = comm.rank === root
    if (sendbuf === IN_PLACE && !isRoot) throw invalidArgType('gather: IN_PLACE is only for the root')
    const out = isRoot ? bytes(view(recvbuf, 'gather', 'recvbuf')) : null
    const block = sendbuf === IN_PLACE ? Math.floor((out as Uint8Array).byteLength / P) : view(sendbuf, 'gather', 'sendbuf').byteLength
    if (out !== null && out.byteLength < P * block) throw outOfRange(`gather: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
    const own = sendbuf === IN_PLACE ? (out as Uint8Array).subarray(root * block, (root + 1) * block) : bytes(sendbuf)
    if (P === 1) { if (out !== null) copyBytes(out, 0, own, 0, block); return null }
    const data: Gathered = { own, out, block, place: blocks(block) }
    return { case: caseOf(block, P * block, P, true, 0), root, opId: 0, kind: 0, count: block, data }
  },
  result: (comm, _, recvbuf, root) => comm.rank === root ? recvbuf : null,
  bytes: () => 0
})

/** A v-variant's counts and displacements (elements), and its root. */
interface Layout { counts: ArrayLike<number> | null, displs: ArrayLike<number> | null, root: number }
const GATHERV: Collective<ArrayBufferView | InPlace, ArrayBufferView | null, Layout, ArrayBufferView | null> = collective({
  name: 'gatherv',
  slot: -1,
  notice: true,
  prepare: (comm, sendbuf, recvbuf, { counts: counts_, displs, root }) => {
    checkRoot(comm, root, 'gatherv')
    const P = comm.size; const isRoot = comm.rank === root
    if (sendbuf === IN_PLACE && !isRoot) throw invalidArgType('gatherv: IN_PLACE is only for the root')
    const own = sendbuf === IN_PLACE ? null : bytes(view(sendbuf, 'gatherv', 'sendbuf'))
    const rb = isRoot ? view(recvbuf, 'gatherv', 'recvbuf') : null
    const place = rb !== null ? rootPlaces(rb, counts_, displs, P, root, own, 'gatherv', 'sendbuf') : NOWHERE
    const data: Gathered = { own, out: rb !== null ? bytes(rb) : null, block: 0, place }
    return { case: caseOf(own?.byteLength ?? 0, 0, P, true, 0), root, opId: 0, kind: 0, count: 0, data }
  },
  result: (comm, _, recvbuf, { root }) => comm.rank === root ? recvbuf : null,
  bytes: () => 0
})

const SCATTER: Collective<ArrayBufferView | null, ArrayBufferView | InPlace, number, ArrayBufferView | InPlace> = collective({
  name: 'scatter',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf, root) => {
    checkRoot(comm, root, 'scatter')
    const P = comm.size; const isRoot = comm.rank === root
    if (recvbuf === IN_PLACE && !isRoot) throw invalidArgType('scatter: IN_PLACE is only for the root')
    const src = isRoot ? bytes(view(sendbuf, 'scatter', 'sendbuf')) : null
    const block = recvbuf === IN_PLACE ? Math.floor((src as Uint8Array).byteLength / P) : view(recvbuf, 'scatter', 'recvbuf').byteLength
    if (src !== null && src.byteLength < P * block) throw outOfRange(`scatter: sendbuf has ${src.byteLength} bytes, ${P} × ${block} needed`)
    const own = recvbuf === IN_PLACE ? (src as Uint8Array).subarray(root * block, (root + 1) * block) : bytes(recvbuf)
    if (P === 1) { if (src !== null) copyBytes(own, 0, src, 0, block); return null }
    const data: Scattered = { src, own, block, place: blocks(block) }
    return { case: caseOf(block, P * block, P, true, 0), root, opId: 0, kind: 0, count: block, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

const SCATTERV: Collective<ArrayBufferView | null, ArrayBufferView | InPlace, Layout, ArrayBufferView | InPlace> = collective({
  name: 'scatterv',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf, { counts: counts_, displs, root }) => {
    checkRoot(comm, root, 'scatterv')
    const P = comm.size; const isRoot = comm.rank === root
    if (recvbuf === IN_PLACE && !isRoot) throw invalidArgType('scatterv: IN_PLACE is only for the root')
    const own = recvbuf === IN_PLACE ? null : bytes(view(recvbuf, 'scatterv', 'recvbuf'))
    const sb = isRoot ? view(sendbuf, 'scatterv', 'sendbuf') : null
    const place = sb !== null ? rootPlaces(sb, counts_, displs, P, root, own, 'scatterv', 'recvbuf') : NOWHERE
    const data: Scattered = { src: sb !== null ? bytes(sb) : null, own, block: 0, place }
    return { case: caseOf(own?.byteLength ?? 0, 0, P, true, 0), root, opId: 0, kind: 0, count: 0, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

const ALLGATHER: Collective<ArrayBufferView | InPlace, ArrayBufferView, null, ArrayBufferView> = collective({
  name: 'allgather',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf) => {
    const P = comm.size; const r = comm.rank
    const out = bytes(view(recvbuf, 'allgather', 'recvbuf'))
    const block = sendbuf === IN_PLACE ? Math.floor(out.byteLength / P) : view(sendbuf, 'allgather', 'sendbuf').byteLength
    if (out.byteLength < P * block) throw outOfRange(`allgather: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
    if (sendbuf !== IN_PLACE) copyBytes(out, r * block, bytes(sendbuf), 0, block)
    if (P === 1) return null
    const data: AllGathered = { out, block, place: blocks(block) }
    return { case: caseOf(block, P * block, P, true, 0), root: 0, opId: 0, kind: 0, count: block, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

const ALLGATHERV: Collective<ArrayBufferView | InPlace, ArrayBufferView, Layout, ArrayBufferView> = collective({
  name: 'allgatherv',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf, { counts: counts_, displs }) => {
    const P = comm.size; const r = comm.rank
    const out = bytes(view(recvbuf, 'allgatherv', 'recvbuf'))
    const c = counts(counts_, P, 'allgatherv', 'counts'); const d = counts(displs, P, 'allgatherv', 'displs')
    const e = (recvbuf as unknown as NumericArray).BYTES_PER_ELEMENT ?? 1
    for (let i = 0; i < P; i++) within(recvbuf, d[i] * e, c[i] * e, 'allgatherv')
    if (sendbuf !== IN_PLACE) {
      const sb = bytes(view(sendbuf, 'allgatherv', 'sendbuf'))
      if (sb.byteLength !== c[r] * e) throw outOfRange(`allgatherv: sendbuf has ${sb.byteLength} bytes, counts[${r}] says ${c[r] * e}`)
      copyBytes(out, d[r] * e, sb, 0, sb.byteLength)
    }
    if (P === 1) return null
    const data: AllGathered = { out, block: 0, place: placeOf(c, d, e) }
    return { case: caseOf(0, out.byteLength, P, true, 0), root: 0, opId: 0, kind: 0, count: 0, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

const ALLTOALL: Collective<ArrayBufferView | InPlace, ArrayBufferView, null, ArrayBufferView> = collective({
  name: 'alltoall',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf) => {
    const P = comm.size
    const out = bytes(view(recvbuf, 'alltoall', 'recvbuf'))
    const send = sendbuf === IN_PLACE ? null : bytes(view(sendbuf, 'alltoall', 'sendbuf'))
    const total = (send ?? out).byteLength
    if (total % P !== 0) throw outOfRange(`alltoall: sendbuf's ${total} bytes do not split into ${P} blocks`)
    const block = total / P
    if (out.byteLength < P * block) throw outOfRange(`alltoall: recvbuf has ${out.byteLength} bytes, ${P} × ${block} needed`)
    if (P === 1) { if (send !== null) copyBytes(out, 0, send, 0, block); return null }
    const data: Exchanged = { send, out, block, sendPlace: blocks(block), recvPlace: blocks(block) }
    return { case: caseOf(block, P * block, P, true, 0), root: 0, opId: 0, kind: 0, count: block, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

/** alltoallv's counts and displacements (elements of the buffer each indexes). */
interface Layouts { sendCounts: ArrayLike<number>, sendDispls: ArrayLike<number>, recvCounts: ArrayLike<number>, recvDispls: ArrayLike<number> }
const ALLTOALLV: Collective<ArrayBufferView, ArrayBufferView, Layouts, ArrayBufferView> = collective({
  name: 'alltoallv',
  slot: -1,
  prepare: (comm, sendbuf, recvbuf, a) => {
    const P = comm.size
    const sv = view(sendbuf, 'alltoallv', 'sendbuf'); const rv = view(recvbuf, 'alltoallv', 'recvbuf')
    const sc = counts(a.sendCounts, P, 'alltoallv', 'sendCounts'); const sd = counts(a.sendDispls, P, 'alltoallv', 'sendDispls')
    const rc = counts(a.recvCounts, P, 'alltoallv', 'recvCounts'); const rd = counts(a.recvDispls, P, 'alltoallv', 'recvDispls')
    const se = (sv as NumericArray).BYTES_PER_ELEMENT ?? 1; const re = (rv as NumericArray).BYTES_PER_ELEMENT ?? 1
    for (let i = 0; i < P; i++) { within(sv, sd[i] * se, sc[i] * se, 'alltoallv'); within(rv, rd[i] * re, rc[i] * re, 'alltoallv') }
    const r = comm.rank
    if (sc[r] * se !== rc[r] * re) throw outOfRange(`alltoallv: this rank sends itself ${sc[r] * se} bytes but expects ${rc[r] * re}`)
    const data: Exchanged = { send: bytes(sv), out: bytes(rv), block: 0, sendPlace: placeOf(sc, sd, se), recvPlace: placeOf(rc, rd, re) }
    return { case: caseOf(0, 0, P, true, 0), root: 0, opId: 0, kind: 0, count: 0, data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

const REDUCE_SCATTER_BLOCK: Collective<NumericArray | InPlace, NumericArray, Op, NumericArray> = collective({
  name: 'reduceScatterBlock',
  slot: -1,
  seq2: true,
  prepare: (comm, sendbuf, recvbuf, op, opts) => {
    const P = comm.size
    numeric(recvbuf, 'reduceScatterBlock', 'recvbuf')
    const src = sendbuf === IN_PLACE ? recvbuf : numeric(sendbuf, 'reduceScatterBlock', 'sendbuf')
    sameKind(src, recvbuf, 'reduceScatterBlock')
    checkOp(op, src, 'reduceScatterBlock')
    const m = sendbuf === IN_PLACE ? src.length / P : recvbuf.length
    if (!Number.isInteger(m) || src.length < P * m) throw outOfRange(`reduceScatterBlock: sendbuf needs ${P} × recvbuf's elements`)
    if (m % op.unit !== 0) throw outOfRange(`reduceScatterBlock: ${op.name} blocks must hold whole pairs`)
    if (P === 1) { copyInto(recvbuf.subarray(0, m) as NumericArray, src.subarray(0, m) as NumericArray); return null }
    const data: ReduceScattered = { src, recvbuf, m }
    return { case: caseOf(src.byteLength, src.byteLength, P, op.commute, src.length / op.unit), root: 0, opId: op.id, kind: kindOf(src), count: m, op, seg: segBytes(opts), data }
  },
  result: (_, __, recvbuf) => recvbuf,
  bytes: () => 0
})

/** MPI_Scan (inclusive) or MPI_Exscan (exclusive: rank 0's recvbuf untouched). */
function scanOf (what: 'scan' | 'exscan'): Collective<NumericArray | InPlace, NumericArray, Op, NumericArray> {
  return collective({
    name: what,
    slot: -1,
    prepare: (comm, sendbuf, recvbuf, op) => {
      numeric(recvbuf, what, 'recvbuf')
      const mine = sendbuf === IN_PLACE ? recvbuf : numeric(sendbuf, what, 'sendbuf')
      sameKind(mine, recvbuf, what); checkOp(op, mine, what)
      if (mine.length !== recvbuf.length) throw outOfRange(`${what}: sendbuf has ${mine.length} elements, recvbuf ${recvbuf.length}`)
      if (comm.size === 1) { if (what === 'scan') copyInto(recvbuf, mine); return null }
      const data: Scanned = { mine, acc: recvbuf }
      return { case: caseOf(mine.byteLength, mine.byteLength, comm.size, op.commute, mine.length / op.unit), root: 0, opId: op.id, kind: kindOf(mine), count: mine.length, op, data }
    },
    result: (_, __, recvbuf) => recvbuf,
    bytes: () => 0
  })
}
const SCAN = scanOf('scan')
const EXSCAN = scanOf('exscan')

// ---- the entry points ------------------------------------------------------------------------

/** MPI_Barrier. Algorithms: dissemination, linear (select.ts chooses), tree. */
export function barrier (comm: CollComm, opts?: CollOptions): Promise<void> {
  return invoke(BARRIER, AWAITED, comm, null, null, null, opts) as Promise<void>
}

/**
 * MPI_Barrier in the blocking tier (as a C program's MPI_Barrier): returns once every rank has
 * entered, without the event loop (drive.ts, runSync). Throws MpiError ERR_MPI_WOULD_BLOCK, the
 * barrier going on (`await err.request.wait()` completes it), when it cannot finish without the
 * event loop now: a connection still being set up or without synchronous I/O (not shm), the
 * tree algorithm, `opts.check`. Ranks may mix barrier() and barrierSync(): the messages are the same.
 */
export function barrierSync (comm: CollComm, opts?: CollOptions): void {
  invoke(BARRIER, BLOCKING, comm, null, null, null, opts)
}

/** MPI_Bcast: root's `buf` into every rank's `buf` (same byteLength on every rank); resolves with buf. Algorithms: binomial, scatterAllgather, linear. */
export function bcast<T extends ArrayBufferView> (comm: CollComm, buf: T, root = 0, opts?: CollOptions): Promise<T> {
  return invoke(BCAST, AWAITED, comm, buf, root, null, opts) as Promise<T>
}

/**
 * MPI_Bcast in the blocking tier: returns `buf` once it holds the root's bytes, without the
 * event loop, for the binomial and linear algorithms in one segment (eager or rendezvous messages). Throws
 * ERR_MPI_WOULD_BLOCK as barrierSync, also for the other algorithms and segmented messages (they
 * run in the awaited tier; `await err.request.wait()`), and when a rendezvous payload cannot be
 * written without the event loop (larger than the room in the shm ring).
 */
export function bcastSync<T extends ArrayBufferView> (comm: CollComm, buf: T, root = 0, opts?: CollOptions): T {
  return invoke(BCAST, BLOCKING, comm, buf, root, null, opts) as T
}

/**
 * MPI_Reduce: the op applied over every rank's sendbuf (rank order), into recvbuf at the root
 * (length ≥ sendbuf's; IN_PLACE at the root takes the root's input from recvbuf); resolves with
 * recvbuf at the root, null elsewhere. Algorithms: binomial, rabenseifner.
 */
export function reduce (comm: CollComm, sendbuf: NumericArray | InPlace, recvbuf: NumericArray | null, op: Op = SUM, root = 0, opts?: CollOptions): Promise<NumericArray | null> {
  return invoke(REDUCE, AWAITED, comm, sendbuf, recvbuf, { op, root }, opts) as Promise<NumericArray | null>
}

/**
 * MPI_Allreduce: the op over every rank's sendbuf (rank order) into every recvbuf (same kind and
 * length; IN_PLACE takes the input from recvbuf); resolves with recvbuf.
 * Algorithms: recursiveDoubling, rabenseifner, ring, reduceBcast.
 */
export function allreduce<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return invoke(ALLREDUCE, AWAITED, comm, sendbuf, recvbuf, op, opts) as Promise<T>
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
  return invoke(ALLREDUCE, BLOCKING, comm, sendbuf, recvbuf, op, opts) as T
}

/**
 * MPI_Gather: rank i's sendbuf (n bytes, same n everywhere) into bytes [i·n, (i+1)·n) of the root's
 * recvbuf (IN_PLACE at the root: its block is already there); resolves with recvbuf at the root,
 * null elsewhere. Algorithms: binomial, linear.
 */
export function gather (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> {
  return invoke(GATHER, AWAITED, comm, sendbuf, recvbuf, root, opts) as Promise<ArrayBufferView | null>
}

/**
 * MPI_Gatherv: rank i's sendbuf into recvbuf[displs[i], + counts[i]) at the root (elements of
 * recvbuf; rank i must send exactly counts[i] elements' bytes). IN_PLACE at the root: its part is
 * already in place. Resolves with recvbuf at the root, null elsewhere. Algorithm: linear.
 */
export function gatherv (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, counts_: ArrayLike<number> | null, displs: ArrayLike<number> | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> {
  return invoke(GATHERV, AWAITED, comm, sendbuf, recvbuf, { counts: counts_, displs, root }, opts) as Promise<ArrayBufferView | null>
}

/**
 * MPI_Scatter: bytes [i·n, (i+1)·n) of the root's sendbuf into rank i's recvbuf (n = recvbuf's
 * byteLength; IN_PLACE at the root keeps its block in sendbuf). Resolves with recvbuf.
 * Algorithms: binomial, linear.
 */
export function scatter (comm: CollComm, sendbuf: ArrayBufferView | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> {
  return invoke(SCATTER, AWAITED, comm, sendbuf, recvbuf, root, opts) as Promise<ArrayBufferView | InPlace>
}

/**
 * MPI_Scatterv: the root's sendbuf[displs[i], + counts[i]) (elements of sendbuf) into rank i's
 * recvbuf (which must be exactly that many bytes). Resolves with recvbuf. Algorithm: linear.
 */
export function scatterv (comm: CollComm, sendbuf: ArrayBufferView | null, counts_: ArrayLike<number> | null, displs: ArrayLike<number> | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> {
  return invoke(SCATTERV, AWAITED, comm, sendbuf, recvbuf, { counts: counts_, displs, root }, opts) as Promise<ArrayBufferView | InPlace>
}

/**
 * MPI_Allgather: rank i's sendbuf (n bytes) into bytes [i·n, (i+1)·n) of every recvbuf (IN_PLACE:
 * each rank's block is already in its recvbuf). Resolves with recvbuf.
 * Algorithms: recursiveDoubling (power-of-two P), bruck, ring.
 */
export function allgather<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> {
  return invoke(ALLGATHER, AWAITED, comm, sendbuf, recvbuf, null, opts) as Promise<T>
}

/**
 * MPI_Allgatherv: rank i's sendbuf into recvbuf[displs[i], + counts[i]) on every rank (elements of
 * recvbuf). Resolves with recvbuf. Algorithm: ring.
 */
export function allgatherv<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, counts_: ArrayLike<number>, displs: ArrayLike<number>, opts?: CollOptions): Promise<T> {
  return invoke(ALLGATHERV, AWAITED, comm, sendbuf, recvbuf, { counts: counts_, displs, root: 0 }, opts) as Promise<T>
}

/**
 * MPI_Alltoall: bytes [j·n, (j+1)·n) of rank i's sendbuf into bytes [i·n, (i+1)·n) of rank j's
 * recvbuf (n = sendbuf.byteLength / P; IN_PLACE: recvbuf is both). Resolves with recvbuf.
 * Algorithms: bruck, linear, pairwise.
 */
export function alltoall<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> {
  return invoke(ALLTOALL, AWAITED, comm, sendbuf, recvbuf, null, opts) as Promise<T>
}

/**
 * MPI_Alltoallv: sendbuf[sendDispls[j], + sendCounts[j]) (elements of sendbuf) to rank j, which
 * receives it into recvbuf[recvDispls[i], + recvCounts[i]) (elements of recvbuf). Algorithm: linear.
 */
export function alltoallv<T extends ArrayBufferView> (comm: CollComm, sendbuf: ArrayBufferView, sendCounts: ArrayLike<number>, sendDispls: ArrayLike<number>, recvbuf: T, recvCounts: ArrayLike<number>, recvDispls: ArrayLike<number>, opts?: CollOptions): Promise<T> {
  return invoke(ALLTOALLV, AWAITED, comm, sendbuf, recvbuf, { sendCounts, sendDispls, recvCounts, recvDispls }, opts) as Promise<T>
}

/**
 * MPI_Reduce_scatter_block: the op over every rank's sendbuf (P·m elements, rank order), block i
 * (elements [i·m, (i+1)·m)) into rank i's recvbuf (m elements). IN_PLACE: recvbuf holds the P·m
 * input and receives the result in its first m elements. Algorithms: ring, reduceThenScatter.
 */
export function reduceScatterBlock<T extends NumericArray> (comm: CollComm, sendbuf: NumericArray | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return invoke(REDUCE_SCATTER_BLOCK, AWAITED, comm, sendbuf, recvbuf, op, opts) as Promise<T>
}

/** MPI_Scan: recvbuf on rank r = sendbuf_0 ∘ ... ∘ sendbuf_r. Algorithms: recursiveDoubling, linear. */
export function scan<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return invoke(SCAN, AWAITED, comm, sendbuf, recvbuf, op, opts) as Promise<T>
}

/** MPI_Exscan: recvbuf on rank r > 0 = sendbuf_0 ∘ ... ∘ sendbuf_{r-1}; rank 0's recvbuf untouched. Algorithms: recursiveDoubling, linear. */
export function exscan<T extends NumericArray> (comm: CollComm, sendbuf: T | InPlace, recvbuf: T, op: Op = SUM, opts?: CollOptions): Promise<T> {
  return invoke(EXSCAN, AWAITED, comm, sendbuf, recvbuf, op, opts) as Promise<T>
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
