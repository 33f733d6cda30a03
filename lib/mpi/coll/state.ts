/**
 * The collectives' state of one communicator (Open MPI's `c_coll`): what a call keeps for the
 * next one on the same communicator — the last call's shape of barrier, bcast and allreduce
 * (invoke.ts LastShape), the last bcast trees (bcast.ts treeOf), the scratch pool (util.ts
 * scratch/release), allreducePairSync's scratch (reduce.ts), the descriptor's staging and
 * receive buffers (check.ts). Made at the
 * communicator's first collective, kept on it (`_coll`), dropped by free(). A field is made by
 * the module that uses it, at its first use; null while a call holds it.
 */

/**
 * The state's fields. Each module that keeps something here declares its own fields by module
 * augmentation (`declare module './state' { interface CollState { ... } }`), so this file imports
 * none of them: the layers stay acyclic. A field is undefined until its module first makes it.
 */
export interface CollState {
  /** Scratch buffers of this communicator's calls (util.ts scratch, release). */
  readonly pool: ArrayBuffer[]
  /** check.ts: free MIN_RECV-byte receive buffers. */
  readonly recvPool: Buffer[]
}

/** What stateOf reads of a communicator (types.ts CollComm, without importing it). */
interface StateHolder { _base?: StateHolder, _coll?: CollState }

/** `comm`'s state (under a CheckedComm: its communicator's), made at its first use. */
export function stateOf (comm: StateHolder): CollState {
  const base = comm._base ?? comm
  return base._coll ?? (base._coll = { pool: [], recvPool: [] } as unknown as CollState)
}

/** Drops `comm`'s state (free). */
export function dropState (comm: StateHolder): void {
  comm._coll = undefined
}
