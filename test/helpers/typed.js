'use strict'
// Typed-array helpers: every view type, random contents, byte views for comparison.
const crypto = require('crypto')

/** Every ArrayBufferView constructor a socket must carry (DataView elements are bytes). */
const VIEW_TYPES = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array, DataView
]

const elementSize = T => (T === DataView ? 1 : T.BYTES_PER_ELEMENT)

/** A view of type T with `n` elements of random bytes. */
function randomView (T, n) {
  const bytes = crypto.randomBytes(n * elementSize(T))
  const ab = new ArrayBuffer(bytes.length)
  new Uint8Array(ab).set(bytes)
  return new T(ab)
}

/** The bytes a view covers (no copy). */
const bytesOf = v => Buffer.from(v.buffer, v.byteOffset, v.byteLength)

module.exports = { VIEW_TYPES, elementSize, randomView, bytesOf }
