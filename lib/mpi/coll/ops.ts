/**
 * Reduction operations: MPI's predefined ops (SUM PROD MIN MAX LAND LOR LXOR BAND BOR BXOR MAXLOC
 * MINLOC) on every numeric typed-array kind, and user ops (`Op.create`).
 *
 * Semantics, per element (x from the left/lower-ranked operand, y from the right):
 * - SUM, PROD: the array kind's own arithmetic (integer kinds wrap as the array stores them;
 *   Int32/Uint32 products use Math.imul so they wrap exactly; Uint8ClampedArray clamps;
 *   BigInt64/BigUint64 wrap mod 2^64).
 * - MIN, MAX: the smaller/larger (NaN handling undefined, as in MPI).
 * - LAND, LOR, LXOR: logical (non-zero = true), result 1 or 0; every kind.
 * - BAND, BOR, BXOR: bitwise; integer kinds only (a float array throws ERR_MPI_OP).
 * - MAXLOC, MINLOC: the array holds (value, index) pairs interleaved: [v0, i0, v1, i1, ...] in one
 *   array of one kind (Float64Array for MPI_DOUBLE_INT-like pairs, Int32Array for MPI_2INT); the
 *   element count must be even. The result pair is the max (min) value and its index; ties take
 *   the lower index (MPI 5.9.4).
 *
 * Built-in kernels are compiled once per (op, array kind) with `new Function`, so each kernel sees
 * one array kind only (monomorphic element access: a tight typed loop); on 256 bytes or more the
 * vector kernel of simd.ts runs instead where it has one for the pair. All built-ins commute.
 * User ops: `Op.create((inout, input) => void, { commute })` where the function must set
 * `inout[i] = inout[i] ∘ input[i]` for every i, `inout` holding the LEFT (lower-ranked) operand;
 * non-commutative ops are applied in rank order (result = a_0 ∘ a_1 ∘ ... ∘ a_{P-1}).
 */
import type { NumericArray } from './types'
import { invalidArgType, mpiError } from '../errors'
import { applyVector, SIMD_MIN_BYTES, vectorKernel } from './simd'
import { keepable } from './util'

/** A user op's function: combine `input` into `inout` (inout = inout ∘ input, elementwise). */
export type UserOpFunction = (inout: NumericArray, input: NumericArray) => void

type Kernel = (a: NumericArray, ao: number, b: NumericArray, bo: number, n: number) => void

const KINDS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']
const FLOAT_KINDS = new Set(['Float32Array', 'Float64Array'])
const BIG_KINDS = new Set(['BigInt64Array', 'BigUint64Array'])

/** The elementwise expression of a built-in op for one kind (x: left, y: right). */
function expression (name: string, kind: string): string | null {
  const big = BIG_KINDS.has(kind)
  const zero = big ? '0n' : '0'
  const one = big ? '1n' : '1'
  switch (name) {
    case 'SUM': return 'x + y'
    case 'PROD': return (kind === 'Int32Array' || kind === 'Uint32Array') ? 'Math.imul(x, y)' : 'x * y'
    case 'MIN': return 'y < x ? y : x'
    case 'MAX': return 'y > x ? y : x'
    case 'LAND': return `(x !== ${zero} && y !== ${zero}) ? ${one} : ${zero}`
    case 'LOR': return `(x !== ${zero} || y !== ${zero}) ? ${one} : ${zero}`
    case 'LXOR': return `((x !== ${zero}) !== (y !== ${zero})) ? ${one} : ${zero}`
    case 'BAND': return FLOAT_KINDS.has(kind) ? null : 'x & y'
    case 'BOR': return FLOAT_KINDS.has(kind) ? null : 'x | y'
    case 'BXOR': return FLOAT_KINDS.has(kind) ? null : 'x ^ y'
    default: return null
  }
}

/** Compile the kernel of a built-in op for one kind (null: the op does not apply to the kind). */
function compile (name: string, kind: string): Kernel | null {
  if (name === 'MAXLOC' || name === 'MINLOC') {
    const cmp = name === 'MAXLOC' ? '>' : '<'
    // eslint-disable-next-line no-new-func
    return new Function('a', 'ao', 'b', 'bo', 'n', `'use strict'
      for (let i = 0; i < n; i += 2) {
        const x = a[ao + i], y = b[bo + i]
        if (y ${cmp} x || (y === x && b[bo + i + 1] < a[ao + i + 1])) { a[ao + i] = y; a[ao + i + 1] = b[bo + i + 1] }
      }`) as Kernel
  }
  const e = expression(name, kind)
  if (e === null) return null
  // Indexing from 0 lets V8 drop the offset arithmetic and most bounds checks from the loop
  // (Float32 SUM 2.8 -> 1.9 ns per element here, bench/mpi-kernels.js's scalar column on the code
  // before and after), so long runs at an offset go through views from 0; short ones (a view
  // costs ~0.1 us to make) index in place.
  // eslint-disable-next-line no-new-func
  return new Function('a', 'ao', 'b', 'bo', 'n', `'use strict'
    if (ao !== 0 || bo !== 0) {
      if (n < 256) {
        for (let i = 0; i < n; i++) { const x = a[ao + i], y = b[bo + i]; a[ao + i] = ${e} }
        return
      }
      a = a.subarray(ao, ao + n); b = b.subarray(bo, bo + n)
    }
    for (let i = 0; i < n; i++) { const x = a[i], y = b[i]; a[i] = ${e} }`) as Kernel
}

