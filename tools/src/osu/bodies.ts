/**
 * The rank side of `fastsock osu`: OSU Micro-Benchmarks 5.x's loops over fastsock/mpi's API,
 * one function per benchmark and message size, each returning rank 0's RawRow (other ranks: null).
 *
 * - latency: blocking ping-pong between ranks 0 and 1 (sendSync/recvSync, as OSU's MPI_Send and
 *   MPI_Recv; awaited send/recv with --await); RTT/2 averaged over the timed iterations.
 * - bw: rank 0 posts a window of `isend`s, waits for all, then receives a 4-byte ack; rank 1
 *   posts the window of `irecv`s, waits, acks. bibw: both ranks post both windows at once.
 * - mbw_mr: P/2 pairs (rank i sends to i + P/2) run bw's loop at once after a barrier; rank 0's
 *   clock times the whole.
 * - collectives: every rank times each call; an untimed barrier between calls (OSU; JMB's
 *   "barrier to avoid a pipelined effect"); each rank's average and batch means are gathered to
 *   rank 0 by point-to-point messages (min/avg/max over ranks; the slowest rank per batch).
 * JMB's measurements: the timed iterations are cut into at most `measurements` consecutive
 * batches, each batch's mean time is one measurement (the C program does the same).
 */
import type { Benchmark, JobConfig, RawRow } from './types'

/** A request of fastsock/mpi as the benchmarks use it. */
export interface OsuRequest { wait (): Promise<unknown> }

/**
 * The communicator as the benchmarks use it (structural: fastsock/mpi's Comm satisfies it).
 * Collective options: `{ algorithm }` forces one of the library's algorithms.
 */
export interface OsuComm {
  readonly rank: number
  readonly size: number
  send (view: ArrayBufferView, dest: number, tag: number): Promise<unknown>
  recv (view: ArrayBufferView, source: number, tag: number): Promise<unknown>
  isend (view: ArrayBufferView, dest: number, tag: number): OsuRequest
  irecv (view: ArrayBufferView, source: number, tag: number): OsuRequest
  /** The blocking forms (fastsock/mpi's; they throw ERR_MPI_WOULD_BLOCK with `request` where they cannot go on). */
  sendSync (view: ArrayBufferView, dest: number, tag: number): void
  recvSync (view: ArrayBufferView, source: number, tag: number): unknown
  transportOf (rank: number): string | null | undefined
  /** The blocking collectives (as C's MPI_Barrier, MPI_Bcast, MPI_Allreduce; ERR_MPI_WOULD_BLOCK as sendSync). */
  barrierSync (opts?: object): void
  bcastSync (buf: ArrayBufferView, root: number, opts?: object): unknown
  allreduceSync (sendbuf: Float32Array, recvbuf: Float32Array, op: unknown, opts?: object): unknown
  barrier (opts?: object): Promise<unknown>
  bcast (buf: ArrayBufferView, root: number, opts?: object): Promise<unknown>
  reduce (sendbuf: Float32Array, recvbuf: Float32Array | null, op: unknown, root: number, opts?: object): Promise<unknown>
  allreduce (sendbuf: Float32Array, recvbuf: Float32Array, op: unknown, opts?: object): Promise<unknown>
  gather (sendbuf: ArrayBufferView, recvbuf: ArrayBufferView | null, root: number, opts?: object): Promise<unknown>
  scatter (sendbuf: ArrayBufferView | null, recvbuf: ArrayBufferView, root: number, opts?: object): Promise<unknown>
  allgather (sendbuf: ArrayBufferView, recvbuf: ArrayBufferView, opts?: object): Promise<unknown>
  alltoall (sendbuf: ArrayBufferView, recvbuf: ArrayBufferView, opts?: object): Promise<unknown>
}

/** The reduction op the reductions use (fastsock/mpi's SUM), handed in by the rank script. */
/**
 * What a benchmark body runs with: the communicator, the library's SUM, the job, and the
 * library's MPI_Waitall (a window of requests completed as OSU's loops do, with MPI_Waitall).
 */
