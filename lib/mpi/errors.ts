/**
 * The errors of fastsock/mpi: the one module of lib/mpi that builds errors (a test scans lib/mpi
 * for `new Error(`, `new TypeError(`... elsewhere). Every error carries a `code`, as Node's do:
 * - MpiError, `code` one of MPI_ERROR_CODES (the table of docs/mpi.md, "Errors", says when each
 *   is thrown); classify with `isMpiError(err, 'ERR_MPI_...')`;
 * - TypeError `ERR_INVALID_ARG_TYPE`, RangeError `ERR_OUT_OF_RANGE`: bad arguments, thrown at
 *   once (as Node does; lib/errors.ts builds them for all of fastsock);
 * - DOMException-like `AbortError` (name 'AbortError', code 'ABORT_ERR'): `wait({ signal })`
 *   aborted (lib/errors.ts).
 */
import { invalidArgType, outOfRange, abortError } from '../errors'

export { invalidArgType, outOfRange, abortError }

/**
 * Every ERR_MPI_* code of lib/mpi, each documented in docs/mpi.md's table (test/mpi/p2p-errors
 * checks both ways: every code used in lib/mpi is here, every code here is in the table).
 */
export const MPI_ERROR_CODES = [
  /** A rank the operation involves died, left, or sent bytes that are not this protocol. */
  'ERR_MPI_PEER_LOST',
  /** The receive array is smaller than the matched message (it stays matchable). */
  'ERR_MPI_TRUNCATE',
  /** `wait({ timeout })` / `waitSync({ timeout })` ran out (the operation goes on). */
  'ERR_MPI_TIMEOUT',
  /** A blocking call cannot go on without the event loop now; `err.request` goes on. */
  'ERR_MPI_WOULD_BLOCK',
  /** A call after `finalize()`. */
  'ERR_MPI_FINALIZED',
  /** A call that needs `init()` before it. */
  'ERR_MPI_NOT_INITIALIZED',
  /** A peer (rank or store) sent bytes that are not this protocol; the connection is closed. */
  'ERR_MPI_PROTOCOL',
  /** `init()` could not reach its store, or the other ranks, in time. */
  'ERR_MPI_INIT_TIMEOUT',
  /** The launcher's variables are missing, malformed or inconsistent; the store address is in use. */
  'ERR_MPI_LAUNCH',
  /** A store operation's deadline passed. */
  'ERR_MPI_STORE_TIMEOUT',
  /** A store client used after close(). */
  'ERR_MPI_STORE_CLOSED',
  /** The store closed the connection during its HELLO (retried while connecting). */
  'ERR_MPI_STORE_EOF',
  /** A collective's arguments differ between ranks (collective, root, op, kind, count). */
  'ERR_MPI_COLL_MISMATCH',
  /** A forced collective algorithm is unknown or cannot serve the call. */
  'ERR_MPI_COLL_ALGORITHM',
  /** A reduction op that does not apply to the array kind. */
  'ERR_MPI_OP'
] as const

/** One of MPI_ERROR_CODES. */
export type MpiErrorCode = typeof MPI_ERROR_CODES[number]

/** The optional fields of an MpiError. */
export interface MpiErrorProps {
  /** The rank concerned (of the communicator the operation used, or world rank for init), when known. */
  rank?: number
  /** ERR_MPI_TRUNCATE: the status of the message that did not fit. */
  status?: unknown
  /** The underlying error. */
  cause?: unknown
  /** ERR_MPI_WOULD_BLOCK: the Request that goes on. */
  request?: unknown
}

