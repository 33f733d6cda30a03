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
export { init, finalize, abort, world } from './device-init'
export type { InitOptions } from './device-init'
export { Comm, ANY_SOURCE, ANY_TAG, PROC_NULL } from './comm'
export { Request, waitAll, waitAny, testAll } from './request'
export { Status } from './status'
export { MpiError } from './errors'
export { TAG_UB } from './views'
export { DEFAULT_EAGER_BYTES } from './device'
export { Op, SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, IN_PLACE, UNDEFINED, algorithmTable } from './coll'
export type { CollOptions, CollHandle, NumericArray } from './coll'