export interface BodyContext { comm: OsuComm, sum: unknown, config: JobConfig, waitAll: (reqs: OsuRequest[]) => Promise<unknown> }

/** Tags of the benchmarks' own point-to-point messages (user context). */
const TAG_DATA = 1
const TAG_WINDOW = 100
const TAG_ACK = 101
const TAG_BARRIER = 7000
const TAG_STATS = 7001
const ACK_BYTES = 4

/**
 * The benchmarks' buffers, made once per job at its largest size (all ranks' blocks of it, for
 * the collectives) and viewed per size, as OSU allocates its buffers once at the largest message
 * size. A fresh ArrayBuffer per size and per warm-up pass (6 MiB at 1 MiB, P = 2) grew V8's
 * external memory until it collected garbage inside the timed loops (a Mark-Compact pause of
 * ~4 ms here, one of the stalls the averages of the large sizes carried).
 */
interface Arena { s: Uint8Array, r: Uint8Array, fs: ArrayBuffer, fr: ArrayBuffer }
const arenas = new WeakMap<JobConfig, Arena>()
function arenaOf (config: JobConfig, P: number): Arena {
  let a = arenas.get(config)
  if (a === undefined) {
    const max = config.sizes.length > 0 ? config.sizes[config.sizes.length - 1] : 0
    const total = Math.max(1, max * P)
    const fs = new ArrayBuffer(Math.max(4, max))
    new Float32Array(fs).fill(1)
    a = { s: new Uint8Array(total).fill(97), r: new Uint8Array(total), fs, fr: new ArrayBuffer(Math.max(4, max)) }
    arenas.set(config, a)
  }
  return a
}

/** Monotonic clock, µs. */
function nowUs (): number {
  return Number(process.hrtime.bigint()) / 1e3
}

