/**
 * The awaited tier on shm (issue 32): an awaited collective (comm.allreduce, bcast, barrier, ...)
 * runs the blocking tier's code, each of its blocking waits bounded (Device.blockMs, through
 * CollComm._collBlockFor), as point-to-point's wait() spins before it leaves for the event
 * loop: no event-loop turn per step. Past the bound a wait gives up with
 * ERR_MPI_WOULD_BLOCK and the rest of the call goes on in the event loop (drive.ts runAsync),
 * so an awaited call whose peers are late (or that waits on another call of this process, e.g.
 * two awaited collectives on two communicators started in opposite orders on two ranks) does not
 * hold the event loop longer than the bound.
 */
import type { CollComm } from './types'

/**
 * The bound of each blocking wait, ms: FASTSOCK_MPI_AWAIT_BLOCK_MS (0: the awaited tier never blocks; for measurement:
 * bench/mpi-await.js), else 10. A wait on a peer that is merely descheduled (P > CPUs) is
 * within it; a peer that computes longer finds this rank in the event loop.
 */
export const AWAIT_BLOCK_MS = awaitBlockMs(process.env.FASTSOCK_MPI_AWAIT_BLOCK_MS)
function awaitBlockMs (raw: string | undefined): number {
  const v = Number(raw)
  return raw !== undefined && raw.trim() !== '' && v >= 0 ? v : 10
}

/** The communicator under a checking wrapper (check.ts CheckedComm `_base`). */
function baseOf (c: CollComm): CollComm {
  return (c as { _base?: CollComm })._base ?? c
}

/**
 * Starts the bound on `comm`'s blocking waits; false when the awaited tier cannot block here
 * (a communicator without the hook, or AWAIT_BLOCK_MS 0). After true: `unbound(comm)` in a
 * `finally`.
 */
export function bound (comm: CollComm): boolean {
  const base = baseOf(comm)
  if (AWAIT_BLOCK_MS <= 0 || base._collBlockFor === undefined) return false
  base._collBlockFor(AWAIT_BLOCK_MS)
  return true
}

/** Lifts the bound `bound(comm)` set. */
export function unbound (comm: CollComm): void {
  (baseOf(comm)._collBlockFor as (ms: number) => void)(Infinity)
}
