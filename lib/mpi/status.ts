/**
 * Status: what a completed receive (or probe) reports, as MPI_Status.
 * `source`: the sender's rank in the communicator (PROC_NULL for a PROC_NULL operation);
 * `tag`: the message's tag; `count`: the message's size in BYTES; `error`: set on a request that
 * failed (the error it rejected with). For a send, source/tag are the destination's and the tag
 * sent, count the bytes sent.
 */
import { outOfRange } from './errors'

export class Status {
  source: number
  tag: number
  /** The message's size in bytes. */
  count: number
  declare error?: unknown
  constructor (source: number, tag: number, count: number) {
    this.source = source
    this.tag = tag
    this.count = count
  }

  /**
   * The count in elements of a typed-array kind (MPI_Get_count): `getCount(Float64Array)`;
   * a DataView/Uint8Array/Buffer constructor counts bytes. Throws RangeError ERR_OUT_OF_RANGE
   * when the byte count is not a whole number of elements (MPI_UNDEFINED's case).
   */
  getCount (ctor: { BYTES_PER_ELEMENT?: number }): number {
    const size = ctor.BYTES_PER_ELEMENT ?? 1
    if (this.count % size !== 0) {
      throw outOfRange(`${this.count} bytes are not a whole number of ${size}-byte elements`)
    }
    return this.count / size
  }
}
