/**
 * Reduction algorithms: reduce, allreduce, reduce-scatter-block, scan and exscan, on typed arrays
 * (element offsets; an "item" is `op.unit` elements, 2 for MAXLOC/MINLOC pairs, so arrays split
 * on item boundaries). The caller (index.ts's preamble, or a record's run below) has already
 * placed this rank's contribution in `acc`.
 *
 * Sources: Thakur, Rabenseifner and Gropp 2005 (IJHPCA 19(1)): binomial reduce (4.4), recursive
 * doubling allreduce for short messages and Rabenseifner's reduce-scatter (recursive halving) +
 * allgather (recursive doubling) for long ones (4.5), with the fold of the P - 2^⌊log2 P⌋ extra
 * ranks; recursive-doubling scan (MPICH's MPIR_Scan_intra_recursive_doubling); ring allreduce
 * (reduce-scatter + allgather around a ring) as Open MPI's tuned component and F-MPJ's BKT
 * (thesis, chapter 5). Non-commutative ops only run the order-preserving algorithms (binomial with
 * root 0, recursive doubling with the fold, scan); select.ts enforces that.
 */
import type { Op } from './ops'
import type { CollComm, CollRequest, NumericArray } from './types'
import type { Call } from './record'
import { runAsync } from './drive'
import type { CollSteps } from './drive'
import { stateOf } from './state'
import { BINOMIAL, bcastTreeSteps } from './bcast'
import { scatterBinomial } from './gather'
import { SYNC_INLINE_MAX, all, blockStart, bytes, collTag, Exchange, exchangeNow, keepable, pof2Below, received, recv, recvSteps, release, scratch, send, sendrecv, sendrecvSteps, viewLike, waiting } from './util'

declare module './state' {
  interface CollState {
    /** allreducePairSync's receive scratch, null while taken (a call that finds it taken makes its own). */
    pair?: PairScratch | null
  }
}

/** A typed scratch view of `n` elements like `like`, with its buffer for release. */
function tmpOf<T extends NumericArray> (comm: CollComm, like: T, n: number): { ab: ArrayBuffer, v: T } {
  const ab = scratch(comm, Math.max(1, n) * like.BYTES_PER_ELEMENT)
  return { ab, v: viewLike(like, ab, 0, n) }
}

/** Elements per segment: a multiple of the op's unit, ≥ one unit. */
function segElems (like: NumericArray, unit: number, segBytes: number): number {
  return Math.max(unit, Math.floor(segBytes / like.BYTES_PER_ELEMENT / unit) * unit)
}

/** [offset, length] of each `seg`-element segment of `n` elements (one empty segment when n = 0). */
function segments (n: number, seg: number): Array<[number, number]> {
  const out: Array<[number, number]> = []
  for (let o = 0; o < n || (o === 0 && n === 0); o += seg) { out.push([o, Math.min(seg, n - o)]); if (n === 0) break }
  return out
}

/**
 * Exchange with reduction, as steps (drive.ts): send acc[sOff, +sN) to `dest` while receiving rN
 * elements from `src` into tmp and reducing them into acc[rOff..] (acc = acc ∘ in when accLeft,
 * else in ∘ acc). The two ranges must not overlap. Up to `seg` elements each way: one exchange
 * (util.ts sendrecvSteps); more: a pipeline, every segment's receive posted, then every send,
 * each segment reduced as it arrives.
 */
function * exchangeReduceSteps (comm: CollComm, acc: NumericArray, sOff: number, sN: number, dest: number,
  rOff: number, rN: number, src: number, tmp: NumericArray, tag: number, op: Op, accLeft: boolean, seg: number): CollSteps {
  if (sN <= seg && rN <= seg) {
    yield * sendrecvSteps(comm, acc.subarray(sOff, sOff + sN), dest, tmp.subarray(0, rN), src, tag, 'reduction')
    op.apply(acc, rOff, tmp, 0, rN, accLeft)
    return
  }
  const bpe = acc.BYTES_PER_ELEMENT
  const recvs = segments(rN, seg).map(([o, len]) => comm._collIrecv(tmp.subarray(o, o + len), src, tag))
  const sends = segments(sN, seg).map(([o, len]) => comm._collIsend(acc.subarray(sOff + o, sOff + o + len), dest, tag))
  for (let k = 0, o = 0; k < recvs.length; k++, o += seg) {
    const len = Math.max(0, Math.min(seg, rN - o))
    yield * received(recvs[k], len * bpe, 'reduction', src)
    op.apply(acc, rOff + o, tmp, o, len, accLeft)
  }
  for (const s of sends) yield s
}

