/**
 * JSON Schemas (draft-07) of `fastsock rate`: the run configuration that `--config run.json`
 * reads (every field optional; `fastsock rate --schema` prints it; docs/rate-config.md explains
 * it) and one row of the `--json` output. Validation uses ajv, an optional dependency loaded when
 * a configuration file is given.
 */
import { loadOptional } from '../harness/optional'
import { PATTERNS } from './types'

const positiveInt = { type: 'integer', minimum: 1 }

/** The schema of a configuration file (also of the `config` object a `--json` document embeds). */
export const CONFIG_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://github.com/fastsock/fastsock/rate-config.schema.json',
  title: 'fastsock rate run configuration',
  type: 'object',
  additionalProperties: false,
  properties: {
    patterns: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...PATTERNS] }, description: 'patterns to measure' },
    directions: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['fan-out', 'fan-in'] }, description: 'single-direction: one sender many receivers (fan-out) and the reverse (fan-in)' },
    sizes: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: 65536 }, description: 'message sizes, bytes' },
    peers: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: 64 }, description: 'numbers of peer processes' },
    window: { ...positiveInt, maximum: 4096, description: 'messages in flight per peer and direction' },
    coldCache: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'boolean' }, description: 'false: warm cache, true: cold (flush between iterations)' },
    iterations: { ...positiveInt, description: 'timed iterations per warm cell and channel, at most' },
    minIterations: { ...positiveInt, description: 'timed iterations per warm cell and channel, at least' },
    budgetMs: { ...positiveInt, description: 'time per warm cell and channel, ms (sets the iterations between the two bounds)' },
    coldIterations: { ...positiveInt, description: 'timed iterations per cold cell and channel' },
    warmupIterations: { type: 'integer', minimum: 0, description: 'untimed iterations per cell and channel' },
    jitWarmupMs: { type: 'integer', minimum: 0, description: 'once per run, ms of untimed iterations of the first cell per channel before anything is timed (V8 optimizes the data path); 0: none' },
    rounds: { ...positiveInt, description: 'slices the timed iterations are run in, interleaved across channels' },
    bidirectionalMessages: { ...positiveInt, description: 'bidirectional: messages per peer and direction in one timed run' },
    cacheBytes: { anyOf: [{ type: 'integer', minimum: 4096 }, { type: 'null' }], description: 'bytes touched between cold iterations; null: 2 × the last-level cache, at most maxCacheBytes' },
    maxCacheBytes: { type: 'integer', minimum: 4096 },
    rttIterations: { type: 'integer', minimum: 0, description: 'round trips per channel and size for the RTT percentiles (0: none)' },
    shmPollUs: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }], description: 'shmPollUs of the fastsock:shm channel (µs, cap of the adaptive polling window); null: the library default. fastsock:shm (no polling) is measured beside it' },
    transports: { anyOf: [{ type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } }, { type: 'null' }], description: 'channels (shm, unix, tcp, net-tcp, net-unix, ...); null: all available' },
    pin: { enum: ['auto', 'split', 'none'] },
    timeoutMs: { type: 'integer', minimum: 100, description: 'watchdog per measured slice, ms' },
    quick: { type: 'boolean', description: 'the --quick preset under the fields given' }
  }
} as const

/** The schema of one row of `--json`'s `rows`. */
export const ROW_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'fastsock rate result row',
  type: 'object',
  required: ['channel', 'transport', 'label', 'pattern', 'direction', 'bytes', 'peers', 'window', 'coldCache', 'iterations',
    'messages', 'delivered', 'elapsedMs', 'msgPerSec', 'deliveredPerSec', 'mbPerSec', 'cpuUsPerMsg', 'postUsPerMsg', 'postShare', 'overhead', 'ratioVsNetTcp', 'coldOverWarm',
    'preparationMs', 'warmupMs'],
  properties: {
    channel: { type: 'string', pattern: '^(fastsock|net):[a-z]+( \\(no polling\\))?$' },
    transport: { type: 'string', minLength: 1 },
    label: { type: 'string', minLength: 1 },
    pattern: { enum: [...PATTERNS] },
    direction: { enum: ['fan-out', 'fan-in', 'both'] },
    bytes: { type: 'integer', minimum: 1, maximum: 65536 },
    peers: positiveInt,
    window: positiveInt,
    coldCache: { type: 'boolean' },
    iterations: positiveInt,
    messages: positiveInt,
    delivered: positiveInt,
    elapsedMs: { type: 'number', exclusiveMinimum: 0 },
    msgPerSec: { type: 'number', exclusiveMinimum: 0 },
    deliveredPerSec: { type: 'number', exclusiveMinimum: 0 },
    mbPerSec: { type: 'number', exclusiveMinimum: 0 },
    cpuUsPerMsg: { type: 'number', minimum: 0 },
    postUsPerMsg: { type: ['number', 'null'], minimum: 0 },
    postShare: { type: 'number', minimum: 0, maximum: 1 },
    overhead: {
      type: 'object',
      required: ['syscallsPerMsg', 'framesPerMsg', 'note'],
      properties: {
        syscallsPerMsg: { type: ['number', 'null'], minimum: 0 },
        framesPerMsg: { type: ['number', 'null'], minimum: 0 },
        note: { type: 'string' }
      }
    },
    ratioVsNetTcp: { type: ['number', 'null'], exclusiveMinimum: 0 },
    coldOverWarm: { type: ['number', 'null'], exclusiveMinimum: 0 },
    preparationMs: { type: 'number', minimum: 0 },
    warmupMs: { type: 'number', minimum: 0 }
  }
} as const

/** A configuration that does not match the schema; `code` ERR_FASTSOCK_RATE_CONFIG. */
export class RateConfigError extends Error {
  readonly code = 'ERR_FASTSOCK_RATE_CONFIG'
  constructor (message: string) {
    super(message)
    this.name = 'RateConfigError'
  }
}

interface AjvError { instancePath: string, message?: string, params?: Record<string, unknown> }
type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null }
interface AjvInstance { compile: (schema: object) => Validate }
type AjvModule = (new (opts: object) => AjvInstance) & { default?: new (opts: object) => AjvInstance }

let validator: Validate | null = null

/**
 * Checks `data` against CONFIG_SCHEMA; throws RateConfigError naming every mismatch (`where`:
 * the file, for the message). Throws MissingDependencyError when ajv is not installed.
 */
export function validateConfig (data: unknown, where: string): void {
  if (validator === null) {
    const mod = loadOptional<AjvModule>('ajv', 'fastsock rate --config (JSON Schema validation)')
    const Ajv = mod.default ?? mod
    validator = new Ajv({ allErrors: true, strict: true, strictTuples: false }).compile(CONFIG_SCHEMA)
  }
  if (validator(data)) return
  const problems = (validator.errors ?? []).map((e) => {
    const extra = e.params?.additionalProperty !== undefined ? ` '${String(e.params.additionalProperty)}'` : ''
    return `${e.instancePath === '' ? '(top level)' : e.instancePath} ${e.message ?? 'is invalid'}${extra}`
  })
  throw new RateConfigError(`${where}: not a fastsock rate configuration: ${problems.join('; ')}`)
}
