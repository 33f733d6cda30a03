/**
 * NPB EP ("embarrassingly parallel"), NAS report RNR-94-007 and NPB 3.4's MPI version: 2^(m+1)
 * uniform numbers from NPB's generator (tools/src/npb/random.ts) make 2^m pairs (x, y) in
 * (-1, 1)^2; each pair inside the unit circle (t = x² + y² ≤ 1) becomes two Gaussian deviates by
 * the Marsaglia polar method, X = x·sqrt(-2 ln t / t), Y = y·sqrt(-2 ln t / t). EP sums X and Y
 * and counts the pairs by the square annulus l = floor(max(|X|, |Y|)) they fall in (10 annuli).
 *
 * Decomposition (as the reference): the pairs come in 2^(m-16) batches of 2^16 pairs; rank r
 * takes a contiguous run of batches (the first `batches mod P` ranks one more), and finds each
 * batch's starting seed by jumping the generator 2^17·k steps (binary powers of a^(2^17)). The
 * communication is the end's: three allreduces (SUM) of sx, sy and the 10 counts, and one (MAX)
 * of the elapsed time. Timed region: from a barrier to the end of the sums' allreduces.
 * Verification: |sx - ref|/|ref| ≤ 1e-8 and the same for sy. Mop/s = 2^(m+1) / t / 10^6.
 *
 * Speed in V8 (measured, docs/npb.md): the pairs of a batch are generated and consumed in one
 * loop (no 1 MiB array written then read), by four interleaved lanes of the generator in 32-bit
 * integer arithmetic (batch() says how), every value in a local.
 */
import { fortranExp, fortranFixed } from '../format'
import { allreduce, barrier } from '../collectives'
import { A, power46, randlc } from '../random'
import type { KernelOptions, KernelResult, MpiModule, NpbClass, NpbKernel } from '../types'
import type { Comm } from 'fastsock/mpi'

/** log2 of the number of pairs, per class (NPB 3.4's setparams). */
const M: Record<NpbClass, number> = { S: 24, W: 25, A: 28, B: 30, C: 32 }
/** The reference sums (sx, sy) per m (NPB 3.4's EP). */
const REFERENCE: Record<number, [number, number]> = {
  24: [-3.247834652034740e3, -6.958407078382297e3],
  25: [-2.863319731645753e3, -6.320053679109499e3],
  28: [-4.295875165629892e3, -1.580732573678431e4],
  30: [4.033815542441498e4, -2.660669192809235e4],
  32: [4.764367927995374e4, -8.084072988043731e4]
}
/** Relative tolerance of the verification. */
const EPSILON = 1e-8
/** log2 of the pairs per batch, and the pairs per batch. */
const MK = 16
const NK = 1 << MK
/** Number of square annuli counted. */
const NQ = 10
/** The generator's seed for EP. */
const SEED = 271828183

const R23 = 2 ** -23
const R46 = 2 ** -46
const T23 = 2 ** 23
/** The low 23 bits. */
const M23 = 0x7fffff
/** a^4 mod 2^46: the step of each of the four interleaved lanes of the generator. */
const A4 = power46(A, 4)
/** A4's 23-bit halves, and its low half times 2^-23. */
const A4H = Math.floor(A4 * R23)
const A4L = A4 - A4H * T23
const A4LR = A4L * R23

/**
 * One batch: the 2·NK numbers that follow `seed` (the generator's state, an integer < 2^46), the
 * Gaussian pairs accepted among them added into sums[0] (x) and sums[1] (y), the counts into q.
 *
 * The generator is NPB's x <- a·x mod 2^46, made fast for V8 in two ways (docs/npb.md):
 * - Four lanes: numbers 1, 2, 3, 4 of the batch start the lanes, and each lane steps by a^4, so
 *   lane k holds numbers k, k + 4, k + 8, ...: the same sequence in the same order, but four
 *   independent dependency chains instead of one, which the CPU overlaps.
 * - 32-bit integer arithmetic: a state is two 23-bit halves (h, l), x = h·2^23 + l, and
 *   a·x mod 2^46 = a_l·l + 2^23·((a_h·l + a_l·h) mod 2^23) (mod 2^46). The low half of a_l·l is
 *   Math.imul's low bits; its high half is floor(l · a_l·2^-23), exact in a double (a_l·l < 2^46)
 *   and truncated by `| 0`; the sum of the three 23-bit terms is taken mod 2^23 with `& M23`.
 *   Every `+` is followed by `| 0` so V8 keeps 32-bit adds (an overflowing speculative add
 *   deoptimizes the function and the rest runs on doubles, twice as slow).
 */