/** Plain exchange into acc, as steps: send acc[sOff, +sN) to dest, receive acc[rOff, +rN) from src; one exchange up to `seg` elements each way, else a pipeline of segments. */
function * exchangeSteps (comm: CollComm, acc: NumericArray, sOff: number, sN: number, dest: number,
  rOff: number, rN: number, src: number, tag: number, seg: number): CollSteps {
  if (sN <= seg && rN <= seg) {
    yield * sendrecvSteps(comm, acc.subarray(sOff, sOff + sN), dest, acc.subarray(rOff, rOff + rN), src, tag, 'reduction')
    return
  }
  const bpe = acc.BYTES_PER_ELEMENT
  const recvs: Array<[CollRequest, number]> = segments(rN, seg).map(([o, len]) => [comm._collIrecv(acc.subarray(rOff + o, rOff + o + len), src, tag), len])
  const sends = segments(sN, seg).map(([o, len]) => comm._collIsend(acc.subarray(sOff + o, sOff + o + len), dest, tag))
  for (const [r, len] of recvs) yield * received(r, len * bpe, 'reduction', src)
  for (const s of sends) yield s
}

/**
 * Binomial-tree reduce (MST) into `acc` at `root`, pipelined in segments: relative rank v
 * receives from v + 2^k (k below its lowest set bit, ascending), reduces acc = acc ∘ child, and
 * sends each finished segment to v - 2^lowbit. ceil(log2 P) steps; n bytes per tree edge.
 * Order-preserving when root = 0 (the caller routes non-commutative ops through root 0).
 */
export async function reduceBinomial (comm: CollComm, acc: NumericArray, op: Op, root: number, seq: number, round: number, segBytes: number): Promise<void> {
  const P = comm.size
  if (P === 1) return
  const v = (comm.rank - root + P) % P
  const children: number[] = []
  let parent = -1
  for (let mask = 1; mask < P; mask <<= 1) {
    if ((v & mask) !== 0) { parent = (v - mask + root) % P; break }
    if (v + mask < P) children.push((v + mask + root) % P)
  }
  const n = acc.length
  const seg = segElems(acc, op.unit, segBytes)
  const nseg = n === 0 ? 1 : Math.ceil(n / seg)
  const tag = collTag(seq, round)
  const t = children.length > 0 ? tmpOf(comm, acc, children.length * n) : null
  try {
    const recvs: Array<Array<Promise<void>>> = children.map((c, ci) => {
      const ps: Array<Promise<void>> = []
      for (let s = 0; s < nseg; s++) {
        const o = s * seg; const len = Math.min(seg, n - o)
        const view = (t as { v: NumericArray }).v.subarray(ci * n + o, ci * n + o + Math.max(0, len))
        const p = runAsync(received(comm._collIrecv(view, c, tag), view.byteLength, 'reduce', c))
        p.catch(() => {})
        ps.push(p)
      }
      return ps
    })
    const sends: Array<Promise<unknown>> = []
    for (let s = 0; s < nseg; s++) {
      const o = s * seg; const len = Math.max(0, Math.min(seg, n - o))
      for (let ci = 0; ci < children.length; ci++) {
        await recvs[ci][s]
        op.apply(acc, o, (t as { v: NumericArray }).v, ci * n + o, len, true)
      }
      if (parent >= 0) sends.push(waiting(comm._collIsend(acc.subarray(o, o + len), parent, tag)))
    }
    await all(sends)
  } finally {
    if (t !== null) release(comm, t.ab)
  }
}

