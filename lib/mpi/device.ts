/**
 * The device: this process's connections to the other ranks and the point-to-point protocol on
 * them (eager and rendezvous), with the matching engine (match.ts). One per process, shared by
 * every communicator; communicators differ by context id.
 *
 * Connections are made lazily through fastsock's `connect` (its failover chain: same-host ranks
 * get shm), to the listening address each rank published in its endpoint card, with the
 * handshake of device-wire.ts (crossing dials end with one connection, decided before any frame).
 *
 * Protocol (docs/mpi.md, "Protocol"): a message of at most `eagerBytes` goes as one EAGER frame
 * (header + payload); a larger one as RTS, the receiver matches it and answers CTS (with its
 * request id) once the receive is posted, and the sender writes DATA (header + payload) that the
 * receiver reads straight into the posted array.
 *
 * Loss: a connection that closes without BYE, a dial that fails, or the store's 'rankLost'
 * event marks the rank lost: every pending operation involving it (sends, receives from it,
 * ANY_SOURCE receives and probes of a communicator containing it) fails with ERR_MPI_PEER_LOST,
 * and so does every later one.
 */
import { performance } from 'perf_hooks'
import { createServer, connect } from '../index'
import type { Socket, Server, TransportName } from '../index'
import { Conn, FrameHandler, RECV_NONE, RECV_UNAVAILABLE } from './device-conn'
import { MAGIC, HELLO_BYTES, REPLY_BYTES, PROVE_BYTES, HELLO_NONCE, REPLY_NONCE, REPLY_PROOF, EAGER, RTS, CTS, DATA, BYE, MAX_EAGER, jobKey, frameProblem } from './device-wire'
import { HandshakeGate, NONCE_BYTES, newNonce, proof, verify } from './auth'
import { helloFrom, helloOf, readExactly, replyOf, replyProves, sameUser } from './device-handshake'
import { Matcher, PostedRecv, Unexpected, selects } from './match'
import { Request } from './request'
import { Status } from './status'
import { type MpiError, peerLost, protocolError, timedOut, truncated, wouldBlock } from './errors'

/** A rank's endpoint card, published through the store as JSON at `card/<rank>`. */
export interface Card { host: string, addr: string, port: number, pid: number }

/** Default eager threshold in bytes (measured: docs/mpi.md, "Thresholds"). */
export const DEFAULT_EAGER_BYTES = 64 * 1024

/** A rendezvous send waiting for CTS. */
interface SendRec { req: Request, bytes: Uint8Array, dest: number, tag: number, ctx: number }
/** A rendezvous receive waiting for DATA. */
interface RecvRec { req: Request, bytes: Uint8Array, source: number, tag: number }

/** Request.waitSync on one connection: the longest sleep on its doorbell between checks of the wait's timeout, ms. */
const BLOCK_SLICE_MS = 100
/** Request.waitSync on an ANY_SOURCE receive: the spin on each connection in turn, µs. */
const ANY_SLICE_US = 20
/** An incoming connection's HELLO must be complete within this many ms (else it is closed). */
const HANDSHAKE_MS = 10000
const SINK_POSTED = 1
const SINK_UNEXPECTED = 2
const SINK_RNDV = 3


/** The process's message-passing device; see the module comment. */
export class Device implements FrameHandler {
  readonly rank: number
  readonly size: number
  readonly matcher = new Matcher()
  /** Messages up to this many bytes go eagerly. */
  eagerBytes: number
  /** The receive fast path's largest spin, µs (0: none). */
  readonly spinUs: number
  /** Synchronous waits spin with sched_yield() between polls (fewer CPUs than ranks here). */
  readonly yieldSpin: boolean
  cards: Card[] = []
  private server: Server | null = null
  private readonly conns: Array<Conn | null>
  private readonly dialing = new Map<number, Socket>()
  private readonly lost = new Map<number, string>()
  private nextId = 1
  /** Sends not yet complete (finalize drains them). */
  private readonly unfinished = new Set<Request>()
  private readonly jobKey: number
  /** The job's secret (lib/mpi/auth.ts): the HMAC key of the handshake's proofs (zero-length for a job without one, which runs on one host). */
  private readonly secret: Buffer
  private readonly transports: TransportName[] | undefined
  private closing = false
  /** True once close() began (finalize): no operation may start. */
  get closed (): boolean { return this.closing }
  /**
   * The awaited collectives' bound on each of this device's blocking waits, ms (lib/mpi/coll/tier.ts,
   * set through Comm._collBlockFor): a waitSync that has not completed after it throws
   * ERR_MPI_WOULD_BLOCK (the request goes on) and a recvEagerSync that has read nothing after one
   * spin and sleep of at most it returns null, so that an awaited collective that finds its peers
   * late goes back to the event loop; Infinity (no bound) outside such a call. No clock is read
   * unless a wait runs past its spin.
   */
  blockMs = Infinity

