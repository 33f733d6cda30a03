/**
 * `fastsock osu` options: OSU Micro-Benchmarks 5.x's presets per benchmark (message sizes,
 * iterations and warm-up below and above 8 KiB, the window of 64), `--quick` (a few seconds, for
 * tests), and the parsers of the raw command-line values (commander's InvalidArgumentError on
 * bad input, so the command exits with status 2).
 */
import { InvalidArgumentError } from 'commander'
import { KiB, MiB, parseBytes } from '../harness/units'
import { BENCHMARKS, COLL_BENCHMARKS, P2P_BENCHMARKS, type Benchmark, type ImplId, type OsuOptions } from './types'

/** JMB's number of measurements per size (the sextile is taken over them). */
export const JMB_MEASUREMENTS = 150

/** OSU's threshold between small and large messages (iterations drop above it). */
export const LARGE_MESSAGE_BYTES = 8 * KiB

/** OSU's window of non-blocking sends (bw, bibw, mbw_mr). */
export const WINDOW = 64

interface Preset { minBytes: number, maxBytes: number, iterations: number, warmup: number, iterationsLarge: number, warmupLarge: number }

/** OSU 5.x's defaults: osu_latency, osu_bw/bibw/mbw_mr, and the collectives (osu_util.h). */
const PRESETS: Record<'latency' | 'bandwidth' | 'collective', Preset> = {
  latency: { minBytes: 0, maxBytes: 4 * MiB, iterations: 10000, warmup: 100, iterationsLarge: 1000, warmupLarge: 10 },
  bandwidth: { minBytes: 1, maxBytes: 4 * MiB, iterations: 100, warmup: 10, iterationsLarge: 20, warmupLarge: 2 },
  collective: { minBytes: 1, maxBytes: 1 * MiB, iterations: 1000, warmup: 200, iterationsLarge: 100, warmupLarge: 10 }
}

/** --quick: sizes in powers of four up to 64 KiB and few iterations (seconds, for tests and CI). */
const QUICK: Record<keyof typeof PRESETS, Preset> = {
  latency: { minBytes: 0, maxBytes: 64 * KiB, iterations: 400, warmup: 40, iterationsLarge: 40, warmupLarge: 4 },
  bandwidth: { minBytes: 1, maxBytes: 64 * KiB, iterations: 20, warmup: 2, iterationsLarge: 5, warmupLarge: 1 },
  collective: { minBytes: 1, maxBytes: 64 * KiB, iterations: 200, warmup: 20, iterationsLarge: 20, warmupLarge: 2 }
}

function presetKind (b: Benchmark): keyof typeof PRESETS {
  if (b === 'latency') return 'latency'
  if ((P2P_BENCHMARKS as readonly string[]).includes(b)) return 'bandwidth'
  return 'collective'
}

/** True for the benchmarks whose figure is a bandwidth (MB/s) rather than a time (µs). */
export function isBandwidth (b: Benchmark): boolean {
  return b === 'bw' || b === 'bibw' || b === 'mbw_mr'
}

/** True for the collectives. */
export function isCollective (b: Benchmark): boolean {
  return (COLL_BENCHMARKS as readonly string[]).includes(b)
}

/** True for the reductions (MPI_FLOAT elements, as OSU: sizes are multiples of 4 bytes). */
export function isReduction (b: Benchmark): boolean {
  return b === 'allreduce' || b === 'reduce'
}

/**
 * The message sizes of a sweep, ascending: OSU's (0 when asked, then doubling from the minimum,
 * or from 1), or quadrupling with `quick`. Reductions keep the multiples of 4 (floats) from 4 B; barrier has
 * one row, 0 B.
 */
export function sweep (b: Benchmark, minBytes: number, maxBytes: number, quick: boolean): number[] {
  if (b === 'barrier') return [0]
  const sizes: number[] = []
  const step = quick ? 4 : 2
  if (minBytes === 0) sizes.push(0)
  for (let n = Math.max(1, minBytes); n <= maxBytes; n *= step) sizes.push(n)
  return isReduction(b) ? sizes.filter((n) => n >= 4 && n % 4 === 0) : sizes
}

/** commander parser: the benchmark name. */
export function parseBenchmark (value: string): Benchmark {
  if (!(BENCHMARKS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`unknown benchmark '${value}': one of ${BENCHMARKS.join(', ')}`)
  }
  return value as Benchmark
}

/**
 * commander parser for OSU's `-m [MIN:]MAX` (also `MIN:`): sizes in bytes, with units allowed
 * (64KiB, 1M). Returns [min, max] with null for a side not given.
 */
export function parseMessageRange (value: string): [number | null, number | null] {
  const m = /^([^:]*)(?::([^:]*))?$/.exec(value.trim())
  const bad = (): never => { throw new InvalidArgumentError(`expected -m [MIN:]MAX in bytes (e.g. 0:4096, 1M, 8:), got '${value}'`) }
  if (m === null) return bad()
  const side = (s: string | undefined): number | null => {
    if (s === undefined || s.trim() === '') return null
    const n = parseBytes(s)
    return Number.isInteger(n) && n >= 0 ? n : bad()
  }
  const [min, max] = m[2] === undefined ? [null, side(m[1])] : [side(m[1]), side(m[2])]
  if (min === null && max === null) return bad()
  if (min !== null && max !== null && min > max) throw new InvalidArgumentError(`-m: MIN ${min} is above MAX ${max}`)
  if (max !== null && max > 256 * MiB) throw new InvalidArgumentError('-m: MAX is limited to 256 MiB')
  return [min, max]
}

/** commander parser: a positive integer. */
export function positiveInt (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer')
  return n
}

/** commander parser: an integer ≥ 0. */
export function nonNegativeInt (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected an integer ≥ 0')
  return n
}