/** The fold of Thakur et al., as steps: the first 2·rem ranks pair up (even → odd); returns the new rank or -1. */
function * foldSteps (comm: CollComm, acc: NumericArray, tmp: NumericArray, op: Op, rem: number, tag: number): CollSteps<number> {
  const r = comm.rank
  if (r >= 2 * rem) return r - rem
  if ((r & 1) === 0) { yield new Exchange(comm, acc, r + 1, null, -1, tag); return -1 }
  yield * recvSteps(comm, tmp, r - 1, tag, 'allreduce')
  op.apply(acc, 0, tmp, 0, acc.length, false)
  return r >> 1
}

const realRank = (nr: number, rem: number): number => nr < rem ? nr * 2 + 1 : nr + rem

/** Undo the fold, as steps: odd ranks < 2·rem send the result to their even partner. */
function * unfoldSteps (comm: CollComm, acc: NumericArray, rem: number, tag: number): CollSteps {
  const r = comm.rank
  if (r >= 2 * rem) return
  if ((r & 1) === 1) yield new Exchange(comm, acc, r - 1, null, -1, tag)
  else yield * recvSteps(comm, acc, r + 1, tag, 'allreduce')
}

/**
 * Recursive-doubling allreduce (with the fold for non-power-of-two P), as steps (drive.ts):
 * log2(pof2) exchanges of the whole vector (+2 for the fold). Each rank sends and receives n
 * bytes per step. Order-preserving.
 */
export function * allreduceRecursiveDoublingSteps (comm: CollComm, acc: NumericArray, op: Op, seq: number): CollSteps {
  const P = comm.size
  if (P === 1) return
  const pof2 = pof2Below(P); const rem = P - pof2
  const t = tmpOf(comm, acc, acc.length)
  try {
    const nr = rem === 0 ? comm.rank : yield * foldSteps(comm, acc, t.v, op, rem, collTag(seq, 0))
    if (nr >= 0) {
      let round = 1
      for (let mask = 1; mask < pof2; mask <<= 1, round++) {
        const pn = nr ^ mask; const partner = realRank(pn, rem)
        yield * sendrecvSteps(comm, acc, partner, t.v, partner, collTag(seq, round), 'allreduce')
        op.apply(acc, 0, t.v, 0, acc.length, pn > nr)
      }
    }
    if (rem > 0) yield * unfoldSteps(comm, acc, rem, collTag(seq, 0x7fff))
  } finally { release(comm, t.ab) }
}

/**
 * The recursive-doubling allreduce at P = 2 in the blocking tier: one exchangeNow with the
 * partner (util.ts: the same messages as allreduceRecursiveDoublingSteps, without its
 * generators), then the reduction. Returns null when the call completed here, else the rest (the
 * exchange or its receive, then the reduction) as steps to drive. `node bench/mpi-small.js`: p50 0.74-0.78× the steps' in the same processes (1.43-1.51
 * against 1.89-1.97 µs for one float64; docs/mpi-collectives.md, "Direct paths").
 * `nb`, `count`: acc.byteLength and acc.length (the caller's; on Node 20 each typed array length
 * read is a call).
 */
export function allreducePairSync (comm: CollComm, acc: NumericArray, op: Op, seq: number, nb = acc.byteLength, count = acc.length): CollSteps | null {
  const partner = comm.rank ^ 1
  const st = stateOf(comm)
  const ps = st.pair ?? new PairScratch()
  st.pair = null
  const tv = ps.like(acc, count)
  let rest: CollSteps | null
  try {
    rest = exchangeNow(comm, acc, tv, partner, collTag(seq, 1), 'allreduce', nb, nb)
  } catch (e) {
    st.pair = ps
    throw e
  }
  if (rest !== null) return pairRest(rest, acc, ps, tv, op, comm, partner)
  try {
    op.apply(acc, 0, tv, 0, count, partner > comm.rank)
  } finally { st.pair = ps }
  return null
}

/**
 * allreducePairSync's receive scratch (SYNC_INLINE_MAX bytes) with its typed views, one per
 * array kind and length, made once: the 2-rank loop makes no view per call. One is free at a
 * time (`pairScratch`); a call that finds it taken (a rest still running in the awaited tier)
 * makes its own.
 */
