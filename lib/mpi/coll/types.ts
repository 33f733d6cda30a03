/**
 * Shared types of the collectives (lib/mpi/coll/): the structural interface `CollComm` that the
 * point-to-point layer's `Comm` (lib/mpi/comm.ts) satisfies, the request/status shapes the
 * collectives consume, `IN_PLACE`, `UNDEFINED`, per-call options and the collectives' error class.
 *
 * This file imports only ../errors (which imports nothing), so both lib/mpi/coll/* and
 * lib/mpi/comm.ts can import it without a cycle (lib/mpi/coll never imports comm.ts).
 */
import { MpiError, type MpiErrorCode } from '../errors'

/** What a finished point-to-point request reports (H1's Status satisfies it). `count` in bytes. */
export interface CollStatus {
  source: number
  tag: number
  count: number
  error?: unknown
}

/** A pending point-to-point operation (H1's Request satisfies it). */
export interface CollRequest {
  /** Resolves with the status when done; rejects with the operation's error (e.g. ERR_MPI_PEER_LOST). */
  wait (options?: { signal?: AbortSignal, timeout?: number }): Promise<CollStatus>
  /** The status if done, else null or false. Throws the operation's error if it failed. */
  test (): CollStatus | null | false
  /**
   * The blocking wait (Request.waitSync): the status once done, without the event loop; throws
   * the operation's error, or MpiError ERR_MPI_WOULD_BLOCK (the operation goes on) when it
   * cannot complete without the event loop now. Absent: the blocking tier awaits it (drive.ts).
   */
  waitSync? (): CollStatus
}

/**
 * The communicator as the collectives see it (structural; H1's Comm satisfies it).
 *
 * - `rank`, `size`: this process's rank in the communicator and the number of ranks.
 * - `_collIsend(view, dest, tag)` / `_collIrecv(view, source, tag)`: point-to-point on the
 *   communicator's collective context (never matches user point-to-point). Tags used by the
 *   collectives are non-negative 31-bit integers (see util.ts `collTag`); `source` is always a
 *   specific rank. Messages between a pair do not overtake.
 * - `_collSeq()`: the next collective sequence number on this communicator (same on every rank
 *   when all ranks call collectives in the same order, as MPI requires).
 * - `_derive(worldRanks, contextId)`: a new communicator over those world ranks (this process's
 *   rank = its index in the array) on context `contextId`; the returned object must record
 *   `contextId` as used, so later `_nextContextCandidate()` values are greater.
 * - `_worldRankOf(rank)`: world rank of a rank of this communicator.
 * - `_hostKey(rank)`: a string equal for ranks on the same host.
 * - `_nextContextCandidate()`: a context id greater than every id this process has used; the
 *   members agree on the maximum of their candidates.
 */
export interface CollComm {
  readonly rank: number
  readonly size: number
  _collIsend (view: ArrayBufferView, dest: number, tag: number): CollRequest
  _collIrecv (view: ArrayBufferView, source: number, tag: number): CollRequest
  /**
   * The blocking tier's send without a request (util.ts Exchange): true when the message went
   * out now, false when _collIsend must carry it. Absent: always _collIsend. `n`: view.byteLength
   * when the caller knows it (on Node 20 a typed array's length read is a call, not a load).
   */
  _collSendNow? (view: ArrayBufferView, dest: number, tag: number, n?: number): boolean
  /**
   * The blocking tier's receive without a request: the status once `view` holds the message,
   * null when _collIrecv must carry it; throws ERR_MPI_WOULD_BLOCK with `err.request` carrying
   * the rest. Absent: always _collIrecv. `n`: view.byteLength when the caller knows it.
   */
  _collRecvNow? (view: ArrayBufferView, source: number, tag: number, n?: number): CollStatus | null
  _collSeq (): number
  _derive (worldRanks: number[], contextId: number): CollComm
  _worldRankOf (rank: number): number
  _hostKey (rank: number): string
  _nextContextCandidate (): number
}

/**
 * MPI_IN_PLACE: pass as the send buffer where MPI allows it (reduce at the root, allreduce,
 * gather at the root, scatter's receive buffer at the root, allgather, reduceScatterBlock, scan,
 * exscan). One definition for the whole of fastsock/mpi; lib/mpi/index.ts re-exports it.
 */
export const IN_PLACE: unique symbol = Symbol.for('fastsock.mpi.IN_PLACE')
/** Type of `IN_PLACE`. */
export type InPlace = typeof IN_PLACE

/** MPI_UNDEFINED: the `color` of `split` for a rank that wants no new communicator (gets null). */
export const UNDEFINED = -32766

/** Every numeric typed-array kind the reduction ops accept. */
export type NumericArray =
  Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array |
  Float32Array | Float64Array | BigInt64Array | BigUint64Array

/**
 * Per-call options of every collective.
 * - `algorithm`: force an algorithm by name (see `algorithmTable()`); overrides the environment
 *   variable `FASTSOCK_MPI_COLL_<COLLECTIVE>` (e.g. FASTSOCK_MPI_COLL_ALLREDUCE=ring).
 * - `check`: argument agreement before the collective (below).
 * - `segmentBytes`: pipeline segment size in bytes for the segmented algorithms (default 1 MiB, util.ts DEFAULT_SEGMENT_BYTES).
 */
export interface CollOptions {
  algorithm?: string
  segmentBytes?: number
  /**
   * Agree on the arguments first (collective, count, root, op, array kind) with one small
   * allreduce, rejecting on every rank with ERR_MPI_COLL_MISMATCH if they differ. Default: env
   * FASTSOCK_MPI_COLL_CHECK=1. Must be the same on every rank.
   */
  check?: boolean
}

/**
 * The request of the non-blocking collectives (ibarrier, ibcast, iallreduce): in fact part 1's
 * Request (coll/index.ts CollectiveRequest), so waitAll/waitAny/testAll accept it.
 */
export interface CollHandle<T> {
  /** Resolves when the collective is done on this rank (status: source -1, tag -1, count in bytes). */
  wait (options?: { signal?: AbortSignal, timeout?: number }): Promise<CollStatus>
  /** The status if done, else null; throws the collective's error if it failed. */
  test (): CollStatus | null
  /** The collective's result (e.g. the buffer); rejects with its error. */
  readonly result: Promise<T>
}

/**
 * The collectives' error (an MpiError): `code` is one of ERR_MPI_COLL_MISMATCH (ranks passed arguments that do
 * not agree: collective, root, op, element kind, count, sizes; coll/check.ts), ERR_MPI_COLL_ALGORITHM (a forced algorithm is unknown or cannot serve
 * the call), ERR_INVALID_ARG_TYPE / ERR_OUT_OF_RANGE (bad arguments), ERR_MPI_OP (an op that does
 * not apply to the array kind). Errors of the point-to-point layer (ERR_MPI_PEER_LOST, ...) pass
 * through unchanged.
 */
export class CollError extends MpiError {
  constructor (code: string, message: string) {
    super(code as MpiErrorCode, message) // coll/ moves to errors.ts's builders (issue 32 item 4)
  }
}
