/**
 * fastsock's errors: one class per failure (undici's lib/core/errors.js is the model), each with
 * a fixed `code` of the form ERR_FASTSOCK_*. Callers classify failures by class (`instanceof`)
 * or `code`, never by ad-hoc properties. Every class's `name` is 'FastsockError' (the name
 * docs/api.md documents), except AllTransportsFailedError, an AggregateError.
 *
 * System errors (ECONNREFUSED, ECONNRESET, EPIPE...) are Node's own and keep Node's shape; the
 * one kind fastsock classifies among them, "nobody serves this rung there", is UnservedError.
 */
import * as util from 'util'
import { constants } from 'os'

/**
 * Every ERR_FASTSOCK_* code fastsock throws, from lib/ or from the addon (csrc/). A test scans
 * csrc/ and lib/ for codes missing here (test/errors.test.js).
 */
export const FASTSOCK_ERROR_CODES = [
  'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED',
  'ERR_FASTSOCK_UNKNOWN_TRANSPORT',
  'ERR_FASTSOCK_TRANSPORT_TIMEOUT',
  'ERR_FASTSOCK_NOT_OFFERED',
  'ERR_FASTSOCK_HANDSHAKE',
  'ERR_FASTSOCK_REJECTED',
  'ERR_FASTSOCK_UNVERIFIED_PEER',
  'ERR_FASTSOCK_READINTO',
  'ERR_FASTSOCK_SYNC_UNAVAILABLE',
  'ERR_FASTSOCK_SHM_ONLY',
  'ERR_FASTSOCK_STALE_LOAN',
  'ERR_FASTSOCK_NOT_TRANSFERABLE',
  /** The addon: rdma-core or an RDMA device is missing (csrc/rdma/). */
  'ERR_FASTSOCK_NO_RDMA',
  /** The command line: an optional package a tool needs is absent (lib/cli/optional.ts). */
  'ERR_FASTSOCK_MISSING_DEPENDENCY',
  /** `fastsock rate --config`: the run configuration does not match its schema (docs/rate-config.md). */
  'ERR_FASTSOCK_RATE_CONFIG'
] as const

export type FastsockErrorCode = typeof FASTSOCK_ERROR_CODES[number]

/** An error of fastsock's own; `code` says which (ERR_FASTSOCK_*), `cause` carries the underlying one. */
export class FastsockError extends Error {
  readonly code: FastsockErrorCode
  constructor (code: FastsockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = 'FastsockError'
  }
}

/** A rung is not served at the destination (no side channel answers, a loopback address...): cached briefly. */
export class NotOfferedError extends FastsockError {
  constructor (message: string, options?: { cause?: unknown }) { super('ERR_FASTSOCK_NOT_OFFERED', message, options) }
}

/** A rung's attempt took longer than its timeout (`transportTimeoutMs`). */
export class AttemptTimeoutError extends FastsockError {
  constructor (message: string, options?: { cause?: unknown }) { super('ERR_FASTSOCK_TRANSPORT_TIMEOUT', message, options) }
}

/** The side channel's handshake (or a rung's set-up over it) failed or was malformed. */
export class HandshakeError extends FastsockError {
  constructor (message: string, options?: { cause?: unknown }) { super('ERR_FASTSOCK_HANDSHAKE', message, options) }
}

/** The peer turned the connection away; `reason` is the REJECT reason (lib/wire.ts RejectReason). */
export class RejectedError extends FastsockError {
  readonly reason: number
  constructor (reason: number, message: string) {
    super('ERR_FASTSOCK_REJECTED', message)
    this.reason = reason
  }
}

/** REJECT Busy: the server is at maxConnections now. Not cached: a later connect may get in. */
export class ServerBusyError extends RejectedError {}

/** The process behind a side channel could not be shown to own the TCP listener (a squatter...). */
export class UnverifiedPeerError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_UNVERIFIED_PEER', message) }
}

/** A readInto request failed before it was filled; `bytesRead` says how far it got. */
export class ReadIntoError extends FastsockError {
  readonly bytesRead: number
  constructor (message: string, bytesRead: number, options?: { cause?: unknown }) {
    super('ERR_FASTSOCK_READINTO', message, options)
    this.bytesRead = bytesRead
  }
}

/** A `transports` option or FASTSOCK_TRANSPORTS names a rung that does not exist. */
export class UnknownTransportError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_UNKNOWN_TRANSPORT', message) }
}