export class PairScratch {
  private readonly ab = new ArrayBuffer(SYNC_INLINE_MAX)
  private readonly views = new Map<unknown, NumericArray[]>()
  /** The last view handed out, for the loop's next call of the same kind and length (no Map lookup). */
  private lastCtor: unknown = null
  private lastLength = -1
  private last: NumericArray | null = null
  /** The array it was made like (keepable() only): the same array again is the same kind, without reading its `constructor`. */
  private lastArray: NumericArray | null = null
  like<T extends NumericArray> (a: T, n = a.length): T {
    if (a === this.lastArray && n === this.lastLength) return this.last as T
    const ctor = a.constructor
    if (ctor === this.lastCtor && n === this.lastLength) { this.lastArray = keepable(a) ? a : null; return this.last as T }
    let vs = this.views.get(ctor)
    if (vs === undefined) { vs = []; this.views.set(ctor, vs) }
    const v = (vs[n] ??= viewLike(a, this.ab, 0, n))
    this.lastCtor = ctor; this.lastLength = n; this.last = v; this.lastArray = keepable(a) ? a : null
    return v as T
  }
}

/** allreducePairSync's rest as steps: the exchange or its receive (`recv`), then the reduction. */
function * pairRest (recv: CollSteps, acc: NumericArray, ps: PairScratch, tv: NumericArray, op: Op, comm: CollComm, partner: number): CollSteps {
  try {
    yield * recv
    op.apply(acc, 0, tv, 0, acc.length, partner > comm.rank)
  } finally { stateOf(comm).pair = ps }
}

/** One step of Rabenseifner's schedule for new rank `nr`: the partner (real rank), the round, and block ranges. */
interface BlockStep { partner: number, round: number, keep: [number, number], give: [number, number] }

/**
 * Recursive halving over `pof2` blocks (after the fold's `rem`): per step, the blocks this rank
 * keeps and reduces ([klo, khi)) and the ones it sends its partner. Rounds 1, 2, ...
 */
function * halving (nr: number, pof2: number, rem: number): Generator<BlockStep> {
  let lo = 0; let hi = pof2; let round = 1
  for (let mask = pof2 >> 1; mask >= 1; mask >>= 1, round++) {
    const mid = lo + mask
    const low = (nr & mask) === 0
    const keep: [number, number] = low ? [lo, mid] : [mid, hi]
    yield { partner: realRank(nr ^ mask, rem), round, keep, give: low ? [mid, hi] : [lo, mid] }
    ;[lo, hi] = keep
  }
}

/**
 * The allgather by recursive doubling that follows: per step, the blocks this rank holds (`give`,
 * sent) and the ones it receives (`keep`). Rounds 100, 101, ...
 */
function * doubling (nr: number, pof2: number, rem: number): Generator<BlockStep> {
  let lo = nr; let hi = nr + 1; let round = 100
  for (let mask = 1; mask < pof2; mask <<= 1, round++) {
    const size = hi - lo
    const keep: [number, number] = (nr & mask) === 0 ? [hi, hi + size] : [lo - size, lo]
    yield { partner: realRank(nr ^ mask, rem), round, keep, give: [lo, hi] }
    lo = Math.min(lo, keep[0]); hi = Math.max(hi, keep[1])
  }
}

/** Element offsets of Rabenseifner's pof2 blocks over `acc` (on item boundaries). */
function blockOffsets (acc: NumericArray, op: Op, pof2: number): (b: number) => number {
  const units = acc.length / op.unit
  return (b: number): number => blockStart(units, pof2, b) * op.unit
}

/** Where Rabenseifner's reduce-scatter leaves a rank: its new rank (its block's index; -1: folded away), pof2, rem and the blocks' offsets. */
interface Halved { nr: number, pof2: number, rem: number, at: (b: number) => number }

/**
 * Rabenseifner's reduce-scatter by recursive halving over the pof2 ranks left after the fold, as
 * steps. Each rank sends and receives n·(pof2-1)/pof2 bytes.
 */
