/**
 * FT's one-dimensional FFTs (NPB 3.4's cfftz/fftz2 and cffts1/2/3): a radix-2 Stockham
 * autosort transform applied to a block of B lines at once. B lines of a 3-D array (complex,
 * interleaved re/im in one Float64Array, flattened with the first index fastest) are gathered
 * into a scratch block where element e of line l sits at 2 (l + B e), transformed there
 * stage by stage between two scratch blocks, and scattered back. The B lines advance together
 * through each butterfly, so one twiddle factor serves B butterflies and every inner loop runs
 * over 2B consecutive doubles.
 *
 * Forward (sign +1) uses the twiddles exp(+iπk/L) as NPB does (its forward transform has the
 * positive exponent); sign −1 their conjugates. Neither direction scales.
 */

/** Lines transformed together (NPB's fftblock). */
export const BLOCK = 16

/**
 * The twiddle table for transforms up to length `maxn` (a power of two), as NPB's fft_init:
 * entry t = L + k (L a power of two, 0 ≤ k < L) holds exp(iπk/L), at 2t (re) and 2t + 1 (im).
 */
export function twiddles (maxn: number): Float64Array {
  const u = new Float64Array(2 * Math.max(2, maxn))
  for (let ln = 1; ln < maxn; ln *= 2) {
    const t = Math.PI / ln
    for (let k = 0; k < ln; k++) {
      const a = k * t
      u[2 * (ln + k)] = Math.cos(a)
      u[2 * (ln + k) + 1] = Math.sin(a)
    }
  }
  return u
}

/**
 * One Stockham stage l (1-based) of a length-n = 2^m transform on B lines: x → y. With
 * lk = 2^(l−1) and li = 2^(m−l), the pair (i lk + k, i lk + k + n/2) becomes
 * (i 2lk + k, i 2lk + k + lk) by a butterfly with twiddle exp(±iπi/li).
 */
function stage (sign: number, l: number, m: number, n: number, u: Float64Array, x: Float64Array, y: Float64Array): void {
  const lk = 1 << (l - 1)
  const li = 1 << (m - l)
  const B2 = 2 * BLOCK
  const half = B2 * (n >> 1)
  for (let i = 0; i < li; i++) {
    const ur = u[2 * (li + i)]
    const ui = sign * u[2 * (li + i) + 1]
    let a = B2 * i * lk
    let c = 2 * a
    for (let k = 0; k < lk; k++, a += B2, c += B2) {
      const b = a + half
      const d = c + B2 * lk
      for (let j = 0; j < B2; j += 2) {
        const ar = x[a + j]
        const ai = x[a + j + 1]
        const br = x[b + j]
        const bi = x[b + j + 1]
        y[c + j] = ar + br
        y[c + j + 1] = ai + bi
        const dr = ar - br
        const di = ai - bi
        y[d + j] = ur * dr - ui * di
        y[d + j + 1] = ur * di + ui * dr
      }
    }
  }
}

/**
 * Scratch and twiddles for the transforms of one rank; `line` runs B lines of an array through
 * gather, the m stages and scatter.
 */
export class LineFft {
  readonly u: Float64Array
  private readonly bx: Float64Array
  private readonly by: Float64Array

  constructor (maxn: number) {
    this.u = twiddles(maxn)
    this.bx = new Float64Array(2 * BLOCK * maxn)
    this.by = new Float64Array(2 * BLOCK * maxn)
  }

  /**
   * Transforms the B lines of `src` whose element e of line l is the complex at index
   * base + l·ls + e·es (in complex units), writing them at the same places of `dst` (may be src).
   */
  lines (sign: number, n: number, src: Float64Array, dst: Float64Array, base: number, ls: number, es: number): void {
    const m = Math.round(Math.log2(n))
    const bx = this.bx
    gather(src, bx, n, base, ls, es)
    let from = bx
    let to = this.by
    for (let l = 1; l <= m; l++) {
      stage(sign, l, m, n, this.u, from, to)
      const t = from; from = to; to = t
    }
    scatter(from, dst, n, base, ls, es)
  }
}

/** Block (element e of line l at 2 (l + B e)) ← the array's lines. */
function gather (src: Float64Array, blk: Float64Array, n: number, base: number, ls: number, es: number): void {
  if (es === 1) {
    for (let l = 0; l < BLOCK; l++) {
      let s = 2 * (base + l * ls)
      let b = 2 * l
      for (let e = 0; e < n; e++, s += 2, b += 2 * BLOCK) { blk[b] = src[s]; blk[b + 1] = src[s + 1] }
    }
  } else {
    for (let e = 0; e < n; e++) {
      let s = 2 * (base + e * es)
      const b = 2 * BLOCK * e
      const ls2 = 2 * ls
      for (let l = 0; l < 2 * BLOCK; l += 2, s += ls2) { blk[b + l] = src[s]; blk[b + l + 1] = src[s + 1] }
    }
  }
}

/** The array's lines ← block. */
function scatter (blk: Float64Array, dst: Float64Array, n: number, base: number, ls: number, es: number): void {
  if (es === 1) {
    for (let l = 0; l < BLOCK; l++) {
      let s = 2 * (base + l * ls)
      let b = 2 * l
      for (let e = 0; e < n; e++, s += 2, b += 2 * BLOCK) { dst[s] = blk[b]; dst[s + 1] = blk[b + 1] }
    }
  } else {
    for (let e = 0; e < n; e++) {
      let s = 2 * (base + e * es)
      const b = 2 * BLOCK * e
      const ls2 = 2 * ls
      for (let l = 0; l < 2 * BLOCK; l += 2, s += ls2) { dst[s] = blk[b + l]; dst[s + 1] = blk[b + l + 1] }
    }
  }
}

/**
 * The transforms along each of the three axes of a d1 × d2 × d3 array (NPB's cffts1, cffts2,
 * cffts3): every line along that axis, B at a time. d1, d2, d3 powers of two, the two other
 * than the transformed one at least B... or a multiple of B.
 */
export function fftAxis1 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  for (let k = 0; k < d3; k++) {
    for (let jj = 0; jj + BLOCK <= d2; jj += BLOCK) f.lines(sign, d1, src, dst, d1 * (jj + d2 * k), d1, 1)
  }
}

export function fftAxis2 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  for (let k = 0; k < d3; k++) {
    for (let ii = 0; ii + BLOCK <= d1; ii += BLOCK) f.lines(sign, d2, src, dst, ii + d1 * d2 * k, 1, d1)
  }
}

export function fftAxis3 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  for (let j = 0; j < d2; j++) {
    for (let ii = 0; ii + BLOCK <= d1; ii += BLOCK) f.lines(sign, d3, src, dst, ii + d1 * j, 1, d1 * d2)
  }
}
