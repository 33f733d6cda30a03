/**
 * Barrier and broadcast algorithms (bytes-level; every function takes the call's sequence number
 * `seq` so its tags are unique to this call). Sources: Thakur, Rabenseifner and Gropp 2005,
 * "Optimization of collective communication operations in MPICH" (IJHPCA 19(1)), sections 3.1
 * (barrier: dissemination, Hensgen, Finkel and Manber 1988), 4.1 (bcast: binomial tree for short
 * messages, van de Geijn's scatter + allgather for long ones); the binomial tree is F-MPJ's MST
 * (thesis, chapter 5).
 */
import type { CollComm, CollRequest } from './types'
import { runAsync } from './drive'
import type { CollSteps } from './drive'
import { stateOf } from './state'
import type { CollState } from './state'
import { all, collTag, Exchange, exchangeNow, received, recv, recvNow, recvSteps, send, sendrecvSteps, waiting } from './util'

declare module './state' {
  interface CollState {
    /** The last tree of each shape (by TreeShape id) this communicator's calls walked, with its v and P (treeOf). */
    trees?: Array<{ v: number, P: number, tree: Tree } | null>
  }
}

const EMPTY = new Uint8Array(0)

/**
 * Dissemination barrier, as steps (drive.ts): ceil(log2 P) rounds; in round k rank r sends 0
 * bytes to r + 2^k and receives from r - 2^k (mod P), one Exchange per round (in the blocking
 * tier: no request unless a message must wait for the event loop). Bytes moved: 0.
 */
export function * barrierDisseminationSteps (comm: CollComm, seq: number): CollSteps {
  const P = comm.size; const r = comm.rank
  if (P === 1) return
  let k = 0
  for (let d = 1; d < P; d *= 2, k++) yield * sendrecvSteps(comm, EMPTY, (r + d) % P, EMPTY, (r - d + P) % P, collTag(seq, k), 'barrier')
}

/**
 * The dissemination barrier at P = 2 in the blocking tier: its one exchange of empty messages
 * run directly (util.ts exchangeNow: the same messages and tag as the steps). As
 * allreducePairSync: null when done, else the rest as steps.
 */
export function barrierPairSync (comm: CollComm, seq: number): CollSteps | null {
  return exchangeNow(comm, EMPTY, EMPTY, comm.rank ^ 1, collTag(seq, 0), 'barrier', 0, 0)
}

/**
 * Linear barrier, as steps (drive.ts): every rank but 0 sends 0 bytes to rank 0 and waits for
 * its answer; rank 0 receives from ranks 1 .. P-1 in turn, then answers each in rank order. One
 * tag: a rank's arrival and its release travel opposite ways. 2(P-1) messages, two on the
 * critical path. Open MPI's basic_linear barrier (its default for 4 <= P < 8): rank 0 leaves
 * first, so a collective rooted there right after (OSU's bcast loop) has sent its message before
 * the others are out (docs/mpi-benchmarks.md, "Selection thresholds", "The barrier at 4 to 7 ranks").
 */
export function * barrierLinearSteps (comm: CollComm, seq: number): CollSteps {
  const P = comm.size
  if (P === 1) return
  const tag = collTag(seq, 0)
  if (comm.rank !== 0) { yield * sendrecvSteps(comm, EMPTY, 0, EMPTY, 0, tag, 'barrier'); return }
  yield * linearRootRest(comm, null, 1, 1, tag)
}

/**
 * Rank 0's part of the linear barrier from arrival `recvFrom` and release `sendFrom` on, after
 * `first` (a receive under way) if any: the releases are the flat tree's sends (sendsAfter).
 */
function * linearRootRest (comm: CollComm, first: CollSteps | null, recvFrom: number, sendFrom: number, tag: number): CollSteps {
  const P = comm.size
  if (first !== null) yield * first
  for (let r = recvFrom; r < P; r++) yield * recvSteps(comm, EMPTY, r, tag, 'barrier')
  yield * sendsAfter(comm, null, EMPTY, treeOf(comm, LINEAR, 0, P).children, sendFrom - 1, 0, tag)
}

/**
 * The linear barrier in the blocking tier without the steps' machinery (docs/mpi-collectives.md,
 * "Direct paths"): a rank other than 0 runs its exchange with rank 0 directly (exchangeNow); rank 0
 * reads each arrival now (recvNow) and writes each release now (comm._collSendNow). The same
 * messages and tag as barrierLinearSteps. Null when done, else the rest as steps.
 */
