/**
 * FT's one-dimensional FFTs (NPB 3.4's cfftz/fftz2 and cffts1/2/3): the Stockham autosort
 * transform, applied to B lines of a 3-D array at once (complex, interleaved re/im in one
 * Float64Array, flattened with the first index fastest). The reference's radix-2 stages are
 * taken two at a time (radix 4; one radix-2 stage last when log2 n is odd). The first stage
 * reads the lines from the array and the last writes them back; the stages between run in two
 * scratch blocks where element e of line l sits at 2 (l + B e). The B lines advance together
 * through each butterfly, so one twiddle factor serves B butterflies; inside the blocks, and in
 * the array for the y and z transforms, the innermost loop runs over 2B consecutive doubles.
 *
 * Forward (sign +1) uses the twiddles exp(+iπk/L) as NPB does (its forward transform has the
 * positive exponent); sign −1 their conjugates. Neither direction scales.
 */

/** Lines transformed together (NPB's fftblock). */
export const BLOCK = 16
/** BLOCK for this module's loops: a module constant, not a property of `exports`, so V8 folds it. */
const BLK = 16

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
 * One Stockham stage l (1-based) of a length-n = 2^m transform on B lines. With
 * lk = 2^(l−1) and li = 2^(m−l), the pair (i lk + k, i lk + k + n/2) becomes
 * (i 2lk + k, i 2lk + k + lk) by a butterfly with twiddle exp(±iπi/li). Element e of line
 * j is read at x[xo + e·xs + j·xl] (re; im next) and written at y[yo + e·ys + j·yl], in
 * doubles: in the scratch blocks xs = 2B and xl = 2; in the array, its own strides.
 */
function stage (sign: number, l: number, m: number, n: number, u: Float64Array, x: Float64Array, xo: number, xs: number, xl: number, y: Float64Array, yo: number, ys: number, yl: number): void {
  const lk = 1 << (l - 1)
  const li = 1 << (m - l)
  const xend = BLK * xl
  const half = xs * (n >> 1)
  const ol = ys * lk
  for (let i = 0; i < li; i++) {
    const ur = u[2 * (li + i)]
    const ui = sign * u[2 * (li + i) + 1]
    let a = xo + xs * i * lk
    let c = yo + ys * 2 * i * lk
    for (let k = 0; k < lk; k++, a += xs, c += ys) {
      const b = a + half
      const d = c + ol
      for (let jx = 0, jy = 0; jx < xend; jx += xl, jy += yl) {
        const ar = x[a + jx]
        const ai = x[a + jx + 1]
        const br = x[b + jx]
        const bi = x[b + jx + 1]
        y[c + jy] = ar + br
        y[c + jy + 1] = ai + bi
        const dr = ar - br
        const di = ai - bi
        y[d + jy] = ur * dr - ui * di
        y[d + jy + 1] = ur * di + ui * dr
      }
    }
  }
}

/**
 * Two Stockham stages at once (l and l + 1, 1-based): a radix-4 butterfly on the points
 * i lk + k + {0, n/4, n/2, 3n/4} (lk = 2^(l−1), li = 2^(m−l), 0 ≤ i < li/2, 0 ≤ k < lk),
 * written to i 4lk + k + {0, lk, 2lk, 3lk}: the two radix-2 stages' result in exact arithmetic,
 * with half the passes over the data. With w = exp(±iπi/li) and t0..3 the sums and differences
 * of the pairs (0, n/2) and (n/4, 3n/4): out0 = t0 + t2, out1 = w (t1 ± i t3),
 * out2 = w² (t0 − t2), out3 = w³ (t1 ∓ i t3). Strides as stage().
 */