function * reduceScatterHalvingSteps (comm: CollComm, acc: NumericArray, tmp: NumericArray, op: Op, seq: number, seg: number): CollSteps<Halved> {
  const pof2 = pof2Below(comm.size); const rem = comm.size - pof2
  const at = blockOffsets(acc, op, pof2)
  const nr = yield * foldSteps(comm, acc, tmp, op, rem, collTag(seq, 0))
  if (nr >= 0) {
    for (const { partner, round, keep: [klo, khi], give: [slo, shi] } of halving(nr, pof2, rem)) {
      yield * exchangeReduceSteps(comm, acc, at(slo), at(shi) - at(slo), partner, at(klo), at(khi) - at(klo), partner, tmp, collTag(seq, round), op, true, seg)
    }
  }
  return { nr, pof2, rem, at }
}

/**
 * Rabenseifner's allreduce as steps (drive.ts): reduce-scatter by recursive halving, then
 * allgather by recursive doubling (+ the fold for non-power-of-two P), each exchange one message
 * each way up to `segBytes`, else pipelined in segments of it. Bytes sent per rank
 * ≈ 2·n·(pof2-1)/pof2; 2·log2(pof2) steps. Commutative ops only.
 */
export function * allreduceRabenseifnerSteps (comm: CollComm, acc: NumericArray, op: Op, seq: number, segBytes: number): CollSteps {
  if (comm.size === 1) return
  const seg = segElems(acc, op.unit, segBytes)
  const t = tmpOf(comm, acc, acc.length)
  try {
    const { nr, pof2, rem, at } = yield * reduceScatterHalvingSteps(comm, acc, t.v, op, seq, seg)
    if (nr >= 0) {
      for (const { partner, round, keep: [rlo, rhi], give: [lo, hi] } of doubling(nr, pof2, rem)) {
        yield * exchangeSteps(comm, acc, at(lo), at(hi) - at(lo), partner, at(rlo), at(rhi) - at(rlo), partner, collTag(seq, round), seg)
      }
    }
    yield * unfoldSteps(comm, acc, rem, collTag(seq, 0x7fff))
  } finally { release(comm, t.ab) }
}

/**
 * Rabenseifner's reduce: reduce-scatter by recursive halving, then each block's owner sends it to
 * the root (into `result`, the root's receive array). Commutative ops only.
 */
export async function reduceRabenseifner (comm: CollComm, acc: NumericArray, result: NumericArray | null, op: Op, root: number, seq: number, segBytes: number): Promise<void> {
  if (comm.size === 1) return
  const seg = segElems(acc, op.unit, segBytes)
  const t = tmpOf(comm, acc, acc.length)
  try {
    const { nr, pof2, rem, at } = await runAsync(reduceScatterHalvingSteps(comm, acc, t.v, op, seq, seg))
    const tag = collTag(seq, 200)
    if (comm.rank === root) {
      const res = result as NumericArray
      const ps: Array<Promise<void>> = []
      for (let b = 0; b < pof2; b++) {
        const owner = realRank(b, rem)
        if (owner === root) { if (res !== acc) res.set(acc.subarray(at(b), at(b + 1)) as never, at(b)); continue }
        ps.push(recv(comm, res.subarray(at(b), at(b + 1)), owner, tag, 'reduce'))
      }
      await all(ps)
    } else if (nr >= 0) {
      await send(comm, acc.subarray(at(nr), at(nr + 1)), root, tag)
    }
  } finally { release(comm, t.ab) }
}

/**
 * Ring reduce-scatter (BKT): P - 1 steps; in step i rank r sends block r-i-1 to r+1 and receives
 * block r-i-2 from r-1, reducing it in; rank r ends with block r reduced. Block b spans elements
 * [at(b), at(b+1)). Bytes sent per rank: n·(P-1)/P. Commutative ops only.
 */
export async function ringReduceScatter (comm: CollComm, acc: NumericArray, tmp: NumericArray, at: (b: number) => number, op: Op, seq: number, seg: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const right = (r + 1) % P; const left = (r - 1 + P) % P
  for (let i = 0; i < P - 1; i++) {
    const sb = (r - i - 1 + 2 * P) % P; const rb = (r - i - 2 + 2 * P) % P
    await runAsync(exchangeReduceSteps(comm, acc, at(sb), at(sb + 1) - at(sb), right, at(rb), at(rb + 1) - at(rb), left, tmp, collTag(seq, 1 + i), op, true, seg))
  }
}

