/**
 * Point-to-point helpers of the collectives: tags, sends and receives with size checks (a receive
 * whose size differs from what this rank expects is an argument mismatch between ranks:
 * ERR_MPI_COLL_MISMATCH), pairwise exchanges, segmenting, views and per-communicator scratch.
 *
 * Every request this file creates is waited on, and every wait promise has a handler attached at
 * once, so a rejection (ERR_MPI_PEER_LOST from the point-to-point layer) propagates to the
 * collective's promise and never becomes an unhandled rejection or a dangling wait.
 */
import type { CollComm, CollRequest, CollStatus, NumericArray } from './types'
import { runAsync, waitNow } from './drive'
import { isMpiError, mpiError } from '../errors'
import type { MpiError } from '../errors'
import type { CollSteps } from './drive'
import { stateOf } from './state'

/**
 * The tag of a collective's messages: (seq mod 2^15) << 16, non-negative. `round` is NOT in the
 * tag (kept as a parameter to document the algorithms' steps): every message of one call between
 * one pair of ranks has the same tag and matches in posting order (the algorithms post and send
 * each pair's messages in the same order), so ranks whose arguments differ (other collective,
 * algorithm, root) still match each other's messages and see the difference in the descriptor
 * (check.ts) instead of waiting for a tag that never comes.
 */
export function collTag (seq: number, round: number): number {
  void round
  return (seq & 0x7fff) << 16
}

/** A byte view of any ArrayBufferView (no copy). */
export function bytes (v: ArrayBufferView): Uint8Array {
  return v instanceof Uint8Array ? v : new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
}

/**
 * The largest buffer whose view a per-call cache may keep (BytesOf, the blocking tier's last
 * shapes, Op.apply's last array): such a cache never holds a large buffer alive.
 */
const KEEP_BUFFER = 64 * 1024
/**
 * Whether a cache may keep `v` for the next call: its buffer is at most KEEP_BUFFER bytes (read
 * on a miss only; reading `.buffer` of a small array V8 keeps on its heap moves it off the heap,
 * once).
 */
export function keepable (v: ArrayBufferView): boolean {
  return v.buffer.byteLength <= KEEP_BUFFER
}

/**
 * The blocking tier's small path (check.ts _collSendNow, _collRecvNow): its staging and receive
 * scratch, and the largest payload it carries, bytes. Up to it a step's message is written and
 * read as sendSync/recvSync's are (no Request), and barrier, bcast and allreduce take their
 * direct paths (select.ts records' `direct`).
 */
export const SYNC_INLINE_MAX = 4096

/** An empty byte view. */
export const EMPTY = new Uint8Array(0)
/**
 * The bytes of the last small array staged (or filled), kept for the next call: making a
 * Uint8Array view costs ~40 ns (`node bench/mpi-coll-layer.js`), and the blocking tier's loops pass the same arrays call after
 * call. Only views of keepable() buffers are kept; a view whose length changed (a resizable
 * buffer) gets a new one.
 */
export class BytesOf {
  private view: ArrayBufferView | null = null
  private bytes: Uint8Array = EMPTY
  private length = 0
  /** `n`: view.byteLength (the caller's: a typed array's length read is a call on Node 20). */
  of (view: ArrayBufferView, n: number): Uint8Array {
    // the kept view first (`instanceof` walks the prototype chain)
    if (view === this.view && n === this.length) return this.bytes
    if (view instanceof Uint8Array) return view
    const b = bytes(view)
    if (keepable(view)) { this.view = view; this.bytes = b; this.length = b.length }
    return b
  }
}

/** A view of the same kind as `like` over `n` elements of `ab` from element `off`. */
export function viewLike<T extends NumericArray> (like: T, ab: ArrayBufferLike, off: number, n: number): T {
  const C = like.constructor as new (b: ArrayBufferLike, o: number, n: number) => T
  return new C(ab, off * like.BYTES_PER_ELEMENT, n)
}

function noop (): void {}

/** A mismatch error naming what this rank expected. */
export function mismatch (what: string, detail: string): MpiError {
  return mpiError('ERR_MPI_COLL_MISMATCH', `${what}: arguments differ between ranks (${detail}); every rank must pass matching counts, root and op`)
}

/** The mismatch a receive's ERR_MPI_TRUNCATE means here, or the error itself. */
function recvError (err: unknown, expect: number, what: string, source: number): unknown {
  if (isMpiError(err, 'ERR_MPI_TRUNCATE')) return mismatch(what, `rank ${source} sent more than the ${expect} bytes expected`)
  return err
}

/** A received message of another size than `expect` bytes is ERR_MPI_COLL_MISMATCH. */
function checkCount (st: CollStatus, expect: number, what: string, source: number): void {
  if (st.count !== expect) throw mismatch(what, `rank ${source} sent ${st.count} bytes, ${expect} expected`)
}

