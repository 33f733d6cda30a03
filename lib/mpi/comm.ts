/**
 * Comm: a communicator (MPI_Comm), the group of ranks a program talks to, with point-to-point
 * operations on typed arrays (buffer tier) and on structured-clone values (object tier, as
 * mpi4py's lower-case methods), and the collectives of lib/mpi/coll (thin methods here).
 *
 * Ranks are the communicator's (0..size-1). Buffers are any TypedArray (BigInt64Array too),
 * DataView or Buffer, sent as their raw bytes; counts in Status are bytes. Every communicator has
 * two context ids on the wire: 2·id for point-to-point, 2·id+1 for its collectives, so the two
 * never match each other, nor another communicator's traffic.
 */
import * as v8 from 'v8'
import type { Device } from './device'
import { Request, waitAll } from './request'
import { Status } from './status'
import { bytesOf, checkRank, checkTag } from './views'
import { finalized, invalidArgType } from './errors'
import * as collModule from './coll'
import type { CollOptions, CollHandle, InPlace, NumericArray, Op } from './coll'
import type { CollState } from './coll/state'

/**
 * The collectives' entry points as a plain object, copied once: coll/index's own exports object is
 * in V8's dictionary mode (its re-exports are accessors), where each `coll.x(...)` is a generic
 * property lookup, on every blocking 8-byte call too (a Builtins_LoadIC per call in `perf`).
 */
const coll = { ...collModule }

/** MPI_ANY_SOURCE: receive from any rank. */
export const ANY_SOURCE = -1
/** MPI_ANY_TAG: receive with any tag. */
export const ANY_TAG = -1
/** MPI_PROC_NULL: a rank that sends and receives nothing (completes at once, count 0). */
export const PROC_NULL = -2

const SOURCE_SPECIALS = [ANY_SOURCE, PROC_NULL] as const
const DEST_SPECIALS = [PROC_NULL] as const
const RESOLVED: Promise<void> = Promise.resolve()
const noop = (): void => {}

/** What every communicator of the process shares: the device, the hosts, the context ids used. */
export interface CommShared {
  device: Device
  /** Host key of each world rank (same string = same host). */
  hosts: string[]
  /** The largest communicator id used by this process. */
  maxId: number
}

/** A communicator; see the module comment. Made by `init()` (the world) and dup/split. */
export class Comm {
  /** This process's rank in the communicator. */
  readonly rank: number
  /** The number of ranks. */
  readonly size: number
  /** This process's rank among the communicator's ranks on its host. */
  readonly localRank: number
  /** The number of the communicator's ranks on this host. */
  readonly localSize: number
  /** @internal */ readonly _shared: CommShared
  /** @internal world rank of each rank */ readonly _ranks: number[]
  /** @internal communicator id (wire contexts 2·id and 2·id+1) */ readonly _id: number
  private readonly ctx: number
  private readonly collCtx: number
  private seq = 0
  private freed = false

  /** @internal use init(), dup() or split(). */
  constructor (shared: CommShared, worldRanks: number[], id: number, localRank?: number, localSize?: number) {
    this._shared = shared
    this._ranks = worldRanks
    this._id = id
    this.ctx = 2 * id
    this.collCtx = 2 * id + 1
    if (id > shared.maxId) shared.maxId = id
    shared.device.registerContexts(id, worldRanks) // frames on its contexts must name their sender's own rank
    const me = worldRanks.indexOf(shared.device.rank)
    this.rank = me
    this.size = worldRanks.length
    if (localRank !== undefined && localSize !== undefined) {
      this.localRank = localRank
      this.localSize = localSize
    } else {
      const host = shared.hosts[shared.device.rank]
      const local = worldRanks.filter(w => shared.hosts[w] === host)
      this.localRank = local.indexOf(shared.device.rank)
      this.localSize = local.length
    }
  }

  // ---- point-to-point, buffer tier -----------------------------------------------------------

  /**
   * MPI_Isend: starts sending `buf`'s bytes to rank `dest` with `tag` (0..2^31-1). Do not change
   * `buf` until the Request completes. Throws ERR_INVALID_ARG_TYPE / ERR_OUT_OF_RANGE on bad
   * arguments; the Request fails with ERR_MPI_PEER_LOST when `dest` is lost.
   */
  isend (buf: ArrayBufferView, dest: number, tag = 0): Request {
    const bytes = bytesOf(buf)
    checkRank(dest, this.size, 'dest', DEST_SPECIALS)
    checkTag(tag, false)
    return this.startSend(this.ctx, bytes, dest, tag)
  }