  constructor (opts: { rank: number, size: number, jobId: string, eagerBytes: number, spinUs: number, yieldSpin?: boolean, transports?: TransportName[], secret?: Buffer | null }) {
    this.secret = opts.secret ?? Buffer.alloc(0)
    this.rank = opts.rank
    this.spinUs = opts.spinUs
    this.yieldSpin = opts.yieldSpin ?? false
    this.size = opts.size
    this.eagerBytes = opts.eagerBytes
    this.jobKey = jobKey(opts.jobId)
    this.transports = opts.transports
    this.conns = new Array(opts.size).fill(null)
  }

  /** Listens on `host`, port 0; resolves with the port. */
  async listen (host: string): Promise<number> {
    const server = createServer(this.transports ? { transports: this.transports } : {}, s => this.onIncoming(s))
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, host, () => { server.off('error', reject); resolve() })
    })
    server.unref()
    return (server.address() as { port: number }).port
  }

  /** The rung of the connection to world rank `w` ('self' for this process), null when none yet. */
  transportOf (w: number): string | null {
    if (w === this.rank) return 'self'
    const c = this.conns[w]
    return c?.ready ? c.socket!.transport : null
  }

  /** Resolves once a connection to `w` is ready (made on demand). */
  async connectTo (w: number): Promise<void> {
    if (w === this.rank) return
    const c = this.conn(w)
    if (c.ready) return
    await new Promise<void>((resolve, reject) => {
      const t = setInterval(() => {
        if (c.ready) { clearInterval(t); resolve() } else if (this.lost.has(w)) { clearInterval(t); reject(this.lossOf(w, w, this.lost.get(w)!)) }
      }, 1)
    })
  }

  /** Called with the rank on each loss (see untilLost). */
  private lostWaiters: Array<(w: number) => void> = []

  /** Resolves when world rank `w` is lost (at once if it is). Never rejects. */
  untilLost (w: number): Promise<void> {
    if (this.lost.has(w)) return Promise.resolve()
    return new Promise(resolve => {
      const f = (r: number): void => { if (r === w) resolve(); else this.lostWaiters.push(f) }
      this.lostWaiters.push(f)
    })
  }

  /** World ranks lost for sending bytes that are not this protocol (their errors are ERR_MPI_PROTOCOL). */
  private readonly badPeers = new Set<number>()

  /** The error of an operation on `rank` (world rank `w`), lost for `why`: ERR_MPI_PROTOCOL or ERR_MPI_PEER_LOST. */
  private lossOf (rank: number, w: number, why: string): MpiError {
    return this.badPeers.has(w) ? protocolError(rank, why) : peerLost(rank, why)
  }

  /** The reason world rank `w` is lost, or undefined. */
  lostReason (w: number): string | undefined { return this.lost.get(w) }

  // ---- connections and handshake --------------------------------------------------------------

  /**
   * The connection object of world rank `w`, dialing it on first use. A connection object made
   * by an accepted HELLO that has not proved itself yet (`claimed`) is dialed over at the first
   * use: if the claim was an impostor's, this dial is the connection (w accepts it) and no
   * message waits for the claim's 10 s deadline; if it was w's own, w refuses this dial (it
   * adopted its own, or awaits our verdict on it: the crossing-dial rule of onIncoming).
   */
  private conn (w: number): Conn {
    let c = this.conns[w]
    if (c === null) {
      c = this.conns[w] = new Conn(w, this, this.spinUs, this.yieldSpin)
      this.dial(w)
    } else if (!c.ready && this.claimed.delete(w) && !this.dialing.has(w) && !this.lost.has(w)) {
      this.dial(w)
    }
    return c
  }

  /** Ranks whose connection object an accepted HELLO made, not dialed over yet (see conn). */
  private readonly claimed = new Set<number>()
  /** Callbacks run once a dial's REPLY is handled or its socket closed (onIncoming's deferral). */
  private readonly dialWaiters = new Map<Socket, Array<() => void>>()

  private dialSettled (sock: Socket): void {
    const fs = this.dialWaiters.get(sock)
    if (fs === undefined) return
    this.dialWaiters.delete(sock)
    for (const f of fs) f()
  }

  private dial (w: number): void {
    const card = this.cards[w]
    if (!card) { this.lose(w, 'no endpoint card'); return }
    const opts: Record<string, unknown> = { host: card.addr, port: card.port }
    if (this.transports) opts.transports = this.transports
    const sock = connect(opts as never)
    this.dialing.set(w, sock)
    let rejected = false
    sock.on('error', (err: Error) => {
      if (!rejected && this.conns[w]?.socket !== sock) this.lose(w, `connecting failed: ${err.message}`)
    })
    sock.once('close', () => this.dialSettled(sock))
    sock.once('connect', () => {
      sock.setNoDelay?.(true)
      const hello = helloOf(this.rank, this.jobKey, this.eagerBytes)
      const nonceA = hello.subarray(HELLO_NONCE, HELLO_NONCE + NONCE_BYTES)
      sock.write(hello)
      readExactly(sock, REPLY_BYTES, (reply, rest) => {
        // Once this verdict is handled (adopted or refused): a HELLO of w held for it (onIncoming).
        process.nextTick(() => this.dialSettled(sock))
        if (this.dialing.get(w) === sock) this.dialing.delete(w)
        const c = this.conns[w]!
        const verdict = reply.readUInt32LE(4)
        const eager = reply.readUInt32LE(8)
        if (reply.readUInt32LE(0) !== MAGIC || verdict > 1 || eager > MAX_EAGER) {
          sock.destroy()
          this.lose(w, `its handshake REPLY is not this protocol (magic 0x${reply.readUInt32LE(0).toString(16)}, verdict ${verdict}, eager threshold ${eager})`, true)
          return
        }
        if (verdict !== 1 || c.ready) { rejected = true; sock.destroy(); return }
        const nonceB = reply.subarray(REPLY_NONCE, REPLY_NONCE + NONCE_BYTES)
        if (!replyProves(this.secret, nonceA, reply) || !sameUser(sock)) {
          sock.destroy()
          this.lose(w, 'the process at its endpoint did not prove the job\'s secret (or runs as another user)', true)
          return
        }
        sock.write(proof(this.secret, 'hello', 'A', nonceA, nonceB))
        c.peerEager = eager
        this.adopt(c, sock, rest)
      })
    })
  }

  /** The connections of the listener still in handshake (auth.ts HandshakeGate). */
  private readonly gate = new HandshakeGate()

  private onIncoming (sock: Socket): void {
    sock.on('error', () => {})
    // At most MAX_PENDING_HANDSHAKES connections in handshake at once (a flood cuts the oldest
    // silent one), unref'd until proven: an intruder's connection keeps no rank alive.
    this.gate.admit(sock)
    // A dialer that does not finish its HELLO in time is no rank of this job (a rank writes it at once).
    const timer = setTimeout(() => sock.destroy(), HANDSHAKE_MS)
    timer.unref()
    sock.once('close', () => clearTimeout(timer))
    readExactly(sock, HELLO_BYTES, (hello, rest) => {
      clearTimeout(timer)
      const from = helloFrom(hello, this.jobKey, this.size, this.rank)
      if (from === null || !sameUser(sock)) { sock.destroy(); return }
      const { w, eager } = from
      this.gate.greeted(sock)
      sock.setNoDelay?.(true)
      // This rank (the higher) is dialing w too: w refused that dial (the lower rank's is kept) or
      // accepted it (see conn); its REPLY says which: this HELLO's verdict waits for it.
      const mine = this.dialing.get(w)
      if (mine !== undefined && w < this.rank && !mine.destroyed) {
        const held = setTimeout(() => sock.destroy(), HANDSHAKE_MS)
        held.unref()
        const waiters = this.dialWaiters.get(mine) ?? []
        const copy = Buffer.from(hello)
        const more = rest === null ? null : Buffer.from(rest)
        waiters.push(() => { clearTimeout(held); if (!sock.destroyed) this.answerHello(sock, w, eager, copy, more) })
        this.dialWaiters.set(mine, waiters)
        return
      }
      this.answerHello(sock, w, eager, hello, rest)
    })
  }

  /** The acceptor's verdict on a well-formed HELLO of world rank `w`, then its PROVE (onIncoming). */
  private answerHello (sock: Socket, w: number, eager: number, hello: Buffer, rest: Buffer | null): void {
    const existing = this.conns[w]
    const accept = !(existing?.ready) && !(this.dialing.has(w) && w > this.rank) && !this.lost.has(w) && !this.closing
    // A copy: the chunk under `hello` may be a view the socket reuses for the next read.
    const nonceA = Buffer.from(hello.subarray(HELLO_NONCE, HELLO_NONCE + NONCE_BYTES))
    const nonceB = newNonce()
    sock.write(replyOf(accept, this.eagerBytes, this.secret, nonceA, nonceB))
    if (!accept) { sock.end(); return }
    // The connection object now, as for a dialer adopted at once, so that a send to `w` meanwhile
    // queues on it instead of dialing across this handshake; attached once the proof verifies.
    const c = existing ?? (this.conns[w] = new Conn(w, this, this.spinUs, this.yieldSpin))
    if (existing === null) this.claimed.add(w)
    let settled = false
    const unproven = (): void => {
      if (settled) return
      settled = true
      clearTimeout(proveTimer)
      sock.destroy()
      // An impostor claimed `w`: if nothing else connects it, this side dials the real one.
      if (existing === null && this.conns[w] === c && !c.ready && !this.dialing.has(w) && !this.lost.has(w) && !this.closing) this.dial(w)
    }
    // The dialer's proof, within the handshake's time; until it verifies, the dialer is no rank.
    const proveTimer = setTimeout(unproven, HANDSHAKE_MS)
    proveTimer.unref()
    sock.once('close', unproven)
    readExactly(sock, PROVE_BYTES, (prove, after) => {
      // A wrong proof: not this job's (nothing to report, as for a bad HELLO).
      if (!verify(this.secret, 'hello', 'A', nonceA, nonceB, prove)) { unproven(); return }
      settled = true
      clearTimeout(proveTimer)
      sock.off('close', unproven)
      this.gate.done(sock)
      if (c.ready || this.lost.has(w)) { sock.destroy(); return }
      c.peerEager = eager
      this.adopt(c, sock, after)
    }, rest)
  }

  /** Sockets adopted as connections so far (one per peer when crossing dials resolve right). */
  adopted = 0

  private adopt (c: Conn, sock: Socket, rest: Buffer | null): void {
    this.adopted++
    sock.on('close', () => {
      if (c.socket === sock && !c.departed && !this.closing) this.lose(c.peer, 'its connection closed')
    })
    c.attach(sock, rest)
  }

  // ---- sending --------------------------------------------------------------------------------

  /** A send of `bytes` to world rank `w` (rank `dest`, `tag`, context `ctx`, from `source`); done at once when eager went out. */
  isend (ctx: number, source: number, w: number, dest: number, tag: number, bytes: Uint8Array): Request {
    const req = new Request()
    const len = bytes.length
    if (w === this.rank) { this.sendSelf(req, ctx, source, dest, tag, bytes); return req }
    const why = this.lost.get(w)
    if (why !== undefined) { req._fail(this.lossOf(dest, w, why)); return req }
    const c = this.conn(w)
    if (len <= this.eagerBytes) {
      const status = new Status(dest, tag, len)
      if (c.sendEager(ctx, source, tag, bytes)) { req._status = status; return req }
      req._op = w
      req._sendStatus = status
      if (c.send(EAGER, ctx, source, tag, len, 0, 0, bytes, req)) req._status = status
      else { this.unfinished.add(req); req._conn = c; req._driver = this }
      return req
    }
    const sreq = this.nextId++
    c.sends.set(sreq, { req, bytes, dest, tag, ctx } satisfies SendRec)
    this.unfinished.add(req)
    req._onDone(() => this.unfinished.delete(req))
    c.send(RTS, ctx, source, tag, len, sreq, 0, null, null)
    // On shm, wait() spins for the CTS too (then writes DATA at once): a peer that spins for
    // DATA is not woken through the doorbell, and this rank is not preempted by that wake-up.
    req._conn = c
    req._driver = this
    if (c.syncIo && this.spinUs > 0) req._spin = spinFor
    return req
  }

  /** To this rank: into a matching posted receive, else queued (eager sizes as a copy: done at once). */
  private sendSelf (req: Request, ctx: number, source: number, dest: number, tag: number, bytes: Uint8Array): void {
    const p = this.matchPosted(ctx, source, tag, bytes.length)
    if (p !== null) {
      this.consume({ ctx, source, tag, length: bytes.length, worldSource: this.rank, data: bytes, sreq: 0, selfReq: req }, p.bytes, p.req)
      return
    }
    const small = bytes.length <= this.eagerBytes
    this.matcher.addUnexpected({ ctx, source, tag, length: bytes.length, worldSource: this.rank, data: small ? Uint8Array.prototype.slice.call(bytes) : bytes, sreq: 0, selfReq: small ? null : req })
    if (small) req._status = new Status(dest, tag, bytes.length)
  }

  // ---- receiving ------------------------------------------------------------------------------

  /**
   * Posts a receive into `bytes` on `ctx` from rank `source` of the communicator (world rank
   * `w`, or ANY_SOURCE -1 with `anyOf` the communicator's world ranks) with `tag` (or ANY_TAG).
   */
  irecv (ctx: number, source: number, w: number, tag: number, bytes: Uint8Array, anyOf: readonly number[]): Request {
    const req = new Request()
    if (this.takeMatch(ctx, source, tag, bytes, req)) return req
    if (w >= 0) {
      const why = this.lost.get(w)
      if (why !== undefined) { req._fail(this.lossOf(source, w, why)); return req }
      const c = this.conn(w)
      req._conn = c
      // The fast path on shm, run by wait(): the message is often right behind (a ping-pong).
      if (c.syncIo && this.spinUs > 0) req._spin = spinFor
    } else {
      for (const r of anyOf) {
        const why = this.lost.get(r)
        if (why !== undefined && r !== this.rank) { req._fail(this.lossOf(anyOf.indexOf(r), r, why)); return req }
      }
    }
    this.matcher.post({ ctx, source, tag, bytes, req, worldSource: w, anyOf: w >= 0 ? null : anyOf })
    req._driver = this
    if (w < 0) req._op = anyOf
    return req
  }

  /** Matches a new receive against the unexpected queue; true when `req` is settled or in progress. */
  private takeMatch (ctx: number, source: number, tag: number, bytes: Uint8Array, req: Request): boolean {
    const u = this.matcher.peekUnexpected(ctx, source, tag)
    if (u === null) return false
    if (u.length > bytes.length) {
      req._fail(truncatedAt(u.source, u.tag, u.length, bytes.length))
      return true
    }
    this.matcher.takeUnexpected(ctx, source, tag)
    this.consume(u, bytes, req)
    return true
  }

  /** Delivers unexpected message `u` into a receive's `bytes` (it fits). */
  private consume (u: Unexpected, bytes: Uint8Array, req: Request): void {
    if (u.data !== null) {
      bytes.set(u.data)
      req._complete(new Status(u.source, u.tag, u.length))
      if (u.selfReq !== null) u.selfReq._complete(new Status(u.source, u.tag, u.length))
      return
    }
    const why = this.lost.get(u.worldSource)
    if (why !== undefined) { req._fail(this.lossOf(u.source, u.worldSource, why)); return }
    this.startRendezvous(this.conn(u.worldSource), u.ctx, req, bytes.subarray(0, u.length), u.source, u.tag, u.sreq)
  }

  private startRendezvous (c: Conn, ctx: number, req: Request, bytes: Uint8Array, source: number, tag: number, sreq: number): void {
    const rreq = this.nextId++
    c.recvs.set(rreq, { req, bytes, source, tag } satisfies RecvRec)
    c.send(CTS, ctx, source, tag, bytes.length, sreq, rreq, null, null)
  }

  /** The first posted receive matching a message of `length` bytes; posted receives too small fail (truncate). */
  private matchPosted (ctx: number, source: number, tag: number, length: number): PostedRecv | null {
    for (;;) {
      const p = this.matcher.takePosted(ctx, source, tag)
      if (p === null || p.bytes.length >= length) return p
      p.req._fail(truncatedAt(source, tag, length, p.bytes.length))
    }
  }

  /** A complete unexpected message (eager payload in, or self): to a posted receive, else queued. */
  private deliverUnexpected (u: Unexpected): void {
    const p = this.matchPosted(u.ctx, u.source, u.tag, u.length)
    if (p === null) this.matcher.addUnexpected(u)
    else this.consume(u, p.bytes, p.req)
  }

  /** MPI_Iprobe on `ctx`: the Status of the first matching unexpected message, or null. */
  iprobe (ctx: number, source: number, w: number, tag: number): Status | null {
    let u = this.matcher.peekUnexpected(ctx, source, tag)
    if (u === null && w >= 0 && w !== this.rank) {
      const c = this.conns[w]
      if (c?.syncIo) {
        this.flushAll()
        c.pollFrames(0, null)
        u = this.matcher.peekUnexpected(ctx, source, tag)
      }
    }
    return u === null ? null : new Status(u.source, u.tag, u.length)
  }

  /** MPI_Probe: resolves with the Status of the first matching message once one is here. */
  probe (ctx: number, source: number, w: number, tag: number, anyOf: readonly number[]): Promise<Status> {
    const s = this.iprobe(ctx, source, w, tag)
    if (s !== null) return Promise.resolve(s)
    const ranks = w >= 0 ? [w] : anyOf.filter(r => r !== this.rank)
    for (const r of ranks) {
      const why = this.lost.get(r)
      if (why !== undefined) return Promise.reject(this.lossOf(w >= 0 ? source : anyOf.indexOf(r), r, why))
      this.conn(r)
    }
    return new Promise((resolve, reject) => {
      const waiter = { ctx, source, tag, resolve: (u: Unexpected) => resolve(new Status(u.source, u.tag, u.length)), reject, ranks }
      this.matcher.probes.push(waiter)
    })
  }

  // ---- frames (FrameHandler) ------------------------------------------------------------------

  /**
   * The communicators' world ranks by wire context (both of each communicator's contexts),
   * registered by Comm: checkFrame requires a message's source to be its sender's rank there.
   */
  private readonly contexts = new Map<number, readonly number[]>()

  /** @internal Comm: the world ranks of communicator id `id` (wire contexts 2·id, 2·id+1). */
  registerContexts (id: number, worldRanks: readonly number[]): void {
    this.contexts.set(2 * id, worldRanks)
    this.contexts.set(2 * id + 1, worldRanks)
  }

  /** @internal see FrameHandler: why a header from `c` is not this protocol, or null (device-wire.ts frameProblem). */
  checkFrame (c: Conn, kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number): string | null {
    return frameProblem(c, this.size, this.contexts.get(ctx), kind, ctx, source, tag, length, sreq, rreq)
  }

  /** @internal see FrameHandler: `c`'s peer sent a bad frame: it is lost, its operations fail with ERR_MPI_PROTOCOL. */
  onBadFrame (c: Conn, why: string): void {
    this.lose(c.peer, why, true)
  }

  /** @internal see FrameHandler */
  onHeader (c: Conn, kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number): void {
    if (kind === EAGER) {
      const p = this.matchPosted(ctx, source, tag, length)
      if (p !== null) {
        c.sink = p
        c.sinkType = SINK_POSTED
        c.target = length === p.bytes.length ? p.bytes : p.bytes.subarray(0, length)
      } else {
        const u: Unexpected = { ctx, source, tag, length, worldSource: c.peer, data: Buffer.allocUnsafe(length), sreq: 0, selfReq: null }
        c.sink = u
        c.sinkType = SINK_UNEXPECTED
        c.target = u.data
      }
    } else if (kind === RTS) {
      const p = this.matchPosted(ctx, source, tag, length)
      if (p !== null) this.startRendezvous(c, ctx, p.req, p.bytes.subarray(0, length), source, tag, sreq)
      else this.matcher.addUnexpected({ ctx, source, tag, length, worldSource: c.peer, data: null, sreq, selfReq: null })
    } else if (kind === CTS) {
      const s = c.sends.get(sreq) as SendRec // checkFrame: it is there
      c.sends.delete(sreq)
      s.req._op = c.peer
      s.req._sendStatus = new Status(s.dest, s.tag, s.bytes.length)
      if (c.send(DATA, ctx, source, s.tag, s.bytes.length, sreq, rreq, s.bytes, s.req)) this.onWritten(s.req, null)
    } else if (kind === DATA) {
      const r = c.recvs.get(rreq) as RecvRec // checkFrame: it is there, of this length
      c.recvs.delete(rreq)
      c.sink = r
      c.sinkType = SINK_RNDV
      c.target = r.bytes
    } else if (kind === BYE) {
      c.departed = true
    }
  }

  /** @internal see FrameHandler */
  onPayload (c: Conn): void {
    const sink = c.sink
    c.sink = null
    const type = c.sinkType
    if (type === SINK_POSTED) {
      (sink as PostedRecv).req._complete(new Status(c.source, c.tag, c.length))
    } else if (type === SINK_UNEXPECTED) {
      this.deliverUnexpected(sink as Unexpected)
    } else {
      const r = sink as RecvRec
      r.req._complete(new Status(r.source, r.tag, r.bytes.length))
    }
  }

  /** Connections that queued asynchronous writes (see writesPending). */
  private readonly writers = new Set<Conn>()

  /** @internal see FrameHandler */
  asyncWriter (c: Conn): void { this.writers.add(c) }

  /** Connections with a batch of eager frames to write on this tick, and whether the flush is queued. */
  private readonly dirty: Conn[] = []
  private flushQueued = false

  /** @internal see FrameHandler */
  batched (c: Conn): void {
    this.dirty.push(c)
    if (!this.flushQueued) { this.flushQueued = true; queueMicrotask(this.flushAll) }
  }

  /** Writes every connection's batch of eager frames (on the tick they were sent, or before a wait spins). */
  readonly flushAll = (): void => {
    this.flushQueued = false
    const d = this.dirty
    for (let i = 0; i < d.length; i++) d[i].flush()
    d.length = 0
  }

  /** @internal see FrameHandler */
  othersBusy (conn: Conn): boolean {
    for (const c of this.writers) {
      const s = c.socket
      if (s !== null && !s.destroyed && s.writableLength > 0) return true
      this.writers.delete(c)
    }
    for (const c of this.conns) if (c !== null && c !== conn && (c.sends.size > 0 || c.recvs.size > 0)) return true
    return !this.matcher.onlyFrom(conn.peer)
  }

  /** @internal see FrameHandler: a send's bytes are in the channel (or failed). */
  onWritten (r: unknown, err: Error | null): void {
    const req = r as Request
    this.unfinished.delete(req)
    if (err !== null) req._fail(this.lossOf(req._sendStatus!.source, req._op as number, this.lost.get(req._op as number) ?? err.message))
    else req._complete(req._sendStatus!)
  }

  /** @internal see FrameHandler */
  onPayloadError (c: Conn, sink: unknown, err: Error): void {
    (sink as RecvRec).req._fail(this.lossOf((sink as RecvRec).source, c.peer, this.lost.get(c.peer) ?? err.message))
  }

  // ---- loss and shutdown ----------------------------------------------------------------------

  /**
   * Marks world rank `w` lost (idempotent) and fails everything pending that involves it.
   * `why` goes into the errors' messages.
   */
  lose (w: number, why: string, protocol = false): void {
    if (this.closing || w === this.rank || this.lost.has(w)) return
    const c = this.conns[w]
    if (c?.departed && !protocol) return
    if (protocol) {
      this.badPeers.add(w)
      const e = protocolError(w, why)
      process.emitWarning(`fastsock/mpi: world ${e.message}`, { code: e.code })
    }
    const gone = protocol ? protocolError : peerLost
    this.lost.set(w, why)
    const ws = this.lostWaiters
    this.lostWaiters = []
    for (const f of ws) f(w)
    if (c !== null) {
      c.lost = true
      for (const s of c.sends.values()) (s as SendRec).req._fail(gone((s as SendRec).dest, why))
      for (const r of c.recvs.values()) (r as RecvRec).req._fail(gone((r as RecvRec).source, why))
      c.sends.clear()
      c.recvs.clear()
      const sink = c.sink
      if (sink !== null) {
        const type = c.sinkType
        if (type === SINK_POSTED) (sink as PostedRecv).req._fail(gone((sink as PostedRecv).source, why))
        else if (type === SINK_RNDV) (sink as RecvRec).req._fail(gone((sink as RecvRec).source, why))
        c.sink = null
      }
      c.socket?.destroy()
      this.dialing.get(w)?.destroy()
      c.failQueued(gone(w, why))
      c.release()
    }
    for (const p of this.matcher.allPosted()) {
      if (p.worldSource === w || (p.anyOf !== null && p.anyOf.includes(w))) {
        this.matcher.unpost(p)
        p.req._fail(gone(p.worldSource === w ? p.source : (p.anyOf as number[]).indexOf(w), why))
      }
    }
    const probes = this.matcher.probes
    for (let i = 0; i < probes.length; i++) {
      const pr = probes[i]
      if (pr.ranks.includes(w)) { probes.splice(i--, 1); pr.reject(gone(pr.source, why)) }
    }
    this.matcher.dropFrom(w, protocol)
    for (const r of this.unfinished) if ((r._op as number | null) === w) r._fail(gone(w, why))
  }

  /**
   * Request.waitSync: drives the connections `req` depends on synchronously (Conn.pumpSync)
   * until it completes: its own connection (a receive from one rank, a send), sleeping on its
   * doorbell after the polling window, or every connection of an ANY_SOURCE receive, spinning
   * over them. Throws MpiError ERR_MPI_WOULD_BLOCK (req goes on) when one of them cannot be
   * driven without the event loop now, ERR_MPI_TIMEOUT after `timeoutMs`; a connection whose
   * stream ended is reported lost (the request then fails with ERR_MPI_PEER_LOST).
   */
  waitSync (req: Request, timeoutMs: number): void {
    const bound = this.blockMs
    if (bound >= timeoutMs) { this.waitSyncFor(req, timeoutMs); return }
    try {
      this.waitSyncFor(req, bound)
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_MPI_TIMEOUT') throw wouldBlock(req, `the awaited collective's bound on a wait (${bound} ms) is spent`)
      throw e
    }
  }

  /** waitSync without the awaited collectives' bound (blockMs). */
  private waitSyncFor (req: Request, timeoutMs: number): void {
    this.flushAll()
    if (req._sendStatus !== null && !req.done) throw wouldBlock(req, 'its bytes are being written asynchronously')
    const own = req._conn as Conn | null
    if (own !== null && timeoutMs === Infinity) {
      // The blocking ping-pong's case, without allocation or clock reads: one connection, no timeout.
      for (;;) {
        if (this.pumped(own, req, own.pumpSync(req, own.spinCapUs, BLOCK_SLICE_MS))) return
      }
    }
    const ranks: readonly number[] = req._conn !== null ? [(req._conn as Conn).peer] : (req._op as readonly number[] | null) ?? []
    const conns: Conn[] = []
    for (const w of ranks) {
      if (w === this.rank) continue // a message from this rank itself is delivered when sent
      const c = this.conns[w]
      if (c === null || c === undefined) throw wouldBlock(req, `no connection to world rank ${w} yet`)
      conns.push(c)
    }
    if (conns.length === 0) throw wouldBlock(req, 'it waits for this rank itself')
    const one = conns.length === 1
    const end = performance.now() + timeoutMs
    for (;;) {
      for (const c of conns) {
        const left = end - performance.now()
        if (left <= 0) throw timedOut(timeoutMs)
        // One connection: its window's spin, then asleep on its doorbell (slices of at most
        // BLOCK_SLICE_MS, so that a timeout is kept); several: a short spin on each in turn.
        if (this.pumped(c, req, one ? c.pumpSync(req, c.spinCapUs, Math.min(left, BLOCK_SLICE_MS)) : c.pumpSync(req, ANY_SLICE_US, ANY_SLICE_US / 1000))) return
      }
    }
  }

  /**
   * Comm.sendSync's fast path: an eager message (at most `eagerBytes`) to world rank `w` over a
   * connection that can be written synchronously now goes into the channel without a Request
   * (Conn.writeEagerNow). False when it was not sent: the general path (isend, waitSync) runs.
   * `n`: bytes.length when the caller has it (a typed array's length read is a call on Node 20).
   */
  sendEagerSync (ctx: number, source: number, w: number, tag: number, bytes: Uint8Array, n = bytes.length): boolean {
    if (n > this.eagerBytes) return false
    const c = this.conns[w]
    if (c === null || c === undefined || c.lost) return false
    if (this.dirty.length > 0) this.flushAll()
    return c.writeEagerNow(ctx, source, tag, bytes, n)
  }

  /**
   * Comm.recvSync's fast path, for a receive from rank `source` (world rank `w`) with `tag` or
   * ANY_TAG: while no receive is posted, no probe waits and no unexpected message matches, the
   * connection's next frames are read synchronously (Conn.nextHeaderSync, waitSync's spin then
   * doorbell), matched here with match.ts's rule, and the first matching eager message goes
   * straight into `bytes` (Conn.takeEagerSync): no Request and no matching-engine records. Other frames are handled as the parser handles them. Returns the
   * Status, or null when the general path (irecv, waitSync) must run: a matching message is
   * queued, the connection cannot be read synchronously now, or its stream ended.
   * `n`: bytes.length when the caller has it.
   */
  recvEagerSync (ctx: number, source: number, w: number, tag: number, bytes: Uint8Array, n = bytes.length): Status | null {
    const c = this.conns[w]
    if (c === null || c === undefined) return null
    const matcher = this.matcher
    if (this.dirty.length > 0) this.flushAll()
    for (;;) {
      if (matcher.anyPosted || matcher.probes.length > 0 || this.lost.has(w) || matcher.peekUnexpected(ctx, source, tag) !== null) return null
      const bound = this.blockMs
      const head = c.nextHeaderSync(c.spinCapUs, bound < BLOCK_SLICE_MS ? bound : BLOCK_SLICE_MS)
      if (head === RECV_NONE) { if (c.atEof || bound !== Infinity) return null; continue }
      if (head === RECV_UNAVAILABLE) return null
      // The held frame: this receive's (matched as the matching engine matches), or another's.
      if (c.kind !== EAGER || !selects(ctx, source, tag, c.ctx, c.source, c.tag) || c.length > n) { c.handleHeld(); continue }
      const got = c.takeEagerSync(bytes, n)
      if (got >= 0) return new Status(source, c.tag, got)
      // RECV_PARTIAL: the payload's rest comes through the event loop, into a posted receive's
      // record (failed with the connection as any other); waitSync then throws WOULD_BLOCK, or
      // reports the loss when the stream ended.
      const req = new Request()
      req._conn = c
      req._driver = this
      c.sink = { ctx, source, tag, bytes, req, worldSource: w, anyOf: null } satisfies PostedRecv
      c.sinkType = SINK_POSTED
      return req.waitSync()
    }
  }

  /**
   * After one Conn.pumpSync of waitSync on `c` (`why`: its answer): true when `req` is done;
   * throws ERR_MPI_WOULD_BLOCK when `c` needs the event loop, when `req` is a send being written
   * asynchronously, or when `c` ended after its BYE (a finalized rank sends nothing more);
   * reports a stream that ended without BYE as lost.
   */
  private pumped (c: Conn, req: Request, why: string | null): boolean {
    if (why !== null) throw wouldBlock(req, `world rank ${c.peer}: ${why}`)
    if (req.done) return true
    // A send whose bytes went to an asynchronous write (the ring was full for the sync bound)
    // completes in that write's callback, which only the event loop runs (the stream core may
    // hold the bytes itself: writableLength can be 0 by then).
    if (req._sendStatus !== null) throw wouldBlock(req, `world rank ${c.peer}: its bytes are being written asynchronously`)
    if (!c.atEof) return false
    this.lose(c.peer, 'its connection closed')
    if (req.done) return true
    throw wouldBlock(req, `world rank ${c.peer} has finalized`)
  }

  /** Resolves once every send started so far is complete (or failed). */
  async drain (): Promise<void> {
    const pending = [...this.unfinished]
    await Promise.allSettled(pending.map(r => r.wait()))
  }

  /** Says BYE on every connection and closes them and the listener. */
  async close (): Promise<void> {
    this.closing = true
    for (const c of this.conns) {
      if (c?.ready && !c.lost && c.socket && !c.socket.destroyed) {
        c.send(BYE, 0, 0, 0, 0, 0, 0, null, null)
        c.flush()
        c.socket.end()
      }
    }
    for (const s of this.dialing.values()) s.destroy()
    this.gate.closeAll()
    const server = this.server
    if (server) await new Promise<void>(resolve => server.close(() => resolve()))
    for (const c of this.conns) c?.socket?.destroy()
  }
}

/** Request._spin of a receive on shm: the connection's receive fast path, until the request is done. */
function spinFor (req: Request, limitUs: number): void {
  const c = req._conn as Conn
  ;(c.handler as Device).flushAll()
  c.pollFrames(c.spinCapUs, req, limitUs)
}

/** MpiError ERR_MPI_TRUNCATE for a message of `length` bytes into `room` bytes. */
function truncatedAt (source: number, tag: number, length: number, room: number): MpiError {
  return truncated(length, room, source, tag, new Status(source, tag, length))
}

