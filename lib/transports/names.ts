/**
 * The `transports` option and FASTSOCK_TRANSPORTS: which rungs of the registry a socket or
 * server uses, in which order.
 */
import { UnknownTransportError } from '../errors'
import { debug } from '../debug'
import { TRANSPORT_NAMES, TransportName } from './registry'

export { TRANSPORT_NAMES }
export type { TransportName }

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
    throw new UnknownTransportError(
      `${what} must be a non-empty array of transport names (${TRANSPORT_NAMES.join(', ')})`)
  }
  const out: TransportName[] = []
  for (const t of list) {
    if (!isTransportName(t)) {
      throw new UnknownTransportError(
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