  /**
   * MPI_Irecv: starts receiving a message from `source` (or ANY_SOURCE) with `tag` (or ANY_TAG)
   * into `buf`. The Request's Status has the actual source, tag and count (bytes). Fails with
   * ERR_MPI_TRUNCATE when the message is larger than `buf` (it stays matchable), ERR_MPI_PEER_LOST.
   */
  irecv (buf: ArrayBufferView, source = ANY_SOURCE, tag = ANY_TAG): Request {
    const bytes = bytesOf(buf)
    checkRank(source, this.size, 'source', SOURCE_SPECIALS)
    checkTag(tag, true)
    return this.startRecv(this.ctx, bytes, source, tag)
  }

  /** MPI_Send: resolves once `buf` may be reused (eager: in the channel; rendezvous: delivered). */
  send (buf: ArrayBufferView, dest: number, tag = 0): Promise<void> {
    const req = this.isend(buf, dest, tag)
    if (req._status !== null) return RESOLVED
    return req.wait().then(noop)
  }

  /** MPI_Recv: resolves with the Status once the message is in `buf`. */
  recv (buf: ArrayBufferView, source = ANY_SOURCE, tag = ANY_TAG): Promise<Status> {
    return this.irecv(buf, source, tag).wait()
  }

  /**
   * MPI_Send in its blocking form (the call OSU's osu_latency times): returns once `buf` may be
   * reused, without the event loop (Request.waitSync: on shm, the message goes straight into
   * the ring; a rendezvous-size one waits for the receiver's CTS synchronously). Throws
   * MpiError ERR_MPI_WOULD_BLOCK when it cannot complete without the event loop now (the first
   * message to a rank, whose connection is still being set up; not shm; asynchronous writes
   * queued): the send goes on, `await err.request.wait()` completes it. Same argument errors
   * as send().
   */
  sendSync (buf: ArrayBufferView, dest: number, tag = 0): void {
    const bytes = bytesOf(buf)
    checkRank(dest, this.size, 'dest', DEST_SPECIALS)
    checkTag(tag, false)
    if (dest >= 0 && !this.freed && this._shared.device.sendEagerSync(this.ctx, this.rank, this._ranks[dest], tag, bytes)) return
    const req = this.startSend(this.ctx, bytes, dest, tag)
    if (req._status === null) req.waitSync()
  }

  /**
   * MPI_Recv in its blocking form: returns the Status once the message is in `buf`, reading the
   * connection synchronously (Request.waitSync: the polling window's spin, then asleep on the
   * peer's doorbell; an ANY_SOURCE receive spins over every connection). The event loop does
   * not run meanwhile. Throws ERR_MPI_WOULD_BLOCK as sendSync (the receive stays posted:
   * `await err.request.wait()`), ERR_MPI_TRUNCATE, ERR_MPI_PEER_LOST as recv().
   */
  recvSync (buf: ArrayBufferView, source = ANY_SOURCE, tag = ANY_TAG): Status {
    const bytes = bytesOf(buf)
    checkRank(source, this.size, 'source', SOURCE_SPECIALS)
    checkTag(tag, true)
    if (source >= 0 && !this.freed) {
      const status = this._shared.device.recvEagerSync(this.ctx, source, this._ranks[source], tag, bytes)
      if (status !== null) return status
    }
    return this.startRecv(this.ctx, bytes, source, tag).waitSync()
  }

  /** MPI_Sendrecv: sends `sendbuf` to `dest` and receives into `recvbuf` from `source`; resolves the receive's Status. */
  async sendrecv (sendbuf: ArrayBufferView, dest: number, sendtag: number, recvbuf: ArrayBufferView, source = ANY_SOURCE, recvtag = ANY_TAG): Promise<Status> {
    const r = this.irecv(recvbuf, source, recvtag)
    const s = this.isend(sendbuf, dest, sendtag)
    const [status] = await waitAll([r, s])
    return status
  }

  /** MPI_Iprobe: the Status of a matching message that arrived (not received), else null. */
  iprobe (source = ANY_SOURCE, tag = ANY_TAG): Status | null {
    checkRank(source, this.size, 'source', SOURCE_SPECIALS)
    checkTag(tag, true)
    if (source === PROC_NULL) return new Status(PROC_NULL, ANY_TAG, 0)
    return this._shared.device.iprobe(this.ctx, source, source >= 0 ? this._ranks[source] : -1, tag)
  }