/** writeSync / readIntoSync where they cannot run (no shared ring, writes queued, readInto pending). */
export class SyncUnavailableError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_SYNC_UNAVAILABLE', message) }
}

/** An API that needs a shared ring (allocShared) on a socket whose channel has no loans. */
export class ShmOnlyError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_SHM_ONLY', message) }
}

/** A zero-copy loan misused: written out of turn, or asked for twice. */
export class StaleLoanError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_STALE_LOAN', message) }
}

/** A socket without a kernel handle passed to another process (`child_process` `send`). */
export class NotTransferableError extends FastsockError {
  constructor (message: string) { super('ERR_FASTSOCK_NOT_TRANSFERABLE', message) }
}

/** No rung connected and the chain had no tcp: `errors` holds each attempt's error, in order. */
export class AllTransportsFailedError extends AggregateError {
  readonly code = 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED' as const
  constructor (errors: Error[], message: string) {
    super(errors, message)
    this.name = 'AggregateError'
  }
}

/**
 * A system error (Node's shape: `code` such as ECONNREFUSED, `errno`, `syscall`) meaning that
 * nobody serves the rung at that address: refused, or no route the rung can take. Classified
 * like NotOfferedError (cached briefly); `notOffered` is always true, for listeners of
 * 'transportAttemptFailed'.
 */
export class UnservedError extends Error {
  readonly notOffered = true
  code: string
  errno: number
  syscall: string
  constructor (negErrno: number, syscall: string, message?: string) {
    const code = util.getSystemErrorName(negErrno)
    super(message ?? `${syscall} ${code}`)
    this.code = code
    this.errno = negErrno
    this.syscall = syscall
  }

  /** From a system error of the addon's (code, errno, syscall), message kept. */
  static from (err: NodeJS.ErrnoException): UnservedError {
    const e = new UnservedError(err.errno ?? ERRNO.ECONNREFUSED, err.syscall ?? 'connect', err.message)
    if (err.code) e.code = err.code
    return e
  }
}

/** True for a failure meaning "nobody serves this rung there" (cached briefly by the chain). */
export function isNotOffered (err: unknown): boolean {
  return err instanceof NotOfferedError || err instanceof UnservedError
}

/** Node's shape for an argument outside its range: a RangeError with code ERR_OUT_OF_RANGE. */
export function outOfRange (message: string): RangeError & { code: 'ERR_OUT_OF_RANGE' } {
  const e = new RangeError(message) as RangeError & { code: 'ERR_OUT_OF_RANGE' }
  e.code = 'ERR_OUT_OF_RANGE'
  return e
}

/** Node's shape for an argument of the wrong type: a TypeError with code ERR_INVALID_ARG_TYPE. */
export function invalidArgType (message: string): TypeError & { code: 'ERR_INVALID_ARG_TYPE' } {
  const e = new TypeError(message) as TypeError & { code: 'ERR_INVALID_ARG_TYPE' }
  e.code = 'ERR_INVALID_ARG_TYPE'
  return e
}

/** Node's shape for an aborted operation: name 'AbortError', code 'ABORT_ERR', `cause` the signal's reason. */
export function abortError (reason: unknown): Error & { code: 'ABORT_ERR' } {
  const e = new Error('the operation was aborted', { cause: reason }) as Error & { code: 'ABORT_ERR' }
  e.name = 'AbortError'
  e.code = 'ABORT_ERR'
  return e
}

/**
 * The errno values the addon returns negated (libuv's convention, as Node's `err` arguments),
 * from the one table of them, os.constants.errno: ERRNO.EAGAIN is -EAGAIN.
 */
export const ERRNO = Object.freeze(Object.fromEntries(
  Object.entries(constants.errno).map(([k, v]) => [k, -v])
) as { readonly [K in keyof typeof constants.errno]: number })

/** An error shaped like Node's system errors (`code`, `errno`, `syscall`) from a -errno value. */
export function errnoError (negErrno: number, syscall: string, extra?: string): NodeJS.ErrnoException {
  const code = util.getSystemErrorName(negErrno)
  const err: NodeJS.ErrnoException = new Error(`${syscall} ${code}${extra ? ' ' + extra : ''}`)
  err.errno = negErrno
  err.code = code
  err.syscall = syscall
  return err
}

/** UnservedError with errnoError's message shape: `<syscall> <CODE> <extra>`. */
export function unserved (negErrno: number, syscall: string, extra?: string): UnservedError {
  return new UnservedError(negErrno, syscall, `${syscall} ${util.getSystemErrorName(negErrno)}${extra ? ' ' + extra : ''}`)
}
