/**
 * `fastsock npb`'s options: parsers for commander (InvalidArgumentError: exit status 2) and the
 * resolved NpbOptions a run takes.
 */
import { InvalidArgumentError } from 'commander'
import { KERNEL_NAMES, isKernelName } from './kernels'
import { LAUNCHERS, type Launcher } from './jobs'
import type { KernelName, NpbClass } from './types'

/** The implementations a run compares. */
export type ImplId = 'fastsock' | 'node-net' | 'npb-mpi'
export const IMPLS: ImplId[] = ['fastsock', 'node-net', 'npb-mpi']

/** The classes `fastsock npb` offers. */
export const CLASSES: NpbClass[] = ['S', 'W', 'A', 'B', 'C']

export interface NpbOptions {
  kernel: KernelName
  cls: NpbClass
  np: number[]
  impls: ImplId[]
  npbMpiBin: string | null
  launcher: Launcher
  blocking: boolean
  runs: number
  json: string | null
  plot: string | null
  timeoutMs: number
  corrupt: boolean
}

/** What commander hands the action. */
export interface RawNpbOptions {
  class: NpbClass
  np: number[]
  impls?: ImplId[]
  npbMpiBin?: string
  launcher: Launcher
  blocking?: boolean
  runs: number
  json?: string
  plot?: string
  timeout: number
  corrupt?: boolean
}

export function parseKernel (value: string): KernelName {
  const v = value.toLowerCase()
  if (!isKernelName(v)) throw new InvalidArgumentError(`unknown kernel '${value}': one of ${KERNEL_NAMES.join(', ')}`)
  return v
}

export function parseClass (value: string): NpbClass {
  const v = value.toUpperCase() as NpbClass
  if (!CLASSES.includes(v)) throw new InvalidArgumentError(`unknown class '${value}': one of ${CLASSES.join(', ')}`)
  return v
}

/** `1` or `1,2,4`: rank counts from 1 to 256, sorted, without repeats. */
export function parseNp (value: string): number[] {
  const list = value.split(',').map((s) => Number(s.trim()))
  if (list.some((n) => !Number.isInteger(n) || n < 1 || n > 256)) throw new InvalidArgumentError(`expected a rank count from 1 to 256, or a comma-separated list (e.g. 1,2,4), got '${value}'`)
  return [...new Set(list)].sort((a, b) => a - b)
}

export function parseImpls (value: string): ImplId[] {
  const list = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const bad = list.filter((s) => !(IMPLS as string[]).includes(s))
  if (list.length === 0 || bad.length > 0) throw new InvalidArgumentError(`expected a list of ${IMPLS.join(', ')}, got '${value}'`)
  return IMPLS.filter((i) => list.includes(i))
}

export function parseLauncher (value: string): Launcher {
  if (!(LAUNCHERS as string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${LAUNCHERS.join(', ')}, got '${value}'`)
  return value as Launcher
}

export function positiveInt (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer')
  return n
}

/**
 * The options of a run. Default implementations: fastsock and node-net, and npb-mpi when
 * --npb-mpi-bin is given; npb-mpi asked for without it is a usage error.
 */
export function resolveOptions (kernel: KernelName, raw: RawNpbOptions): NpbOptions {
  const impls = raw.impls ?? (raw.npbMpiBin !== undefined ? IMPLS : ['fastsock', 'node-net'])
  if (impls.includes('npb-mpi') && raw.npbMpiBin === undefined) throw new InvalidArgumentError('--impls npb-mpi needs --npb-mpi-bin DIR (the NAS reference binaries: cg.A.x ...)')
  return {
    kernel,
    cls: raw.class,
    np: raw.np,
    impls,
    npbMpiBin: raw.npbMpiBin ?? null,
    launcher: raw.launcher,
    blocking: raw.blocking === true,
    runs: raw.runs,
    json: raw.json ?? null,
    plot: raw.plot ?? null,
    timeoutMs: raw.timeout * 1000,
    corrupt: raw.corrupt === true
  }
}