/**
 * A user op's id (the descriptor's op field, 24 bits; check.ts): 100 + an FNV-1a hash of its
 * function's source and `commute`, so every rank that creates the same op gets the same id
 * without a counter (a process-wide counter gave ids in creation order: a rank that created one
 * more op elsewhere would have mismatched every later call), and two different functions differ
 * but for a hash collision (then only the opt-in check or the result tells).
 */
function userOpId (fn: UserOpFunction, commute: boolean): number {
  const text = `${commute ? 'c' : 'n'}${Function.prototype.toString.call(fn)}`
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return 100 + ((h >>> 0) % (0xffffff - 100))
}
/** FASTSOCK_MPI_SIMD=0 turns the vector kernels off (measurement: bench/mpi-kernels.js). */
const SIMD = process.env.FASTSOCK_MPI_SIMD !== '0'

/**
 * A reduction operation (MPI_Op). Built-ins are the exported constants; user ops come from
 * `Op.create`. `unit` is the number of array elements that form one reduced item (2 for
 * MAXLOC/MINLOC, else 1): algorithms that split arrays split on unit boundaries.
 */
export class Op {
  /** The op's name ('SUM', ..., or 'USER<id>'). */
  readonly name: string
  /** True when a ∘ b = b ∘ a (every built-in). */
  readonly commute: boolean
  /** The op's id in the descriptor: 1..12 for the built-ins, a hash of the function for user ops (userOpId). */
  readonly id: number
  /** Elements per reduced item (2 for MAXLOC/MINLOC pairs). */
  readonly unit: number
  private readonly user: UserOpFunction | null
  /** Compiled kernels by the array's constructor (null: the op does not apply to that kind). */
  private readonly kernels = new Map<unknown, Kernel | null>()
  /** apply()'s last array kind and its kernel. */
  private lastCtor: unknown = null
  private lastKernel: Kernel | null = null
  /**
   * apply()'s last array (keepable() only) and its element size: the same array again (a loop
   * reduces into one array call after call) needs neither its `constructor` nor its
   * BYTES_PER_ELEMENT read, each a call in optimized code on Node 20 (`node bench/mpi-small.js`).
   */
  private lastArray: NumericArray | null = null
  private lastBpe = 0
  /** Vector kernels (simd.ts) by the array's constructor (null: none for that kind). */
  private readonly vectors = new Map<unknown, ReturnType<typeof vectorKernel>>()

  private constructor (name: string, id: number, commute: boolean, user: UserOpFunction | null) {
    this.name = name
    this.id = id
    this.commute = commute
    this.user = user
    this.unit = (name === 'MAXLOC' || name === 'MINLOC') ? 2 : 1
  }

  /**
   * A user-defined op (MPI_Op_create). `fn(inout, input)` must set inout[i] = inout[i] ∘ input[i]
   * for every i, both views of the same kind and length, inout holding the lower-ranked operand.
   * `commute` (default true) says whether ∘ is commutative; if false, the collectives reduce in
   * rank order and use only order-preserving algorithms.
   * `T`: the array kind the op is written for (`Op.create((a: Float64Array, b: Float64Array) => ...)`
   * type-checks; the collectives call it only with arrays of the kind they were given).
   * @throws TypeError ERR_INVALID_ARG_TYPE if fn is not a function.
   */
  static create<T extends NumericArray = NumericArray> (fn: (inout: T, input: T) => void, options: { commute?: boolean } = {}): Op {
    if (typeof fn !== 'function') throw invalidArgType('Op.create: fn must be a function (inout, input) => void')
    const commute = options.commute !== false
    const id = userOpId(fn as UserOpFunction, commute)
    return new Op(`USER${id}`, id, commute, fn as UserOpFunction)
  }

  /** @internal Make a built-in op. */
  static _builtin (name: string, id: number): Op { return new Op(name, id, true, null) }