export function barrierLinearNow (comm: CollComm, seq: number): CollSteps | null {
  const P = comm.size
  const tag = collTag(seq, 0)
  if (comm.rank !== 0) return exchangeNow(comm, EMPTY, EMPTY, 0, tag, 'barrier', 0, 0)
  for (let r = 1; r < P; r++) {
    const rest = recvNow(comm, EMPTY, r, tag, 'barrier', 0)
    if (rest !== null) return linearRootRest(comm, rest, r + 1, 1, tag)
  }
  for (let r = 1; r < P; r++) if (comm._collSendNow === undefined || !comm._collSendNow(EMPTY, r, tag, 0)) return linearRootRest(comm, null, P, r, tag)
  return null
}

/** Tree barrier: binomial fan-in of 0-byte messages to rank 0, then binomial fan-out. 2·ceil(log2 P) steps. */
export async function barrierTree (comm: CollComm, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  let mask = 1
  while (mask < P) {
    if ((r & mask) !== 0) { await send(comm, EMPTY, r - mask, collTag(seq, 0)); break }
    if (r + mask < P) await recv(comm, EMPTY, r + mask, collTag(seq, 0), 'barrier')
    mask <<= 1
  }
  await runAsync(bcastTreeSteps(comm, EMPTY, 0, seq, 1, BINOMIAL, Infinity))
}

/** A broadcast tree seen from relative rank v: its parent (relative; -1 at the root) and children (relative, in sending order). */
export interface Tree { readonly parent: number, readonly children: readonly number[] }
/** A broadcast tree's shape: `build` gives relative rank v's Tree among P ranks; `id` indexes the communicator's last tree of the shape (treeOf). */
export interface TreeShape { readonly id: number, readonly build: (v: number, P: number) => Tree }

/** The binomial tree (F-MPJ's MST): v's parent is v - 2^k (2^k its lowest set bit), its children v + 2^j for 2^j < 2^k, largest first. */
export const BINOMIAL: TreeShape = Object.freeze({
  id: 0,
  build: (v: number, P: number): Tree => {
    let mask = 1
    let parent = -1
    while (mask < P) {
      if ((v & mask) !== 0) { parent = v - mask; break }
      mask <<= 1
    }
    const children: number[] = []
    for (let m = mask >> 1; m > 0; m >>= 1) if (v + m < P) children.push(v + m)
    return { parent, children }
  }
})

/** The flat tree: the root sends to every other rank, in rank order from the root. */
export const LINEAR: TreeShape = Object.freeze({
  id: 1,
  build: (v: number, P: number): Tree => {
    if (v !== 0) return { parent: 0, children: [] }
    const children: number[] = []
    for (let c = 1; c < P; c++) children.push(c)
    return { parent: -1, children }
  }
})

/**
 * `shape`'s tree at relative rank v of P (read only): the communicator's last one of that shape
 * when v and P are the same (state.ts `trees`: a loop calls one collective with the same v and
 * P call after call, and the tree, an object and an array, is then built once, not per call).
 */
function treeOf (comm: CollComm, shape: TreeShape, v: number, P: number): Tree {
  const trees = ((comm as { state?: CollState }).state ?? stateOf(comm)).trees ??= [null, null]
  const t = trees[shape.id]
  if (t !== null && t.v === v && t.P === P) return t.tree
  const tree = shape.build(v, P)
  trees[shape.id] = { v, P, tree }
  return tree
}

/**
 * Broadcast down tree `shape`, as steps (drive.ts): relative rank v = (rank - root) mod P
 * receives `buf` from its parent, then sends it to each child (every send started before the
 * first is waited for). Steps: the tree's depth. Larger than `segBytes` (binomial: the pipelined
 * MST broadcast of Thakur et al. 4.1): every segment's receive posted, each segment forwarded to
 * the children as soon as it arrives. Every non-root rank receives n bytes; a rank with c
 * children sends c·n.
 */
export function * bcastTreeSteps (comm: CollComm, buf: Uint8Array, root: number, seq: number, round: number, shape: TreeShape, segBytes: number): CollSteps {
  const P = comm.size
  if (P === 1) return
  const { parent, children } = treeOf(comm, shape, (comm.rank - root + P) % P, P)
  const tag = collTag(seq, round)
  const n = buf.byteLength
  if (n <= segBytes) {
    if (parent >= 0) yield * recvSteps(comm, buf, (parent + root) % P, tag, 'bcast')
    if (children.length === 1) { yield new Exchange(comm, buf, (children[0] + root) % P, null, -1, tag); return }
    // Several children: every send starts before the first is waited for (a rendezvous send
    // waits for its child's answer; one after another they would add up).
    const sends = children.map((c) => comm._collIsend(buf, (c + root) % P, tag))
    for (const s of sends) yield s
    return
  }
  const nseg = Math.ceil(n / segBytes)
  const segment = (s: number): Uint8Array => buf.subarray(s * segBytes, Math.min(n, (s + 1) * segBytes))
  const from = (parent + root) % P
  const recvs: CollRequest[] = []
  if (parent >= 0) for (let s = 0; s < nseg; s++) recvs.push(comm._collIrecv(segment(s), from, tag))
  const sends: CollRequest[] = []
  for (let s = 0; s < nseg; s++) {
    const v = segment(s)
    if (parent >= 0) yield * received(recvs[s], v.byteLength, 'bcast', from)
    for (const c of children) sends.push(comm._collIsend(v, (c + root) % P, tag))
  }
  for (const s of sends) yield s
}

