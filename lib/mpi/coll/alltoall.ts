/**
 * All-to-all algorithms on bytes. Sources: Thakur, Rabenseifner and Gropp 2005 (IJHPCA 19(1)),
 * 4.6: Bruck et al. (1997) for short blocks (ceil(log2 P) steps, each moving about half the data),
 * all receives and sends posted at once ("scattered"/linear) for medium ones, and the pairwise
 * exchange for long ones (P - 1 steps, partner r ± i).
 */
import type { CollComm } from './types'
import { all, collTag, copyBytes, recv, release, scratch, sendrecv, waiting } from './util'
import type { Place } from './gather'

/**
 * An alltoall(v) call's arguments as its records read them (index.ts prepares them): the send
 * bytes (null: IN_PLACE, `out` is both), the receive bytes, the block size (alltoall), and each
 * rank's place in the send and receive bytes.
 */
export interface Exchanged { send: Uint8Array | null, out: Uint8Array, block: number, sendPlace: Place, recvPlace: Place }

/** Runs `run` on the call's send bytes: IN_PLACE, a copy of `out` in the communicator's scratch, given back after. */
export async function withSendBytes (comm: CollComm, d: Exchanged, run: (d: Exchanged, send: Uint8Array) => Promise<void>): Promise<void> {
  if (d.send !== null) { await run(d, d.send); return }
  const n = d.out.byteLength
  const ab = scratch(comm, Math.max(1, n))
  const sb = new Uint8Array(ab, 0, n)
  sb.set(d.out)
  try { await run(d, sb) } finally { release(comm, ab) }
}

/**
 * Bruck all-to-all: rotate so block j is for rank r + j; in step k send every block whose index
 * has bit k set to r + 2^k (packed in one message), receive the same count from r - 2^k into the
 * same indices; finally block j came from rank r - j. ceil(log2 P) steps; about n/2 bytes each.
 */
export async function alltoallBruck (comm: CollComm, sendb: Uint8Array, out: Uint8Array, block: number, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const ab = scratch(comm, 2 * P * block)
  const tmp = new Uint8Array(ab, 0, P * block)
  const pack = new Uint8Array(ab, P * block, P * block)
  const packIn = out // out is free until the final step: use it as the receive staging area
  try {
    for (let j = 0; j < P; j++) copyBytes(tmp, j * block, sendb, ((r + j) % P) * block, block)
    let round = 0
    for (let bit = 1; bit < P; bit <<= 1, round++) {
      let k = 0
      for (let j = 1; j < P; j++) if ((j & bit) !== 0) { copyBytes(pack, k * block, tmp, j * block, block); k++ }
      await sendrecv(comm, pack.subarray(0, k * block), (r + bit) % P, packIn.subarray(0, k * block), (r - bit + P) % P, collTag(seq, round), 'alltoall')
      k = 0
      for (let j = 1; j < P; j++) if ((j & bit) !== 0) { copyBytes(tmp, j * block, packIn, k * block, block); k++ }
    }
    for (let j = 0; j < P; j++) copyBytes(out, ((r - j + P) % P) * block, tmp, j * block, block)
  } finally { release(comm, ab) }
}

/**
 * Linear ("scattered") all-to-all(v): post every receive and every send at once, in the order
 * r+1, r+2, ... so not every rank hits rank 0 first. 1 step of P - 1 messages each way.
 * `sp(i)`/`rp(i)` = [byteOffset, byteLength] of the data for/from rank i.
 */
export async function alltoallLinear (comm: CollComm, sendb: Uint8Array, sp: (i: number) => [number, number], out: Uint8Array, rp: (i: number) => [number, number], seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const tag = collTag(seq, 0)
  const ps: Array<Promise<unknown>> = []
  for (let i = 1; i < P; i++) {
    const src = (r - i + P) % P
    const [ro, rl] = rp(src)
    ps.push(recv(comm, out.subarray(ro, ro + rl), src, tag, 'alltoall'))
  }
  for (let i = 1; i < P; i++) {
    const dst = (r + i) % P
    const [so, sl] = sp(dst)
    ps.push(waiting(comm._collIsend(sendb.subarray(so, so + sl), dst, tag)))
  }
  const [mo, ml] = sp(r); const [oo] = rp(r)
  copyBytes(out, oo, sendb, mo, ml)
  await all(ps)
}

/**
 * Pairwise-exchange all-to-all: P - 1 steps; in step i rank r sends its block for r + i and
 * receives the block of r - i (with xor partners when P is a power of two). n·(P-1)/P bytes each way.
 */
export async function alltoallPairwise (comm: CollComm, sendb: Uint8Array, out: Uint8Array, block: number, seq: number): Promise<void> {
  const P = comm.size; const r = comm.rank
  const pof2 = (P & (P - 1)) === 0
  copyBytes(out, r * block, sendb, r * block, block)
  for (let i = 1; i < P; i++) {
    const dst = pof2 ? r ^ i : (r + i) % P
    const src = pof2 ? r ^ i : (r - i + P) % P
    await sendrecv(comm, sendb.subarray(dst * block, (dst + 1) * block), dst, out.subarray(src * block, (src + 1) * block), src, collTag(seq, i), 'alltoall')
  }
}