/**
 * Ring allreduce: ring reduce-scatter, then a ring allgather (P - 1 steps each). Bytes sent per
 * rank: 2·n·(P-1)/P, the bandwidth optimum. Commutative ops only.
 */
export async function allreduceRing (comm: CollComm, acc: NumericArray, op: Op, seq: number, segBytes: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  if (P === 1) return
  const seg = segElems(acc, op.unit, segBytes)
  const units = acc.length / op.unit
  const at = (b: number): number => blockStart(units, P, b) * op.unit
  const t = tmpOf(comm, acc, at(1))
  try {
    await ringReduceScatter(comm, acc, t.v, at, op, seq, seg)
    const right = (r + 1) % P; const left = (r - 1 + P) % P
    for (let i = 0; i < P - 1; i++) {
      const sb = (r - i + P) % P; const rb = (r - i - 1 + P) % P
      await runAsync(exchangeSteps(comm, acc, at(sb), at(sb + 1) - at(sb), right, at(rb), at(rb + 1) - at(rb), left, collTag(seq, 1000 + i), seg))
    }
  } finally { release(comm, t.ab) }
}

/**
 * Recursive-doubling inclusive (or exclusive) scan (MPICH): log2 P exchanges of a running
 * partial; rank r combines what lower partners send into `acc` (its result). Order-preserving.
 * For exscan `acc`'s initial content is ignored and rank 0's is left untouched.
 */
export async function scanRecursiveDoubling (comm: CollComm, mine: NumericArray, acc: NumericArray, op: Op, exclusive: boolean, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const n = mine.length
  const t = tmpOf(comm, mine, 2 * n)
  const partial = t.v.subarray(0, n); const tmp = t.v.subarray(n, 2 * n)
  try {
    partial.set(mine as never)
    if (!exclusive && acc !== mine) acc.set(mine as never)
    let first = true
    let round = 0
    for (let mask = 1; mask < P; mask <<= 1, round++) {
      const dst = r ^ mask
      if (dst >= P) continue
      await sendrecv(comm, partial, dst, tmp, dst, collTag(seq, round), 'scan')
      if (dst < r) {
        op.apply(partial, 0, tmp, 0, n, false)
        if (exclusive && first) acc.set(tmp as never)
        else op.apply(acc, 0, tmp, 0, n, false)
        first = false
      } else {
        op.apply(partial, 0, tmp, 0, n, true)
      }
    }
  } finally { release(comm, t.ab) }
}

/** Linear (chain) scan: rank r receives the prefix of 0..r-1 from r - 1 and sends 0..r to r + 1. P - 1 steps. */
export async function scanLinear (comm: CollComm, mine: NumericArray, acc: NumericArray, op: Op, exclusive: boolean, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const n = mine.length
  const tag = collTag(seq, 0)
  if (r === 0) {
    if (!exclusive && acc !== mine) acc.set(mine as never)
    if (P > 1) await send(comm, mine, 1, tag)
    return
  }
  const t = tmpOf(comm, mine, 2 * n)
  try {
    const prefix = t.v.subarray(0, n)
    await recv(comm, prefix, r - 1, tag, 'scan')
    const out = t.v.subarray(n, 2 * n)
    out.set(prefix as never)
    op.apply(out, 0, mine, 0, n, true)
    if (exclusive) acc.set(prefix as never); else acc.set(out as never)
    if (r + 1 < P) await send(comm, out, r + 1, tag)
  } finally { release(comm, t.ab) }
}

/** A reduce call's arguments as its records read them (index.ts prepares them): this rank's input, and at the root the result array (recvbuf's first n elements, holding the root's input), else null. */
export interface Reduced { src: NumericArray, result: NumericArray | null }
/** A reduceScatterBlock call's: the input (P·m elements), the receive array and m. */
export interface ReduceScattered { src: NumericArray, recvbuf: NumericArray, m: number }
/** A scan or exscan call's: this rank's input and its result array. */
export interface Scanned { mine: NumericArray, acc: NumericArray }