function stage4 (sign: number, l: number, m: number, n: number, u: Float64Array, x: Float64Array, xo: number, xs: number, xl: number, y: Float64Array, yo: number, ys: number, yl: number): void {
  const lk = 1 << (l - 1)
  const li = 1 << (m - l)
  const xend = BLK * xl
  const q1 = xs * (n >> 2)
  const q2 = xs * (n >> 1)
  const q3 = q1 + q2
  const o1 = ys * lk
  const o2 = 2 * o1
  const o3 = 3 * o1
  for (let i = 0; i < (li >> 1); i++) {
    const w1r = u[2 * (li + i)]
    const w1i = sign * u[2 * (li + i) + 1]
    const w2r = u[2 * ((li >> 1) + i)]
    const w2i = sign * u[2 * ((li >> 1) + i) + 1]
    const w3r = w1r * w2r - w1i * w2i
    const w3i = w1r * w2i + w1i * w2r
    let a = xo + xs * i * lk
    let c = yo + ys * 4 * i * lk
    for (let k = 0; k < lk; k++, a += xs, c += ys) {
      for (let jx = 0, jy = 0; jx < xend; jx += xl, jy += yl) {
        const x0r = x[a + jx]
        const x0i = x[a + jx + 1]
        const x1r = x[a + q2 + jx]
        const x1i = x[a + q2 + jx + 1]
        const x2r = x[a + q1 + jx]
        const x2i = x[a + q1 + jx + 1]
        const x3r = x[a + q3 + jx]
        const x3i = x[a + q3 + jx + 1]
        const t0r = x0r + x1r
        const t0i = x0i + x1i
        const t1r = x0r - x1r
        const t1i = x0i - x1i
        const t2r = x2r + x3r
        const t2i = x2i + x3i
        const t3r = x2r - x3r
        const t3i = x2i - x3i
        y[c + jy] = t0r + t2r
        y[c + jy + 1] = t0i + t2i
        const sr = t1r - sign * t3i
        const si = t1i + sign * t3r
        y[c + o1 + jy] = w1r * sr - w1i * si
        y[c + o1 + jy + 1] = w1r * si + w1i * sr
        const dr = t0r - t2r
        const di = t0i - t2i
        y[c + o2 + jy] = w2r * dr - w2i * di
        y[c + o2 + jy + 1] = w2r * di + w2i * dr
        const er = t1r + sign * t3i
        const ei = t1i - sign * t3r
        y[c + o3 + jy] = w3r * er - w3i * ei
        y[c + o3 + jy + 1] = w3r * ei + w3i * er
      }
    }
  }
}

/**
 * Scratch and twiddles for the transforms of one rank; `lines` runs B lines of an array through
 * the stages (radix-4 pairs, one radix-2 stage last when m is odd).
 */
export class LineFft {
  readonly u: Float64Array
  private readonly bx: Float64Array
  private readonly by: Float64Array

  constructor (maxn: number) {
    this.u = twiddles(maxn)
    this.bx = new Float64Array(2 * BLK * maxn)
    this.by = new Float64Array(2 * BLK * maxn)
  }

  /**
   * Transforms the B lines of `src` whose element e of line l is the complex at index
   * base + l·ls + e·es (in complex units), writing them at the same places of `dst` (may be src).
   * The first stage reads `src` and the last writes `dst`, with no gather or scatter pass
   * (src = dst is safe: the first stage has read every element before the last writes).
   */
  lines (sign: number, n: number, m: number, src: Float64Array, dst: Float64Array, base: number, ls: number, es: number): void {
    const B2 = 2 * BLK
    let x = src
    let xo = 2 * base
    let xs = 2 * es
    let xl = 2 * ls
    let y = this.bx
    let l = 1
    while (l <= m) {
      const last = l + (l < m ? 2 : 1) > m
      const yy = last ? dst : y
      const yo = last ? 2 * base : 0
      const ys = last ? 2 * es : B2
      const yl = last ? 2 * ls : 2
      if (l < m) { stage4(sign, l, m, n, this.u, x, xo, xs, xl, yy, yo, ys, yl); l += 2 } else { stage(sign, l, m, n, this.u, x, xo, xs, xl, yy, yo, ys, yl); l += 1 }
      const t = x === this.bx ? this.bx : this.by
      x = yy; xo = yo; xs = ys; xl = yl
      y = t
    }
  }
}

/**
 * The transforms along each of the three axes of a d1 × d2 × d3 array (NPB's cffts1, cffts2,
 * cffts3): every line along that axis, B at a time. d1, d2, d3 powers of two, the transformed
 * one at least 4 and the other two multiples of B.
 */
export function fftAxis1 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  const m = log2(d1)
  for (let k = 0; k < d3; k++) {
    for (let jj = 0; jj + BLK <= d2; jj += BLK) f.lines(sign, d1, m, src, dst, d1 * (jj + d2 * k), d1, 1)
  }
}

export function fftAxis2 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  const m = log2(d2)
  for (let k = 0; k < d3; k++) {
    for (let ii = 0; ii + BLK <= d1; ii += BLK) f.lines(sign, d2, m, src, dst, ii + d1 * d2 * k, 1, d1)
  }
}

export function fftAxis3 (f: LineFft, sign: number, d1: number, d2: number, d3: number, src: Float64Array, dst: Float64Array): void {
  const m = log2(d3)
  for (let j = 0; j < d2; j++) {
    for (let ii = 0; ii + BLK <= d1; ii += BLK) f.lines(sign, d3, m, src, dst, ii + d1 * j, 1, d1 * d2)
  }
}

/** log2 of a power of two. */
function log2 (n: number): number { return 31 - Math.clz32(n) }
