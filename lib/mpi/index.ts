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
export const init = deviceInit.init
export const finalize = deviceInit.finalize
export const abort = deviceInit.abort
export const world = deviceInit.world
export type { InitOptions } from './device-init'
export const Comm = comm.Comm
export type Comm = comm.Comm
export const ANY_SOURCE = comm.ANY_SOURCE
export const ANY_TAG = comm.ANY_TAG
export const PROC_NULL = comm.PROC_NULL
export const Request = request.Request
export type Request = request.Request
export const waitAll = request.waitAll
export const waitAny = request.waitAny
export const testAll = request.testAll
export const Status = status.Status
export type Status = status.Status
export const MpiError = errors.MpiError
export type MpiError = errors.MpiError
export const TAG_UB = views.TAG_UB
export const DEFAULT_EAGER_BYTES = device.DEFAULT_EAGER_BYTES
export const Op = coll.Op
export type Op = coll.Op
export const SUM = coll.SUM
export const PROD = coll.PROD
export const MIN = coll.MIN
export const MAX = coll.MAX
export const LAND = coll.LAND
export const LOR = coll.LOR
export const LXOR = coll.LXOR
export const BAND = coll.BAND
export const BOR = coll.BOR
export const BXOR = coll.BXOR
export const MAXLOC = coll.MAXLOC
export const MINLOC = coll.MINLOC
export const IN_PLACE: typeof coll.IN_PLACE = coll.IN_PLACE
export const UNDEFINED = coll.UNDEFINED
export const algorithmTable = coll.algorithmTable
export type { CollOptions, CollHandle, NumericArray } from './coll'
