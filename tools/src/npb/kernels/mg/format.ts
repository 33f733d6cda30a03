/**
 * Fortran's Ew.d edit descriptor, as NPB's reports print their verified values (E20.13:
 * ` 0.2433365309069E-05`): a leading `0.`, d significant digits rounded to nearest, `E`, a
 * signed two-digit exponent (three digits without the `E` beyond ±99, as gfortran writes
 * them), right-justified in w characters.
 */
export function fortranE (x: number, w = 20, d = 13): string {
  if (!Number.isFinite(x)) return (Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity').padStart(w)
  const sign = x < 0 || Object.is(x, -0) ? '-' : ''
  let body: string
  if (x === 0) {
    body = '0.' + '0'.repeat(d) + 'E+00'
  } else {
    // toExponential rounds to nearest: m.mmm...e±k with d significant digits is 0.mmmm... x 10^(k+1).
    const [mant, exp] = Math.abs(x).toExponential(d - 1).split('e')
    const digits = mant.replace('.', '')
    const e = Number(exp) + 1
    const mag = String(Math.abs(e)).padStart(2, '0')
    body = '0.' + digits + (Math.abs(e) > 99 ? (e < 0 ? '-' : '+') + mag : 'E' + (e < 0 ? '-' : '+') + mag)
  }
  return (sign + body).padStart(w)
}