function batch (seed: number, sums: Float64Array, q: Float64Array): void {
  const st = new Float64Array([seed])
  const s1 = (randlc(st, A), st[0])
  const s2 = (randlc(st, A), st[0])
  const s3 = (randlc(st, A), st[0])
  const s4 = (randlc(st, A), st[0])
  let h1 = Math.floor(s1 * R23); let l1 = s1 - h1 * T23
  let h2 = Math.floor(s2 * R23); let l2 = s2 - h2 * T23
  let h3 = Math.floor(s3 * R23); let l3 = s3 - h3 * T23
  let h4 = Math.floor(s4 * R23); let l4 = s4 - h4 * T23
  h1 |= 0; l1 |= 0; h2 |= 0; l2 |= 0; h3 |= 0; l3 |= 0; h4 |= 0; l4 |= 0
  let sx = sums[0]
  let sy = sums[1]
  for (let i = 0; i < NK / 2; i++) {
    // Two pairs: (lane 1, lane 2) and (lane 3, lane 4), each number mapped to (-1, 1).
    const x1 = h1 * (2 * R23) + l1 * (2 * R46) - 1
    const y1 = h2 * (2 * R23) + l2 * (2 * R46) - 1
    const x2 = h3 * (2 * R23) + l3 * (2 * R46) - 1
    const y2 = h4 * (2 * R23) + l4 * (2 * R46) - 1
    let p = (l1 * A4LR) | 0
    h1 = (((p + Math.imul(A4H, l1)) | 0) + Math.imul(A4L, h1)) & M23
    l1 = Math.imul(A4L, l1) & M23
    p = (l2 * A4LR) | 0
    h2 = (((p + Math.imul(A4H, l2)) | 0) + Math.imul(A4L, h2)) & M23
    l2 = Math.imul(A4L, l2) & M23
    p = (l3 * A4LR) | 0
    h3 = (((p + Math.imul(A4H, l3)) | 0) + Math.imul(A4L, h3)) & M23
    l3 = Math.imul(A4L, l3) & M23
    p = (l4 * A4LR) | 0
    h4 = (((p + Math.imul(A4H, l4)) | 0) + Math.imul(A4L, h4)) & M23
    l4 = Math.imul(A4L, l4) & M23
    // The polar method on each pair, in the sequence's order (the sums' rounding as the reference's).
    let t = x1 * x1 + y1 * y1
    if (t <= 1) {
      const f = Math.sqrt(-2 * Math.log(t) / t)
      const gx = x1 * f
      const gy = y1 * f
      const ax = Math.abs(gx)
      const ay = Math.abs(gy)
      q[(ax > ay ? ax : ay) | 0] += 1
      sx += gx
      sy += gy
    }
    t = x2 * x2 + y2 * y2
    if (t <= 1) {
      const f = Math.sqrt(-2 * Math.log(t) / t)
      const gx = x2 * f
      const gy = y2 * f
      const ax = Math.abs(gx)
      const ay = Math.abs(gy)
      q[(ax > ay ? ax : ay) | 0] += 1
      sx += gx
      sy += gy
    }
  }
  sums[0] = sx
  sums[1] = sy
}

async function run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult> {
  const m = M[cls]
  const batches = 2 ** (m - MK)
  const np = comm.size
  const rank = comm.rank
  // Rank r's batches: the first (batches mod P) ranks take one more.
  const extra = batches % np
  const mine = Math.floor(batches / np) + (rank < extra ? 1 : 0)
  const first = rank < extra ? rank * mine : extra * (mine + 1) + (rank - extra) * mine
  const sums = new Float64Array(2)
  const q = new Float64Array(NQ)
  const reduced = new Float64Array(NQ)
  const one = new Float64Array(1)
  const state = new Float64Array(1)
  const jump = new Float64Array(1)
  // Warm the code the timed region runs (the reference touches its arrays and functions too):
  // one batch of the sequence, its results dropped.
  batch(SEED, new Float64Array(2), new Float64Array(NQ))

  await barrier(comm, opts.blocking)
  const t0 = performance.now()
  // a^(2·NK): the jump from one batch's seed to the next's.
  const an = power46(A, 2 * NK)
  for (let k = 0; k < mine; k++) {
    // The seed of batch `first + k`: SEED·an^(first + k) mod 2^46, by binary powers of an.
    let kk = first + k
    state[0] = SEED
    jump[0] = an
    while (kk > 0) {
      if (kk % 2 === 1) randlc(state, jump[0])
      kk = Math.floor(kk / 2)
      if (kk > 0) randlc(jump, jump[0])
    }
    batch(state[0], sums, q)
  }
  one[0] = sums[0]
  const sx = (await allreduce(comm, one, new Float64Array(1), mpi.SUM, opts.blocking))[0]
  one[0] = sums[1]
  let sy = (await allreduce(comm, one, new Float64Array(1), mpi.SUM, opts.blocking))[0]
  await allreduce(comm, q, reduced, mpi.SUM, opts.blocking)
  let pairs = 0
  for (let i = 0; i < NQ; i++) pairs += reduced[i]
  const elapsed = (performance.now() - t0) / 1e3
  one[0] = elapsed
  const seconds = (await allreduce(comm, one, new Float64Array(1), mpi.MAX, opts.blocking))[0]

  if (opts.corrupt) sy *= 1 + 1e-6
  const [rx, ry] = REFERENCE[m]
  const ex = Math.abs((sx - rx) / rx)
  const ey = Math.abs((sy - ry) / ry)
  const verified = ex <= EPSILON && ey <= EPSILON // false for NaN too
  const lines = [
    'EP Benchmark Results:',
    '',
    `CPU Time =${fortranFixed(seconds, 10, 4)}`,
    `N = 2^${String(m).padStart(5)}`,
    `No. Gaussian Pairs =${fortranFixed(pairs, 14, 0)}.`,
    `Sums = ${fortranExp(sx, 25, 15, 'D', 1)}${fortranExp(sy, 25, 15, 'D', 1)}`,
    'Counts:',
    ...Array.from(reduced, (c, i) => `${String(i).padStart(3)}${fortranFixed(c, 14, 0)}.`)
  ]
  return { size: String(2 ** (m + 1)), iterations: 0, seconds, mops: 2 ** (m + 1) / seconds / 1e6, verified, lines }
}

/** EP for `fastsock npb`. */
export const kernel: NpbKernel = {
  name: 'ep',
  title: 'EP Benchmark',
  checkProcs (cls: NpbClass, np: number): string | null {
    const batches = 2 ** (M[cls] - MK)
    return np > batches ? `EP class ${cls} has ${batches} batches: at most ${batches} ranks` : null
  },
  run
}