/** A copy of `src` in the communicator's scratch (its buffer given back with release). */
function copyOf (comm: CollComm, src: NumericArray): { ab: ArrayBuffer, v: NumericArray } {
  const t = tmpOf(comm, src, src.length)
  t.v.set(src as never)
  return t
}

/** The binomial reduce of a call (select.ts record): non-commutative ops with root ≠ 0 reduce to rank 0 (rank order), which sends the result to the root. */
export async function reduceBinomialRun (c: Call): Promise<void> {
  const { src, result } = c.data as Reduced
  const op = c.op as Op; const P = c.size; const r = c.rank; const root = c.root
  let t: { ab: ArrayBuffer, v: NumericArray } | null = null
  try {
    if (!op.commute && root !== 0) {
      const acc = r === root ? result as NumericArray : (t = copyOf(c, src)).v
      await reduceBinomial(c, acc, op, 0, c.seq, 0, c.seg)
      if (r === 0) await send(c, acc, root, collTag(c.seq, 1))
      if (r === root) await recv(c, result as NumericArray, 0, collTag(c.seq, 1), 'reduce')
    } else {
      const v = (r - root + P) % P
      const leaf = (v & 1) === 1 || v + 1 >= P
      const acc = r === root ? result as NumericArray : (leaf ? src : (t = copyOf(c, src)).v)
      await reduceBinomial(c, acc, op, root, c.seq, 0, c.seg)
    }
  } finally { if (t !== null) release(c, t.ab) }
}

/** Rabenseifner's reduce of a call (select.ts record). */
export async function reduceRabenseifnerRun (c: Call): Promise<void> {
  const { src, result } = c.data as Reduced
  const t = c.rank === c.root ? null : copyOf(c, src)
  try {
    await reduceRabenseifner(c, t === null ? result as NumericArray : t.v, result, c.op as Op, c.root, c.seq, c.seg)
  } finally { if (t !== null) release(c, t.ab) }
}

/** The reduce + bcast allreduce of a call (select.ts record): binomial reduce to rank 0, then its binomial bcast. */
export async function reduceBcastRun (c: Call): Promise<void> {
  await reduceBinomial(c, c.buf as NumericArray, c.op as Op, 0, c.seq, 0, c.seg)
  await runAsync(bcastTreeSteps(c, bytes(c.buf), 0, c.seq, 1, BINOMIAL, c.seg))
}

/** A reduceScatterBlock call's accumulator (its P·m input copied into scratch) and m elements after it, for `run`. */
async function withAccumulator (c: Call, run: (d: ReduceScattered, acc: NumericArray, tmp: NumericArray) => Promise<void>): Promise<void> {
  const d = c.data as ReduceScattered
  const P = c.size; const m = d.m; const src = d.src
  const ab = scratch(c, (P * m + m) * src.BYTES_PER_ELEMENT + 8)
  try {
    const acc = viewLike(src, ab, 0, P * m); acc.set(src.subarray(0, P * m) as never)
    await run(d, acc, viewLike(src, ab, P * m, m))
  } finally { release(c, ab) }
}

/** The ring reduce-scatter of a reduceScatterBlock call (select.ts record). */
export async function reduceScatterRingRun (c: Call): Promise<void> {
  await withAccumulator(c, async (d, acc, tmp) => {
    const op = c.op as Op; const m = d.m
    await ringReduceScatter(c, acc, tmp, (b) => b * m, op, c.seq, segElems(d.src, op.unit, c.seg))
    d.recvbuf.set(acc.subarray(c.rank * m, (c.rank + 1) * m) as never)
  })
}

/** The reduce-then-scatter of a reduceScatterBlock call (select.ts record): binomial reduce to rank 0 (rank order), then a binomial scatter on the call's second sequence number. */
export async function reduceThenScatterRun (c: Call): Promise<void> {
  await withAccumulator(c, async (d, acc) => {
    await reduceBinomial(c, acc, c.op as Op, 0, c.seq, 0, c.seg)
    const blk = d.m * d.src.BYTES_PER_ELEMENT
    await scatterBinomial(c, c.rank === 0 ? bytes(acc) : null, bytes(d.recvbuf).subarray(0, blk), blk, 0, c.seq2)
  })
}
