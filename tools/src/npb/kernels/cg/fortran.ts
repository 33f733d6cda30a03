/**
 * Fortran's edit descriptors as NPB's reports use them, so CG's and FT's lines read digit for
 * digit as the reference's: Ew.d (`E20.13` → ` 0.8597177507865E+01`), 1PDw.d (FT's checksums,
 * `1P2D22.12` → `    5.546087004964D+02`) and Fw.d, each right-justified in w columns.
 * Rounding is JavaScript's (toExponential/toFixed: the nearest decimal to the exact binary
 * value), which is what gfortran prints but for exact decimal ties.
 */

/**
 * `x` in Fortran's Ew.d (`scaled` false: 0.ddd…E±ee, d digits after the point) or 1PEw.d
 * (`scaled` true: one digit before the point, d after), with `letter` E or D, right-justified
 * in `width` columns. Exponents beyond ±99 print in three digits without the letter, as gfortran.
 */
export function fortranE (x: number, width: number, d: number, scaled = false, letter = 'E'): string {
  if (!Number.isFinite(x)) return (Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity').padStart(width)
  const neg = x < 0 || Object.is(x, -0)
  const ax = Math.abs(x)
  let mantissa: string
  let exp: number
  if (ax === 0) {
    mantissa = scaled ? `0.${'0'.repeat(d)}` : `0.${'0'.repeat(d)}`
    exp = 0
  } else if (scaled) {
    const [m, e] = ax.toExponential(d).split('e')
    mantissa = m
    exp = Number(e)
  } else {
    const [m, e] = ax.toExponential(d - 1).split('e')
    mantissa = `0.${m.replace('.', '')}`
    exp = Number(e) + 1
  }
  const ae = Math.abs(exp)
  const expText = ae > 99 ? `${exp < 0 ? '-' : '+'}${String(ae).padStart(3, '0')}` : `${letter}${exp < 0 ? '-' : '+'}${String(ae).padStart(2, '0')}`
  return `${neg ? '-' : ''}${mantissa}${expText}`.padStart(width)
}

/** `x` in Fortran's Fw.d: d digits after the point, right-justified in `width` columns. */
export function fortranF (x: number, width: number, d: number): string {
  return x.toFixed(d).padStart(width)
}

/** An integer in Fortran's Iw: right-justified in `width` columns. */
export function fortranI (n: number, width: number): string {
  return String(n).padStart(width)
}
