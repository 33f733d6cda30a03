/**
 * Vectorized reduction kernels for the built-in ops (ops.ts): one small WebAssembly module, built
 * here byte by byte, with one function per (op, lane type) that combines two arrays 16 bytes
 * (one SIMD128 vector) at a time: `f(dst, src, bytes)`, dst = dst ∘ src, byte offsets into the
 * module's own memory. Typed arrays reach it in chunks of CHUNK_BYTES (copied in, combined,
 * copied back: the chunks stay in the CPU's cache), the elements past the last whole vector go
 * through the scalar kernel.
 *
 * Only ops whose vector instruction gives exactly the scalar kernel's result are here: integer
 * SUM and PROD wrap as the arrays store them (i8x16.add, i16x8.mul, i32x4.mul, i64x2.add/mul),
 * Uint8ClampedArray's SUM saturates as its stores clamp (i8x16.add_sat_u), float SUM and PROD
 * are IEEE-754 round-to-nearest in both (a Float32Array element's `x + y` computed in double
 * and stored rounds once to the same float as f32x4.add), integer MIN/MAX compare as the kinds
 * do, and BAND/BOR/BXOR are bitwise. Float MIN/MAX stay scalar (NaN and -0 order differ).
 *
 * Measured with bench/mpi-kernels.js (same run: the scalar kernels, the copy). Little-endian
 * hosts only (typed arrays use the host's order, WebAssembly memory is little-endian); where
 * WebAssembly SIMD is missing the scalar kernels run.
 */

/** Bytes per operand and chunk: both operands' chunks fit in a 256 KiB memory (4 pages). */
const CHUNK_BYTES = 64 * 1024
/** Below this many bytes the scalar kernel runs (the chunk copies cost more than they save). */
export const SIMD_MIN_BYTES = 256

/** The vector instruction (0xFD-prefixed opcode) of each (op, array kind) the module serves. */
const OPCODES: Record<string, Record<string, number>> = {
  SUM: {
    Int8Array: 110, Uint8Array: 110, Uint8ClampedArray: 112, Int16Array: 142, Uint16Array: 142, Int32Array: 174, Uint32Array: 174,
    Float32Array: 228, Float64Array: 240, BigInt64Array: 206, BigUint64Array: 206
  },
  PROD: {
    Int16Array: 149, Uint16Array: 149, Int32Array: 181, Uint32Array: 181, Float32Array: 230, Float64Array: 242,
    BigInt64Array: 213, BigUint64Array: 213
  },
  MIN: { Int8Array: 118, Uint8Array: 119, Uint8ClampedArray: 119, Int16Array: 150, Uint16Array: 151, Int32Array: 182, Uint32Array: 183 },
  MAX: { Int8Array: 120, Uint8Array: 121, Uint8ClampedArray: 121, Int16Array: 152, Uint16Array: 153, Int32Array: 184, Uint32Array: 185 },
  BAND: {}, BOR: {}, BXOR: {}
}
const INT_KINDS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array']
for (const k of INT_KINDS) { OPCODES.BAND[k] = 78; OPCODES.BOR[k] = 80; OPCODES.BXOR[k] = 81 }

/** Unsigned LEB128. */
function leb (n: number): number[] {
  const out: number[] = []
  do {
    let b = n & 0x7f
    n >>>= 7
    if (n !== 0) b |= 0x80
    out.push(b)
  } while (n !== 0)
  return out
}

/** A section: id, byte length, contents. */
function section (id: number, bytes: number[]): number[] {
  return [id, ...leb(bytes.length), ...bytes]
}

