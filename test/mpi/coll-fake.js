'use strict'
// An in-process fake of the point-to-point layer for the collectives' tests: P simulated ranks
// in one process, each a CollComm (lib/mpi/coll/types.ts) over in-memory per-pair FIFO channels.
// Messages are copied at send time (eager) and delivered after a random number of event-loop
// turns (order kept per pair and context, as MPI's non-overtaking rule), so algorithms are tested
// under varied interleavings. Matching: exact (source, tag, context). A message larger than the
// receive view rejects with ERR_MPI_TRUNCATE; a shorter one completes with its count.
// world.kill(rank) makes every pending and later operation on communicators containing that rank
// reject with ERR_MPI_PEER_LOST (as H1's layer does), after `lossDelayMs`.

// the point-to-point layer's errors are MpiErrors (lib/mpi/errors.ts): the collectives tell them apart with isMpiError
const { mpiError: realMpiError, isMpiErrorCode } = require('../../dist/mpi/errors')
function mpiError (code, message) {
  if (isMpiErrorCode(code)) return realMpiError(code, message)
  const e = new Error(message); e.name = 'MpiError'; e.code = code; return e
}

class FakeRequest {
  constructor () {
    this.status = null; this.error = null
    this.promise = new Promise((resolve, reject) => { this._resolve = resolve; this._reject = reject })
    this.promise.catch(() => {})
  }
  done (st) { if (this.status || this.error) return; this.status = st; this._resolve(st) }
  fail (e) { if (this.status || this.error) return; this.error = e; this._reject(e) }
  wait () { return this.promise }
  test () { if (this.error) throw this.error; return this.status }
}

class World {
  constructor (P, { maxDelay = 3, hosts = null, seed = 1 } = {}) {
    this.P = P
    this.maxDelay = maxDelay
    this.hosts = hosts || Array.from({ length: P }, () => 'h0')
    this.rand = mulberry(seed)
    this.dead = new Set()
    this.posted = Array.from({ length: P }, () => []) // per world rank: pending receives
    this.unexpected = Array.from({ length: P }, () => [])
    this.pendingSends = new Set()
    this.used = Array.from({ length: P }, () => new Set([0]))
    this.nextDeliverAt = new Map() // channel key -> last scheduled turn (keeps FIFO)
    this.live = new Set() // every FakeComm
    this.messages = 0
    this.comms = Array.from({ length: P }, (_, r) => new FakeComm(this, r, Array.from({ length: P }, (_, i) => i), 0))
  }

  schedule (key, fn) {
    // deliver after a random number of macrotask turns, never before an earlier message of the same channel
    const d = this.maxDelay === 0 ? 0 : Math.floor(this.rand() * (this.maxDelay + 1))
    const prev = this.nextDeliverAt.get(key) || Promise.resolve()
    const p = prev.then(() => new Promise(resolve => { let n = d; const step = () => (n-- <= 0 ? resolve() : setImmediate(step)); step() })).then(fn)
    this.nextDeliverAt.set(key, p)
  }

  deliver (msg) {
    const q = this.posted[msg.dst]
    for (let i = 0; i < q.length; i++) {
      const rcv = q[i]
      if (rcv.ctx === msg.ctx && rcv.src === msg.src && rcv.tag === msg.tag) {
        q.splice(i, 1)
        this.complete(rcv, msg)
        return
      }
    }
    this.unexpected[msg.dst].push(msg)
  }

  complete (rcv, msg) {
    const st = { source: rcv.srcRank, tag: msg.tag, count: msg.data.byteLength }
    if (msg.data.byteLength > rcv.view.byteLength) {
      const e = mpiError('ERR_MPI_TRUNCATE', `message of ${msg.data.byteLength} bytes into ${rcv.view.byteLength}`)
      e.status = st
      rcv.req.fail(e)
      return
    }
    new Uint8Array(rcv.view.buffer, rcv.view.byteOffset, rcv.view.byteLength).set(msg.data)
    rcv.req.done(st)
  }

