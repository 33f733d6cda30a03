/**
 * CPU placement of the two benchmark processes. On these VMs a ping-pong between two processes
 * is bimodal: when the scheduler puts both on one vCPU, a wake-up is a context switch (~8 µs
 * RTT/2 over a UNIX socket); on two vCPUs it needs a cross-CPU wake-up of a halted vCPU (~28 µs).
 * Left alone, the scheduler switches between the two mid-run and figures swing 3×. So `pipe`
 * pins by default (with util-linux `taskset`; Node has no affinity call):
 *
 * - split: the measuring process on one CPU, the peer on another (two endpoints on two cores,
 *   the case the cross-core placement probe describes). The default when possible.
 * - same:  both on one CPU (the context-switch path the scheduler sometimes picks by itself).
 * - none:  the scheduler decides; the report warns that results may be bimodal.
 */
import { execFileSync } from 'child_process'
import * as fs from 'fs'
import { which } from './children'

export type PinMode = 'split' | 'same' | 'none'

export interface Pinning {
  requested: PinMode | 'auto'
  mode: PinMode
  /** The CPU of the measuring process and of the peer (null: not pinned). */
  selfCpu: number | null
  peerCpu: number | null
  /** The CPUs this process may use at start (restored at the end). */
  allowed: number[]
  note: string
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status). */
export function allowedCpus (): number[] {
  try {
    const status = fs.readFileSync('/proc/self/status', 'utf8')
    const m = /^Cpus_allowed_list:\s*(.+)$/m.exec(status)
    if (m === null) return []
    const cpus: number[] = []
    for (const part of m[1].trim().split(',')) {
      const [a, b] = part.split('-').map(Number)
      for (let c = a; c <= (b ?? a); c++) cpus.push(c)
    }
    return cpus
  } catch {
    return []
  }
}


let taskset: string | null | undefined

function tasksetPath (): string | null {
  if (taskset === undefined) taskset = which('taskset')
  return taskset
}

/** Decides the placement for `requested` (auto = split when possible, else none). */
export function planPinning (requested: PinMode | 'auto'): Pinning {
  const allowed = allowedCpus()
  const none = (note: string): Pinning => ({ requested, mode: 'none', selfCpu: null, peerCpu: null, allowed, note })
  if (requested === 'none') return none('not pinned (--pin none): the scheduler may put both processes on one CPU or on two, and switch mid-run')
  if (tasksetPath() === null) return none('not pinned: taskset (util-linux) not found; results may be bimodal')
  if (requested === 'same' || allowed.length >= 2) {
    if (allowed.length === 0) return none('not pinned: the allowed CPUs are unknown')
    const mode = requested === 'auto' ? 'split' : requested
    const selfCpu = allowed[0]
    const peerCpu = mode === 'split' ? allowed[1] : allowed[0]
    return {
      requested,
      mode,
      selfCpu,
      peerCpu,
      allowed,
      note: mode === 'split'
        ? `pinned: measuring process on CPU ${selfCpu}, peer on CPU ${peerCpu} (cross-CPU wake-ups)`
        : `pinned: both processes on CPU ${selfCpu} (wake-ups are context switches)`
    }
  }
  return none(`not pinned: only ${allowed.length} CPU available, both processes share it`)
}

/** Restricts every thread of this process to `cpus` (taskset -a -p). */
export function pinSelf (cpus: number[]): void {
  const exe = tasksetPath()
  if (exe === null || cpus.length === 0) return
  execFileSync(exe, ['-a', '-p', '-c', cpus.join(','), String(process.pid)], { stdio: 'ignore', timeout: 5000 })
}

/**
 * The command prefix that starts a program on `cpu`: `[taskset, '-c', cpu]`, or [] when not
 * pinned. Use as spawn(prefix[0], [...prefix.slice(1), program, ...args]).
 */
export function onCpu (cpu: number | null): string[] {
  const exe = tasksetPath()
  return cpu === null || exe === null ? [] : [exe, '-c', String(cpu)]
}
