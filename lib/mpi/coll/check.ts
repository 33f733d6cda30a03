/**
 * Default argument-mismatch detection of the collectives, without an extra round: every message
 * a collective sends carries a 16-byte *descriptor* of the call (collective, algorithm, root, op,
 * element kind, count), and every receive checks it against this rank's own before the payload
 * reaches the caller's buffer. A difference rejects with ERR_MPI_COLL_MISMATCH naming the
 * argument, this rank's value and the peer's.
 *
 * - Messages up to INLINE_MAX (64 KiB - 16) bytes: the descriptor is a header on a copy (sender: the header
 *   and payload in one Buffer; receiver: a scratch of n + 16 bytes, checked, then copied out).
 * - Larger messages: a separate 16-byte descriptor message with the same tag, sent just before
 *   the data (per-pair non-overtaking order makes it match the descriptor receive posted just
 *   before the data receive).
 * - Tags carry only the collective's sequence number (util.ts collTag), so two ranks running
 *   different collectives or algorithms, or with different roots, still match each other's
 *   messages between a pair and see the difference instead of waiting on a tag that never comes.
 * - Abort notice: a rank whose receive finds a mismatch sends its descriptor, flagged "abort",
 *   to every other rank with the same tag; a rank waiting on it receives the notice in place of
 *   the data and rejects too (and sends its own notice, so waits chained through it end as well).
 * - Rooted fan-in (reduce, gather, gatherv, gatherObject): the root sends a payload-less
 *   descriptor to rank (root + 1) mod P, which receives it; so two ranks that each think they
 *   are the root (and would only wait) exchange something checkable.
 *
 * What this cannot see without a round (docs/mpi-collectives.md, "Errors"): a rank that only
 * sends in a collective (bcast/scatter root, a reduce/gather leaf other than root + 1) completes
 * even when a peer rejects; ranks that all only wait on one another (e.g. bcast where no rank
 * names itself root) exchange nothing and wait as in MPI. `{ check: true }` covers both.
 */
import { isMpiError } from '../errors'
import type { MpiError } from '../errors'
import type { CollComm, CollRequest, CollStatus } from './types'
import { BytesOf, EMPTY, SYNC_INLINE_MAX, copyDisjoint, mismatch, release, scratch } from './util'
import { COLLECTIVE_IDS, algorithmOf, wireOf } from './select'
import { stateOf } from './state'
import type { CollState } from './state'
import type { Algorithm } from './select'
import type { Op } from './ops'
import { waitNow } from './drive'

declare module './state' {
  interface CollState {
    /** The send staging of small _collIsend messages, null while taken. */
    isendStage?: Scratch | null
    /** The blocking tier's send staging (copied before the call returns). */
    syncSend?: Scratch
    /** The blocking tier's receive scratch, null while a call holds it. */
    syncRecv?: Scratch | null
    /** The bytes of the last small arrays staged and filled. */
    sendBytes?: BytesOf
    recvBytes?: BytesOf
  }
}

export { SYNC_INLINE_MAX }

const HDR = 16
/**
 * Messages up to this many bytes carry the descriptor inline (copied); larger ones get a separate
 * 16-byte message. With the header an inline message stays within the default eager limit
 * (64 KiB): a 64 KiB payload goes eagerly, uncopied, after its descriptor, instead of as a
 * copied 64 KiB + 16 B rendezvous message.
 */
export const INLINE_MAX = 65536 - HDR
const MAGIC = 0xc5
const ABORT = 1
/** Inline receives take at least this many bytes, so a somewhat larger message's descriptor can still be read (and named). */
const MIN_RECV = 256
const SYNC_SCRATCH = SYNC_INLINE_MAX + HDR
/** Field codes an abort notice carries (flag bits 1..3): what its sender found differing. */
const FIELDS = ['', 'collective', 'root', 'op', 'element kind', 'count', 'algorithm', 'message size']