/**
 * A one-segment tree broadcast in the blocking tier without the steps' machinery, for buffers
 * the small path carries (docs/mpi-collectives.md, "Direct paths"): the parent's message read now
 * (recvNow), then each child's written now (comm._collSendNow); the same messages, tag and
 * descriptor as bcastTreeSteps. Null when done, else the rest as steps (all of the root's
 * sends when its first could not go out now). `n`: buf.byteLength.
 */
export function bcastTreeNow (comm: CollComm, buf: ArrayBufferView, root: number, seq: number, shape: TreeShape, n = buf.byteLength): CollSteps | null {
  const P = comm.size
  const tag = collTag(seq, 0)
  const { parent, children } = treeOf(comm, shape, (comm.rank - root + P) % P, P)
  if (parent >= 0) {
    const rest = recvNow(comm, buf, (parent + root) % P, tag, 'bcast', n)
    if (rest !== null) return children.length === 0 ? rest : sendsAfter(comm, rest, buf, children, 0, root, tag)
  }
  for (let i = 0; i < children.length; i++) {
    if (comm._collSendNow === undefined || !comm._collSendNow(buf, (children[i] + root) % P, tag, n)) {
      return sendsAfter(comm, null, buf, children, i, root, tag)
    }
  }
  return null
}

/** The sends to `children` (relative ranks) from index `from` on, after `first` (a receive under way) if any. */
function * sendsAfter (comm: CollComm, first: CollSteps | null, buf: ArrayBufferView, children: readonly number[], from: number, root: number, tag: number): CollSteps {
  if (first !== null) yield * first
  const P = comm.size
  const sends: CollRequest[] = []
  for (let i = from; i < children.length; i++) sends.push(comm._collIsend(buf, (children[i] + root) % P, tag))
  for (const s of sends) yield s
}

/**
 * Van de Geijn's broadcast: binomial scatter of the n bytes in P blocks of ceil(n/P) (relative
 * rank order), then a ring allgather of the blocks. Steps: ceil(log2 P) + P - 1; bytes received by
 * each rank ≈ 2·n·(P-1)/P (vs n·ceil(log2 P) along the binomial tree's critical path).
 */
export async function bcastScatterAllgather (comm: CollComm, buf: Uint8Array, root: number, seq: number): Promise<void> {
  const P = comm.size
  if (P === 1) return
  const n = buf.byteLength
  const v = (comm.rank - root + P) % P
  const ss = Math.ceil(n / P)
  const lo = (b: number): number => Math.min(n, b * ss)
  const abs = (x: number): number => (x + root) % P
  // scatter: the subtree of relative rank c with lowest bit m holds blocks [c, min(c + m, P))
  let mask = 1
  while (mask < P) {
    if ((v & mask) !== 0) {
      const hi = Math.min(v + mask, P)
      await recv(comm, buf.subarray(lo(v), lo(hi)), abs(v - mask), collTag(seq, 0), 'bcast')
      break
    }
    mask <<= 1
  }
  const sends: Array<Promise<unknown>> = []
  for (let m = mask >> 1; m > 0; m >>= 1) {
    const c = v + m
    if (c < P) sends.push(waiting(comm._collIsend(buf.subarray(lo(c), lo(Math.min(c + m, P))), abs(c), collTag(seq, 0))))
  }
  await all(sends)
  // ring allgather over relative ranks: step i sends block v - i, receives block v - i - 1
  const right = abs((v + 1) % P); const left = abs((v - 1 + P) % P)
  for (let i = 0; i < P - 1; i++) {
    const sb = (v - i + P) % P; const rb = (v - i - 1 + P) % P
    const rv = buf.subarray(lo(rb), lo(rb + 1))
    const r = runAsync(received(comm._collIrecv(rv, left, collTag(seq, 1 + i)), rv.byteLength, 'bcast', left))
    const s = waiting(comm._collIsend(buf.subarray(lo(sb), lo(sb + 1)), right, collTag(seq, 1 + i)))
    await all([r, s])
  }
}

