/**
 * FASTSOCK_DEBUG=1 prints each decision of the chain and the side channel, with its reason, to
 * stderr, one line each: `fastsock <pid> <scope>: <message>`.
 */
import { format } from 'util'

/** FASTSOCK_DEBUG is set (1, true, yes, on): debug() prints to stderr. Read once at load. */
export const debugEnabled = /^(1|true|yes|on)$/i.test(process.env.FASTSOCK_DEBUG ?? '')

/** Prints one decision line when FASTSOCK_DEBUG is on (util.format-style `fmt`); else nothing. */
export function debug (scope: string, fmt: string, ...args: unknown[]): void {
  if (!debugEnabled) return
  process.stderr.write(`fastsock ${process.pid} ${scope}: ${format(fmt, ...args)}\n`)
}
