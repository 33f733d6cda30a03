/**
 * The errors of fastsock/mpi. Every error carries a `code` (as Node's do):
 * - MpiError `ERR_MPI_PEER_LOST`: a rank this operation involves died or left (its connection
 *   closed without the orderly goodbye, or the store reported it lost);
 * - MpiError `ERR_MPI_TRUNCATE`: the receive array is smaller than the matched message (the
 *   message stays matchable; `status.count` is its size in bytes);
 * - MpiError `ERR_MPI_TIMEOUT`: `Request.wait({ timeout })` or `waitSync({ timeout })` ran out;
 * - MpiError `ERR_MPI_WOULD_BLOCK`: a blocking call (`waitSync`, `sendSync`, `recvSync`) cannot go
 *   on without the event loop now; the operation goes on, `err.request.wait()` completes it;
 * - MpiError `ERR_MPI_FINALIZED` / `ERR_MPI_NOT_INITIALIZED`: used outside init()..finalize();
 * - MpiError `ERR_MPI_PROTOCOL`: a peer sent bytes that are not this protocol;
 * - TypeError `ERR_INVALID_ARG_TYPE`, RangeError `ERR_OUT_OF_RANGE`: bad arguments, thrown at
 *   once (as Node does);
 * - DOMException-like `AbortError` (name 'AbortError', code 'ABORT_ERR'): `wait({ signal })` aborted.
 */

/** An error of the message-passing layer: `code` says which (see the module comment). */
export class MpiError extends Error {
  /** ERR_MPI_* (see the module comment). */
  readonly code: string
  /** The rank (of the communicator the operation used, or world rank for init) concerned, when known. */
  declare rank?: number
  /** For ERR_MPI_TRUNCATE: the status of the message that did not fit (count = its bytes). */
  declare status?: unknown
  /**
   * For ERR_MPI_WOULD_BLOCK: the Request that goes on (await its wait()). Not enumerable, so an
   * uncaught error prints its message and code, not the request's connection state.
   */
  declare request?: unknown
  constructor (code: string, message: string, props?: { rank?: number, status?: unknown, cause?: unknown, request?: unknown }) {
    super(message, props?.cause !== undefined ? { cause: props.cause } : undefined)
    this.name = 'MpiError'
    this.code = code
    if (props?.rank !== undefined) this.rank = props.rank
    if (props?.status !== undefined) this.status = props.status
    if (props?.request !== undefined) Object.defineProperty(this, 'request', { value: props.request, writable: true, configurable: true, enumerable: false })
  }
}

/** TypeError with code ERR_INVALID_ARG_TYPE (as Node's argument checks throw). */
export function invalidArgType (message: string): TypeError & { code: string } {
  const e = new TypeError(message) as TypeError & { code: string }
  e.code = 'ERR_INVALID_ARG_TYPE'
  return e
}

/** RangeError with code ERR_OUT_OF_RANGE (as Node's argument checks throw). */
export function outOfRange (message: string): RangeError & { code: string } {
  const e = new RangeError(message) as RangeError & { code: string }
  e.code = 'ERR_OUT_OF_RANGE'
  return e
}

/** The error of an aborted wait: name 'AbortError', code 'ABORT_ERR' (as Node's), cause = the signal's reason. */
export function abortError (reason: unknown): Error & { code: string } {
  const e = new Error('the operation was aborted', { cause: reason }) as Error & { code: string }
  e.name = 'AbortError'
  e.code = 'ABORT_ERR'
  return e
}

/** MpiError ERR_MPI_PEER_LOST for world rank `worldRank` (shown as `rank` of the communicator when given). */
export function peerLost (rank: number, why: string): MpiError {
  return new MpiError('ERR_MPI_PEER_LOST', `rank ${rank} is lost: ${why}`, { rank })
}

/** MpiError ERR_MPI_WOULD_BLOCK: `request` cannot complete without the event loop now (`why`). */
export function wouldBlock (request: unknown, why: string): MpiError {
  return new MpiError('ERR_MPI_WOULD_BLOCK', `the operation cannot complete without the event loop now: ${why}; await err.request.wait()`, { request })
}
