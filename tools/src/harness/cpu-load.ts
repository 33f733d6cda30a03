/**
 * How busy the other processes keep this host's CPUs, from /proc/stat: a tool warns when its
 * figures will be disturbed.
 */
import * as fs from 'fs'

/** Busy and total jiffies of all CPUs from /proc/stat, or null. */
function cpuJiffies (): { busy: number, total: number } | null {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]
    const v = line.trim().split(/\s+/).slice(1).map(Number)
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0)
    const idle = v[3] + (v[4] ?? 0) // idle + iowait
    return { busy: total - idle, total }
  } catch {
    return null
  }
}

/**
 * The fraction of all CPUs' time spent busy during `ms` while this process waits: above ~0.1,
 * other processes are running and will disturb the figures. NaN when /proc/stat is unreadable.
 */
export async function otherCpuLoad (ms = 300): Promise<number> {
  const a = cpuJiffies()
  await new Promise((resolve) => setTimeout(resolve, ms))
  const b = cpuJiffies()
  if (a === null || b === null || b.total <= a.total) return NaN
  return (b.busy - a.busy) / (b.total - a.total)
}
