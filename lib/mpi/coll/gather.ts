/**
 * Data-movement algorithms on bytes: gather(v), scatter(v), allgather(v). Blocks are `block`
 * bytes (v-variants: byte [offset, length] per rank). Sources: Thakur, Rabenseifner and Gropp 2005
 * (IJHPCA 19(1)): binomial gather and scatter (4.2, 4.3), allgather by recursive doubling for
 * short messages on power-of-two P, Bruck et al. (1997) for short messages on other P, and the ring
 * for long ones (4.1); the ring is F-MPJ's BKT (thesis, chapter 5).
 */
import type { CollComm } from './types'
import { all, collTag, copyBytes, recv, release, scratch, send, sendrecv, waiting } from './util'

/** [byteOffset, byteLength] of rank i's block. */
export type Place = (i: number) => [number, number]

/** A gather(v) call's arguments as its records read them (index.ts prepares them): this rank's block, the root's receive bytes, the block size (gather) and each rank's place in `out`. */
export interface Gathered { own: Uint8Array | null, out: Uint8Array | null, block: number, place: Place }
/** A scatter(v) call's: the root's send bytes, this rank's receive bytes (null: IN_PLACE at the root of scatterv), the block size (scatter) and each rank's place in `src`. */
export interface Scattered { src: Uint8Array | null, own: Uint8Array | null, block: number, place: Place }
/** An allgather(v) call's: the receive bytes, the block size (allgather) and each rank's place in `out`. */
export interface AllGathered { out: Uint8Array, block: number, place: Place }

/**
 * Binomial gather (MST): relative rank v collects the blocks of its subtree [v, v + 2^lowbit) in
 * relative order and sends them up. ceil(log2 P) steps; the root receives n·(P-1) bytes in
 * ceil(log2 P) messages. `own` is this rank's block; `out` the root's P·block receive bytes.
 */
export async function gatherBinomial (comm: CollComm, own: Uint8Array, out: Uint8Array | null, block: number, root: number, seq: number): Promise<void> {
  const P = comm.size
  const v = (comm.rank - root + P) % P
  const tag = collTag(seq, 0)
  let span = 1
  while (span < P && (v & span) === 0) span <<= 1
  const sub = Math.min(span, P - v) // blocks in this subtree
  if (sub === 1 && v !== 0) { await send(comm, own, (v - span + root) % P, tag); return }
  const direct = v === 0 && root === 0
  const ab = direct ? null : scratch(comm, sub * block)
  const tmp = direct ? (out as Uint8Array) : new Uint8Array(ab as ArrayBuffer, 0, sub * block)
  try {
    copyBytes(tmp, 0, own, 0, block)
    const ps: Array<Promise<void>> = []
    for (let mask = 1; mask < span && v + mask < P; mask <<= 1) {
      const c = v + mask
      const cnt = Math.min(mask, P - c)
      ps.push(recv(comm, tmp.subarray(mask * block, (mask + cnt) * block), (c + root) % P, tag, 'gather'))
    }
    await all(ps)
    if (v !== 0) { await send(comm, tmp, (v - span + root) % P, tag); return }
    if (!direct) {
      const o = out as Uint8Array
      for (let j = 0; j < P; j++) copyBytes(o, ((j + root) % P) * block, tmp, j * block, block)
    }
  } finally { if (ab !== null) release(comm, ab) }
}

/**
 * Linear gather(v): the root posts P - 1 receives at once, each rank sends its bytes straight to
 * the root. `place[i]` = [byteOffset, byteLength] of rank i's data in `out`.
 */
export async function gatherLinear (comm: CollComm, own: Uint8Array | null, out: Uint8Array | null, place: (i: number) => [number, number], root: number, seq: number): Promise<void> {
  const tag = collTag(seq, 0)
  if (comm.rank !== root) { await send(comm, own as Uint8Array, root, tag); return }
  const o = out as Uint8Array
  const ps: Array<Promise<void>> = []
  for (let i = 0; i < comm.size; i++) {
    const [off, len] = place(i)
    if (i === root) { if (own !== null) copyBytes(o, off, own, 0, len); continue }
    ps.push(recv(comm, o.subarray(off, off + len), i, tag, 'gather'))
  }
  await all(ps)
}

/**
 * Binomial scatter (MST): the reverse of the binomial gather; the root sends each subtree its
 * blocks in one message. ceil(log2 P) steps; root sends n·(P-1) bytes in ceil(log2 P) messages.
 * `src` is the root's P·block bytes; `own` receives this rank's block.
 */
