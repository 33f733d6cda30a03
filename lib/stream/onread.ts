/**
 * Node's `onread` socket option, extended to any typed array: Node (and the stream core) read
 * into a byte view of the caller's array, and the caller's callback gets its own array back.
 */

/** The onread option as fastsock keeps it: Node's shape plus the buffer in use. */
export interface OnreadSpec {
  buffer: Uint8Array | null
  gen: (() => Uint8Array) | null
  /** The buffer the next endpoint read goes into (stream core). */
  current: Uint8Array | null
  /** Called as the socket's method (`this`: the socket), as Node calls onread's callback. */
  callback: (this: unknown, n: number) => boolean | void
}

/** The caller's `onread` option: `buffer` a typed array or a function returning one. */
export interface OnreadOption {
  buffer: ArrayBufferView | (() => ArrayBufferView)
  callback: (bytes: number, buf: ArrayBufferView) => boolean | void
}

/** A Uint8Array over the bytes of `view` (no copy). */
export function asUint8 (view: ArrayBufferView): Uint8Array {
  return view instanceof Uint8Array ? view : new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

/**
 * The spec for a caller's onread option, and the option to hand Node in its place; null when the
 * option is absent or not Node's shape (Node then validates it).
 */
export function onreadSpec (onread: unknown): { spec: OnreadSpec, nodeOption: { buffer: unknown, callback: (this: unknown, n: number) => boolean | void } } | null {
  const o = onread as Partial<OnreadOption> | null | undefined
  if (!o || typeof o !== 'object' || typeof o.callback !== 'function') return null
  const userCb = o.callback
  if (ArrayBuffer.isView(o.buffer)) {
    const view = o.buffer
    const spec: OnreadSpec = { buffer: asUint8(view), gen: null, current: null, callback: function (n: number) { return userCb.call(this, n, view) } }
    return { spec, nodeOption: { buffer: spec.buffer, callback: spec.callback } }
  }
  if (typeof o.buffer === 'function') {
    const gen = o.buffer
    let last: ArrayBufferView | null = null
    const spec: OnreadSpec = {
      buffer: null,
      gen: () => { last = gen(); return asUint8(last) },
      current: null,
      callback: function (n: number) { return userCb.call(this, n, last!) }
    }
    return { spec, nodeOption: { buffer: spec.gen, callback: spec.callback } }
  }
  return null
}
