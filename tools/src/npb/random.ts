/**
 * NPB's pseudo-random number generator (NAS report RNR-94-007 and NPB 3.4's randdp): the linear
 * congruential sequence x(k+1) = a * x(k) mod 2^46, with a = 5^13 by default, returning
 * x(k+1) * 2^-46 in (0, 1). Every kernel that makes data from it (CG, EP, FT, IS, MG) must
 * produce the reference's exact sequence, so the product is formed exactly in doubles: a and x
 * are split into 23-bit halves, and no partial product exceeds 2^52.
 *
 * The state is one double holding an integer in [1, 2^46), kept in a caller's Float64Array so a
 * hot loop changes it in place without allocating.
 */

const R23 = 2 ** -23
const T23 = 2 ** 23
const R46 = 2 ** -46
const T46 = 2 ** 46

/** NPB's default multiplier, 5^13. */
export const A = 1220703125

/**
 * One step: state[at] <- a * state[at] mod 2^46; returns the new state times 2^-46, in (0, 1).
 * `a` must be an integer in [1, 2^46) (NPB's multipliers, or powers of them mod 2^46).
 */
export function randlc (state: Float64Array, a: number, at = 0): number {
  const a1 = Math.trunc(R23 * a)
  const a2 = a - T23 * a1
  const x = state[at]
  const x1 = Math.trunc(R23 * x)
  const x2 = x - T23 * x1
  const t1 = a1 * x2 + a2 * x1
  const t2 = Math.trunc(R23 * t1)
  const z = t1 - T23 * t2
  const t3 = T23 * z + a2 * x2
  const t4 = Math.trunc(R46 * t3)
  const next = t3 - T46 * t4
  state[at] = next
  return R46 * next
}

/**
 * `n` steps into y[offset], ..., y[offset + n - 1] (NPB's vranlc): the same sequence as n calls
 * of randlc, bit for bit, with the state kept as its two 23-bit halves: a·x mod 2^46 is
 * (a1·lo + a2·hi + carry mod 2^23)·2^23 + (a2·lo mod 2^23), where carry = ⌊a2·lo / 2^23⌋, every
 * product exact in a double. The step's dependency chain is half randlc's, which splits x again
 * each step (13 ns a value against 45 ns in FT's initial conditions, measured under load).
 */
export function vranlc (n: number, state: Float64Array, a: number, y: Float64Array, offset = 0): void {
  const a1 = Math.trunc(R23 * a)
  const a2 = a - T23 * a1
  const x = state[0]
  let hi = Math.trunc(R23 * x)
  let lo = x - T23 * hi
  for (let i = 0; i < n; i++) {
    const p = a2 * lo
    const carry = Math.trunc(R23 * p)
    const mid = a1 * lo + a2 * hi + carry
    hi = mid - T23 * Math.trunc(R23 * mid)
    lo = p - T23 * carry
    y[offset + i] = R46 * (T23 * hi + lo)
  }
  state[0] = T23 * hi + lo
}

/** a^n mod 2^46 (NPB's ipow46 / power): the multiplier that jumps the sequence n steps ahead. */
export function power46 (a: number, n: number): number {
  const q = new Float64Array(1)
  const r = new Float64Array([1])
  let aj = a
  let nj = n
  if (nj === 0) return 1
  while (nj > 1) {
    if (nj % 2 === 1) { q[0] = r[0]; randlc(q, aj); r[0] = q[0] }
    q[0] = aj; randlc(q, aj); aj = q[0]
    nj = Math.floor(nj / 2)
  }
  q[0] = r[0]; randlc(q, aj)
  return q[0]
}