/**
 * Steps (drive.ts): wait for receive `r` of exactly `expect` bytes; a different size (or the
 * point-to-point layer's ERR_MPI_TRUNCATE) is ERR_MPI_COLL_MISMATCH. Other errors pass through.
 */
export function * received (r: CollRequest, expect: number, what: string, source: number): CollSteps {
  let st: CollStatus
  try {
    st = yield r
  } catch (err) {
    throw recvError(err, expect, what, source)
  }
  checkCount(st, expect, what, source)
}

/** Start waiting on a request, with a handler attached (the returned promise still rejects). */
export function waiting (r: CollRequest): Promise<CollStatus> {
  const p = r.wait()
  p.catch(noop)
  return p
}

/** Send `view` to `dest`; resolves when the send is complete. */
export function send (comm: CollComm, view: ArrayBufferView, dest: number, tag: number): Promise<CollStatus> {
  return comm._collIsend(view, dest, tag).wait()
}

/**
 * One step's send and/or receive as a single request that starts at its first use, in the tier
 * that uses it (drive.ts):
 * - waitSync (the blocking tier): the send goes out now without a request when it can
 *   (CollComm._collSendNow), the receive is read straight off the connection (_collRecvNow);
 *   either falls back to _collIsend/_collIrecv and their waitSync. The blocking collectives'
 *   small messages thereby cost what sendSync/recvSync cost, not a request each.
 * - test/wait (the awaited tier, or the blocking tier's rest after ERR_MPI_WOULD_BLOCK): the
 *   receive is posted, then the send, as before; whatever the blocking tier already did is kept.
 * Resolves with the receive's status (the send's when there is no receive); errors of either
 * side are thrown. `sv`/`rv` null: no send/receive.
 */
export class Exchange implements CollRequest {
  private sent = false
  private sreq: CollRequest | null = null
  private rst: CollStatus | null = null
  private rreq: CollRequest | null = null
  private sst: CollStatus | null = null
  constructor (private readonly comm: CollComm, private readonly sv: ArrayBufferView | null, private readonly dest: number,
    private readonly rv: ArrayBufferView | null, private readonly source: number, private readonly tag: number) {
    if (sv === null) this.sent = true
  }

  /** The awaited tier's start: the receive posted, then the send, for the parts not yet begun. */
  private start (): void {
    if (this.rv !== null && this.rst === null && this.rreq === null) this.rreq = this.comm._collIrecv(this.rv, this.source, this.tag)
    if (!this.sent && this.sreq === null) this.sreq = this.comm._collIsend(this.sv as ArrayBufferView, this.dest, this.tag)
  }

  private result (): CollStatus {
    return this.rst ?? this.sst ?? { source: this.source, tag: this.tag, count: 0 }
  }

  waitSync (): CollStatus {
    const comm = this.comm
    if (!this.sent && this.sreq === null && this.rv !== null && this.rst === null && this.rreq === null &&
        this.dest === this.source && (this.sv as ArrayBufferView).byteLength > ORDERED_EXCHANGE_BYTES) {
      // A large pairwise exchange, one direction at a time: the lower rank sends first.
      if (comm.rank < this.dest) {
        this.sreq = comm._collIsend(this.sv as ArrayBufferView, this.dest, this.tag)
        this.sst = waitNow(this.sreq)
      } else {
        this.rreq = comm._collIrecv(this.rv, this.source, this.tag)
        this.rst = waitNow(this.rreq)
      }
    }
    if (!this.sent && this.sreq === null) {
      if (comm._collSendNow !== undefined && comm._collSendNow(this.sv as ArrayBufferView, this.dest, this.tag)) this.sent = true
      else this.sreq = comm._collIsend(this.sv as ArrayBufferView, this.dest, this.tag)
    }
    if (this.rv !== null && this.rst === null) {
      if (this.rreq === null) {
        try {
          this.rst = comm._collRecvNow !== undefined ? comm._collRecvNow(this.rv, this.source, this.tag) : null
        } catch (e) {
          const r = (e as { code?: string, request?: CollRequest }).request
          if (isMpiError(e, 'ERR_MPI_WOULD_BLOCK') && r !== undefined) this.rreq = r
          throw e
        }
        if (this.rst === null) this.rreq = comm._collIrecv(this.rv, this.source, this.tag)
      }
      if (this.rreq !== null) this.rst = waitNow(this.rreq)
    }
    if (this.sreq !== null && this.sst === null) this.sst = waitNow(this.sreq)
    return this.result()
  }

