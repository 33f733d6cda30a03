/**
 * The rungs of the failover chain, fastest first (JFS 3.1.4). `tcp` is always last and always
 * available, so a fastsock endpoint still talks to a plain `net` peer byte for byte.
 */
import { FastsockError } from '../errors'
import { debug } from '../debug'

export const TRANSPORT_NAMES = ['shm', 'unix', 'verbs', 'rsocket', 'smc', 'sdp', 'tcp'] as const
export type TransportName = typeof TRANSPORT_NAMES[number]

/** True when `s` names a rung of the chain. */
export function isTransportName (s: unknown): s is TransportName {
  return typeof s === 'string' && (TRANSPORT_NAMES as readonly string[]).includes(s)
}

/**
 * Validates a per-socket or per-server `transports` option: an array (or comma-separated string)
 * of rung names, in the order to try. Throws ERR_FASTSOCK_UNKNOWN_TRANSPORT for an unknown name.
 */
export function parseTransports (value: unknown, what = 'options.transports'): TransportName[] {
  const list = typeof value === 'string' ? value.split(',').map(s => s.trim()).filter(Boolean) : value
  if (!Array.isArray(list) || list.length === 0) {
    throw new FastsockError('ERR_FASTSOCK_UNKNOWN_TRANSPORT',
      `${what} must be a non-empty array of transport names (${TRANSPORT_NAMES.join(', ')})`)
  }
  const out: TransportName[] = []
  for (const t of list) {
    if (!isTransportName(t)) {
      throw new FastsockError('ERR_FASTSOCK_UNKNOWN_TRANSPORT',
        `${what}: unknown transport ${JSON.stringify(t)}; known: ${TRANSPORT_NAMES.join(', ')}`)
    }
    if (!out.includes(t)) out.push(t)
  }
  return out
}

let processDefault: TransportName[] | null = null

/**
 * The process-wide chain: FASTSOCK_TRANSPORTS (comma-separated) when set and valid, else every
 * rung. An invalid variable is reported once on stderr and ignored.
 */
export function defaultTransports (): TransportName[] {
  if (processDefault) return processDefault
  const env = process.env.FASTSOCK_TRANSPORTS
  processDefault = [...TRANSPORT_NAMES]
  if (env !== undefined && env.trim() !== '') {
    try {
      processDefault = parseTransports(env, 'FASTSOCK_TRANSPORTS')
    } catch (err) {
      process.emitWarning(`${(err as Error).message}; using the full chain`, { code: 'FASTSOCK_BAD_ENV' })
    }
  }
  debug('chain', 'process chain: %s', processDefault.join(','))
  return processDefault
}