/** The body of f(dst, src, bytes): for (end = dst + bytes; dst < end; dst += 16, src += 16) [dst] = op([dst], [src]). */
function body (opcode: number): number[] {
  const code = [
    0x01, 0x01, 0x7f, // one local: end (i32)
    0x20, 0x00, 0x20, 0x02, 0x6a, 0x21, 0x03, // end = dst + bytes
    0x02, 0x40, 0x03, 0x40, // block, loop
    0x20, 0x00, 0x20, 0x03, 0x4f, 0x0d, 0x01, // if (dst >= end) break
    0x20, 0x00, // store address
    0x20, 0x00, 0xfd, 0x00, 0x04, 0x00, // v128.load [dst]
    0x20, 0x01, 0xfd, 0x00, 0x04, 0x00, // v128.load [src]
    0xfd, ...leb(opcode), // the op
    0xfd, 0x0b, 0x04, 0x00, // v128.store
    0x20, 0x00, 0x41, 0x10, 0x6a, 0x21, 0x00, // dst += 16
    0x20, 0x01, 0x41, 0x10, 0x6a, 0x21, 0x01, // src += 16
    0x0c, 0x00, // continue
    0x0b, 0x0b, 0x0b // end loop, end block, end function
  ]
  return [...leb(code.length), ...code]
}

/** The module's bytes: memory "m" (4 pages), functions "0".."n-1" for `opcodes` in order. */
function moduleBytes (opcodes: number[]): Uint8Array {
  const n = opcodes.length
  const exports: number[] = [...leb(n + 1), 0x01, 0x6d, 0x02, 0x00]
  for (let i = 0; i < n; i++) {
    const name = Array.from(String(i), c => c.charCodeAt(0))
    exports.push(...leb(name.length), ...name, 0x00, ...leb(i))
  }
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00]),
    ...section(3, [...leb(n), ...opcodes.map(() => 0x00)]),
    ...section(5, [0x01, 0x00, 0x04]),
    ...section(7, exports),
    ...section(10, [...leb(n), ...opcodes.flatMap(body)])
  ])
}

type VectorFn = (dst: number, src: number, bytes: number) => void
/** What this file uses of the WebAssembly global (not in the project's TypeScript lib). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object) => { exports: Record<string, unknown> }
}
/** The vector kernels by op name, then array kind name; null where WebAssembly SIMD is missing. */
let table: Map<string, Map<string, VectorFn>> | null | undefined
let mem: Uint8Array | null = null

function build (): Map<string, Map<string, VectorFn>> | null {
  if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) return null
  const distinct = [...new Set(Object.values(OPCODES).flatMap(m => Object.values(m)))]
  try {
    const inst = new WebAssembly.Instance(new WebAssembly.Module(moduleBytes(distinct)))
    mem = new Uint8Array((inst.exports.m as { buffer: ArrayBuffer }).buffer)
    const out = new Map<string, Map<string, VectorFn>>()
    for (const [op, kinds] of Object.entries(OPCODES)) {
      const m = new Map<string, VectorFn>()
      for (const [kind, code] of Object.entries(kinds)) m.set(kind, inst.exports[String(distinct.indexOf(code))] as VectorFn)
      out.set(op, m)
    }
    return out
  } catch {
    return null // no WebAssembly SIMD here: the scalar kernels
  }
}

/** The vector kernel of built-in op `op` on arrays of kind `kind` (a global typed array name), or null. */
export function vectorKernel (op: string, kind: string): VectorFn | null {
  if (table === undefined) table = build()
  return table?.get(op)?.get(kind) ?? null
}

/**
 * a[ao, ao + n) = a ∘ b[bo, bo + n) through the vector kernel `f`, for the whole 16-byte vectors
 * of the range; returns how many elements it did (from the start: the caller does the rest).
 * `bpe`: bytes per element of both arrays.
 */
export function applyVector (f: VectorFn, a: ArrayBufferView, ao: number, b: ArrayBufferView, bo: number, n: number, bpe: number): number {
  const m = mem as Uint8Array
  const total = n * bpe - (n * bpe) % 16 // whole vectors (not `& ~15`: 32-bit, wrong past 2 GiB)
  const ab = new Uint8Array(a.buffer, a.byteOffset + ao * bpe, total)
  const bb = new Uint8Array(b.buffer, b.byteOffset + bo * bpe, total)
  for (let off = 0; off < total; off += CHUNK_BYTES) {
    const len = Math.min(CHUNK_BYTES, total - off)
    const end = off + len
    m.set(ab.subarray(off, end), 0)
    m.set(bb.subarray(off, end), CHUNK_BYTES)
    f(0, CHUNK_BYTES, len)
    ab.set(m.subarray(0, len), off)
  }
  return total / bpe
}
