/**
 * L1, diagnostics. FASTSOCK_DEBUG=1 prints each decision of the chain and the side channel, with
 * its reason, to stderr, one line each: `fastsock <pid> <scope>: <message>`. And the connection
 * set-up steps for profiling (bench/connect.js --steps): each step of a side-channel connect or
 * accept is published on the diagnostics channel `fastsock:sidechannel-step` as `{ side:
 * 'client' | 'server', step, atNs, detail }` (`atNs`: process.hrtime.bigint(), CLOCK_MONOTONIC,
 * comparable across processes of one host; `detail`: what a step measured itself, e.g. the
 * native costs of the peer verification in ns). Nothing is built when nobody subscribes.
 */
import * as diagnostics from 'diagnostics_channel'
import { format } from 'util'

/** FASTSOCK_DEBUG is set (1, true, yes, on): debug() prints to stderr. Read once at load. */
export const debugEnabled = /^(1|true|yes|on)$/i.test(process.env.FASTSOCK_DEBUG ?? '')

/** Prints one decision line when FASTSOCK_DEBUG is on (util.format-style `fmt`); else nothing. */
export function debug (scope: string, fmt: string, ...args: unknown[]): void {
  if (!debugEnabled) return
  process.stderr.write(`fastsock ${process.pid} ${scope}: ${format(fmt, ...args)}\n`)
}

/** The set-up steps' diagnostics channel's name. */
export const STEP_CHANNEL = 'fastsock:sidechannel-step'
const stepChannel = diagnostics.channel(STEP_CHANNEL)

/** True when someone listens to the set-up steps (build a step's `detail` only then). */
export function stepsWanted (): boolean { return stepChannel.hasSubscribers }

/** Publishes one set-up step (a no-op without subscribers). */
export function step (side: 'client' | 'server', name: string, detail?: Record<string, number | boolean>): void {
  if (stepChannel.hasSubscribers) stepChannel.publish({ side, step: name, atNs: process.hrtime.bigint(), detail })
}