  /** MPI_Probe: resolves with the Status of a matching message once it arrived (not received). */
  probe (source = ANY_SOURCE, tag = ANY_TAG): Promise<Status> {
    checkRank(source, this.size, 'source', SOURCE_SPECIALS)
    checkTag(tag, true)
    if (source === PROC_NULL) return Promise.resolve(new Status(PROC_NULL, ANY_TAG, 0))
    return this._shared.device.probe(this.ctx, source, source >= 0 ? this._ranks[source] : -1, tag, this._ranks)
  }

  // ---- object tier ----------------------------------------------------------------------------

  /**
   * Sends any structured-clone value (v8.serialize) to `dest` with `tag`. Throws at once
   * TypeError ERR_INVALID_ARG_TYPE for a value structured clone cannot copy (a function, a
   * symbol...), with the serializer's error as `cause`; then as send().
   */
  sendObject (obj: unknown, dest: number, tag = 0): Promise<void> {
    let bytes: Buffer
    try {
      bytes = v8.serialize(obj)
    } catch (err) {
      throw Object.assign(invalidArgType(`sendObject: the value cannot be sent (structured clone): ${(err as Error).message}`), { cause: err })
    }
    return this.send(bytes, dest, tag)
  }

  /**
   * Receives a value sent by sendObject from `source` (or ANY_SOURCE) with `tag` (or ANY_TAG);
   * with `{ status: true }`, resolves `{ value, status }` (the Status: actual source, tag, count
   * in bytes of the serialized value), as mpi4py's `recv(status=...)`. Errors as recv().
   */
  recvObject (source?: number, tag?: number): Promise<unknown>
  recvObject (source: number, tag: number, options: { status: true }): Promise<{ value: unknown, status: Status }>
  async recvObject (source = ANY_SOURCE, tag = ANY_TAG, options?: { status?: boolean }): Promise<unknown> {
    const st = await this.probe(source, tag)
    const buf = Buffer.allocUnsafe(st.count)
    const status = await this.recv(buf, st.source, st.tag)
    const value = v8.deserialize(buf)
    return options?.status === true ? { value, status } : value
  }

  /**
   * The fastsock rung of the connection to `rank` ('shm', 'unix', 'verbs', 'tcp', ...), 'self'
   * for this rank, null while no connection was made yet (connections are made on first use;
   * `await comm.connect(rank)` makes one).
   */
  transportOf (rank: number): string | null {
    checkRank(rank, this.size, 'rank', [])
    return this._shared.device.transportOf(this._ranks[rank])
  }

  /** Makes the connection to `rank` now (otherwise made by the first message). */
  connect (rank: number): Promise<void> {
    checkRank(rank, this.size, 'rank', [])
    return this._shared.device.connectTo(this._ranks[rank])
  }

  // ---- internals for the collectives (lib/mpi/coll, CollComm) ---------------------------------

  /** @internal isend on this communicator's collective context. */
  _collIsend (view: ArrayBufferView, dest: number, tag: number): Request {
    return this.startSend(this.collCtx, bytesOf(view), dest, tag)
  }

  /** @internal irecv on this communicator's collective context (`source` a specific rank). */
  _collIrecv (view: ArrayBufferView, source: number, tag: number): Request {
    return this.startRecv(this.collCtx, bytesOf(view), source, tag)
  }

  /**
   * @internal the blocking tier's eager send on the collective context (Device.sendEagerSync,
   * as sendSync's): true when the message went out now; false: use _collIsend.
   */
  _collSendNow (view: ArrayBufferView, dest: number, tag: number, n?: number): boolean {
    this.checkLive()
    return this._shared.device.sendEagerSync(this.collCtx, this.rank, this._ranks[dest], tag, bytesOf(view), n)
  }

  /**
   * @internal the blocking tier's receive from rank `source` on the collective context
   * (Device.recvEagerSync, as recvSync's): its Status, or null when _collIrecv must run. Throws
   * ERR_MPI_WOULD_BLOCK (a payload arriving through the event loop: `err.request`).
   */
  _collRecvNow (view: ArrayBufferView, source: number, tag: number, n?: number): Status | null {
    this.checkLive()
    return this._shared.device.recvEagerSync(this.collCtx, source, this._ranks[source], tag, bytesOf(view), n)
  }

