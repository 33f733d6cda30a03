/**
 * The configuration of a `fastsock rate` run: the defaults (a few minutes on a 2-core VM), the
 * --quick preset (seconds: CI and `npm test`), the command-line parsers, and the merge
 * preset < `--config` file < flags given on the command line.
 */
import { InvalidArgumentError } from 'commander'
import * as fs from 'fs'
import * as os from 'os'
import { byteCount, positiveInt } from '../harness/args'
import { KiB, MiB } from '../harness/units'
import { RateConfigError, validateConfig } from './schema'
import { PATTERNS, type RateConfig, type RatePattern } from './types'

/** The largest message (the bound: msgrate is about small messages). */
export const MAX_BYTES = 64 * KiB

/** Default peer counts: 1, 2, 4, ... up to the CPUs, and at least up to 4. */
function defaultPeers (): number[] {
  const max = Math.max(4, os.availableParallelism())
  const peers: number[] = []
  for (let n = 1; n <= max; n *= 2) peers.push(n)
  return peers
}

/** The configuration without flags or file: `quick` picks the preset. */
export function preset (quick: boolean): RateConfig {
  return {
    patterns: [...PATTERNS],
    directions: ['fan-out', 'fan-in'],
    sizes: quick ? [8, 64] : [8, 64, 512, 4 * KiB, 64 * KiB],
    peers: quick ? [1, 2] : defaultPeers(),
    window: 64,
    coldCache: [false, true],
    iterations: quick ? 40 : 2000,
    minIterations: quick ? 2 : 10,
    budgetMs: quick ? 5 : 60,
    coldIterations: quick ? 2 : 10,
    warmupIterations: quick ? 2 : 20,
    jitWarmupMs: quick ? 0 : 1000,
    rounds: quick ? 1 : 3,
    bidirectionalMessages: quick ? 256 : 8192,
    cacheBytes: null,
    maxCacheBytes: quick ? 4 * MiB : 32 * MiB,
    rttIterations: quick ? 100 : 2000,
    shmPollUs: null,
    transports: null,
    pin: 'auto',
    timeoutMs: 5000,
    quick
  }
}

const PATTERN_ALIASES: Record<string, RatePattern[]> = {
  all: [...PATTERNS],
  'single-direction': ['single-direction'],
  single: ['single-direction'],
  'pair-based': ['pair-based'],
  pair: ['pair-based'],
  'all-start': ['all-start'],
  bidirectional: ['bidirectional'],
  bidir: ['bidirectional']
}

/** commander parser: patterns, comma-separated (`all`, or names such as `pair-based`). */
export function parsePatterns (value: string): RatePattern[] {
  const set = new Set<RatePattern>()
  for (const part of value.split(',')) {
    const p = PATTERN_ALIASES[part.trim().toLowerCase()]
    if (p === undefined) throw new InvalidArgumentError(`unknown pattern '${part}' (${PATTERNS.join(', ')}, all)`)
    for (const x of p) set.add(x)
  }
  return PATTERNS.filter((p) => set.has(p))
}

/** commander parser: single-direction directions, `fan-out`, `fan-in` or `both`. */
export function parseDirections (value: string): RateConfig['directions'] {
  const out = new Set<'fan-out' | 'fan-in'>()
  for (const part of value.split(',')) {
    const d = part.trim().toLowerCase()
    if (d === 'both') { out.add('fan-out'); out.add('fan-in') } else if (d === 'fan-out' || d === 'fan-in') out.add(d)
    else throw new InvalidArgumentError(`unknown direction '${part}' (fan-out, fan-in, both)`)
  }
  return (['fan-out', 'fan-in'] as const).filter((d) => out.has(d))
}

/** commander parser: message sizes, comma-separated, 1 B .. 64 KiB. */
export function parseSizes (value: string): number[] {
  const sizes = value.split(',').map((s) => {
    const n = byteCount(s)
    if (n > MAX_BYTES) throw new InvalidArgumentError(`size ${s.trim()} is over 64 KiB (the message-rate range)`)
    return n
  })
  return [...new Set(sizes)].sort((a, b) => a - b)
}

/** commander parser: peer counts, comma-separated, 1 .. 64. */
export function parsePeers (value: string): number[] {
  const peers = value.split(',').map((s) => {
    const n = positiveInt(s.trim())
    if (n > 64) throw new InvalidArgumentError('at most 64 peers')
    return n
  })
  return [...new Set(peers)].sort((a, b) => a - b)
}

/** commander parser: `warm`, `cold` or `both`. */
export function parseCache (value: string): boolean[] {
  switch (value.trim().toLowerCase()) {
    case 'warm': return [false]
    case 'cold': return [true]
    case 'both': return [false, true]
    default: throw new InvalidArgumentError(`expected warm, cold or both, got '${value}'`)
  }
}

/**
 * Reads a configuration file: a configuration object, or a `fastsock rate --json` document
 * (its embedded `config` is used, so that a run reproduces another). Throws RateConfigError for
 * an unreadable file, bad JSON or a schema mismatch.
 */
export function readConfigFile (file: string): Partial<RateConfig> {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new RateConfigError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (err) {
    throw new RateConfigError(`${file}: not JSON (${(err as Error).message})`)
  }
  if (typeof data === 'object' && data !== null && (data as { tool?: unknown }).tool === 'fastsock rate') {
    data = (data as { config?: unknown }).config
  }
  validateConfig(data, file)
  return data as Partial<RateConfig>
}

/**
 * The run's configuration: the preset (quick from the file or the flag), then the file's
 * fields, then the flags the user typed (`fromCli`: the RateConfig fields given as flags).
 */
export function resolveConfig (file: Partial<RateConfig> | null, fromCli: Partial<RateConfig>): RateConfig {
  const quick = fromCli.quick ?? file?.quick ?? false
  const config: RateConfig = { ...preset(quick), ...(file ?? {}), ...fromCli, quick }
  config.sizes = [...config.sizes].sort((a, b) => a - b)
  config.peers = [...config.peers].sort((a, b) => a - b)
  config.iterations = Math.max(config.iterations, config.minIterations)
  return config
}
