/**
 * fastsock/mpi: message passing between the processes of a parallel Node program, on fastsock's
 * channels (same-host ranks over shared memory, others over RDMA or TCP). MPI's names in
 * camelCase, mpi4py's two tiers (typed arrays as raw bytes; structured-clone objects).
 *
 *   const mpi = require('fastsock/mpi')
 *   const comm = await mpi.init()
 *   if (comm.rank === 0) await comm.send(new Float64Array([1, 2, 3]), 1, 7)
 *   else if (comm.rank === 1) { const a = new Float64Array(3); const st = await comm.recv(a, 0, 7) }
 *   await mpi.finalize()
 *
 * docs/mpi.md has the API, the launchers and the protocol.
 */
import * as deviceInit from './device-init'
import * as comm from './comm'
import * as request from './request'
import * as views from './views'
import * as device from './device'
import * as coll from './coll'
import * as status from './status'
import * as errors from './errors'

// Every export a plain property (`export const`; a class also as a type): re-exports (`export
// { x } from`) compile to accessors, which put the module object in V8's dictionary mode, and
// `mpi.SUM` in a loop of blocking 8-byte collectives was then a generic property lookup per call.
/** MPI_Init: joins the job, resolves with the world communicator (ERR_MPI_INIT_TIMEOUT, ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE; device-init.ts). */
export const init = deviceInit.init
/** MPI_Finalize: drains pending sends, waits for every rank, closes the connections (device-init.ts). */
export const finalize = deviceInit.finalize
/** MPI_Abort: ends the whole job with exit status `code` (default 1; device-init.ts). */
export const abort = deviceInit.abort
/** The world communicator, or throws ERR_MPI_NOT_INITIALIZED. */
export const world = deviceInit.world
export type { InitOptions } from './device-init'
/** A communicator: a group of ranks with its own message context (comm.ts; docs/mpi.md). */
export const Comm = comm.Comm
export type Comm = comm.Comm
/** MPI_ANY_SOURCE: receive from any rank. */
export const ANY_SOURCE = comm.ANY_SOURCE
/** MPI_ANY_TAG: receive with any tag. */
export const ANY_TAG = comm.ANY_TAG
/** MPI_PROC_NULL: a rank that sends and receives nothing (completes at once, count 0). */
export const PROC_NULL = comm.PROC_NULL
/** A non-blocking operation: wait(), waitSync(), test(), cancel() (request.ts). */
export const Request = request.Request
export type Request = request.Request
/** MPI_Waitall: every Status, in order; rejects with the first failed request's error once all are done. */
export const waitAll = request.waitAll
/** MPI_Waitany: `{ index, status }` of the first request done (`{ index: -1, status: null }` for none). */
export const waitAny = request.waitAny
/** MPI_Testall: every Status when all are done, else null; throws the first failed request's error. */
export const testAll = request.testAll
/** MPI_Status: `source`, `tag`, `count` (bytes), getCount(kind). */
export const Status = status.Status
export type Status = status.Status
/** The errors of fastsock/mpi, with `code` (ERR_MPI_*). */
export const MpiError = errors.MpiError
export type MpiError = errors.MpiError
/** True when `err` is an MpiError (of `code`, when given): `isMpiError(e, 'ERR_MPI_TRUNCATE')` (errors.ts). */
export const isMpiError = errors.isMpiError
/** Every ERR_MPI_* code (docs/mpi.md, "Errors"). */
export const MPI_ERROR_CODES = errors.MPI_ERROR_CODES
export type { MpiErrorCode } from './errors'
/** The largest tag (MPI_TAG_UB): 2^31 - 1. */
export const TAG_UB = views.TAG_UB
/** Default eager threshold, bytes (docs/mpi.md, "Thresholds"). */
export const DEFAULT_EAGER_BYTES = device.DEFAULT_EAGER_BYTES
/** A reduction operation: the built-ins below, or Op.create(fn, { commute }) (coll/ops.ts). */
export const Op = coll.Op
export type Op = coll.Op
/** MPI_SUM. */
export const SUM = coll.SUM
/** MPI_PROD. */
export const PROD = coll.PROD
/** MPI_MIN. */
export const MIN = coll.MIN
/** MPI_MAX. */
export const MAX = coll.MAX
/** MPI_LAND: logical and (result 1 or 0). */
export const LAND = coll.LAND
/** MPI_LOR: logical or (result 1 or 0). */
export const LOR = coll.LOR
/** MPI_LXOR: logical exclusive or (result 1 or 0). */
export const LXOR = coll.LXOR
/** MPI_BAND: bitwise and (integer kinds). */
export const BAND = coll.BAND
/** MPI_BOR: bitwise or (integer kinds). */
export const BOR = coll.BOR
/** MPI_BXOR: bitwise exclusive or (integer kinds). */
export const BXOR = coll.BXOR
/** MPI_MAXLOC: (value, index) pairs interleaved; the array length must be even. */
export const MAXLOC = coll.MAXLOC
/** MPI_MINLOC: (value, index) pairs interleaved; the array length must be even. */
export const MINLOC = coll.MINLOC
/** MPI_IN_PLACE: pass as the send buffer where MPI allows it. */
export const IN_PLACE: typeof coll.IN_PLACE = coll.IN_PLACE
/** MPI_UNDEFINED: the `color` of `split` for a rank that wants no new communicator. */
export const UNDEFINED = coll.UNDEFINED
/** The collectives' selection table (one row per collective and algorithm: when it is the default, and its source). */
export const algorithmTable = coll.algorithmTable
export type { CollOptions, CollHandle, NumericArray } from './coll'
