/**
 * msgrate's cold cache: between iterations every process touches a buffer larger than the
 * last-level cache, so that neither the receive buffers nor the transports' state stay cached
 * (the "real work" of an application between its communication phases). The size of the
 * last-level cache comes from /sys/devices/system/cpu/cpu0/cache/index*.
 */
import * as fs from 'fs'
import * as path from 'path'
import { MiB } from '../harness/units'

/** The largest data or unified cache of cpu0, in bytes, or null with the reason. */
export function lastLevelCache (root = '/sys/devices/system/cpu/cpu0/cache'): { bytes: number | null, source: string } {
  let best: { level: number, bytes: number, where: string } | null = null
  let entries: string[]
  try {
    entries = fs.readdirSync(root).filter((e) => /^index\d+$/.test(e))
  } catch (err) {
    return { bytes: null, source: `${root} unreadable (${(err as NodeJS.ErrnoException).code ?? 'error'})` }
  }
  for (const e of entries) {
    try {
      const read = (f: string): string => fs.readFileSync(path.join(root, e, f), 'utf8').trim()
      if (read('type') === 'Instruction') continue
      const level = Number(read('level'))
      const bytes = parseCacheSize(read('size'))
      if (Number.isFinite(level) && bytes !== null && (best === null || level > best.level)) best = { level, bytes, where: e }
    } catch { /* an index without these files: skip */ }
  }
  return best === null
    ? { bytes: null, source: `no data cache listed under ${root}` }
    : { bytes: best.bytes, source: `L${best.level} of cpu0 (${root}/${best.where})` }
}

/** Parses sysfs' cache size ("32768K", "2M", "512"), or null. */
export function parseCacheSize (text: string): number | null {
  const m = /^(\d+)\s*([KMG]?)$/i.exec(text.trim())
  if (m === null) return null
  const unit = { '': 1, K: 1024, M: MiB, G: 1024 * MiB }[m[2].toUpperCase() as '' | 'K' | 'M' | 'G']
  return Number(m[1]) * unit
}

/**
 * The flush buffer's size: `requested` when given, else 2 × the last-level cache capped at
 * `max` (16 MiB, msgrate's default, when the cache size is unknown). `note` says what was chosen.
 */
export function flushSize (requested: number | null, llc: number | null, max: number): { bytes: number, note: string } {
  if (requested !== null) return { bytes: requested, note: `${requested} B (configured)` }
  if (llc === null) return { bytes: 16 * MiB, note: 'last-level cache size unknown: 16 MiB (msgrate\'s default)' }
  if (2 * llc <= max) return { bytes: 2 * llc, note: `2 × the last-level cache (${llc} B)` }
  return {
    bytes: max,
    note: `the last-level cache reads ${llc} B (a VM may report the host's whole L3); capped at maxCacheBytes = ${max} B, ` +
      'larger than any one core complex\'s L3 here; set cacheBytes to flush more'
  }
}

/**
 * The buffer touched between cold iterations: flush() reads and writes one 4-byte word per
 * 64-byte cache line, each from the previous one (msgrate's a[i] = a[i-1] + 1, at cache-line
 * stride: every line is brought in and dirtied, in order).
 */
export class CacheFlusher {
  private words: Int32Array

  constructor (bytes: number) {
    this.words = new Int32Array(Math.max(16, Math.ceil(bytes / 4)))
  }

  /** Resizes to `bytes` (no allocation when unchanged). */
  resize (bytes: number): void {
    const n = Math.max(16, Math.ceil(bytes / 4))
    if (n !== this.words.length) this.words = new Int32Array(n)
  }

  /**
   * Touches every cache line of the buffer; returns the last word written (each flush changes
   * every word it touches: the chain starts one higher each time).
   */
  flush (): number {
    const a = this.words
    a[0]++
    let i = 16
    for (; i < a.length; i += 16) a[i] = a[i - 16] + 1
    return a[i - 16]
  }
}
