/**
 * Per-process counters of a measured slice: CPU time (user + sys, process.cpuUsage) and the
 * read/write-family system calls of /proc/self/io (syscr + syscw: read, readv, write, writev,
 * including eventfd doorbells; not sendmsg, recvmsg or epoll), the kernel work a rung costs.
 */
import * as fs from 'fs'

/** syscr + syscw of this process, or null when /proc/self/io is unreadable. */
export function syscalls (): number | null {
  try {
    const text = fs.readFileSync('/proc/self/io', 'utf8')
    const r = /^syscr:\s*(\d+)$/m.exec(text)
    const w = /^syscw:\s*(\d+)$/m.exec(text)
    return r === null || w === null ? null : Number(r[1]) + Number(w[1])
  } catch {
    return null
  }
}

/** System calls one syscalls() costs (readFileSync of a /proc file reads twice: data, then EOF). */
const SELF = ((): number => {
  const a = syscalls()
  const b = syscalls()
  return a === null || b === null ? 0 : b - a
})()

/** A mark to measure CPU time and system calls from. */
export interface Mark { cpu: NodeJS.CpuUsage, syscalls: number | null }

/** Takes a mark now. */
export function mark (): Mark {
  return { syscalls: syscalls(), cpu: process.cpuUsage() }
}

/** CPU µs and system calls since `m` (syscalls null when unknown; the mark's own reads excluded). */
export function since (m: Mark): { cpuUs: number, syscalls: number | null } {
  const d = process.cpuUsage(m.cpu)
  const now = syscalls()
  return { cpuUs: d.user + d.system, syscalls: now === null || m.syscalls === null ? null : Math.max(0, now - m.syscalls - SELF) }
}
