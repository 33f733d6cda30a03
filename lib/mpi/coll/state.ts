/**
 * The collectives' state of one communicator (Open MPI's `c_coll`): what a call keeps for the
 * next one on the same communicator — the last call's shape of barrier, bcast and allreduce
 * (index.ts LastShape), the scratch pool (util.ts scratch/release), allreducePairSync's scratch
 * (reduce.ts), the descriptor's staging and receive buffers (check.ts). Made at the
 * communicator's first collective, kept on it (`_coll`), dropped by free(). A field is made by
 * the module that uses it, at its first use; null while a call holds it.
 */
import type { CollComm } from './types'
import type { LastShape } from './index'
import type { PairScratch } from './reduce'
import type { Scratch } from './check'
import type { BytesOf } from './util'

export class CollState {
  lastBarrier: LastShape | null = null
  lastBcast: LastShape | null = null
  lastAllreduce: LastShape | null = null
  /** Scratch buffers of this communicator's calls (util.ts scratch, release). */
  readonly pool: ArrayBuffer[] = []
  /** allreducePairSync's receive scratch, null while taken (a call that finds it taken makes its own). */
  pair: PairScratch | null = null
  /** check.ts: free MIN_RECV-byte receive buffers. */
  readonly recvPool: Buffer[] = []
  /** check.ts: the send staging of small _collIsend messages, null while taken. */
  isendStage: Scratch | null = null
  /** check.ts: the blocking tier's send staging (copied before the call returns). */
  syncSend: Scratch | null = null
  /** check.ts: the blocking tier's receive scratch, null while a call holds it. */
  syncRecv: Scratch | null = null
  /** check.ts: the bytes of the last small arrays staged and filled. */
  sendBytes: BytesOf | null = null
  recvBytes: BytesOf | null = null
}

/** `comm`'s state (under a CheckedComm: its communicator's), made at its first use. */
export function stateOf (comm: CollComm): CollState {
  const base = (comm as { _base?: CollComm })._base ?? comm
  return base._coll ?? (base._coll = new CollState())
}

/** Drops `comm`'s state (free). */
export function dropState (comm: CollComm): void {
  comm._coll = undefined
}