/** User + system CPU time of this process, µs. */
function cpuUs (): number {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** The sum over the ranks of `mine` (µs) at rank 0, by point-to-point messages; others get 0. */
async function sumAtRoot (comm: OsuComm, mine: number): Promise<number> {
  const v = new Float64Array([mine])
  if (comm.rank !== 0) {
    await comm.send(v, 0, TAG_STATS)
    return 0
  }
  let total = mine
  for (let r = 1; r < comm.size; r++) {
    await comm.recv(v, r, TAG_STATS)
    total += v[0]
  }
  return total
}

/** Cuts `iterations` timed iterations into at most `measurements` batches; records batch means. */
class Batches {
  readonly samples: number[] = []
  private readonly m: number
  private next = 1
  private bound: number
  private prevBound = 0
  constructor (private readonly iterations: number, measurements: number, private prevT: number, private readonly scale = 1) {
    this.m = Math.min(iterations, measurements)
    this.bound = this.m > 0 ? Math.floor(iterations / this.m) : 0
  }

  /** True when timed iteration `i` (0-based) ends a batch: tick() wants its end time then (the clock is read only there). */
  due (i: number): boolean {
    return this.next <= this.m && i + 1 === this.bound
  }

  /** After timed iteration `i` (0-based) ended at `t` µs. */
  tick (i: number, t: number): void {
    if (!this.due(i)) return
    this.samples.push((t - this.prevT) / (this.bound - this.prevBound) / this.scale)
    this.prevT = t
    this.prevBound = this.bound
    this.next++
    this.bound = Math.floor((this.iterations * this.next) / this.m)
  }
}

/**
 * Iterations, warm-up and loop length for a message of `bytes` (OSU: fewer above 8 KiB).
 * `untimed` (the JIT warm-up's passes): no warm-up and a loop of the warm-up's length, with the
 * timed count of iterations kept for the bookkeeping (Batches): the arithmetic V8 optimizes for
 * sees the values the timed pass brings (an untimed pass of 100 iterations in batches of 1 taught
 * it exact integer divisions, and 10,000 in batches of 66.7 deoptimized the body in the middle of
 * the first timed sizes, then compiled it again while the ranks spun: stalls of up to ~40 ms).
 */
function counts (config: JobConfig, bytes: number, untimed: boolean): { iterations: number, warmup: number, loops: number } {
  const large = bytes > config.largeBytes
  const iterations = large ? config.iterationsLarge : config.iterations
  const warmup = large ? config.warmupLarge : config.warmup
  // Both forms computed, one object literal: V8 deoptimizes code the warm-up never ran.
  const full = warmup + iterations
  const short = Math.max(1, Math.min(warmup, iterations))
  return { iterations, warmup: untimed ? 0 : warmup, loops: untimed ? short : full }
}

/**
 * MPI_Send and MPI_Recv as osu_latency calls them: the blocking forms while they complete
 * without the event loop; one that cannot (ERR_MPI_WOULD_BLOCK: a transport without synchronous
 * I/O, Node net's) is awaited, and so is every later call on this object.
 */
class BlockingPair {
  constructor (private readonly comm: OsuComm, private blocking: boolean) {}

  /** undefined when the send is complete, else the promise to await. */
  send (view: ArrayBufferView, peer: number, tag: number): Promise<unknown> | undefined {
    if (!this.blocking) return this.comm.send(view, peer, tag)
    try {
      this.comm.sendSync(view, peer, tag)
      return undefined
    } catch (err) {
      return this.fallBack(err)
    }
  }

  /** undefined when the message is in `view`, else the promise to await. */
  recv (view: ArrayBufferView, peer: number, tag: number): Promise<unknown> | undefined {
    if (!this.blocking) return this.comm.recv(view, peer, tag)
    try {
      this.comm.recvSync(view, peer, tag)
      return undefined
    } catch (err) {
      return this.fallBack(err)
    }
  }

  /** A blocking call threw: its request's wait() when it would block (and the awaited forms from now on), else the error. */
  private fallBack (err: unknown): Promise<unknown> {
    const rest = restOf(err)
    this.blocking = false
    return rest
  }
}

/** A barrier by point-to-point messages (rank 0 collects, then releases): the p2p benchmarks do not depend on the collectives. */
export async function p2pBarrier (comm: OsuComm): Promise<void> {
  const token = new Uint8Array(1)
  if (comm.rank === 0) {
    for (let r = 1; r < comm.size; r++) await comm.recv(token, r, TAG_BARRIER)
    for (let r = 1; r < comm.size; r++) await comm.send(token, r, TAG_BARRIER)
  } else {
    await comm.send(token, 0, TAG_BARRIER)
    await comm.recv(token, 0, TAG_BARRIER)
  }
}

/** osu_latency, osu_bw, osu_bibw, osu_mbw_mr for one size. */
export async function pointToPoint (ctx: BodyContext, bytes: number, untimed = false): Promise<RawRow | null> {
  const { comm, config, waitAll } = ctx
  const b = config.benchmark
  const { iterations, warmup, loops } = counts(config, bytes, untimed)
  const arena = arenaOf(config, comm.size)
  const sbuf = arena.s.subarray(0, bytes)
  const rbuf = arena.r.subarray(0, bytes)
  const ack = new Uint8Array(ACK_BYTES)
  const pairs = Math.floor(comm.size / 2)
  const mbw = b === 'mbw_mr'
  const sender = mbw ? comm.rank < pairs : comm.rank === 0
  const peer = mbw ? (sender ? comm.rank + pairs : comm.rank - pairs) : 1 - comm.rank
  const active = mbw ? comm.rank < 2 * pairs : comm.rank < 2
  const window = config.window
  let t0 = 0
  let c0 = 0
  let batches: Batches | null = null
  const pair = new BlockingPair(comm, !config.awaited)
  let p: Promise<unknown> | undefined
  await p2pBarrier(comm)
  for (let i = 0; i < loops; i++) {
    if (i === warmup) {
      if (mbw) await p2pBarrier(comm)
      t0 = nowUs()
      c0 = cpuUs()
      batches = new Batches(iterations, config.measurements, t0, b === 'latency' ? 2 : 1)
    }
    if (!active) continue
    if (b === 'latency') {
      if (sender) {
        if ((p = pair.send(sbuf, peer, TAG_DATA)) !== undefined) await p
        if ((p = pair.recv(rbuf, peer, TAG_DATA)) !== undefined) await p
      } else {
        if ((p = pair.recv(rbuf, peer, TAG_DATA)) !== undefined) await p
        if ((p = pair.send(sbuf, peer, TAG_DATA)) !== undefined) await p
      }
    } else if (b === 'bibw') {
      const reqs: OsuRequest[] = []
      for (let j = 0; j < window; j++) reqs.push(comm.irecv(rbuf, peer, TAG_WINDOW))
      for (let j = 0; j < window; j++) reqs.push(comm.isend(sbuf, peer, TAG_WINDOW))
      await waitAll(reqs)
    } else if (sender) {
      const reqs: OsuRequest[] = []
      for (let j = 0; j < window; j++) reqs.push(comm.isend(sbuf, peer, TAG_WINDOW))
      await waitAll(reqs)
      await comm.recv(ack, peer, TAG_ACK)
    } else {
      const reqs: OsuRequest[] = []
      for (let j = 0; j < window; j++) reqs.push(comm.irecv(rbuf, peer, TAG_WINDOW))
      await waitAll(reqs)
      await comm.send(ack, peer, TAG_ACK)
    }
    if (batches !== null && batches.due(i - warmup)) batches.tick(i - warmup, nowUs())
  }
  const avg = (nowUs() - t0) / iterations / (b === 'latency' ? 2 : 1)
  const cpu = await sumAtRoot(comm, cpuUs() - c0)
  if (comm.rank !== 0) return null
  return { bytes, iterations, warmup, avgUs: avg, minUs: avg, maxUs: avg, cpuUs: cpu, samplesUs: batches?.samples ?? [] }
}

/** The buffers of one collective size: byte buffers of P × size, or floats for the reductions. */
/** One size's buffers, made before its loop (OSU allocates once): `one` and `rOne` are the first `bytes` of `s` and `r`. */
interface CollBuffers { s: Uint8Array, r: Uint8Array, fs: Float32Array, fr: Float32Array, one: Uint8Array, rOne: Uint8Array }

/** What a blocking call that threw leaves to await: its ERR_MPI_WOULD_BLOCK request's wait(); any other error is rethrown. */
function restOf (err: unknown): Promise<unknown> {
  const e = err as { code?: string, request?: OsuRequest }
  if (e.code !== 'ERR_MPI_WOULD_BLOCK' || e.request === undefined) throw err
  return e.request.wait()
}

/**
 * One call of collective `b`: barrier, bcast and allreduce in their blocking forms unless
 * --await, as OSU's C calls MPI's: undefined once done, or, when a blocking call cannot finish
 * without the event loop now (ERR_MPI_WOULD_BLOCK: Node net, an algorithm or size the blocking
 * tier leaves to the awaited one), the promise of the rest to await. Nothing is allocated here:
 * the call is inside the timed interval.
 */
function collCall (ctx: BodyContext, b: Benchmark, bufs: CollBuffers, opts: object | undefined): Promise<unknown> | undefined {
  const { comm } = ctx
  const root = comm.rank === 0
  const sync = !ctx.config.awaited
  try {
    switch (b) {
      case 'barrier': if (sync) { comm.barrierSync(opts); return undefined } return comm.barrier(opts)
      case 'bcast': if (sync) { comm.bcastSync(bufs.one, 0, opts); return undefined } return comm.bcast(bufs.one, 0, opts)
      case 'reduce': return comm.reduce(bufs.fs, root ? bufs.fr : null, ctx.sum, 0, opts)
      case 'allreduce': if (sync) { comm.allreduceSync(bufs.fs, bufs.fr, ctx.sum, opts); return undefined } return comm.allreduce(bufs.fs, bufs.fr, ctx.sum, opts)
      case 'gather': return comm.gather(bufs.one, root ? bufs.r : null, 0, opts)
      case 'scatter': return comm.scatter(root ? bufs.s : null, bufs.rOne, 0, opts)
      case 'allgather': return comm.allgather(bufs.one, bufs.r, opts)
      case 'alltoall': return comm.alltoall(bufs.s, bufs.r, opts)
      default: throw Object.assign(new Error(`not a collective: ${b}`), { code: 'ERR_INVALID_ARG_VALUE' })
    }
  } catch (err) {
    return restOf(err)
  }
}

/** osu_allreduce, osu_bcast, ... for one size (OSU's -f columns and JMB's measurements). */
export async function collective (ctx: BodyContext, bytes: number, untimed = false): Promise<RawRow | null> {
  const { comm, config } = ctx
  const b = config.benchmark
  const { iterations, warmup, loops } = counts(config, bytes, untimed)
  const total = bytes * comm.size
  const arena = arenaOf(config, comm.size)
  const s = arena.s.subarray(0, total)
  const r = arena.r.subarray(0, total)
  const n = Math.floor(bytes / 4)
  const bufs: CollBuffers = { s, r, fs: new Float32Array(arena.fs, 0, n), fr: new Float32Array(arena.fr, 0, n), one: s.subarray(0, bytes), rOne: r.subarray(0, bytes) }
  const opts = config.algorithm === null ? undefined : { algorithm: config.algorithm }
  const m = Math.min(iterations, config.measurements)
  const mine = new Float64Array(3 + m) // [average µs, measurements, CPU µs, batch means...]
  let sum = 0
  let batch = 0
  let inBatch = 0
  let k = 0
  let bound = m > 0 ? Math.floor(iterations / m) : 0
  await comm.barrier()
  if (opts !== undefined) {
    // A forced algorithm may not serve this size (ring: fewer items than P). Every rank decides
    // that from the same arguments, so all skip the size together.
    try {
      await collCall(ctx, b, bufs, opts)
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_MPI_COLL_ALGORITHM') throw err
      await comm.barrier()
      const skipped = (err as Error).message
      return comm.rank === 0 ? { bytes, iterations: 0, warmup: 0, avgUs: NaN, minUs: NaN, maxUs: NaN, samplesUs: [], skipped } : null
    }
    await comm.barrier()
  }
  let c0 = 0
  let p: Promise<unknown> | undefined
  for (let i = 0; i < loops; i++) {
    if (i === warmup) c0 = cpuUs()
    const t0 = nowUs()
    if ((p = collCall(ctx, b, bufs, opts)) !== undefined) await p
    const dt = nowUs() - t0
    if (i >= warmup) {
      const j = i - warmup
      sum += dt
      batch += dt
      inBatch++
      if (j + 1 === bound && k < m) {
        mine[3 + k++] = batch / inBatch
        batch = 0
        inBatch = 0
        bound = Math.floor((iterations * (k + 1)) / m)
      }
    }
    // the untimed barrier between two timed calls (osu_barrier times back-to-back barriers)
    if (b !== 'barrier' && (p = collCall(ctx, 'barrier', bufs, undefined)) !== undefined) await p
  }
  mine[0] = sum / iterations
  mine[1] = k
  mine[2] = cpuUs() - c0
  if (comm.rank !== 0) {
    await comm.send(mine, 0, TAG_STATS)
    return null
  }
  let lo = mine[0]
  let hi = mine[0]
  let tot = mine[0]
  let cpu = mine[2]
  const worst = Array.from(mine.subarray(3, 3 + k))
  const theirs = new Float64Array(3 + m)
  for (let r = 1; r < comm.size; r++) {
    await comm.recv(theirs, r, TAG_STATS)
    lo = Math.min(lo, theirs[0])
    hi = Math.max(hi, theirs[0])
    tot += theirs[0]
    cpu += theirs[2]
    for (let j = 0; j < worst.length; j++) worst[j] = Math.max(worst[j], theirs[3 + j])
  }
  return { bytes, iterations, warmup, avgUs: tot / comm.size, minUs: lo, maxUs: hi, cpuUs: cpu, samplesUs: worst }
}