/** commander parser: rank counts, `2` or `2,4` (each at least 2, at most 64). */
export function parseNp (value: string): number[] {
  const list = value.split(',').map((s) => Number(s.trim()))
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 2 || n > 64)) {
    throw new InvalidArgumentError(`expected a rank count from 2 to 64, or a comma-separated list (e.g. 2,4), got '${value}'`)
  }
  return [...new Set(list)].sort((a, b) => a - b)
}

const IMPLS: ImplId[] = ['fastsock', 'node-net', 'openmpi']

/** commander parser: the implementations to run, comma-separated (fastsock, node-net, openmpi). */
export function parseImpls (value: string): ImplId[] {
  const list = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  const bad = list.filter((s) => !(IMPLS as string[]).includes(s))
  if (list.length === 0 || bad.length > 0) throw new InvalidArgumentError(`expected a list of ${IMPLS.join(', ')}, got '${value}'`)
  return IMPLS.filter((i) => list.includes(i))
}

/**
 * The Node ranks' JIT warm-up before the first timed size (ms; --quick: 0). OSU's own warm-up
 * (100 iterations) is for caches and connections; a JavaScript rank also needs V8 to have
 * optimized its data path, and until then its compiler threads take CPU from ranks that spin:
 * measured here, 0 B latency averaged 12.1 µs after 100 warm-up iterations and 2.2 µs after
 * 5000, against 0.8 µs from 4 B on. The large collectives' paths take longer: V8 still optimized
 * 15-60 functions per 600 calls of a 1 MiB allreduce for the first ~3 s (--trace-opt), and
 * `fastsock osu allreduce --np 2 -m 512K:1M` averaged 1 MiB at 166-230 µs after 1 s (1.5-1.9×
 * Open MPI, sextile 107-122) and 112-120 µs after 3 s (1.00-1.12×, sextile 100-103), 2026-11-28.
 */
export const DEFAULT_JIT_WARMUP_MS = 3000

/**
 * The default warm-up of one job of `np` ranks on a host of `cpus` CPUs: DEFAULT_JIT_WARMUP_MS
 * per rank per CPU, ceil(np / cpus) (at least one). With more ranks than CPUs, V8's compiler and
 * collector threads share the CPUs with ranks that spin, and the data path is optimized later:
 * `fastsock osu allreduce --np 4 -m 64K:1M` on 2 vCPUs (2026-11-28) averaged 64 KiB at 114-229
 * µs after 3 s of warm-up (Open MPI 48-79), 48-57 after 6 s and 44-65 after 10 s; 1 MiB 608-666,
 * 418-437 and 403-434 (Open MPI 331-515).
 */
export function defaultJitWarmupMs (np: number, cpus: number): number {
  return DEFAULT_JIT_WARMUP_MS * Math.max(1, Math.ceil(np / Math.max(1, cpus)))
}

/** The raw values commander hands over. */
export interface RawOsuOptions {
  messageSize?: [number | null, number | null]
  iterations?: number
  warmup?: number
  full?: boolean
  np: number[]
  json?: string
  plot?: string
  algorithm?: string
  algorithms?: boolean
  quick?: boolean
  impls: ImplId[]
  timeout: number
  jitWarmupMs?: number
  await?: boolean
}

/**
 * Resolves the options of a run of `benchmark`. `-i` and `-x` set the small-message counts; the
 * large-message counts keep OSU's unless that would exceed them. Throws InvalidArgumentError for
 * a rank count the benchmark cannot use (latency, bw, bibw: exactly 2; mbw_mr: even) or an empty
 * size range.
 */
export function resolveOptions (benchmark: Benchmark, raw: RawOsuOptions): OsuOptions {
  const preset = (raw.quick === true ? QUICK : PRESETS)[presetKind(benchmark)]
  const [rawMin, rawMax] = raw.messageSize ?? [null, null]
  const minBytes = rawMin ?? preset.minBytes
  const maxBytes = rawMax ?? Math.max(preset.maxBytes, minBytes)
  const sizes = sweep(benchmark, minBytes, maxBytes, raw.quick === true)
  if (sizes.length === 0) throw new InvalidArgumentError(`-m ${minBytes}:${maxBytes} leaves no message size for ${benchmark}${isReduction(benchmark) ? ' (reductions: multiples of 4 bytes, float elements)' : ''}`)
  for (const np of raw.np) {
    if ((benchmark === 'latency' || benchmark === 'bw' || benchmark === 'bibw') && np !== 2) throw new InvalidArgumentError(`${benchmark} runs between exactly 2 ranks (--np 2), got ${np}`)
    if (benchmark === 'mbw_mr' && np % 2 !== 0) throw new InvalidArgumentError(`mbw_mr needs an even number of ranks (pairs), got ${np}`)
  }
  if (raw.algorithm !== undefined && !isCollective(benchmark)) throw new InvalidArgumentError('--algorithm applies to the collectives only')
  const iterations = raw.iterations ?? preset.iterations
  const warmup = raw.warmup ?? preset.warmup
  return {
    benchmark,
    np: raw.np,
    jitWarmupMs: raw.jitWarmupMs ?? (raw.quick === true ? 0 : null),
    awaited: raw.await === true,
    sizes,
    iterations,
    warmup,
    iterationsLarge: Math.min(preset.iterationsLarge, iterations),
    warmupLarge: Math.min(preset.warmupLarge, warmup),
    largeBytes: LARGE_MESSAGE_BYTES,
    window: WINDOW,
    measurements: JMB_MEASUREMENTS,
    full: raw.full === true,
    quick: raw.quick === true,
    impls: raw.impls,
    algorithm: raw.algorithm ?? null,
    timeoutMs: raw.timeout * 1e3,
    json: raw.json ?? null,
    plot: raw.plot ?? null
  }
}
