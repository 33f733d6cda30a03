/**
 * fastsock's own errors: every one has a stable `code` of the form ERR_FASTSOCK_*.
 * System errors (ECONNREFUSED, ECONNRESET, EPIPE...) are Node's own and keep Node's shape.
 */
import * as util from 'util'

export type FastsockErrorCode =
  | 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED'
  | 'ERR_FASTSOCK_UNKNOWN_TRANSPORT'
  | 'ERR_FASTSOCK_TRANSPORT_TIMEOUT'
  | 'ERR_FASTSOCK_NOT_OFFERED'
  | 'ERR_FASTSOCK_HANDSHAKE'
  | 'ERR_FASTSOCK_REJECTED'
  | 'ERR_FASTSOCK_UNVERIFIED_PEER'
  | 'ERR_FASTSOCK_READINTO'
  | 'ERR_FASTSOCK_SYNC_UNAVAILABLE'
  | 'ERR_FASTSOCK_SHM_ONLY'
  | 'ERR_FASTSOCK_STALE_LOAN'
  | 'ERR_FASTSOCK_NATIVE_UNAVAILABLE'
  | 'ERR_FASTSOCK_NOT_TRANSFERABLE'

/** An error of fastsock's own; `code` says which (ERR_FASTSOCK_*), `cause` carries the underlying one. */
export class FastsockError extends Error {
  readonly code: FastsockErrorCode
  constructor (code: FastsockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = 'FastsockError'
  }
}

/** Node's shape for an argument outside its range: a RangeError with code ERR_OUT_OF_RANGE. */
export function outOfRange (message: string): RangeError {
  const e = new RangeError(message) as RangeError & { code: string }
  e.code = 'ERR_OUT_OF_RANGE'
  return e
}

/** An error shaped like Node's system errors (`code`, `errno`, `syscall`) from a -errno value. */
export function errnoError (negErrno: number, syscall: string, extra?: string): NodeJS.ErrnoException {
  const code = util.getSystemErrorName(negErrno)
  const err: NodeJS.ErrnoException = new Error(`${syscall} ${code}${extra ? ' ' + extra : ''}`)
  err.errno = negErrno
  err.code = code
  err.syscall = syscall
  return err
}
