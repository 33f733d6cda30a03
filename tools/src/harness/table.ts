/**
 * The tools' terminal tables (cli-table3, loaded on first use) and CSV cells, one style for every
 * report.
 */
import type Table from 'cli-table3'
import { loadOptional } from './optional'

/** A cli-table3 table in the style of every `fastsock` report (no colours; first column left). */
export function table (head: string[], aligns?: Array<'left' | 'right'>): Table.Table {
  const Table = loadOptional<typeof import('cli-table3')>('cli-table3', "fastsock's tables")
  return new Table({
    head,
    style: { head: [], border: [], compact: true }, // no colours: output goes to files and pipes too
    colAligns: aligns ?? head.map((_h, i) => (i === 0 ? 'left' : 'right'))
  })
}

/** One CSV cell: empty for null or non-finite, quoted when it holds a comma, quote or newline. */
export function csvCell (v: string | number | null | undefined): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : ''
  return /[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v
}
