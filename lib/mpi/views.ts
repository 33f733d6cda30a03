/**
 * Buffers of fastsock/mpi: every TypedArray kind (BigInt64Array, Float16Array where present,
 * Uint8ClampedArray...), DataView and Buffer travel as their raw bytes, in the host's byte order
 * (little-endian on every platform fastsock builds for). `bytesOf` makes the Uint8Array over the
 * same memory, without a copy.
 */
import { invalidArgType, outOfRange } from './errors'

/** Returns a Uint8Array over `view`'s bytes (no copy); throws ERR_INVALID_ARG_TYPE for a non-view. */
export function bytesOf (view: unknown, what = 'buf'): Uint8Array {
  if (view instanceof Uint8Array) return view
  if (!ArrayBuffer.isView(view)) {
    throw invalidArgType(`${what} must be a TypedArray, DataView or Buffer, got ${describe(view)}`)
  }
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

/** A short description of a value for an error message. */
export function describe (v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an Array'
  if (typeof v === 'object') return `an instance of ${(v as object).constructor?.name ?? 'Object'}`
  return `${typeof v} (${String(v).slice(0, 40)})`
}

/**
 * Checks a rank argument: an integer in [0, size), or one of `specials` (ANY_SOURCE -1,
 * PROC_NULL -2). Throws ERR_INVALID_ARG_TYPE (not an integer number) or ERR_OUT_OF_RANGE.
 */
export function checkRank (rank: unknown, size: number, what: string, specials: readonly number[]): number {
  if (typeof rank !== 'number' || !Number.isInteger(rank)) throw invalidArgType(`${what} must be an integer rank, got ${describe(rank)}`)
  if ((rank < 0 || rank >= size) && !specials.includes(rank)) {
    throw outOfRange(`${what} must be in [0, ${size - 1}]${specials.length ? ` or ${specials.join(', ')}` : ''}, got ${rank}`)
  }
  return rank
}

/** The largest tag (MPI_TAG_UB): 2^31 - 1. */
export const TAG_UB = 0x7fffffff

/** Checks a tag: an integer in [0, TAG_UB], or ANY_TAG (-1) when `anyOk`. Throws as checkRank. */
export function checkTag (tag: unknown, anyOk: boolean, what = 'tag'): number {
  if (typeof tag !== 'number' || !Number.isInteger(tag)) throw invalidArgType(`${what} must be an integer, got ${describe(tag)}`)
  if (tag > TAG_UB || (tag < 0 && !(anyOk && tag === -1))) {
    throw outOfRange(`${what} must be in [0, ${TAG_UB}]${anyOk ? ' or ANY_TAG (-1)' : ''}, got ${tag}`)
  }
  return tag
}
