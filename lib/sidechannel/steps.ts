/**
 * L2, connection set-up steps for profiling (bench/connect.js --steps): each step of a
 * side-channel connect or accept is published on the diagnostics channel
 * `fastsock:sidechannel-step` as `{ side: 'client' | 'server', step, atNs, detail }` (`atNs`:
 * process.hrtime.bigint(), CLOCK_MONOTONIC, comparable across processes of one host; `detail`:
 * what a step measured itself, e.g. the native costs of the peer verification in ns). Nothing
 * is built when nobody subscribes.
 */
import * as diagnostics from 'diagnostics_channel'

/** The diagnostics channel's name. */
export const STEP_CHANNEL = 'fastsock:sidechannel-step'
const channel = diagnostics.channel(STEP_CHANNEL)

/** True when someone listens (build a step's `detail` only then). */
export function stepsWanted (): boolean { return channel.hasSubscribers }

/** Publishes one step (a no-op without subscribers). */
export function step (side: 'client' | 'server', name: string, detail?: Record<string, number | boolean>): void {
  if (channel.hasSubscribers) channel.publish({ side, step: name, atNs: process.hrtime.bigint(), detail })
}