  /**
   * @internal bounds each of this process's blocking waits to `ms` (Infinity: unbounded): the
   * awaited collectives run the blocking tier's code under it (coll/tier.ts, Device.blockMs).
   */
  _collBlockFor (ms: number): void { this._shared.device.blockMs = ms }

  /** @internal the next collective sequence number (same on every rank). */
  _collSeq (): number { return this.seq++ }

  /** @internal a communicator over `worldRanks` on communicator id `contextId`. */
  _derive (worldRanks: number[], contextId: number): Comm {
    return new Comm(this._shared, worldRanks, contextId)
  }

  /** @internal world rank of `rank`. */
  _worldRankOf (rank: number): number { return this._ranks[rank] }

  /** @internal host key of `rank` (same string = same host). */
  _hostKey (rank: number): string { return this._shared.hosts[this._ranks[rank]] }

  /** @internal a communicator id greater than every id this process used. */
  _nextContextCandidate (): number { return this._shared.maxId + 1 }

  /** @internal called by free(). */
  _free (): void { this.freed = true }

  private startSend (ctx: number, bytes: Uint8Array, dest: number, tag: number): Request {
    if (dest === PROC_NULL) return done(new Status(PROC_NULL, tag, 0))
    this.checkLive()
    return this._shared.device.isend(ctx, this.rank, this._ranks[dest], dest, tag, bytes)
  }

  private startRecv (ctx: number, bytes: Uint8Array, source: number, tag: number): Request {
    if (source === PROC_NULL) return done(new Status(PROC_NULL, ANY_TAG, 0))
    this.checkLive()
    return this._shared.device.irecv(ctx, source, source >= 0 ? this._ranks[source] : -1, tag, bytes, this._ranks)
  }

  private checkLive (): void {
    if (this.freed) throw invalidArgType('this communicator was freed')
    if (this._shared.device.closed) throw finalized('this communicator\'s operation')
  }

  // ---- collectives (lib/mpi/coll) -------------------------------------------------------------

  /** @internal the collectives' state of this communicator (coll/state.ts: Open MPI's c_coll), made at its first collective. */
  _coll: CollState | undefined = undefined