  kill (rank, lossDelayMs = 5) {
    this.dead.add(rank)
    setTimeout(() => {
      for (let r = 0; r < this.P; r++) {
        for (const rcv of this.posted[r].slice()) {
          if (rcv.comm.worldRanks.includes(rank)) { this.posted[r].splice(this.posted[r].indexOf(rcv), 1); rcv.req.fail(mpiError('ERR_MPI_PEER_LOST', `rank ${rank} is lost`)) }
        }
      }
      for (const c of this.live) if (c.worldRanks.includes(rank)) c.lost = rank
    }, lossDelayMs)
  }
}

class FakeComm {
  constructor (world, worldRank, worldRanks, ctx) {
    this.world = world; this.me = worldRank; this.worldRanks = worldRanks; this.ctx = ctx
    this.rank = worldRanks.indexOf(worldRank); this.size = worldRanks.length
    this.seq = 0; this.lost = -1; this.freed = false
    world.live.add(this)
  }
  _check (peer) {
    if (this.freed) throw mpiError('ERR_MPI_COMM_FREED', 'freed')
    if (!Number.isInteger(peer) || peer < 0 || peer >= this.size) throw mpiError('ERR_OUT_OF_RANGE', `rank ${peer} out of range (size ${this.size})`)
  }
  _collIsend (view, dest, tag) {
    this._check(dest)
    if (!(tag >= 0 && tag <= 0x7fffffff)) throw new Error(`bad tag ${tag}`)
    const req = new FakeRequest()
    const w = this.world
    if (this.lost >= 0 || w.dead.has(this.me)) { req.fail(mpiError('ERR_MPI_PEER_LOST', `rank ${this.lost} is lost`)); return req }
    const data = new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice()
    const dst = this.worldRanks[dest]
    const msg = { src: this.me, dst, tag, ctx: this.ctx, data }
    w.messages++
    if (w.dead.has(dst)) { setTimeout(() => req.fail(mpiError('ERR_MPI_PEER_LOST', `rank ${dst} is lost`)), 5); return req }
    w.schedule(`${this.me}>${dst}`, () => { if (!w.dead.has(dst) && !w.dead.has(this.me)) w.deliver(msg); req.done({ source: this.rank, tag, count: data.byteLength }) })
    return req
  }
  _collIrecv (view, source, tag) {
    this._check(source)
    const req = new FakeRequest()
    const w = this.world
    if (this.lost >= 0) { req.fail(mpiError('ERR_MPI_PEER_LOST', `rank ${this.lost} is lost`)); return req }
    const src = this.worldRanks[source]
    const rcv = { comm: this, ctx: this.ctx, src, srcRank: source, tag, view, req }
    const uq = w.unexpected[this.me]
    for (let i = 0; i < uq.length; i++) {
      const m = uq[i]
      if (m.ctx === this.ctx && m.src === src && m.tag === tag) { uq.splice(i, 1); w.complete(rcv, m); return req }
    }
    w.posted[this.me].push(rcv)
    return req
  }
  _collSeq () { return this.seq++ }
  _derive (worldRanks, ctx) {
    const used = this.world.used[this.me]
    if (used.has(ctx)) throw new Error(`context ${ctx} reused by world rank ${this.me}`)
    used.add(ctx)
    return new FakeComm(this.world, this.me, worldRanks.slice(), ctx)
  }
  _worldRankOf (r) { return this.worldRanks[r] }
  _hostKey (r) { return this.world.hosts[this.worldRanks[r]] }
  _nextContextCandidate () { return Math.max(...this.world.used[this.me]) + 1 }
  _free () { this.freed = true; this.world.live.delete(this) }
  // plain point-to-point on the communicator's own context, for isolation tests
  send (view, dest, tag) { return this._collIsend(view, dest, tag).wait() }
  recv (view, source, tag) { return this._collIrecv(view, source, tag).wait() }
}

function mulberry (a) {
  return function () {
    a |= 0; a = a + 0x6D2B79F5 | 0
    let t = Math.imul(a ^ a >>> 15, 1 | a)
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t
    return ((t ^ t >>> 14) >>> 0) / 4294967296
  }
}

/** Run fn(comm, rank) on every rank of a fresh world of P ranks; resolves with the per-rank results. */
async function run (P, fn, opts) {
  const w = new World(P, opts)
  return await Promise.all(w.comms.map((c, r) => fn(c, r, w)))
}

module.exports = { World, FakeComm, run, mulberry }