  test (): CollStatus | null {
    this.start()
    if (this.rreq !== null && this.rst === null) {
      const s = this.rreq.test()
      if (s === null || s === false) return null
      this.rst = s
    }
    if (this.sreq !== null && this.sst === null) {
      const s = this.sreq.test()
      if (s === null || s === false) return null
      this.sst = s
    }
    return this.result()
  }

  async wait (): Promise<CollStatus> {
    this.start()
    const r = this.rreq !== null && this.rst === null ? waiting(this.rreq) : null
    const s = this.sreq !== null && this.sst === null ? waiting(this.sreq) : null
    if (r !== null) this.rst = await r
    if (s !== null) this.sst = await s
    return this.result()
  }
}

/**
 * In the blocking tier, a pairwise exchange (dest = source) whose payload is larger than this
 * goes one direction at a time: the lower rank sends, then receives; the higher rank receives,
 * then sends. Both payloads at once do not fit the shm rings (1 MiB each way by default): each
 * rank's DATA waits for the other to read while it writes its own, which only the event loop's
 * path interleaves (ERR_MPI_WOULD_BLOCK). One direction at a time, each payload streams through
 * the ring while its receiver copies it out. bench/mpi-exchange.js measures both orders
 * (FASTSOCK_MPI_ORDERED_BYTES sets the threshold, for that).
 */
export const ORDERED_EXCHANGE_BYTES = orderedBytes(process.env.FASTSOCK_MPI_ORDERED_BYTES)
/** FASTSOCK_MPI_ORDERED_BYTES (bytes, for measurement: bench/mpi-exchange.js), else 512 KiB. */
function orderedBytes (raw: string | undefined): number {
  const v = Number(raw)
  return raw !== undefined && raw.trim() !== '' && v >= 0 ? v : 512 * 1024
}

/**
 * The blocking tier's exchange with one partner, without the steps' machinery (generators, an
 * Exchange, the drive loop): `sv` written now (comm._collSendNow: small messages), then exactly
 * rv.byteLength bytes read now (_collRecvNow) into `rv`; the same messages, tag and order as
 * sendrecvSteps, so the partner may run either, or the awaited tier. Returns null when the
 * exchange completed here, else the rest as steps for the caller to drive: the whole exchange
 * (sendrecvSteps) when the send could not go out now, else the receive (a message already
 * queued, or a payload still arriving). Errors as the steps'. The 2-rank allreduce uses it (reduce.ts allreducePairSync). `sn`, `rn`:
 * sv.byteLength and rv.byteLength when the caller has them (each read is a call on Node 20).
 */
export function exchangeNow (comm: CollComm, sv: ArrayBufferView, rv: ArrayBufferView, partner: number, tag: number, what: string,
  sn = sv.byteLength, rn = rv.byteLength): CollSteps | null {
  if (comm._collSendNow === undefined || !comm._collSendNow(sv, partner, tag, sn)) return sendrecvSteps(comm, sv, partner, rv, partner, tag, what)
  return recvNow(comm, rv, partner, tag, what, rn)
}

/**
 * The receive of exactly rv.byteLength bytes from `source`, read now when it can be
 * (comm._collRecvNow): null when it completed here, else the rest as steps (the steps' own
 * receive, or the one a payload still arriving needs). Mismatches throw as recvSteps'. `n`:
 * rv.byteLength when the caller has it.
 */
export function recvNow (comm: CollComm, rv: ArrayBufferView, source: number, tag: number, what: string, n = rv.byteLength): CollSteps | null {
  let st: CollStatus | null
  try {
    st = comm._collRecvNow !== undefined ? comm._collRecvNow(rv, source, tag, n) : null
  } catch (e) {
    const r = (e as { request?: CollRequest }).request
    if (isMpiError(e, 'ERR_MPI_WOULD_BLOCK') && r !== undefined) return received(r, n, what, source)
    throw recvError(e, n, what, source)
  }
  if (st === null) return recvSteps(comm, rv, source, tag, what)
  checkCount(st, n, what, source)
  return null
}

/** Steps: receive exactly view.byteLength bytes from `source` into `view` (else ERR_MPI_COLL_MISMATCH). */
export function recvSteps (comm: CollComm, view: ArrayBufferView, source: number, tag: number, what: string): CollSteps {
  return received(new Exchange(comm, null, -1, view, source, tag), view.byteLength, what, source)
}

/** Receive exactly view.byteLength bytes from `source` into `view` (else ERR_MPI_COLL_MISMATCH). */
export function recv (comm: CollComm, view: ArrayBufferView, source: number, tag: number, what: string): Promise<void> {
  return runAsync(recvSteps(comm, view, source, tag, what))
}

/**
 * Steps: send `sv` to `dest` while receiving exactly rv.byteLength bytes from `source` into `rv`
 * (the receive is posted first and waited for first; a send left unwaited after a failed
 * receive makes no promise, so nothing is left unhandled).
 */
