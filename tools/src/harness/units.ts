/**
 * Units used by the command line: sizes in bytes (binary KiB/MiB for message sizes, decimal MB
 * for bandwidth), times in ns/µs, and the number formatting of the terminal tables.
 *
 * Conventions (say which MB): bandwidth is reported in MB/s with MB = 10^6 bytes, and in Gbit/s
 * with Gbit = 10^9 bits. Message sizes are powers of two and printed with binary prefixes
 * (1 KiB = 1024 B, 1 MiB = 1048576 B).
 */

export const KiB = 1024
export const MiB = 1024 * 1024

const SIZE_RE = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i
const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: KiB,
  kib: KiB,
  m: MiB,
  mib: MiB,
  g: 1024 * MiB,
  gib: 1024 * MiB,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9
}

/**
 * Parses a byte count: a plain integer, or a number with a unit. K/KiB, M/MiB, G/GiB are binary
 * (1024-based); kB, MB, GB are decimal. Returns NaN when the text is not a size.
 */
export function parseBytes (text: string): number {
  const m = SIZE_RE.exec(text)
  if (m === null) return NaN
  const unit = SIZE_UNITS[m[2].toLowerCase()]
  if (unit === undefined) return NaN
  const bytes = Number(m[1]) * unit
  return Number.isInteger(bytes) ? bytes : NaN
}

/** A size with the largest binary prefix that divides it exactly: `4 MiB`, `64 KiB`, `1021 B`. */
export function formatBytes (bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB} KiB`
  return `${bytes} B`
}

/** Bandwidth in MB/s (10^6 bytes per second) for `bytes` moved in `ns` nanoseconds. */
export function mbPerSec (bytes: number, ns: number): number {
  return ns > 0 ? (bytes * 1e3) / ns : NaN
}

/** Bandwidth in Gbit/s (10^9 bits per second) for `bytes` moved in `ns` nanoseconds. */
export function gbitPerSec (bytes: number, ns: number): number {
  return ns > 0 ? (bytes * 8) / ns : NaN
}

/**
 * A number for a table cell: about three significant digits, thousands separators above 1000,
 * and an em dash for a missing or non-finite value.
 */
export function fmt (x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—'
  const a = Math.abs(x)
  if (a >= 1000) return Math.round(x).toLocaleString('en-US')
  if (a >= 100) return x.toFixed(0)
  if (a >= 10) return x.toFixed(1)
  if (a >= 1) return x.toFixed(2)
  if (a === 0) return '0'
  return x.toPrecision(2)
}

/** A ratio for a table cell, `3.2×`; an em dash when either side is missing. */
export function fmtRatio (x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—'
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(2)}×`
}