  /**
   * Throw unless this op applies to `arr` (kind; even length for MAXLOC/MINLOC).
   * @throws MpiError ERR_MPI_OP
   */
  check (arr: ArrayBufferView): void {
    if (this.user !== null) {
      const kind = arr.constructor.name
      if (!KINDS.includes(kind)) throw mpiError('ERR_MPI_OP', `${this.name}: reductions need a numeric typed array, got ${kind}`)
      return
    }
    if (this.kernel(arr.constructor) === null) {
      const kind = arr.constructor.name
      const why = KINDS.includes(kind) ? `${this.name} is bitwise and does not apply to ${kind}` : `reductions need a numeric typed array, got ${kind}`
      throw mpiError('ERR_MPI_OP', why)
    }
    if (this.unit === 2 && ((arr as NumericArray).length & 1) !== 0) {
      throw mpiError('ERR_MPI_OP', `${this.name} takes (value, index) pairs interleaved: the array length must be even, got ${(arr as NumericArray).length}`)
    }
  }

  /** The kernel for arrays made by `ctor` (keyed by the constructor: no name lookup per call). */
  private kernel (ctor: unknown): Kernel | null {
    let k = this.kernels.get(ctor)
    if (k === undefined) {
      const kind = (ctor as { name?: unknown }).name
      // only the global typed array constructors (a subclass shares its parent's name)
      k = typeof kind === 'string' && KINDS.includes(kind) && (globalThis as Record<string, unknown>)[kind] === ctor ? compile(this.name, kind) : null
      this.kernels.set(ctor, k)
    }
    return k
  }

  /** The vector kernel for arrays made by `ctor` (simd.ts), or null; FASTSOCK_MPI_SIMD=0: none. */
  private vector (ctor: unknown): ReturnType<typeof vectorKernel> {
    let v = this.vectors.get(ctor)
    if (v === undefined) {
      const kind = (ctor as { name?: unknown }).name
      v = SIMD && typeof kind === 'string' && this.kernel(ctor) !== null ? vectorKernel(this.name, kind) : null
      this.vectors.set(ctor, v)
    }
    return v
  }

  /**
   * Combine `count` elements: a[ao..] = a[ao..] ∘ b[bo..] when `aIsLeft`, else a = b ∘ a.
   * a and b must be the same kind (checked by the callers). Elements, not bytes. Built-ins on
   * SIMD_MIN_BYTES or more run the vector kernel (simd.ts) where it has one for the kind.
   */
  apply (a: NumericArray, ao: number, b: NumericArray, bo: number, count: number, aIsLeft = true): void {
    if (count <= 0) return
    if (this.user === null) {
      // the last kind's kernel without the Map lookup (a loop reduces one kind call after call)
      let k = this.lastKernel
      let bpe = this.lastBpe
      if (a !== this.lastArray || k === null) {
        const ctor = a.constructor
        if (ctor !== this.lastCtor || k === null) { k = this.kernel(ctor) as Kernel; this.lastCtor = ctor; this.lastKernel = k }
        bpe = a.BYTES_PER_ELEMENT
        this.lastBpe = bpe
        this.lastArray = keepable(a) ? a : null
      }
      if (count * bpe >= SIMD_MIN_BYTES) {
        const v = this.vector(this.lastCtor)
        if (v !== null) {
          const done = applyVector(v, a, ao, b, bo, count, bpe)
          if (done < count) k(a, ao + done, b, bo + done, count - done)
          return
        }
      }
      k(a, ao, b, bo, count)
      return
    }
    const av = a.subarray(ao, ao + count) as NumericArray
    const bv = b.subarray(bo, bo + count) as NumericArray
    if (aIsLeft || this.commute) { this.user(av, bv); return }
    const tmp = bv.slice() as NumericArray // left operand b: tmp = b ∘ a, then a = tmp
    this.user(tmp, av)
    ;(av as Uint8Array).set(tmp as Uint8Array)
  }
}

/** MPI_SUM. */ export const SUM = Op._builtin('SUM', 1)
/** MPI_PROD. */ export const PROD = Op._builtin('PROD', 2)
/** MPI_MIN. */ export const MIN = Op._builtin('MIN', 3)
/** MPI_MAX. */ export const MAX = Op._builtin('MAX', 4)
/** MPI_LAND (logical and, result 1/0). */ export const LAND = Op._builtin('LAND', 5)
/** MPI_LOR. */ export const LOR = Op._builtin('LOR', 6)
/** MPI_LXOR. */ export const LXOR = Op._builtin('LXOR', 7)
/** MPI_BAND (integer kinds only). */ export const BAND = Op._builtin('BAND', 8)
/** MPI_BOR (integer kinds only). */ export const BOR = Op._builtin('BOR', 9)
/** MPI_BXOR (integer kinds only). */ export const BXOR = Op._builtin('BXOR', 10)
/** MPI_MAXLOC on interleaved (value, index) pairs; ties take the lower index. */ export const MAXLOC = Op._builtin('MAXLOC', 11)
/** MPI_MINLOC on interleaved (value, index) pairs; ties take the lower index. */ export const MINLOC = Op._builtin('MINLOC', 12)