/** An error of the message-passing layer: `code` says which (MPI_ERROR_CODES; docs/mpi.md, "Errors"). */
export class MpiError extends Error {
  /** ERR_MPI_* (MPI_ERROR_CODES). */
  readonly code: MpiErrorCode
  /** The rank (of the communicator the operation used, or world rank for init) concerned, when known. */
  declare rank?: number
  /** For ERR_MPI_TRUNCATE: the status of the message that did not fit (count = its bytes). */
  declare status?: unknown
  /**
   * For ERR_MPI_WOULD_BLOCK: the Request that goes on (await its wait()). Not enumerable, so an
   * uncaught error prints its message and code, not the request's connection state.
   */
  declare request?: unknown
  constructor (code: MpiErrorCode, message: string, props?: MpiErrorProps) {
    super(message, props?.cause !== undefined ? { cause: props.cause } : undefined)
    this.name = 'MpiError'
    this.code = code
    if (props?.rank !== undefined) this.rank = props.rank
    if (props?.status !== undefined) this.status = props.status
    if (props?.request !== undefined) Object.defineProperty(this, 'request', { value: props.request, writable: true, configurable: true, enumerable: false })
  }
}

/**
 * True when `err` is an MpiError, and (with `code`) of that code: the test callers use instead of
 * casting to `{ code?: string }`.
 */
export function isMpiError<C extends MpiErrorCode> (err: unknown, code?: C): err is MpiError & { code: C } {
  return err instanceof MpiError && (code === undefined || err.code === code)
}

const CODES: ReadonlySet<string> = new Set(MPI_ERROR_CODES)

/** True when `code` (a string from the wire, say) is one of MPI_ERROR_CODES. */
export function isMpiErrorCode (code: string): code is MpiErrorCode {
  return CODES.has(code)
}

/** MpiError `code` with `message` (the builder of every other MpiError of lib/mpi). */
export function mpiError (code: MpiErrorCode, message: string, props?: MpiErrorProps): MpiError {
  return new MpiError(code, message, props)
}

/** MpiError ERR_MPI_PEER_LOST for `rank` (of the communicator when given, else world). */
export function peerLost (rank: number, why: string, cause?: unknown): MpiError {
  return new MpiError('ERR_MPI_PEER_LOST', `rank ${rank} is lost: ${why}`, { rank, cause })
}

/** MpiError ERR_MPI_WOULD_BLOCK: `request` cannot complete without the event loop now (`why`). */
export function wouldBlock (request: unknown, why: string): MpiError {
  return new MpiError('ERR_MPI_WOULD_BLOCK', `the operation cannot complete without the event loop now: ${why}; await err.request.wait()`, { request })
}

/** MpiError ERR_MPI_TIMEOUT: a wait ran out after `ms` milliseconds (the operation goes on). */
export function timedOut (ms: number): MpiError {
  return new MpiError('ERR_MPI_TIMEOUT', `request not complete after ${ms} ms`)
}

/** MpiError ERR_MPI_TRUNCATE for a message of `length` bytes into `room` bytes; `status` its Status. */
export function truncated (length: number, room: number, source: number, tag: number, status: unknown): MpiError {
  return new MpiError('ERR_MPI_TRUNCATE', `message of ${length} bytes (source ${source}, tag ${tag}) does not fit the receive array of ${room} bytes; it stays matchable`,
    { rank: source, status })
}

/**
 * MpiError ERR_MPI_PROTOCOL: `rank` sent bytes that are not this protocol (`what` says which field
 * and value); the connection to it is closed and the rank reported lost.
 */
export function protocolError (rank: number, what: string): MpiError {
  return new MpiError('ERR_MPI_PROTOCOL', `rank ${rank} is lost: it sent bytes that are not this protocol (${what}); its connection is closed`, { rank })
}

/** MpiError ERR_MPI_NOT_INITIALIZED: `what` needs init() first. */
export function notInitialized (what: string): MpiError {
  return new MpiError('ERR_MPI_NOT_INITIALIZED', `${what}: call mpi.init() first`)
}

/** MpiError ERR_MPI_FINALIZED: `what` after finalize(). */
export function finalized (what: string): MpiError {
  return new MpiError('ERR_MPI_FINALIZED', `${what}: mpi.finalize() was called`)
}

/**
 * An Error with a system error's `code` ('ENOENT', 'ETIMEDOUT'...), as Node's own carry: for a
 * condition lib/mpi treats as a system error (the store's connection retries test the code).
 */
export function systemError (code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code })
}
