/**
 * The NAS reference's report, as NPB 3.4's print_results (Fortran) and c_print_results (C)
 * print it, and the Fortran edit descriptors the kernels' own lines use (E, D, F), so that
 * `fastsock npb`'s output reads line by line like the reference's.
 */
import type { NpbClass } from './types'

/**
 * A number in Fortran's `Ew.d` form with scale factor 0 (`0.1713023505403E+02`), or `Dw.d`
 * with scale factor 1 (`1p,d25.15`: `-3.247834652034487D+03`), right-aligned in `width`.
 * Exponents as gfortran prints them: two digits after the letter, three digits in place of the
 * letter beyond ±99 (` 0.1500000000000-119`).
 */
export function fortranExp (value: number, width: number, digits: number, letter: 'E' | 'D' = 'E', scale: 0 | 1 = 0): string {
  if (!Number.isFinite(value)) return (Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity').padStart(width)
  // toExponential gives one digit before the point (scale factor 1); scale 0 shifts it behind.
  const [mant, exp] = value.toExponential(scale === 1 ? digits : digits - 1).split('e')
  let m = mant
  let e = Number(exp)
  if (scale === 0) {
    const neg = m.startsWith('-')
    const digitsOnly = m.replace('-', '').replace('.', '')
    m = `${neg ? '-' : ''}0.${digitsOnly}`
    if (value !== 0) e += 1
  }
  const sign = e < 0 ? '-' : '+'
  const mag = String(Math.abs(e)).padStart(2, '0')
  return (Math.abs(e) > 99 ? `${m}${sign}${mag}` : `${m}${letter}${sign}${mag}`).padStart(width)
}

/** Fortran's `Fw.d`, right-aligned in `width`. */
export function fortranFixed (value: number, width: number, digits: number): string {
  return value.toFixed(digits).padStart(width)
}

/** The header a kernel's report starts with (`NAS Parallel Benchmarks 3.4 -- EP Benchmark`). */
export function header (title: string): string {
  return `\n\n NAS Parallel Benchmarks 3.4 -- ${title}\n`
}

/** What `results()` prints (the fields of print_results that are not compile options). */
export interface ReportFields {
  /** Two letters: CG, EP, FT, IS, MG. */
  name: string
  cls: NpbClass
  /** Printed verbatim, right-aligned (e.g. `536870912`, `14000`, `256x 256x 128`). */
  size: string
  iterations: number
  seconds: number
  np: number
  mops: number
  /** NPB's operation type (`Random numbers generated`, `keys ranked`, ...). */
  operation: string
  verified: boolean
  /** The fastsock transport the ranks used (`shm`, `tcp`, `self` on one rank, ...). */
  transport: string
}

/** One ` Label           =                  value` line: the label in 16 columns, the value right-aligned in 24. */
function field (label: string, value: string): string {
  return ` ${label.padEnd(16)}= ${value.padStart(24)}`
}

/**
 * The closing block of NPB's print_results: ` EP Benchmark Completed.` ... ` Verification    =
 * SUCCESSFUL`, with ` Transport       = shm` added (which fastsock rung the ranks used).
 */
export function results (r: ReportFields): string {
  return [
    '',
    '',
    ` ${r.name} Benchmark Completed.`,
    field('Class', r.cls),
    field('Size', r.size),
    field('Iterations', String(r.iterations)),
    field('Time in seconds', r.seconds.toFixed(2)),
    field('Total processes', String(r.np)),
    field('Active procs', String(r.np)),
    field('Mop/s total', r.mops.toFixed(2)),
    field('Mop/s/process', (r.mops / r.np).toFixed(2)),
    ` ${'Operation type'.padEnd(16)}= ${r.operation.padStart(24)}`,
    field('Verification', r.verified ? 'SUCCESSFUL' : 'UNSUCCESSFUL'),
    field('Transport', r.transport),
    ''
  ].join('\n')
}
