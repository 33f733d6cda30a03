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
 * Speed in V8 (measured, docs/npb.md): each batch goes by chunks of CHUNK pairs in two passes.
 * The first generates the pairs (four interleaved lanes of the generator in 32-bit integer
 * arithmetic, candidates() says how) and keeps the accepted ones (t ≤ 1) in three small arrays,
 * without a branch; the second transforms them (gaussians()): no unpredictable branch is left
 * (the acceptance and the annulus' max were 35 % of the time), and the logarithm is an inlined
 * table-driven one (ep/log.ts) instead of V8's out-of-line Math.log. Every value of the timed
 * loop lives in a local or an array made once.
 */
import { fortranExp, fortranFixed } from '../format'
import { allreduce, barrier } from '../collectives'
import { A, power46, randlc } from '../random'
import { HIGH_WORD, lnWithHighWord } from './ep/log'
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

/** Pairs generated per chunk before the accepted ones are transformed (three 16 KiB arrays, cache resident). */
const CHUNK = 2048
/** Index of a double's high 32-bit word in its Int32Array view (a module constant: no property read in the loop). */
const HW = HIGH_WORD

/** A rank's working arrays, made once: one chunk's accepted pairs and the generator's four lanes. */
class Work {
  /** The accepted pairs' x, y and t = x² + y², in the sequence's order. */
  readonly x = new Float64Array(CHUNK)
  readonly y = new Float64Array(CHUNK)
  readonly t = new Float64Array(CHUNK)
  /** t's 32-bit words (the logarithm reads each high word). */
  readonly tWords = new Int32Array(this.t.buffer)
  /** The four lanes' states as 23-bit halves (h1, l1, h2, l2, ...), carried from chunk to chunk. */
  readonly lanes = new Int32Array(8)
}

/**
 * One batch: the 2·NK numbers that follow `seed` (the generator's state, an integer < 2^46), the
 * Gaussian pairs accepted among them added into sums[0] (x) and sums[1] (y), the counts into q.
 */
function batch (seed: number, sums: Float64Array, q: Float64Array, w: Work): void {
  const st = new Float64Array([seed])
  for (let k = 0; k < 4; k++) {
    randlc(st, A)
    const h = Math.floor(st[0] * R23)
    w.lanes[2 * k] = h
    w.lanes[2 * k + 1] = st[0] - h * T23
  }
  for (let c = 0; c < NK; c += CHUNK) {
    const n = candidates(w.lanes, w.x, w.y, w.t)
    gaussians(w.x, w.y, w.t, w.tWords, n, sums, q)
  }
}

/**
 * The next CHUNK pairs of the sequence: the accepted ones (t = x² + y² ≤ 1), in order, into
 * x, y and t; returns how many. `lanes` advances by 2·CHUNK numbers.
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
 * Every pair is stored at index n, and n advances by (1.5 − t/2) | 0, which is 1 exactly when
 * t ≤ 1 (t is in [0, 2); the subtraction is exact for t > 1 and at least 1 for t ≤ 1): a rejected
 * pair is overwritten by the next, and there is no branch for the CPU to mispredict (the test
 * fails 21 % of the time at random).
 */
function candidates (lanes: Int32Array, xs: Float64Array, ys: Float64Array, ts: Float64Array): number {
  let h1 = lanes[0]; let l1 = lanes[1]; let h2 = lanes[2]; let l2 = lanes[3]
  let h3 = lanes[4]; let l3 = lanes[5]; let h4 = lanes[6]; let l4 = lanes[7]
  let n = 0
  for (let i = 0; i < CHUNK / 2; i++) {
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
    let t = x1 * x1 + y1 * y1
    xs[n] = x1; ys[n] = y1; ts[n] = t
    n += (1.5 - 0.5 * t) | 0
    t = x2 * x2 + y2 * y2
    xs[n] = x2; ys[n] = y2; ts[n] = t
    n += (1.5 - 0.5 * t) | 0
  }
  lanes[0] = h1; lanes[1] = l1; lanes[2] = h2; lanes[3] = l2
  lanes[4] = h3; lanes[5] = l3; lanes[6] = h4; lanes[7] = l4
  return n
}

/**
 * The polar method on the first n accepted pairs, in order (the sums round as the reference's):
 * X = x·sqrt(−2 ln t / t), Y likewise, added into sums; each pair counted in q at the annulus
 * max(⌊|X|⌋, ⌊|Y|⌋), taken without a branch (which way |X| > |Y| goes is a coin toss for the
 * CPU's predictor). `tWords` is t's Int32Array view, for the logarithm's high words.
 */
function gaussians (xs: Float64Array, ys: Float64Array, ts: Float64Array, tWords: Int32Array, n: number, sums: Float64Array, q: Float64Array): void {
  let sx = sums[0]
  let sy = sums[1]
  for (let i = 0; i < n; i++) {
    const t = ts[i]
    const f = Math.sqrt(-2 * lnWithHighWord(t, tWords[2 * i + HW]) / t)
    const gx = xs[i] * f
    const gy = ys[i] * f
    const lx = Math.abs(gx) | 0
    const ly = Math.abs(gy) | 0
    const d = (ly - lx) >> 31 // -1 when lx > ly, else 0
    q[ly + ((lx - ly) & d)] += 1
    sx += gx
    sy += gy
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
  const work = new Work()
  batch(SEED, new Float64Array(2), new Float64Array(NQ), work)

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
    batch(state[0], sums, q, work)
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
