/**
 * `fastsock pipe` options: the size sweeps, the presets (default: about a minute on a 2-core VM;
 * --quick: a few seconds, for CI) and the parsing of the raw command-line values.
 */
import { InvalidArgumentError } from 'commander'
import { byteCount } from '../harness/args'
import { KiB, MiB } from '../harness/units'
import type { ElementType, PipeMode, PipeOptions } from './types'

/** The raw values commander hands over (strings unless parsed by an option parser). */
export interface RawPipeOptions {
  mode: PipeMode[]
  transports?: string
  maxSize: number
  perturbations?: boolean
  quick?: boolean
  budgetMs?: number
  rounds?: number
  pin: 'auto' | 'split' | 'same' | 'none'
  minIters?: number
  maxIters?: number
  warmup?: number
  streamMs?: number
  typedSizes?: number[]
  timeout?: number
  shmPollUs?: number
  json?: string
  csv?: string
  plot: string | false
  nptcp?: boolean
  progress: boolean
}

const MODE_ALIASES: Record<string, PipeMode[]> = {
  all: ['pingpong', 'stream', 'typed'],
  pingpong: ['pingpong'],
  latency: ['pingpong'],
  bandwidth: ['pingpong'],
  stream: ['stream'],
  typed: ['typed']
}


/** commander parser: a comma-separated list of byte counts. */
export function byteCounts (value: string): number[] {
  return value.split(',').map(byteCount)
}

/** commander parser: the mode, or a comma-separated list of modes. */
export function parseModes (value: string): PipeMode[] {
  const modes = new Set<PipeMode>()
  for (const part of value.split(',')) {
    const m = MODE_ALIASES[part.trim().toLowerCase()]
    if (m === undefined) throw new InvalidArgumentError(`unknown mode '${part}' (pingpong, stream, typed, all)`)
    for (const x of m) modes.add(x)
  }
  return (['pingpong', 'stream', 'typed'] as PipeMode[]).filter((m) => modes.has(m))
}

/**
 * Ping-pong sizes: powers of two from 1 B to `max` (and `max` itself), each with NetPIPE's n-3
 * and n+3 when `perturbations`. There is no 0-byte point: on a byte stream a 0-byte write sends
 * nothing, so the peer would never answer.
 */
export function pingpongSizes (max: number, perturbations: boolean): number[] {
  const sizes = new Set<number>()
  for (let n = 1; n <= max; n *= 2) {
    sizes.add(n)
    if (perturbations) {
      if (n - 3 > 0) sizes.add(n - 3)
      sizes.add(n + 3)
    }
  }
  sizes.add(max)
  return [...sizes].sort((a, b) => a - b)
}

/** Stream sizes: powers of four from 1 B to `max` (and `max`). */
export function streamSizes (max: number): number[] {
  const sizes = new Set<number>()
  for (let n = 1; n <= max; n *= 4) sizes.add(n)
  sizes.add(max)
  return [...sizes].sort((a, b) => a - b)
}

/** Turns commander's values into PipeOptions, applying the default or --quick preset. */
export function resolveOptions (raw: RawPipeOptions): PipeOptions {
  const quick = raw.quick === true
  const perturbations = raw.perturbations === true
  const max = raw.maxSize
  const quickSizes = [1, 64, 4096, 65536].filter((n) => n <= max)
  const typedTypes: ElementType[] = quick ? ['Uint8Array', 'Float64Array'] : ['Uint8Array', 'Int32Array', 'Float64Array']
  const typedDefault = quick ? [1 * KiB, 64 * KiB] : [1 * KiB, 64 * KiB, 1 * MiB]
  return {
    modes: raw.mode,
    transports: raw.transports === undefined ? null : raw.transports.split(',').map((s) => s.trim()).filter((s) => s !== ''),
    sizes: quick ? (perturbations ? [...new Set(quickSizes.flatMap((n) => [n - 3, n, n + 3]).filter((n) => n > 0))].sort((a, b) => a - b) : quickSizes) : pingpongSizes(max, perturbations),
    streamSizes: quick ? [...new Set([64, 65536].map((n) => Math.min(n, max)))] : streamSizes(max),
    typedBytes: raw.typedSizes ?? typedDefault.filter((n) => n <= Math.max(max, KiB)),
    typedTypes,
    perturbations,
    quick,
    budgetMs: raw.budgetMs ?? (quick ? 20 : 150),
    rounds: raw.rounds ?? (quick ? 2 : 5),
    pin: raw.pin,
    minIters: raw.minIters ?? (quick ? 5 : 20),
    maxIters: Math.max(raw.maxIters ?? (quick ? 2000 : 50_000), raw.minIters ?? 1),
    warmupIters: raw.warmup ?? (quick ? 200 : 10_000),
    warmupMs: quick ? 50 : 400,
    streamMs: raw.streamMs ?? (quick ? 20 : 100),
    typedMs: quick ? 20 : 120,
    typedMinIters: quick ? 3 : 5,
    timeoutMs: (raw.timeout ?? 5) * 1000,
    shmPollUs: raw.shmPollUs,
    nptcp: raw.nptcp ?? null,
    json: raw.json ?? null,
    csv: raw.csv ?? null,
    plot: raw.plot === false ? null : raw.plot,
    progress: raw.progress
  }
}
