/**
 * Barrier and broadcast algorithms (bytes-level; every function takes the call's sequence number
 * `seq` so its tags are unique to this call). Sources: Thakur, Rabenseifner and Gropp 2005,
 * "Optimization of collective communication operations in MPICH" (IJHPCA 19(1)), sections 3.1
 * (barrier: dissemination, Hensgen, Finkel and Manber 1988), 4.1 (bcast: binomial tree for short
 * messages, van de Geijn's scatter + allgather for long ones); the binomial tree is F-MPJ's MST
 * (thesis, chapter 5).
 */
import type { CollComm } from './types'
import { runAsync } from './drive'
import type { CollSteps } from './drive'
import { all, collTag, Exchange, exchangeNow, received, recv, recvNow, recvSteps, send, sendrecvSteps, waitRecv, waiting } from './util'

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
 * allreducePairSync: null when nothing was sent (run the steps), true when done, else the rest.
 */
export function barrierPairSync (comm: CollComm, seq: number): true | CollSteps | null {
  return exchangeNow(comm, EMPTY, EMPTY, comm.rank ^ 1, collTag(seq, 0), 'barrier', 0, 0)
}

/**
 * The binomial bcast at P = 2 in the blocking tier, for buffers the small path carries: the
 * root's one send written now, the other rank's one receive read now (the same message, tag and
 * descriptor as bcastBinomialSteps, round 0). Null when the root's send could not go out now
 * (run the steps), true when done, else the receive's rest as steps.
 */
export function bcastPairSync (comm: CollComm, buf: ArrayBufferView, root: number, seq: number, n = buf.byteLength): true | CollSteps | null {
  const tag = collTag(seq, 0)
  if (comm.rank !== root) return recvNow(comm, buf, root, tag, 'bcast', n)
  return comm._collSendNow !== undefined && comm._collSendNow(buf, root ^ 1, tag, n) ? true : null
}

/** The dissemination barrier in the awaited tier. */
export function barrierDissemination (comm: CollComm, seq: number): Promise<void> {
  return runAsync(barrierDisseminationSteps(comm, seq))
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
  await bcastBinomial(comm, EMPTY, 0, seq, 1, 65536)
}

/** Relative rank v's parent (-1 at the root) and children in the binomial tree rooted at `root`, as ranks. */
function binomialTree (v: number, P: number, root: number): { parent: number, children: number[] } {
  let mask = 1
  let parent = -1
  while (mask < P) {
    if ((v & mask) !== 0) { parent = (v - mask + root) % P; break }
    mask <<= 1
  }
  const children: number[] = []
  for (let m = mask >> 1; m > 0; m >>= 1) if (v + m < P) children.push((v + m + root) % P)
  return { parent, children }
}

/**
 * Binomial-tree broadcast of one segment, as steps (drive.ts): relative rank
 * v = (rank - root) mod P receives `buf` from v - 2^k (2^k its lowest set bit), then sends it to
 * v + 2^j for 2^j < 2^k. ceil(log2 P) steps.
 */
export function * bcastBinomialSteps (comm: CollComm, buf: Uint8Array, root: number, seq: number, round: number): CollSteps {
  const P = comm.size
  if (P === 1) return
  const { parent, children } = binomialTree((comm.rank - root + P) % P, P, root)
  const tag = collTag(seq, round)
  if (parent >= 0) yield * recvSteps(comm, buf, parent, tag, 'bcast')
  if (children.length === 1) { yield new Exchange(comm, buf, children[0], null, -1, tag); return }
  // Several children: every send starts before the first is waited for (a rendezvous send
  // waits for its child's answer; one after another they would add up).
  const sends = children.map((c) => comm._collIsend(buf, c, tag))
  for (const s of sends) yield s
}

/**
 * Binomial-tree broadcast (MST), pipelined in segments of `segBytes`: relative rank
 * v = (rank - root) mod P receives from v - 2^k (2^k its lowest set bit) and forwards each segment,
 * as soon as it arrives, to v + 2^j for 2^j < 2^k. ceil(log2 P) steps; every non-root rank
 * receives n bytes; a rank with c children sends c·n. One segment: bcastBinomialSteps.
 */
export async function bcastBinomial (comm: CollComm, buf: Uint8Array, root: number, seq: number, round: number, segBytes: number): Promise<void> {
  const P = comm.size
  if (P === 1) return
  const n = buf.byteLength
  const nseg = n === 0 ? 1 : Math.ceil(n / segBytes)
  if (nseg === 1) { await runAsync(bcastBinomialSteps(comm, buf, root, seq, round)); return }
  const tag = collTag(seq, round)
  const { parent, children } = binomialTree((comm.rank - root + P) % P, P, root)
  const recvs: Array<Promise<void>> = []
  if (parent >= 0) {
    for (let s = 0; s < nseg; s++) {
      const seg = buf.subarray(s * segBytes, Math.min(n, (s + 1) * segBytes))
      recvs.push(waitRecv(waiting(comm._collIrecv(seg, parent, tag)), seg.byteLength, 'bcast', parent))
    }
    for (const p of recvs) p.catch(() => {})
  }
  const sends: Array<Promise<unknown>> = []
  for (let s = 0; s < nseg; s++) {
    if (parent >= 0) await recvs[s]
    const seg = buf.subarray(s * segBytes, Math.min(n, (s + 1) * segBytes))
    for (const c of children) sends.push(waiting(comm._collIsend(seg, c, tag)))
  }
  await all(sends)
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
    const r = waiting(comm._collIrecv(rv, left, collTag(seq, 1 + i)))
    const s = waiting(comm._collIsend(buf.subarray(lo(sb), lo(sb + 1)), right, collTag(seq, 1 + i)))
    await Promise.all([waitRecv(r, rv.byteLength, 'bcast', left), s])
  }
}

/** Linear broadcast: the root sends n bytes to each of the P - 1 others. For tests and tiny P. */
export async function bcastLinear (comm: CollComm, buf: Uint8Array, root: number, seq: number): Promise<void> {
  const P = comm.size
  if (comm.rank !== root) { await recv(comm, buf, root, collTag(seq, 0), 'bcast'); return }
  const sends: Array<Promise<unknown>> = []
  for (let i = 0; i < P; i++) if (i !== root) sends.push(waiting(comm._collIsend(buf, i, collTag(seq, 0))))
  await all(sends)
}