  /** MPI_Barrier. */
  barrier (opts?: CollOptions): Promise<void> { return coll.barrier(this, opts) }
  /** MPI_Bcast of `buf` from `root`; resolves with `buf`. */
  bcast<T extends ArrayBufferView> (buf: T, root = 0, opts?: CollOptions): Promise<T> { return coll.bcast(this, buf, root, opts) }
  /** MPI_Reduce into `recvbuf` at `root` (null elsewhere). */
  reduce (sendbuf: NumericArray | InPlace, recvbuf: NumericArray | null, op?: Op, root = 0, opts?: CollOptions): Promise<NumericArray | null> { return coll.reduce(this, sendbuf, recvbuf, op, root, opts) }
  /** MPI_Allreduce. */
  allreduce<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): Promise<T> { return coll.allreduce(this, sendbuf, recvbuf, op, opts) }
  /** MPI_Gather to `root`. */
  gather (sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> { return coll.gather(this, sendbuf, recvbuf, root, opts) }
  /** MPI_Gatherv to `root` (counts/displs in elements of recvbuf). */
  gatherv (sendbuf: ArrayBufferView | InPlace, recvbuf: ArrayBufferView | null, counts: ArrayLike<number> | null, displs: ArrayLike<number> | null, root = 0, opts?: CollOptions): Promise<ArrayBufferView | null> { return coll.gatherv(this, sendbuf, recvbuf, counts, displs, root, opts) }
  /** MPI_Scatter from `root`. */
  scatter (sendbuf: ArrayBufferView | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> { return coll.scatter(this, sendbuf, recvbuf, root, opts) }
  /** MPI_Scatterv from `root`. */
  scatterv (sendbuf: ArrayBufferView | null, counts: ArrayLike<number> | null, displs: ArrayLike<number> | null, recvbuf: ArrayBufferView | InPlace, root = 0, opts?: CollOptions): Promise<ArrayBufferView | InPlace> { return coll.scatterv(this, sendbuf, counts, displs, recvbuf, root, opts) }
  /** MPI_Allgather. */
  allgather<T extends ArrayBufferView> (sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> { return coll.allgather(this, sendbuf, recvbuf, opts) }
  /** MPI_Allgatherv. */
  allgatherv<T extends ArrayBufferView> (sendbuf: ArrayBufferView | InPlace, recvbuf: T, counts: ArrayLike<number>, displs: ArrayLike<number>, opts?: CollOptions): Promise<T> { return coll.allgatherv(this, sendbuf, recvbuf, counts, displs, opts) }
  /** MPI_Alltoall. */
  alltoall<T extends ArrayBufferView> (sendbuf: ArrayBufferView | InPlace, recvbuf: T, opts?: CollOptions): Promise<T> { return coll.alltoall(this, sendbuf, recvbuf, opts) }
  /** MPI_Alltoallv. */
  alltoallv<T extends ArrayBufferView> (sendbuf: ArrayBufferView, sendCounts: ArrayLike<number>, sendDispls: ArrayLike<number>, recvbuf: T, recvCounts: ArrayLike<number>, recvDispls: ArrayLike<number>, opts?: CollOptions): Promise<T> { return coll.alltoallv(this, sendbuf, sendCounts, sendDispls, recvbuf, recvCounts, recvDispls, opts) }
  /** MPI_Reduce_scatter_block. */
  reduceScatterBlock<T extends NumericArray> (sendbuf: NumericArray | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): Promise<T> { return coll.reduceScatterBlock(this, sendbuf, recvbuf, op, opts) }
  /** MPI_Scan (inclusive prefix reduction). */
  scan<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): Promise<T> { return coll.scan(this, sendbuf, recvbuf, op, opts) }
  /** MPI_Exscan (exclusive prefix reduction). */
  exscan<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): Promise<T> { return coll.exscan(this, sendbuf, recvbuf, op, opts) }
  /**
   * MPI_Barrier, blocking (as C's): returns once every rank has entered, without the event loop.
   * Throws MpiError ERR_MPI_WOULD_BLOCK, the barrier going on, when it cannot finish without the
   * event loop now (`await err.request.wait()`); see docs/mpi-collectives.md, "The tiers".
   */
  barrierSync (opts?: CollOptions): void { coll.barrierSync(this, opts) }
  /** MPI_Bcast, blocking: returns `buf` holding the root's bytes. Throws ERR_MPI_WOULD_BLOCK as barrierSync (larger messages always). */
  bcastSync<T extends ArrayBufferView> (buf: T, root = 0, opts?: CollOptions): T { return coll.bcastSync(this, buf, root, opts) }
  /** MPI_Allreduce, blocking: returns `recvbuf` holding the result. Throws ERR_MPI_WOULD_BLOCK as barrierSync (larger arrays always). */
  allreduceSync<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): T { return coll.allreduceSync(this, sendbuf, recvbuf, op, opts) }
  /** MPI_Ibarrier. */
  ibarrier (opts?: CollOptions): CollHandle<void> { return coll.ibarrier(this, opts) }
  /** MPI_Ibcast. */
  ibcast<T extends ArrayBufferView> (buf: T, root = 0, opts?: CollOptions): CollHandle<T> { return coll.ibcast(this, buf, root, opts) }
  /** MPI_Iallreduce. */
  iallreduce<T extends NumericArray> (sendbuf: T | InPlace, recvbuf: T, op?: Op, opts?: CollOptions): CollHandle<T> { return coll.iallreduce(this, sendbuf, recvbuf, op, opts) }
  /** Broadcasts a structured-clone value from `root`; resolves with it on every rank. */
  bcastObject (obj: unknown, root = 0): Promise<unknown> { return coll.bcastObject(this, obj, root) }
  /** Gathers a value from every rank at `root` (array there, null elsewhere). */
  gatherObject (obj: unknown, root = 0): Promise<unknown[] | null> { return coll.gatherObject(this, obj, root) }
  /** Gathers a value from every rank on every rank. */
  allgatherObject (obj: unknown): Promise<unknown[]> { return coll.allgatherObject(this, obj) }
  /** MPI_Comm_dup: a communicator over the same ranks with its own contexts. */
  dup (): Promise<Comm> { return coll.dup(this) }
  /** MPI_Comm_split: ranks with the same `color` form a communicator, ordered by `key` then rank; UNDEFINED gives null. */
  split (color: number, key = 0): Promise<Comm | null> { return coll.split(this, color, key) }
  /** MPI_Comm_split_type(SHARED): the ranks on this host. */
  splitLocal (): Promise<Comm> { return coll.splitLocal(this) }
  /** MPI_Comm_free. */
  free (): Promise<void> { return coll.free(this) }
}

function done (status: Status): Request {
  const r = new Request()
  r._status = status
  return r
}