export async function scatterBinomial (comm: CollComm, src: Uint8Array | null, own: Uint8Array, block: number, root: number, seq: number): Promise<void> {
  const P = comm.size
  const v = (comm.rank - root + P) % P
  const tag = collTag(seq, 0)
  let span = 1
  while (span < P && (v & span) === 0) span <<= 1
  const sub = Math.min(span, P - v)
  if (sub === 1 && v !== 0) { await recv(comm, own, (v - span + root) % P, tag, 'scatter'); return }
  let ab: ArrayBuffer | null = null
  let tmp: Uint8Array
  if (v === 0) {
    const s = src as Uint8Array
    if (root === 0) tmp = s
    else {
      ab = scratch(comm, P * block)
      tmp = new Uint8Array(ab, 0, P * block)
      for (let j = 0; j < P; j++) copyBytes(tmp, j * block, s, ((j + root) % P) * block, block)
    }
  } else {
    ab = scratch(comm, sub * block)
    tmp = new Uint8Array(ab, 0, sub * block)
    await recv(comm, tmp, (v - span + root) % P, tag, 'scatter')
  }
  try {
    const ps: Array<Promise<unknown>> = []
    for (let mask = span >> 1; mask >= 1; mask >>= 1) {
      const c = v + mask
      if (c >= P) continue
      const cnt = Math.min(mask, P - c)
      ps.push(waiting(comm._collIsend(tmp.subarray(mask * block, (mask + cnt) * block), (c + root) % P, tag)))
    }
    copyBytes(own, 0, tmp, 0, block)
    await all(ps)
  } finally { if (ab !== null) release(comm, ab) }
}

/** Linear scatter(v): the root sends each rank its bytes (`place[i]` in `src`) with all sends posted at once. */
export async function scatterLinear (comm: CollComm, src: Uint8Array | null, own: Uint8Array | null, place: (i: number) => [number, number], root: number, seq: number): Promise<void> {
  const tag = collTag(seq, 0)
  if (comm.rank !== root) { await recv(comm, own as Uint8Array, root, tag, 'scatter'); return }
  const s = src as Uint8Array
  const ps: Array<Promise<unknown>> = []
  for (let i = 0; i < comm.size; i++) {
    const [off, len] = place(i)
    if (i === root) { if (own !== null) copyBytes(own, 0, s, off, len); continue }
    ps.push(waiting(comm._collIsend(s.subarray(off, off + len), i, tag)))
  }
  await all(ps)
}

/**
 * Ring allgather(v) (BKT): P - 1 steps; in step i rank r sends the block of rank r - i to r + 1 and
 * receives the block of r - i - 1 from r - 1, straight into `out`. Bytes sent per rank: n·(P-1)/P
 * of the total n. `place[i]` = [byteOffset, byteLength] of rank i's block in `out`.
 */
export async function allgatherRing (comm: CollComm, out: Uint8Array, place: (i: number) => [number, number], seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const right = (r + 1) % P; const left = (r - 1 + P) % P
  for (let i = 0; i < P - 1; i++) {
    const [so, sl] = place((r - i + P) % P)
    const [ro, rl] = place((r - i - 1 + P) % P)
    await sendrecv(comm, out.subarray(so, so + sl), right, out.subarray(ro, ro + rl), left, collTag(seq, i), 'allgather')
  }
}

/**
 * Recursive-doubling allgather (power-of-two P only): log2 P steps; in step k rank r exchanges its
 * 2^k contiguous blocks with r xor 2^k. Bytes sent per rank: n·(P-1)/P.
 */
export async function allgatherRecursiveDoubling (comm: CollComm, out: Uint8Array, block: number, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  let round = 0
  for (let mask = 1; mask < P; mask <<= 1, round++) {
    const partner = r ^ mask
    const mine = r & ~(mask - 1); const theirs = partner & ~(mask - 1)
    await sendrecv(comm, out.subarray(mine * block, (mine + mask) * block), partner,
      out.subarray(theirs * block, (theirs + mask) * block), partner, collTag(seq, round), 'allgather')
  }
}

/**
 * Bruck allgather (any P): ceil(log2 P) steps; in step k rank r sends its first 2^k gathered blocks
 * to r - 2^k and receives as many from r + 2^k (the last step only the P - 2^⌊log2 P⌋ remaining);
 * a final local rotation puts block j at rank (r + j)'s place. Bytes sent per rank: n·(P-1)/P.
 */
export async function allgatherBruck (comm: CollComm, out: Uint8Array, block: number, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const ab = scratch(comm, P * block)
  const tmp = new Uint8Array(ab, 0, P * block)
  try {
    copyBytes(tmp, 0, out, r * block, block)
    let have = 1; let round = 0
    while (have < P) {
      const cnt = Math.min(have, P - have)
      const src = (r + have) % P; const dst = (r - have + P) % P
      await sendrecv(comm, tmp.subarray(0, cnt * block), dst, tmp.subarray(have * block, (have + cnt) * block), src, collTag(seq, round++), 'allgather')
      have += cnt
    }
    for (let j = 0; j < P; j++) copyBytes(out, ((r + j) % P) * block, tmp, j * block, block)
  } finally { release(comm, ab) }
}