const COLLECTIVE_NAMES: string[] = []
for (const [k, v] of Object.entries(COLLECTIVE_IDS)) COLLECTIVE_NAMES[v] = k
/** Element kinds (1-based index in the descriptor; 0 = bytes, not checked). */
export const KIND_NAMES = ['bytes', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']
const OP_NAMES = ['none', 'SUM', 'PROD', 'MIN', 'MAX', 'LAND', 'LOR', 'LXOR', 'BAND', 'BOR', 'BXOR', 'MAXLOC', 'MINLOC']

/** The global typed array constructors → their element-kind id (a Map lookup per call, no name read). */
const KIND_BY_CTOR = new Map<unknown, number>(KIND_NAMES.slice(1).map((n, i) => [(globalThis as Record<string, unknown>)[n], i + 1]))

/** The element-kind id of an array (0 for anything else, subclasses included). */
export function kindOf (v: unknown): number {
  if (v === null || typeof v !== 'object' || !ArrayBuffer.isView(v)) return 0
  return KIND_BY_CTOR.get(v.constructor) ?? 0
}

function noop (): void {}

/**
 * A staging buffer (MIN_RECV or SYNC_SCRATCH bytes) with views of its first n bytes, made once per length, and its
 * descriptor as four 32-bit words (`words`: host order, little-endian on every platform fastsock
 * builds for, as the device's frame header): staging and checking a descriptor are four stores
 * and four loads, not sixteen bytes shifted.
 */
export class Scratch {
  private readonly b: Buffer
  private readonly views: Buffer[] = []
  /** The descriptor's four 32-bit words. */
  readonly words: Uint32Array
  constructor (bytes: number) {
    this.b = Buffer.allocUnsafeSlow(bytes)
    this.words = new Uint32Array(this.b.buffer, this.b.byteOffset, HDR / 4)
  }
  view (n: number): Buffer { return (this.views[n] ??= this.b.subarray(0, n)) }
}
/**
 * A receive buffer of `bytes` for an inline message: up to MIN_RECV from the communicator's
 * receive pool (state.ts `recvPool`: an inline receive of ≤ MIN_RECV - 16 bytes takes one and
 * gives it back once copied out); larger
 * ones (up to INLINE_MAX + HDR) over a buffer of the communicator's scratch pool (util.ts
 * `scratch`), given back with `release` once copied out, as the staging of a larger inline send
 * is once the send completed at once. A new buffer per message (as until 2026-11-28) made
 * external memory that V8 collected (`node bench/mpi-waits.js --np 4 --patterns
 * allreduce-sync-osu --bytes 32768,65536`; docs/mpi-collectives.md, "Mismatched arguments").
 */
function recvBuffer (comm: CollComm, bytes: number): Buffer {
  if (bytes > MIN_RECV) return Buffer.from(scratch(comm, bytes), 0, bytes)
  return stateOf(comm).recvPool.pop() ?? Buffer.allocUnsafeSlow(MIN_RECV)
}

/** Little-endian 32-bit word at `o` of `b` (bytewise: no Buffer method's checks, any alignment). */
function u32At (b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0
}

/** Writes `w` little-endian at `o` of `b` (a Uint8Array store keeps the low 8 bits). */
function putU32 (b: Uint8Array, o: number, w: number): void {
  b[o] = w; b[o + 1] = w >>> 8; b[o + 2] = w >>> 16; b[o + 3] = w >>> 24
}



/**
 * A collective call (select.ts Call): its descriptor, a CollComm whose messages carry and check
 * it, and the call's arguments its record's functions read (`rec`, `seq`, `seq2`, `buf`, `op`,
 * `seg`, `n`, `data`), so a call is this one object (kept for the next call of the same shape:
 * invoke.ts LastShape).
 */
export class CheckedComm implements CollComm {
  readonly rank: number
  readonly size: number
  /** The algorithm's record (select.ts). */
  readonly rec: Algorithm
  /** The call's root (0 where there is none). */
  readonly root: number
  /** The call's sequence number (set per call). */
  seq = 0
  /** Its second sequence number (a collective of two phases, e.g. reduceScatterBlock's scatter), else -1. */
  seq2 = -1
  /** The other collectives' arguments as their preamble prepared them (invoke.ts Prep `data`). */
  data: unknown = null
  /** The call's array: bcast's buf, allreduce's recvbuf holding this rank's input (set per call). */
  buf: ArrayBufferView = EMPTY
  /** The call's op (allreduce; null elsewhere). */
  op: Op | null = null
  /** The pipeline segment, bytes (opts.segmentBytes). */
  seg = 0
  /** buf's bytes. */
  n = 0
  /** The descriptor's count (allreduce: recvbuf's elements). */
  readonly count: number
  /** Whether the record's steps serve this call (select.ts `stepsServe`), once known: a call of the last shape has the same n and seg. */
  private serves: boolean | null = null
  /** The communicator the messages travel on (scratch pools are keyed on it). */
  readonly _base: CollComm
  readonly what: string
  /** The algorithm's name, as select.ts gives it. */
  readonly algorithm: string
  /** The communicator's collective state (state.ts): staging, scratch. */
  readonly state: CollState
  /** Its bytes of the last small arrays staged and filled (state.ts). */
  private readonly sendBytes: BytesOf
  private readonly recvBytes: BytesOf
  private d: Buffer | null = null
  private readonly w0: number; private readonly w1: number; private readonly w2: number; private readonly w3: number
  private aborted = false

  constructor (comm: CollComm, what: string, algorithm: string, root: number, opId: number, kind: number, count: number) {
    this._base = comm
    this.rank = comm.rank; this.size = comm.size
    this.what = what
    this.algorithm = algorithm
    this.rec = algorithmOf(what, algorithm)
    const st = this.state = stateOf(comm)
    this.sendBytes = st.sendBytes ??= new BytesOf()
    this.recvBytes = st.recvBytes ??= new BytesOf()
    this.root = root
    const alg = wireOf(what, algorithm)
    this.w0 = ((MAGIC << 24) | ((COLLECTIVE_IDS[what] ?? 0) << 8) | (kind & 0xff)) >>> 0
    this.w1 = (((alg & 0xff) << 24) | (opId & 0xffffff)) >>> 0
    this.w2 = root >>> 0
    this.w3 = count >>> 0
    this.count = count
  }

  /** The descriptor as sent (16 bytes; made on first use: the small path writes the words directly). */
  get desc (): Buffer {
    if (this.d === null) { this.d = Buffer.allocUnsafe(HDR); this.put(this.d) }
    return this.d
  }

  private put (b: Uint8Array): void {
    putU32(b, 0, this.w0); putU32(b, 4, this.w1); putU32(b, 8, this.w2); putU32(b, 12, this.w3)
  }

  /** An inline message into `b` (view.byteLength + HDR bytes): the descriptor, then the payload. */
  private stage (b: Buffer, view: ArrayBufferView): void {
    this.put(b)
    const n = view.byteLength
    if (n === 0) return
    copyDisjoint(b, HDR, this.sendBytes.of(view, n), 0, n)
  }

  _collIsend (view: ArrayBufferView, dest: number, tag: number): CollRequest {
    const n = view.byteLength
    if (n + HDR <= MIN_RECV) {
      // the send staging (state.ts isendStage), null while taken: taken while a send is in
      // flight, given back when the point-to-point layer reports the send complete at once (shm
      // batches eager frames by copying them: the array may be reused); otherwise that send
      // keeps it and the next one makes a new one
      const st = this.state
      const stage = st.isendStage ?? new Scratch(MIN_RECV)
      st.isendStage = null
      const b = stage.view(n + HDR)
      this.stage(b, view)
      const req = this._base._collIsend(b, dest, tag)
      let done: unknown = null
      try { done = req.test() } catch { /* failed: its wait() reports it */ }
      if (done !== null && done !== false && st.isendStage === null) st.isendStage = stage
      return req
    }
    if (n <= INLINE_MAX) {
      const b = recvBuffer(this, n + HDR) // a pooled staging buffer (the receive's kind)
      this.stage(b, view)
      const req = this._base._collIsend(b, dest, tag)
      let done: unknown = null
      try { done = req.test() } catch { /* failed: its wait() reports it */ }
      if (done !== null && done !== false) release(this, b.buffer as ArrayBuffer)
      return req
    }
    const d = this._base._collIsend(this.desc, dest, tag)
    const s = this._base._collIsend(view, dest, tag)
    return new PairSend(d, s)
  }

  _collIrecv (view: ArrayBufferView, source: number, tag: number): CollRequest {
    const n = view.byteLength
    if (n <= INLINE_MAX) {
      const b = recvBuffer(this, n + HDR)
      return new InlineRecv(this, this._base._collIrecv(b, source, tag), b, view, source, tag)
    }
    const d = Buffer.allocUnsafe(HDR)
    const dr = this._base._collIrecv(d, source, tag)
    const r = this._base._collIrecv(view, source, tag)
    return new LargeRecv(this, dr, d, r, source, tag)
  }

  /**
   * The blocking tier's small send (util.ts Exchange): descriptor and payload staged in one
   * buffer the point-to-point layer copies at once, written now (Comm._collSendNow). False:
   * not sent (too large for the inline path, or the connection needs the event loop).
   */
  _collSendNow (view: ArrayBufferView, dest: number, tag: number, n = view.byteLength): boolean {
    const base = this._base
    if (n > SYNC_INLINE_MAX || base._collSendNow === undefined) return false
    const st = this.state.syncSend ??= new Scratch(SYNC_SCRATCH)
    const w = st.words
    w[0] = this.w0; w[1] = this.w1; w[2] = this.w2; w[3] = this.w3
    const b = st.view(n + HDR)
    // Bytes, not elements: a float element copy may quiet a signalling NaN (bcast delivers bytes).
    if (n > 0) copyDisjoint(b, HDR, this.sendBytes.of(view, n), 0, n)
    return base._collSendNow(b, dest, tag, n + HDR)
  }

  /**
   * The blocking tier's small receive (Comm._collRecvNow into a pooled scratch, the descriptor
   * checked, the payload copied out): the status, or null (nothing read: use _collIrecv).
   * Mismatches throw as InlineRecv's; a payload still arriving throws ERR_MPI_WOULD_BLOCK whose
   * `request` is an InlineRecv finishing it.
   */
  _collRecvNow (view: ArrayBufferView, source: number, tag: number, n = view.byteLength): CollStatus | null {
    const base = this._base
    if (n > SYNC_INLINE_MAX || base._collRecvNow === undefined) return null
    // The sync scratch, exactly n + HDR bytes long (the point-to-point layer reads into the
    // whole view: a longer one would be cut per call); taken for the call, kept by an
    // InlineRecv that finishes it later (a new scratch is made for the next call then).
    const state = this.state
    const scratch = state.syncRecv ?? new Scratch(SYNC_SCRATCH)
    state.syncRecv = null
    const b = scratch.view(n + HDR)
    let s: CollStatus | null
    try {
      s = base._collRecvNow(b, source, tag, n + HDR)
    } catch (e) {
      if (!wouldBlock(e)) { state.syncRecv = scratch; throw e }
      const err = e as Error & { request: CollRequest }
      err.request = new InlineRecv(this, err.request, b, view, source, tag)
      throw err
    }
    if (s === null) { state.syncRecv = scratch; return null }
    try {
      const w = scratch.words
      if (s.count !== n + HDR || w[0] !== this.w0 || w[1] !== this.w1 || w[2] !== this.w2 || w[3] !== this.w3) {
        return finishInline(this, s, b, view, source, tag, false) // throws the mismatch (or the size's)
      }
      if (n > 0) copyDisjoint(this.recvBytes.of(view, n), 0, b, HDR, n)
      s.count = n // the point-to-point layer's Status is this call's own: no second object per message
      return s
    } finally { state.syncRecv = scratch }
  }

  /** Whether the record's steps serve this call (it has steps, and its `stepsServe` says yes), worked out once per call object. */
  stepsServe (): boolean {
    let v = this.serves
    if (v === null) {
      const rec = this.rec
      v = this.serves = rec.steps !== undefined && (rec.stepsServe === undefined || rec.stepsServe(this))
    }
    return v
  }

  /** The bytes of `view` (n bytes) to receive into (the last small array's kept: state.ts). */
  bytesOf (view: ArrayBufferView, n: number): Uint8Array { return this.recvBytes.of(view, n) }

  _collSeq (): number { return this._base._collSeq() }
  _derive (worldRanks: number[], contextId: number): CollComm { return this._base._derive(worldRanks, contextId) }
  _worldRankOf (rank: number): number { return this._base._worldRankOf(rank) }
  _hostKey (rank: number): string { return this._base._hostKey(rank) }
  _nextContextCandidate (): number { return this._base._nextContextCandidate() }

  /**
   * Check a received descriptor (`b` at `off`) from `source`; null if it matches this call's,
   * else the error (and the abort notice goes out to every other rank, once per call).
   */
  check (b: Buffer, source: number, tag: number): MpiError | null {
    const w0 = u32At(b, 0); const w1 = u32At(b, 4); const w2 = u32At(b, 8); const w3 = u32At(b, 12)
    const abort = ((w0 >>> 16) & 0xff & ABORT) !== 0
    if (!abort && ((w0 & 0xff00ffff) >>> 0) === this.w0 && w1 === this.w1 && w2 === this.w2 && w3 === this.w3) return null
    let err: MpiError
    if ((w0 >>> 24) !== MAGIC) err = mismatch(this.what, `rank ${source} sent a message that is not part of a ${this.what}`)
    else {
      const diff = this.describe(w0, w1, w2, w3, source)
      if (abort) {
        const field = FIELDS[(w0 >>> 17) & 7] ?? ''
        err = mismatch(this.what, diff !== null
          ? `rank ${source} aborted the collective: ${diff}`
          : `rank ${source} aborted the collective: it found ${field !== '' ? `the ${field}` : 'arguments'} differing between it and another rank`)
      } else err = mismatch(this.what, diff as string)
    }
    this.abort(tag, diff0(err.message))
    return err
  }

  /** The first differing field, as "field: this rank X, rank s Y"; null if none differs. */
  private describe (w0: number, w1: number, w2: number, w3: number, s: number): string | null {
    const f = (name: string, mine: string | number, theirs: string | number): string => `${name} differs: this rank ${String(mine)}, rank ${s} ${String(theirs)}`
    const coll = (x: number): string => COLLECTIVE_NAMES[(x >>> 8) & 0xff] ?? `#${(x >>> 8) & 0xff}`
    const op = (x: number): string => { const i = x & 0xffffff; return OP_NAMES[i] ?? `USER${i}` }
    const alg = (x: number): string => algorithmOf(this.what, x >>> 24)?.name ?? `#${x >>> 24}`
    if (((w0 >>> 8) & 0xff) !== ((this.w0 >>> 8) & 0xff)) return f('collective', coll(this.w0), coll(w0))
    if (w2 !== this.w2) return f('root', this.w2, w2)
    if ((w1 & 0xffffff) !== (this.w1 & 0xffffff)) return f('op', op(this.w1), op(w1))
    if ((w0 & 0xff) !== (this.w0 & 0xff)) return f('element kind', KIND_NAMES[this.w0 & 0xff] ?? '?', KIND_NAMES[w0 & 0xff] ?? '?')
    if (w3 !== this.w3) return f('count', this.w3, w3)
    if ((w1 >>> 24) !== (this.w1 >>> 24)) return f('algorithm', alg(this.w1), alg(w1))
    return null
  }

  /** Send the abort notice (this call's descriptor, flagged, with the field found differing) to every other rank, once. */
  abort (tag: number, field = 0): void {
    if (this.aborted) return
    this.aborted = true
    const d = Buffer.from(this.desc)
    d.writeUInt32LE((this.w0 | ((ABORT | ((field & 7) << 1)) << 16)) >>> 0, 0)
    for (let i = 0; i < this.size; i++) {
      if (i === this.rank) continue
      try { this._base._collIsend(d, i, tag).wait().catch(noop) } catch { /* peer gone: nothing to tell */ }
    }
  }

  /**
   * Rooted fan-in (reduce, gather...): the root sends its descriptor to rank (root + 1) mod P,
   * which receives it. Call before the algorithm's first message; await the result with it.
   */
  rootNotice (root: number, tag: number): Promise<unknown> | null {
    const P = this.size
    if (P < 2) return null
    const p = this.rank === root
      ? this._collIsend(EMPTY, (root + 1) % P, tag).wait()
      : this.rank === (root + 1) % P ? this._collIrecv(EMPTY, root, tag).wait() : null
    if (p !== null) p.catch(noop)
    return p
  }
}

/** The field code of a mismatch message (for the abort notice). */
function diff0 (message: string): number {
  for (let i = FIELDS.length - 1; i > 0; i--) if (message.includes(`${FIELDS[i]} differ`) || message.includes(`the ${FIELDS[i]} differing`)) return i
  return /bytes/.test(message) ? 7 : 0
}

/** Size mismatch of a checked message. */
function sizeError (cc: CheckedComm, source: number, got: number, want: number): MpiError {
  return mismatch(cc.what, `rank ${source} sent ${got} bytes, ${want} expected`)
}

/**
 * An inline receive's end: the descriptor in `b` checked against `cc`'s, the payload copied into
 * `view`, the scratch given back (to the receive pool; `pooled` false: the blocking tier's
 * own, which _collRecvNow keeps); the status with the payload's count. Throws the mismatch
 * (after the abort notice) when the descriptor or the size differs.
 */
function finishInline (cc: CheckedComm, s: CollStatus, b: Buffer, view: ArrayBufferView, source: number, tag: number, pooled = true): CollStatus {
  if (s.count < HDR) { const err = mismatch(cc.what, `rank ${source} sent ${s.count} bytes without a collective descriptor`); cc.abort(tag); throw err }
  const e = cc.check(b, source, tag)
  if (e !== null) throw e
  const n = s.count - HDR
  if (n !== view.byteLength) { const err = sizeError(cc, source, n, view.byteLength); cc.abort(tag, 7); throw err }
  if (n > 0) {
    copyDisjoint(cc.bytesOf(view, n), 0, b, HDR, n)
  }
  if (pooled) { if (b.byteLength === MIN_RECV && cc.state.recvPool.length < 32) cc.state.recvPool.push(b); else if (b.byteLength > MIN_RECV) release(cc, b.buffer as ArrayBuffer) }
  return { source: s.source, tag: s.tag, count: n }
}

class InlineRecv implements CollRequest {
  private st: CollStatus | null = null
  private err: unknown = null
  private p: Promise<CollStatus> | null = null
  constructor (private readonly cc: CheckedComm, private readonly r: CollRequest, private readonly b: Buffer,
    private readonly view: ArrayBufferView, private readonly source: number, private readonly tag: number) {}

  private finish (s: CollStatus): CollStatus {
    if (this.st !== null) return this.st
    try {
      this.st = finishInline(this.cc, s, this.b, this.view, this.source, this.tag)
    } catch (e) {
      this.err = e
      throw e
    }
    return this.st
  }

  private failed (e: unknown): never {
    if (isMpiError(e, 'ERR_MPI_TRUNCATE')) {
      this.err = mismatch(this.cc.what, `rank ${this.source} sent more than the ${this.view.byteLength} bytes expected`)
      this.cc.abort(this.tag, 7)
    } else this.err = e
    throw this.err
  }

  test (): CollStatus | null {
    if (this.st !== null) return this.st
    if (this.err !== null) throw this.err
    let s: CollStatus | null | false
    try { s = this.r.test() } catch (e) { this.failed(e) }
    if (s === null || s === false) return null
    return this.finish(s)
  }

  waitSync (): CollStatus {
    if (this.st !== null) return this.st
    if (this.err !== null) throw this.err
    let s: CollStatus
    try { s = waitNow(this.r) } catch (e) { if (wouldBlock(e)) throw e; this.failed(e) }
    return this.finish(s)
  }

  wait (): Promise<CollStatus> {
    if (this.st !== null) return Promise.resolve(this.st)
    if (this.err !== null) return Promise.reject(this.err)
    if (this.p === null) {
      const p = this.r.wait() // on shm this spins first and often completes the receive synchronously
      try {
        const s = this.test()
        if (s !== null) { p.catch(noop); return Promise.resolve(s) }
      } catch (e) { p.catch(noop); return Promise.reject(e) }
      this.p = p.then((s) => this.finish(s), (e) => this.failed(e))
    }
    return this.p
  }
}

class LargeRecv implements CollRequest {
  private checked = false
  private err: unknown = null
  private p: Promise<CollStatus> | null = null
  constructor (private readonly cc: CheckedComm, private readonly dr: CollRequest, private readonly d: Buffer,
    private readonly r: CollRequest, private readonly source: number, private readonly tag: number) {
    r.wait().catch(noop)
  }

  private checkDesc (s: CollStatus): void {
    if (this.checked) return
    const cc = this.cc
    if (s.count !== HDR) { this.err = mismatch(cc.what, `rank ${this.source} sent ${s.count} bytes where a collective descriptor was expected`); cc.abort(this.tag, 7); throw this.err }
    const e = cc.check(this.d, this.source, this.tag)
    if (e !== null) { this.err = e; throw e }
    this.checked = true
  }

  private descFailed (e: unknown): never {
    if (isMpiError(e, 'ERR_MPI_TRUNCATE')) {
      this.err = mismatch(this.cc.what, `rank ${this.source} sent a larger message where a collective descriptor was expected (sizes differ)`)
      this.cc.abort(this.tag, 7)
    } else this.err = e
    throw this.err
  }

  test (): CollStatus | null {
    if (this.err !== null) throw this.err
    if (!this.checked) {
      let s: CollStatus | null | false
      try { s = this.dr.test() } catch (e) { this.descFailed(e) }
      if (s === null || s === false) return null
      this.checkDesc(s)
    }
    const s = this.r.test()
    return s === null || s === false ? null : s
  }

  waitSync (): CollStatus {
    if (this.err !== null) throw this.err
    if (!this.checked) {
      let s: CollStatus
      try { s = waitNow(this.dr) } catch (e) { if (wouldBlock(e)) throw e; this.descFailed(e) }
      this.checkDesc(s)
    }
    return waitNow(this.r)
  }

  wait (): Promise<CollStatus> {
    if (this.err !== null) return Promise.reject(this.err)
    if (this.p === null) {
      this.p = this.dr.wait().then((s) => { this.checkDesc(s); return this.r.wait() }, (e) => this.descFailed(e))
    }
    return this.p
  }
}

class PairSend implements CollRequest {
  constructor (private readonly d: CollRequest, private readonly s: CollRequest) {}
  test (): CollStatus | null {
    const a = this.d.test(); const b = this.s.test()
    return a === null || a === false || b === null || b === false ? null : b
  }

  waitSync (): CollStatus {
    waitNow(this.d)
    return waitNow(this.s)
  }

  wait (): Promise<CollStatus> {
    return Promise.all([this.d.wait(), this.s.wait()]).then((a) => a[1])
  }
}

/** True for MpiError ERR_MPI_WOULD_BLOCK (it passes through the checked requests unchanged). */
function wouldBlock (e: unknown): boolean {
  return isMpiError(e, 'ERR_MPI_WOULD_BLOCK')
}
