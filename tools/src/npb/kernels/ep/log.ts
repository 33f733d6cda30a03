/**
 * The natural logarithm EP's polar method takes of every accepted pair, written to be inlined in
 * a V8 hot loop: V8's Math.log is fdlibm's log, called out of line from optimized code (every live
 * register saved around the call), and cost 11.5 ns per accepted pair in EP's loop on this
 * project's machine against 4 to 5 ns for this function inlined (docs/npb.md, "EP").
 *
 * Algorithm: the table-driven reduction of Tang ("Table-driven implementation of the logarithm
 * function in IEEE floating-point arithmetic", ACM TOMS 16(4), 1990), simplified. A positive
 * normal double is t = 2^e · m with c = 1 + j/256 the multiple of 1/256 nearest to m (rounding
 * the significand's top 8 bits to nearest, a carry going into e: m in [1 − 1/512, 2 − 1/512)), and
 *   ln t = e · ln 2 + ln c + ln(1 + r),  r = m / c − 1,  |r| ≤ 1/512,
 * with m / c taken as m · (1/c) rounded (the table holds 1/c and −ln(1/c) of that same double, so
 * the identity holds for the rounded reciprocal), ln 2 split in a 32-bit head (e · head is exact)
 * and a tail, and ln(1 + r) by its Taylor polynomial to r⁵ (the first term left out, r⁶/6, is
 * below 1e-17). Error against Math.log (measured on 8 million values of (2^-90, 2^60)): within
 * 2·2^-52 relative where |ln t| ≥ 1/2; closer to t = 1 the terms e · ln 2 and ln c cancel and the
 * error stays within 2.3e-16 absolute (relative again within 1/1024 of t = 1, where c = 1 and
 * r = t − 1 exactly; ln 1 = 0). tools/test/npb-ep.test.js checks 4·2^-52 and 4e-16. In EP an
 * absolute error δ in ln t moves a Gaussian deviate by about δ / sqrt(2 |ln t|), far below the
 * verification's relative 1e-8 on the sums.
 *
 * The caller gives the high 32-bit word of t's IEEE 754 form along with t (EP reads it from an
 * Int32Array view of the Float64Array it stored t in, a pass earlier, so no store is forwarded
 * into a narrower load), which makes the exponent and table index two shifts and a mask.
 */

/** ln 2's head (its 32 leading significand bits, so e · LN2_HI is exact for |e| < 2^20) and tail (fdlibm's split). */
const LN2_HI = 6.93147180369123816490e-01
const LN2_LO = 1.90821492927058770002e-10
/** Table entries (the 8 significand bits after the leading one). */
const ENTRIES = 256

/** 2^(1023 − k) for each biased exponent k of a normal double: t · POW2_DOWN[k] lies in [1, 2). */
const POW2_DOWN = new Float64Array(2048)
for (let k = 1; k < 2047; k++) POW2_DOWN[k] = 2 ** (1023 - k)
/** 1/c rounded, c = 1 + j/256. */
const INV_CENTRE = new Float64Array(ENTRIES)
/** −ln(INV_CENTRE[j]): ln c for the rounded reciprocal actually used (0 for j = 0). */
const LN_CENTRE = new Float64Array(ENTRIES)
for (let j = 0; j < ENTRIES; j++) {
  INV_CENTRE[j] = 1 / (1 + j / ENTRIES)
  LN_CENTRE[j] = -Math.log(INV_CENTRE[j])
}

/** Index of the high 32-bit word of a double inside its 8 bytes, on this machine (1 little-endian, 0 big-endian). */
export const HIGH_WORD = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0

/**
 * ln t for a positive normal double t (not checked: 0, subnormals, infinities and NaN give wrong
 * values), given `hi`, the high 32-bit word of t's IEEE 754 form (sign, 11 exponent bits, the
 * first 20 significand bits).
 */
export function lnWithHighWord (t: number, hi: number): number {
  // The biased exponent and the top 8 significand bits, rounded to nearest (bit 11 is the next one).
  const u = (hi + 0x800) >> 12
  const k = u >> 8
  const j = u & (ENTRIES - 1)
  const r = t * POW2_DOWN[k] * INV_CENTRE[j] - 1
  const r2 = r * r
  const e = k - 1023
  return (e * LN2_HI + LN_CENTRE[j]) + ((e * LN2_LO + r) - 0.5 * r2 + r * r2 * (1 / 3 - 0.25 * r + 0.2 * r2))
}

/** ln t for a positive normal double t, the high word read through a scratch buffer (for tests and cold code). */
export function ln (t: number): number {
  SCRATCH[0] = t
  return lnWithHighWord(t, SCRATCH_WORDS[HIGH_WORD])
}
const SCRATCH = new Float64Array(1)
const SCRATCH_WORDS = new Int32Array(SCRATCH.buffer)