export function sendrecvSteps (comm: CollComm, sv: ArrayBufferView, dest: number, rv: ArrayBufferView, source: number, tag: number, what: string): CollSteps {
  return received(new Exchange(comm, sv, dest, rv, source, tag), rv.byteLength, what, source)
}

/** sendrecvSteps in the awaited tier (completed requests are taken with test(): no promise). */
export function sendrecv (comm: CollComm, sv: ArrayBufferView, dest: number, rv: ArrayBufferView, source: number, tag: number, what: string): Promise<void> {
  return runAsync(sendrecvSteps(comm, sv, dest, rv, source, tag, what))
}

/** Wait for every promise; the first rejection rejects (all have handlers). */
export async function all (ps: Array<Promise<unknown>>): Promise<void> {
  for (const p of ps) p.catch(noop)
  await Promise.all(ps)
}

/**
 * Default pipeline segment (bytes) of the segmented algorithms (binomial bcast/reduce, ring and
 * Rabenseifner exchanges): 1 MiB. Measured on this 2-vCPU VM (P = 2, 1 MiB Rabenseifner allreduce,
 * best of 5; a loop of `allreduce(..., { segmentBytes })` calls that no bench script keeps: re-measure
 * with one before moving it): 64 KiB segments 6.5 ms, 256 KiB 7.0 ms, 1 MiB (unsegmented) 4.2 ms. The point-to-point
 * layer's progress runs on the same JS thread as the reduction, so segments inside one exchange add
 * per-message cost without overlap; across tree levels (binomial bcast/reduce, P ≥ 3) different
 * processes do overlap, which pays from a few MiB. Override per call with `segmentBytes`.
 */
export const DEFAULT_SEGMENT_BYTES = 1024 * 1024

/** The largest power of two ≤ p (p ≥ 1). */
export function pof2Below (p: number): number {
  let x = 1
  while (x * 2 <= p) x *= 2
  return x
}

/** Block partition of `n` units over `p` parts: start of part i (parts differ by at most one unit). */
export function blockStart (n: number, p: number, i: number): number {
  const q = Math.floor(n / p)
  const r = n % p
  return i * q + Math.min(i, r)
}

/**
 * A scratch buffer of at least `n` bytes from this communicator's pool (reused across calls, so
 * the small path does not allocate); give it back with `release`. Concurrent collectives on one
 * communicator each get their own buffer.
 */
export function scratch (comm: CollComm, n: number): ArrayBuffer {
  const pool = stateOf(comm).pool
  for (let i = pool.length - 1; i >= 0; i--) {
    if (pool[i].byteLength >= n) { const b = pool[i]; pool[i] = pool[pool.length - 1]; pool.pop(); return b }
  }
  let size = 256
  while (size < n) size *= 2
  return new ArrayBuffer(size)
}

/**
 * Return a scratch buffer to the communicator's pool (at most 4 kept, at most 64 MiB each); a
 * full pool keeps the larger buffers. (It kept the first four: after a sweep of smaller sizes a
 * 1 MiB allreduce at P = 2 made its scratch anew on every call, and the external memory made V8
 * collect garbage; `node bench/mpi-waits.js --patterns allreduce-sync-osu --bytes
 * 65536,131072,262144,524288,1048576`: docs/mpi-benchmarks.md, "The large allreduce's averages".)
 */
export function release (comm: CollComm, b: ArrayBuffer): void {
  if (b.byteLength > 64 * 1024 * 1024) return
  const pool = stateOf(comm).pool
  if (pool.length < 4) { pool.push(b); return }
  let min = 0
  for (let i = 1; i < pool.length; i++) if (pool[i].byteLength < pool[min].byteLength) min = i
  if (pool[min].byteLength < b.byteLength) pool[min] = b
}

/**
 * `n` bytes from src[sOff..] to dst[dOff..] of two arrays that do not overlap: a loop up to 64
 * bytes (no builtin call, no `.buffer` read: each is a runtime call for a small array V8 keeps on
 * its heap), set() above. Arrays that may share memory: copyBytes.
 */
export function copyDisjoint (dst: Uint8Array, dOff: number, src: Uint8Array, sOff: number, n: number): void {
  if (n <= 64) { for (let i = 0; i < n; i++) dst[dOff + i] = src[sOff + i] } else dst.set(src.subarray(sOff, sOff + n), dOff)
}

/** Copy `n` bytes (no-op for n = 0 or same memory; overlapping ranges copied as by memmove). */
export function copyBytes (dst: Uint8Array, doff: number, src: Uint8Array, soff: number, n: number): void {
  if (n <= 0) return
  if (dst.buffer === src.buffer && dst.byteOffset + doff === src.byteOffset + soff) return
  dst.set(src.subarray(soff, soff + n), doff)
}
