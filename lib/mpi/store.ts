/**
 * The job's rendezvous store: a small key-value server in rank 0 and a client in every rank, as
 * torch.distributed's TCPStore and Gloo's rendezvous store (learned from, not copied). Values are
 * bytes (strings are stored UTF-8). Operations: set, get (waits for the key), wait (for several
 * keys), add (an integer counter kept as decimal text), check, deleteKey, each with a deadline.
 * Besides rendezvous it carries the job's liveness: every client registers its rank; when a
 * registered client's connection drops before it said `finalizing()`, the server tells every other
 * client (event 'rankLost'(rank)); a client whose server goes away emits 'rankLost'(0); `abort(code)`
 * is relayed to every client (event 'abort'(code, fromRank)).
 *
 * Control traffic only: it rides Node's own `net` (TCP or a UNIX socket), never fastsock's chain.
 *
 * Admission (docs/mpi-launch.md, "Threat model"): HELLO, CHALLENGE (carrying, under Slurm's MUNGE,
 * the credential that seals the job's secret: lib/mpi/munge.ts), PROVE; before PROVE a connection
 * may send 4 KiB, has HANDSHAKE_MS, and counts against maxUnproven (a flood cuts its oldest).
 *
 * Wire format (docs/mpi-launch.md, "Store protocol"; its code in store-wire.ts): frames of
 *   u32le length (of what follows) | u8 op | u32le id | body
 * strings are u16le byte length + UTF-8, numbers i32le / i64le. Client ops: HELLO(1), SET(2),
 * GET(3), WAIT(4), ADD(5), CHECK(6), DELETE(7), FINALIZING(8), ABORT(9), CANCEL(10); server
 * replies OK(0x81), VALUE(0x82), NUMBER(0x83), ERROR(0x84) with the request's id, and events
 * RANK_LOST(0x90), ABORT(0x91) with id 0.
 *
 * Errors (MpiError codes): ERR_MPI_INIT_TIMEOUT (connect ran out of time), ERR_MPI_STORE_TIMEOUT
 * (an operation's deadline passed), ERR_MPI_PEER_LOST (rank 0, the server, went away),
 * ERR_MPI_STORE_CLOSED (used after close()), ERR_MPI_LAUNCH (the rank registered twice, port in
 * use), ERR_MPI_PROTOCOL (not this protocol); TypeError ERR_INVALID_ARG_TYPE for bad arguments.
 */
import { EventEmitter } from 'events'
import * as fs from 'fs'
import * as net from 'net'
import * as path from 'path'
import { type MpiError, invalidArgType, isMpiErrorCode, mpiError, outOfRange, systemError } from './errors'
import { describeStore, ensurePrivateDir, type StoreAddress } from './launch'
import { HandshakeGate, NONCE_BYTES, PROOF_BYTES, myUid, newNonce, peerUid, proof, verify } from './auth'
import { STORE_MAGIC, STORE_VERSION, MAX_FRAME, MAX_HELLO_FRAME, HANDSHAKE_MS, MAX_UNPROVEN, Op, frame, str, i32, u32, i64, Reader, FrameDecoder, checkKey, toBytes, plainAddress, isLoopbackHost, proofLabel } from './store-wire'
export { STORE_MAGIC, STORE_VERSION, MAX_FRAME, MAX_HELLO_FRAME, HANDSHAKE_MS, MAX_UNPROVEN, MAX_KEY, Op } from './store-wire'


// ---------------------------------------------------------------- server

interface Conn {
  socket: net.Socket
  rank: number | null
  finalizing: boolean
  /** The handshake: the client's nonce and ours once HELLO came (PROVE expected), null before. */
  nonces: { a: Buffer, b: Buffer, rank: number } | null
  decoder: FrameDecoder | null
}
interface Waiter { conn: Conn, id: number, missing: Set<string>, get: string | null }

/** Options of StoreServer.listen. */
export interface StoreServerOptions {
  /** Address to bind for a TCP store (default: the host itself when it is a loopback address, else every interface). */
  listenHost?: string
  /** For a UNIX socket store: create the socket's directory mode 700 and check its owner first. */
  privateDir?: boolean
  /**
   * The job's secret key (lib/mpi/auth.ts): every client proves it (challenge and response).
   * Without one, only clients of this host running as this user are let in (peer uid).
   */
  secret?: Buffer | null
  /**
   * A job secret sealed in MUNGE credentials (lib/mpi/munge.ts, under Slurm): its key is the
   * secret (the `secret` option is then ignored), and each CHALLENGE carries a credential that
   * only the job's user can open.
   */
  sealed?: { key: Buffer, credential: () => Promise<Buffer> } | null
  /** Connections that have not proved the secret, at most (default MAX_UNPROVEN; see there). */
  maxUnproven?: number
}

/**
 * The store's server (rank 0). Events: 'rankLost'(rank: number) when a registered client drops
 * without finalizing; 'abort'(code: number, fromRank: number) when a client aborts.
 */
export class StoreServer extends EventEmitter {
  private readonly data = new Map<string, Buffer>()
  private readonly waiters = new Set<Waiter>()
  private readonly conns = new Set<Conn>()
  private readonly ranks = new Map<number, Conn>()
  /** Ranks that dropped without finalizing (told to late registrants too). */
  readonly lost = new Set<number>()
  private closing = false
  private aborted = false

  /** Removes the UNIX socket file when the process exits without close() (process.exit, abort). */
  private readonly unlinkAtExit: (() => void) | null = null

  /** Connections that have not proved the secret yet (auth.ts HandshakeGate, the device listener's rule too). */
  private readonly unproven: HandshakeGate
  /** Connections cut to make room under maxUnproven (for tests and reports). */
  get evicted (): number { return this.unproven.evicted }

  private constructor (private readonly server: net.Server, readonly address: StoreAddress, private readonly secret: Buffer | null,
    private readonly sealed: StoreServerOptions['sealed'], maxUnproven: number) {
    super()
    this.unproven = new HandshakeGate(maxUnproven, false)
    server.on('connection', s => this.accept(s))
    if ('path' in address) {
      const file = address.path
      this.unlinkAtExit = () => { try { fs.unlinkSync(file) } catch { /* gone */ } }
      process.once('exit', this.unlinkAtExit)
    }
  }

  /**
   * Starts a store server at `addr` (TCP port or UNIX path), or at the first of the candidate
   * addresses `addr` (an array, lib/mpi/launch.ts storeCandidates) that is not in use: a port
   * another process took first moves the store to the next candidate. Resolves once listening
   * (`server.address` says where). Rejects with ERR_MPI_LAUNCH when every candidate is in use
   * (naming them), or with the system error.
   */
  static async listen (addr: StoreAddress | StoreAddress[], options: StoreServerOptions = {}): Promise<StoreServer> {
    const candidates = Array.isArray(addr) ? addr : [addr]
    if (candidates.length === 0) throw invalidArgType('The "addr" argument must name at least one address')
    const inUse: string[] = []
    for (const a of candidates) {
      const server = await StoreServer.bindOne(a, options)
      if (typeof server === 'string') { inUse.push(server === 'in use' ? describeStore(a) : `${describeStore(a)} (${server})`); continue }
      server.on('error', () => { /* accept errors (EMFILE) must not crash rank 0 */ })
      const actual = 'path' in a ? a : { host: a.host, port: (server.address() as net.AddressInfo).port }
      const sealed = options.sealed ?? null
      return new StoreServer(server, actual, sealed?.key ?? options.secret ?? null, sealed, Math.max(1, options.maxUnproven ?? MAX_UNPROVEN))
    }
    const what = inUse.length === 1 ? `the store address ${inUse[0]} is` : `the store addresses ${inUse.join(', ')} are all`
    throw mpiError('ERR_MPI_LAUNCH', `${what} in use (another job? another user's process? set MASTER_PORT to a free port)`)
  }

  /** A server listening at `addr`, or why it cannot be had (in use, a directory not ours). */
  private static async bindOne (addr: StoreAddress, options: StoreServerOptions): Promise<net.Server | string> {
    const server = net.createServer({ noDelay: true })
    let listenArgs: net.ListenOptions
    if ('path' in addr) {
      if (options.privateDir === true) {
        try {
          ensurePrivateDir(path.dirname(addr.path))
        } catch (err) {
          // A directory of another user (made first in a shared tmp): as good as taken.
          if ((err as MpiError).code === 'ERR_MPI_LAUNCH') return (err as Error).message
          throw err
        }
      }
      try {
        if (fs.lstatSync(addr.path).isSocket()) fs.unlinkSync(addr.path) // a dead job's leftover
      } catch { /* absent */ }
      listenArgs = { path: addr.path }
    } else {
      const host = options.listenHost ?? (isLoopbackHost(addr.host) ? addr.host : undefined)
      listenArgs = host === undefined ? { port: addr.port } : { host, port: addr.port }
    }
    return await new Promise<net.Server | string>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') resolve('in use')
        else reject(err)
      })
      server.listen(listenArgs, () => { server.removeAllListeners('error'); resolve(server) })
    })
  }

  private unrefd = false

  /** Lets the process exit while only the store is open (its listener and connections unref'd). */
  unref (): this {
    this.unrefd = true
    this.server.unref()
    for (const c of this.conns) c.socket.unref()
    return this
  }

  /** Undoes unref() (finalize serves the store until every rank has left). */
  ref (): this {
    this.unrefd = false
    this.server.ref()
    for (const c of this.conns) c.socket.ref()
    return this
  }

  /**
   * Tells every registered client at once (synchronous writes) that rank `from` aborted the job
   * with `code` and `why`: for rank 0 itself, whose event loop will not run again.
   */
  relayAbort (code: number, from: number, why: string): void {
    this.aborted = true
    for (const c of this.conns) if (c.rank !== null && c.rank !== from) this.send(c, frame(Op.EVENT_ABORT, 0, i32(code), i32(from), str(why.slice(0, 2000))))
  }

  /** The registered ranks that are connected now. */
  get connectedRanks (): number[] { return [...this.ranks.keys()].sort((a, b) => a - b) }

  private accept (socket: net.Socket): void {
    const conn: Conn = { socket, rank: null, finalizing: false, nonces: null, decoder: null }
    this.unproven.admit(socket)
    this.conns.add(conn)
    if (this.unrefd) socket.unref()
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 1000)
    const dec = conn.decoder = new FrameDecoder((op, id, body) => this.handle(conn, op, id, body))
    dec.max = MAX_HELLO_FRAME
    // A connection that has not proved itself in time is cut (it holds no rank, nothing waits on it).
    const handshake = setTimeout(() => { if (conn.rank === null) socket.destroy() }, HANDSHAKE_MS)
    handshake.unref()
    socket.once('close', () => clearTimeout(handshake))
    socket.on('data', chunk => {
      try { dec.push(chunk) } catch { socket.destroy() }
    })
    socket.on('error', () => { /* close follows */ })
    socket.on('close', () => { this.dropped(conn) })
  }

  private send (conn: Conn, buf: Buffer): void {
    if (!conn.socket.destroyed) conn.socket.write(buf)
  }

  private handle (conn: Conn, op: number, id: number, body: Buffer): void {
    const r = new Reader(body)
    try {
      if (conn.rank === null && op !== Op.HELLO && op !== Op.PROVE) throw mpiError('ERR_MPI_PROTOCOL', 'store: HELLO expected first')
      switch (op) {
        case Op.HELLO: {
          if (conn.rank !== null || conn.nonces !== null) throw mpiError('ERR_MPI_PROTOCOL', 'store: a second HELLO')
          if (r.u32() !== STORE_MAGIC) throw mpiError('ERR_MPI_PROTOCOL', 'store: bad magic')
          const version = r.u32()
          if (version !== STORE_VERSION) throw mpiError('ERR_MPI_PROTOCOL', `store: version ${version}, expected ${STORE_VERSION}`)
          const rank = r.i32()
          r.need(NONCE_BYTES)
          const a = Buffer.from(r.rest().subarray(0, NONCE_BYTES))
          // Same host: the peer must run as this user (SO_PEERCRED, /proc/net/tcp); without a
          // secret, a peer whose uid cannot be told (another host) is refused too.
          const uid = peerUid(conn.socket as never)
          if (uid !== null && uid !== myUid()) throw mpiError('ERR_MPI_LAUNCH', `store: the client runs as uid ${uid}, not as the job's user`)
          if (uid === null && this.secret === null) throw mpiError('ERR_MPI_LAUNCH', 'store: this job has no secret, so only clients of this host are let in (set FASTSOCK_MPI_SECRET on every rank)')
          const b = newNonce()
          conn.nonces = { a, b, rank }
          this.unproven.greeted(conn.socket)
          const challenge = [b, this.secret === null ? Buffer.alloc(0) : proof(this.secret, proofLabel(this.address), 'B', a, b)]
          if (this.sealed === null || this.sealed === undefined) { this.send(conn, frame(Op.CHALLENGE, id, ...challenge)); return }
          // Under MUNGE the challenge carries the sealed secret (lib/mpi/munge.ts): only the job's
          // user can open it, and opening it is what lets a rank check our proof and give its own.
          this.sealed.credential().then(cred => this.send(conn, frame(Op.CHALLENGE, id, ...challenge, cred)), (err: Error) => {
            this.send(conn, frame(Op.ERROR, id, str('ERR_MPI_LAUNCH'), str(`store: cannot seal the job's secret: ${err.message}`)))
            conn.socket.end()
          })
          return
        }
        case Op.PROVE: {
          const n = conn.nonces
          if (conn.rank !== null || n === null) throw mpiError('ERR_MPI_PROTOCOL', 'store: PROVE out of turn')
          conn.nonces = null
          if (this.secret !== null && !verify(this.secret, 'store', 'A', n.a, n.b, r.rest())) {
            throw mpiError('ERR_MPI_LAUNCH', "store: the client did not prove the job's secret")
          }
          const rank = n.rank
          if (rank >= 0 && (this.ranks.has(rank) || this.lost.has(rank))) {
            const why = this.lost.has(rank) ? `rank ${rank} was lost and cannot rejoin the job` : `rank ${rank} registered twice with the store (two jobs sharing one store address?)`
            this.send(conn, frame(Op.ERROR, id, str('ERR_MPI_LAUNCH'), str(why)))
            return
          }
          conn.rank = rank
          this.unproven.done(conn.socket)
          if (conn.decoder !== null) conn.decoder.max = MAX_FRAME
          if (rank >= 0) this.ranks.set(rank, conn)
          this.send(conn, frame(Op.OK, id, str(plainAddress(conn.socket.remoteAddress))))
          for (const l of this.lost) this.send(conn, frame(Op.RANK_LOST, 0, i32(l)))
          this.emit('joined', rank)
          return
        }
        case Op.SET: {
          const key = r.str()
          this.data.set(key, Buffer.from(r.rest()))
          this.send(conn, frame(Op.OK, id))
          this.keyChanged(key)
          return
        }
        case Op.GET: {
          const key = r.str()
          const v = this.data.get(key)
          if (v !== undefined) this.send(conn, frame(Op.VALUE, id, v))
          else this.waiters.add({ conn, id, missing: new Set([key]), get: key })
          return
        }
        case Op.WAIT: case Op.CHECK: {
          const n = r.u32()
          const missing = new Set<string>()
          for (let i = 0; i < n; i++) { const k = r.str(); if (!this.data.has(k)) missing.add(k) }
          if (op === Op.CHECK) this.send(conn, frame(Op.NUMBER, id, i64(missing.size === 0 ? 1n : 0n)))
          else if (missing.size === 0) this.send(conn, frame(Op.OK, id))
          else this.waiters.add({ conn, id, missing, get: null })
          return
        }
        case Op.ADD: {
          const key = r.str()
          const delta = r.i64()
          const old = this.data.get(key)
          const text = old === undefined ? '0' : old.toString('utf8')
          if (!/^-?\d+$/.test(text)) throw mpiError('ERR_MPI_PROTOCOL', `store: add on key '${key}' whose value is not an integer`)
          const next = BigInt(text) + delta
          this.data.set(key, Buffer.from(next.toString(), 'utf8'))
          this.send(conn, frame(Op.NUMBER, id, i64(next)))
          this.keyChanged(key)
          return
        }
        case Op.DELETE: {
          const existed = this.data.delete(r.str())
          this.send(conn, frame(Op.NUMBER, id, i64(existed ? 1n : 0n)))
          return
        }
        case Op.FINALIZING:
          conn.finalizing = true
          this.send(conn, frame(Op.OK, id))
          return
        case Op.ABORT: {
          const code = r.i32()
          const why = r.at < r.buf.length ? r.str() : ''
          this.aborted = true
          const from = conn.rank ?? -1
          for (const c of this.conns) if (c !== conn && c.rank !== null) this.send(c, frame(Op.EVENT_ABORT, 0, i32(code), i32(from), str(why)))
          this.send(conn, frame(Op.OK, id))
          this.emit('abort', code, from, why)
          return
        }
        case Op.CANCEL: {
          const target = r.u32()
          for (const w of this.waiters) if (w.conn === conn && w.id === target) this.waiters.delete(w)
          return
        }
        default:
          throw mpiError('ERR_MPI_PROTOCOL', `store: unknown op ${op}`)
      }
    } catch (err) {
      const e = err as MpiError
      this.send(conn, frame(Op.ERROR, id, str(e.code ?? 'ERR_MPI_PROTOCOL'), str(e.message)))
      // A peer that never said a valid HELLO is not a store client: hang up.
      if (conn.rank === null) conn.socket.end()
    }
  }

  private keyChanged (key: string): void {
    for (const w of this.waiters) {
      if (!w.missing.delete(key) || w.missing.size > 0) continue
      this.waiters.delete(w)
      if (w.get !== null) this.send(w.conn, frame(Op.VALUE, w.id, this.data.get(w.get) as Buffer))
      else this.send(w.conn, frame(Op.OK, w.id))
    }
  }

  private dropped (conn: Conn): void {
    this.conns.delete(conn)
    for (const w of this.waiters) if (w.conn === conn) this.waiters.delete(w)
    if (conn.rank === null || conn.rank < 0 || this.ranks.get(conn.rank) !== conn) return
    this.ranks.delete(conn.rank)
    if (conn.finalizing || this.closing || this.aborted) return
    this.lost.add(conn.rank)
    for (const c of this.conns) if (c.rank !== null) this.send(c, frame(Op.RANK_LOST, 0, i32(conn.rank)))
    this.emit('rankLost', conn.rank)
  }

  /**
   * Stops the server: no new connections; waits up to `graceMs` (default 10000) for the clients
   * to disconnect (each closes after its finalize), then cuts the rest (they see 'rankLost'(0)
   * unless they said finalizing). Removes a UNIX socket file. Resolves when done; never rejects.
   */
  async close ({ graceMs = 10000 }: { graceMs?: number } = {}): Promise<void> {
    if (this.closing) return
    this.closing = true
    this.server.close()
    // Connections that never proved the secret are no clients to wait for (an intruder's flood
    // must not hold the job's end for graceMs).
    this.unproven.closeAll()
    const registered = (): number => { let n = 0; for (const c of this.conns) if (c.rank !== null) n++; return n }
    if (registered() > 0) {
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, graceMs)
        const check = (): void => { if (registered() === 0) { clearTimeout(timer); resolve() } }
        for (const c of this.conns) c.socket.once('close', () => setImmediate(check))
      })
    }
    for (const c of this.conns) c.socket.destroy()
    if (this.unlinkAtExit !== null) {
      process.removeListener('exit', this.unlinkAtExit)
      this.unlinkAtExit()
    }
  }
}

// ---------------------------------------------------------------- client

interface Pending { resolve: (v: Buffer | bigint | undefined) => void, reject: (e: Error) => void, timer: NodeJS.Timeout | null, what: string }

/** Options of StoreClient.connect. */
export interface StoreConnectOptions {
  /** This client's rank (registered with the server); -1 for an observer that is no rank. */
  rank: number
  /** Deadline of the connection attempts, ms (default 30000); also the default operation deadline. */
  timeoutMs?: number
  /** For a UNIX socket store: refuse a socket directory not owned by this user or not mode 700. */
  verifyDir?: boolean
  /**
   * The job's secret key (lib/mpi/auth.ts): the server must prove it, and this client does.
   * Without one, the server must be of this host and run as this user (its uid is checked).
   */
  secret?: Buffer | null
  /**
   * For a job whose secret the store seals in a MUNGE credential (lib/mpi/munge.ts): opens the
   * credential of the CHALLENGE and resolves with the secret key (rejects when it does not
   * qualify). Used when `secret` is null; the key found is then `client.secret`.
   */
  openSealed?: ((credential: Buffer) => Promise<Buffer>) | null
}

/** Options of an operation: its deadline in ms (default: the client's; Infinity for none). */
export interface StoreOpOptions { timeoutMs?: number }

/** Candidates racing in StoreClient.connect: set once one won; the sockets of attempts under way. */
interface Race { won: boolean, sockets: Set<net.Socket> }
/** Why a candidate gave up (StoreClient.connect): held by something else, or time ran out after `last`. */
interface Outcome { notOurs?: Error, last?: unknown }
type NotOurs = Error & { notOurs?: boolean }

const RETRY_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'EADDRNOTAVAIL', 'EPIPE', 'ERR_MPI_STORE_EOF'])

/**
 * A client of the store (every rank, rank 0 included). Events: 'rankLost'(rank: number),
 * 'abort'(code: number, fromRank: number).
 */
export class StoreClient extends EventEmitter {
  /** This client's local IP as seen on its store connection ('127.0.0.1' over a UNIX socket). */
  localAddress: string
  /** This client's address as the server saw it ('' over a UNIX socket). */
  observedAddress = ''
  /** Every rank reported lost so far (also those lost before this client registered). */
  readonly lostRanks = new Set<number>()
  /** The job's secret key this client proved: the one given, or the one the store sealed for it; null for none. */
  secret: Buffer | null = null
  /** The code of an abort another rank relayed, null while none (kept for a listener that registers late). */
  abortCode: number | null = null
  /** Who aborted (its rank) and why (its text, '' when it gave none), with abortCode. */
  abortFrom: { rank: number, why: string } | null = null
  /** True once the server accepted HELLO (before that, a closed connection is retried, not lost). */
  private registered = false
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private finalized = false
  private closed = false
  private lostServer = false

  private constructor (private readonly socket: net.Socket, readonly rank: number, readonly address: StoreAddress, private readonly defaultTimeoutMs: number) {
    super()
    this.localAddress = 'path' in address ? '127.0.0.1' : plainAddress(socket.localAddress)
    const dec = new FrameDecoder((op, id, body) => this.onFrame(op, id, body))
    socket.on('data', chunk => {
      try { dec.push(chunk) } catch { socket.destroy() }
    })
    socket.on('error', () => { /* close follows */ })
    socket.on('close', () => this.onClose())
  }

  /**
   * Connects to the store at `addr` and registers `rank`, retrying (25 ms doubling to 500 ms)
   * while nobody listens yet, until `timeoutMs`. `addr` may be the candidate addresses of
   * lib/mpi/launch.ts storeCandidates (the store moves to the next one when a port is taken):
   * they are tried at once, each in its own retry loop, and the first that proves to be this
   * job's store wins (the others' attempts are cut). A candidate held by something else (another
   * uid on this host, a wrong proof of the secret, a credential that does not open, an answer
   * that is not this protocol) is dropped. Rejects with MpiError ERR_MPI_INIT_TIMEOUT (cause: the
   * last error) when time runs out, naming the candidates found held by others; ERR_MPI_LAUNCH
   * when the rank is already registered, the socket directory is not private, or every candidate
   * is held by something else (for a single address: that address's refusal, as it came).
   */
  static async connect (addr: StoreAddress | StoreAddress[], { rank, timeoutMs = 30000, verifyDir = false, secret = null, openSealed = null }: StoreConnectOptions): Promise<StoreClient> {
    if (!Number.isInteger(rank) || rank < -1) {
      throw invalidArgType('The "rank" option must be an integer >= -1')
    }
    const candidates = Array.isArray(addr) ? addr : [addr]
    if (candidates.length === 0) throw invalidArgType('The "addr" argument must name at least one address')
    const deadline = Date.now() + timeoutMs
    const race: Race = { won: false, sockets: new Set() }
    const outcomes: Array<Outcome | undefined> = new Array(candidates.length)
    return await new Promise<StoreClient>((resolve, reject) => {
      let left = candidates.length
      const end = (): void => {
        race.won = true
        for (const s of race.sockets) s.destroy()
      }
      candidates.forEach((a, i) => {
        StoreClient.tryAt(a, rank, deadline, timeoutMs, verifyDir, secret, openSealed, race).then(r => {
          if (!(r instanceof StoreClient)) { outcomes[i] = r; return }
          if (race.won) { r.close().catch(() => {}); return }
          end()
          resolve(r)
        }, (err: Error) => {
          if (race.won) return
          end()
          reject(err)
        }).finally(() => {
          if (--left > 0 || race.won) return
          race.won = true
          reject(StoreClient.noStore(candidates, outcomes as Outcome[], timeoutMs))
        })
      })
    })
  }

  /** The error when no candidate was the store (connect): see there. */
  private static noStore (candidates: StoreAddress[], outcomes: Outcome[], timeoutMs: number): Error {
    const held = outcomes.flatMap((o, i) => o.notOurs !== undefined ? [`${describeStore(candidates[i])} (${o.notOurs.message})`] : [])
    if (held.length === candidates.length) {
      if (candidates.length === 1) return outcomes[0].notOurs as Error
      return mpiError('ERR_MPI_LAUNCH', `no store of this job at any of its addresses: each is held by a process that is not this job's store (another user's, or another job's): ${held.join('; ')}`)
    }
    const first = outcomes.findIndex(o => o.notOurs === undefined)
    const last = outcomes[first].last
    const why = last === null || last === undefined ? '' : `: ${(last as Error).message}`
    const others = candidates.length > 1 ? ` (nor at its other addresses ${candidates.filter((_c, i) => i !== first).map(describeStore).join(', ')})` : ''
    const squat = held.length > 0 ? `; held by processes that are not this job's store: ${held.join('; ')}` : ''
    // `held`: for the caller's own message (bootstrap's names the variables read).
    return Object.assign(mpiError('ERR_MPI_INIT_TIMEOUT', `no store at ${describeStore(candidates[first])}${others} after ${timeoutMs} ms${why}${squat}`, { cause: last ?? undefined }), { held })
  }

  /**
   * One candidate's retry loop (connect): resolves with the client, or with why it gave up (held
   * by something else, a directory that is not private included; time ran out, with the last
   * error; another candidate won); rejects with a fatal error (the rank registered twice).
   */
  private static async tryAt (addr: StoreAddress, rank: number, deadline: number, timeoutMs: number, verifyDir: boolean, secret: Buffer | null,
    openSealed: ((c: Buffer) => Promise<Buffer>) | null, race: Race): Promise<StoreClient | Outcome> {
    let delay = 25
    let last: unknown = null
    for (;;) {
      const left = deadline - Date.now()
      if (left <= 0 || race.won) break
      try {
        let mine: boolean
        try {
          mine = 'path' in addr && verifyDir ? ensurePrivateDir(path.dirname((addr as { path: string }).path), false) : true
        } catch (err) {
          // Not our directory (another user's, or open to others): no store of ours behind it.
          return { notOurs: err as Error }
        }
        if (!mine) throw systemError('ENOENT', `${path.dirname((addr as { path: string }).path)} does not exist yet`)
        return await StoreClient.attempt(addr, rank, left, timeoutMs, secret, openSealed, race)
      } catch (err) {
        if ((err as NotOurs).notOurs === true) return { notOurs: err as Error }
        const code = (err as NodeJS.ErrnoException).code ?? ''
        // (A HELLO unanswered until the deadline: the time is up, as for the connection.)
        if (!RETRY_CODES.has(code) && code !== 'ERR_MPI_STORE_TIMEOUT') throw err
        last = err
      }
      await new Promise(resolve => setTimeout(resolve, Math.min(delay, Math.max(0, deadline - Date.now()))))
      delay = Math.min(delay * 2, 500)
    }
    return { last }
  }

  /**
   * One connection attempt: connect; on this host, the listener's uid (it must be ours: another
   * user's process holds the address otherwise); HELLO (with our nonce), CHALLENGE (the server's
   * nonce and proof over its port, or its uid checked when the job has no secret), PROVE (ours),
   * OK. Rejects with the system error, ERR_MPI_STORE_EOF, ERR_MPI_LAUNCH when the rank is already
   * registered, or an error marked notOurs when the server is not the job's (anything before its
   * proof verified: an answer not yet proven is no store's word).
   */
  private static attempt (addr: StoreAddress, rank: number, leftMs: number, defaultTimeoutMs: number, given: Buffer | null, openSealed: ((c: Buffer) => Promise<Buffer>) | null, race: Race): Promise<StoreClient> {
    return new Promise((resolve, reject) => {
      const socket = 'path' in addr ? net.connect({ path: addr.path }) : net.connect({ host: addr.host, port: addr.port, noDelay: true })
      race.sockets.add(socket)
      const timer = setTimeout(() => {
        socket.destroy()
        reject(systemError('ETIMEDOUT', 'connection attempt timed out'))
      }, leftMs)
      // Cut (another candidate won) before it connected: no 'error' comes then.
      socket.once('close', () => { race.sockets.delete(socket); clearTimeout(timer); reject(systemError('ECONNRESET', 'connection attempt cut')) })
      const onError = (err: Error): void => { clearTimeout(timer); socket.destroy(); reject(err) }
      socket.once('error', onError)
      socket.once('connect', () => {
        socket.removeListener('error', onError)
        socket.setKeepAlive(true, 1000)
        const client = new StoreClient(socket, rank, addr, defaultTimeoutMs)
        const a = newNonce()
        const ms = Math.max(1, leftMs)
        let verified = false
        const handshake = async (): Promise<Buffer> => {
          // On this host the listener's owner tells at once (SO_PEERCRED, /proc/net/tcp): a
          // process of another user that took the address first is no store of ours.
          const uid = peerUid(socket as never)
          if (uid !== null && uid !== myUid()) throw mpiError('ERR_MPI_LAUNCH', `the store address ${describeStore(addr)} is held by a process of uid ${uid}, not this job's user`)
          let challenge = await client.request('hello', Op.HELLO, ms, [u32(STORE_MAGIC), u32(STORE_VERSION), i32(rank), a], false) as Buffer
          if (challenge === undefined || challenge.length < NONCE_BYTES) throw mpiError('ERR_MPI_PROTOCOL', `the store at ${describeStore(addr)} answered HELLO with no challenge`)
          const b = challenge.subarray(0, NONCE_BYTES)
          let secret = given
          // A store that seals the secret sends nonce, proof and the credential (lib/mpi/munge.ts).
          if (secret === null && openSealed !== null && challenge.length > NONCE_BYTES + PROOF_BYTES) {
            secret = await openSealed(Buffer.from(challenge.subarray(NONCE_BYTES + PROOF_BYTES)))
            challenge = challenge.subarray(0, NONCE_BYTES + PROOF_BYTES)
          }
          client.secret = secret
          if (secret !== null) {
            if (!verify(secret, proofLabel(addr), 'B', a, b, challenge.subarray(NONCE_BYTES, NONCE_BYTES + PROOF_BYTES))) {
              throw mpiError('ERR_MPI_LAUNCH', `the store at ${describeStore(addr)} did not prove the job's secret (another job's store, or another user's)`)
            }
          } else if (uid === null) {
            throw mpiError('ERR_MPI_LAUNCH', `the store at ${describeStore(addr)} is not on this host, and this job has no secret to check it by (set FASTSOCK_MPI_SECRET)`)
          }
          verified = true
          return await client.request('prove', Op.PROVE, ms, [secret === null ? Buffer.alloc(0) : proof(secret, 'store', 'A', a, b)], false) as Buffer
        }
        handshake().then(observed => {
          clearTimeout(timer)
          client.observedAddress = new Reader(observed).str()
          client.registered = true
          race.sockets.delete(socket)
          resolve(client)
        }, (err: Error) => {
          clearTimeout(timer)
          socket.destroy()
          const code = (err as NodeJS.ErrnoException).code ?? ''
          reject(!verified && !RETRY_CODES.has(code) && code !== 'ERR_MPI_STORE_TIMEOUT' ? Object.assign(err, { notOurs: true }) : err)
        })
      })
    })
  }

  private onFrame (op: number, id: number, body: Buffer): void {
    const r = new Reader(body)
    // Events go out on setImmediate: ones that came with the HELLO reply must reach listeners
    // attached after connect() resolved.
    if (op === Op.RANK_LOST) { const rank = r.i32(); this.lostRanks.add(rank); setImmediate(() => this.emit('rankLost', rank)); return }
    if (op === Op.EVENT_ABORT) {
      const code = r.i32()
      const from = r.i32()
      const why = r.at < r.buf.length ? r.str() : ''
      this.abortCode = code
      this.abortFrom = { rank: from, why }
      setImmediate(() => this.emit('abort', code, from, why))
      return
    }
    const p = this.pending.get(id)
    if (p === undefined) return // a reply to a request that timed out
    this.pending.delete(id)
    if (p.timer !== null) clearTimeout(p.timer)
    switch (op) {
      case Op.OK: case Op.CHALLENGE: p.resolve(body.length > 0 ? Buffer.from(body) : undefined); return
      case Op.VALUE: p.resolve(Buffer.from(r.rest())); return
      case Op.NUMBER: p.resolve(r.i64()); return
      case Op.ERROR: { const code = r.str(); p.reject(mpiError(isMpiErrorCode(code) ? code : 'ERR_MPI_PROTOCOL', `store ${p.what}: ${r.str()}`)); return }
      default: p.reject(mpiError('ERR_MPI_PROTOCOL', `store: unexpected op ${op}`))
    }
  }

  private onClose (): void {
    const gone = !this.closed
    const err = !this.registered
      ? mpiError('ERR_MPI_STORE_EOF', 'the store closed the connection during HELLO')
      : gone
        ? mpiError('ERR_MPI_PEER_LOST', `rank 0 is lost: the store at ${describeStore(this.address)} closed the connection`, { rank: 0 })
        : mpiError('ERR_MPI_STORE_CLOSED', 'the store client was closed')
    for (const [, p] of this.pending) { if (p.timer !== null) clearTimeout(p.timer); p.reject(err) }
    this.pending.clear()
    if (gone && this.registered && !this.finalized && !this.lostServer) {
      this.lostServer = true
      this.lostRanks.add(0)
      this.emit('rankLost', 0)
    }
  }

  /** Sends one request; resolves with its reply, rejects at the deadline (ERR_MPI_STORE_TIMEOUT). */
  private request (what: string, op: number, timeoutMs: number | undefined, parts: Uint8Array[], cancellable: boolean): Promise<Buffer | bigint | undefined> {
    if (this.closed) return Promise.reject(mpiError('ERR_MPI_STORE_CLOSED', `store ${what}: the client is closed`))
    if (this.socket.destroyed) return Promise.reject(mpiError('ERR_MPI_PEER_LOST', `store ${what}: rank 0 is lost (the store is gone)`, { rank: 0 }))
    const ms = timeoutMs ?? this.defaultTimeoutMs
    if (typeof ms !== 'number' || !(ms > 0)) {
      return Promise.reject(outOfRange(`The "timeoutMs" option must be > 0. Received ${String(ms)}`))
    }
    const id = this.nextId
    this.nextId = this.nextId >= 0xfffffff0 ? 1 : this.nextId + 1
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null
      if (Number.isFinite(ms) && ms < 2 ** 31) {
        timer = setTimeout(() => {
          this.pending.delete(id)
          if (cancellable && !this.socket.destroyed) this.socket.write(frame(Op.CANCEL, 0, u32(id)))
          reject(mpiError('ERR_MPI_STORE_TIMEOUT', `store ${what}: no answer within ${ms} ms`))
        }, ms)
      }
      this.pending.set(id, { resolve, reject, timer, what })
      this.socket.write(frame(op, id, ...parts))
    })
  }

  /** Stores `value` (bytes, or a string as UTF-8) under `key`, waking whoever waits for it. */
  async set (key: string, value: Uint8Array | string, opts?: StoreOpOptions): Promise<void> {
    checkKey(key)
    await this.request(`set('${key}')`, Op.SET, opts?.timeoutMs, [str(key), toBytes(value)], false)
  }

  /** The value of `key`, waiting until some client sets it; ERR_MPI_STORE_TIMEOUT at the deadline. */
  async get (key: string, opts?: StoreOpOptions): Promise<Uint8Array> {
    checkKey(key)
    return await this.request(`get('${key}')`, Op.GET, opts?.timeoutMs, [str(key)], true) as Buffer
  }

  /** Resolves when every key of `keys` is set; ERR_MPI_STORE_TIMEOUT at the deadline. */
  async wait (keys: string[], opts?: StoreOpOptions): Promise<void> {
    if (!Array.isArray(keys)) checkKey(keys, 'keys')
    keys.forEach(k => checkKey(k, 'keys'))
    const shown = keys.length > 3 ? `${keys.slice(0, 3).join("', '")}', ... (${keys.length} keys)` : keys.join("', '")
    await this.request(`wait('${shown}')`, Op.WAIT, opts?.timeoutMs, [u32(keys.length), ...keys.map(str)], true)
  }

  /** Whether every key of `keys` is set now (no waiting). */
  async check (keys: string[], opts?: StoreOpOptions): Promise<boolean> {
    keys.forEach(k => checkKey(k, 'keys'))
    return await this.request('check', Op.CHECK, opts?.timeoutMs, [u32(keys.length), ...keys.map(str)], false) === 1n
  }

  /** Adds `delta` (an integer) to the counter `key` (absent = 0); resolves with the new value. */
  async add (key: string, delta: number, opts?: StoreOpOptions): Promise<number> {
    checkKey(key)
    if (!Number.isSafeInteger(delta)) {
      throw invalidArgType('The "delta" argument must be a safe integer')
    }
    return Number(await this.request(`add('${key}')`, Op.ADD, opts?.timeoutMs, [str(key), i64(BigInt(delta))], false) as bigint)
  }

  /** Deletes `key`; resolves true when it existed. */
  async deleteKey (key: string, opts?: StoreOpOptions): Promise<boolean> {
    checkKey(key)
    return await this.request(`delete('${key}')`, Op.DELETE, opts?.timeoutMs, [str(key)], false) === 1n
  }

  /**
   * Says this rank is leaving in order: its disconnect will not be reported as lost, and the
   * server going away no longer emits 'rankLost'(0) here.
   */
  async finalizing (): Promise<void> {
    await this.request('finalizing', Op.FINALIZING, undefined, [], false)
    this.finalized = true
  }

  /**
   * Asks the server to relay abort(`code`) to every other client (their 'abort' event); resolves
   * once relayed (or at once when the server is gone). The caller then exits.
   */
  async abort (code: number, why = ''): Promise<void> {
    this.finalized = true
    try {
      await this.request('abort', Op.ABORT, 2000, [i32(code | 0), str(why.slice(0, 2000))], false)
    } catch { /* the job ends anyway */ }
  }

  /** Closes the connection (pending operations reject with ERR_MPI_STORE_CLOSED). */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.socket.destroyed) return
    await new Promise<void>(resolve => {
      this.socket.once('close', () => resolve())
      this.socket.end()
      setTimeout(() => this.socket.destroy(), 1000).unref()
    })
  }

  /** True while a request waits for its reply. */
  get busy (): boolean { return this.pending.size > 0 }

  /** Lets the process exit while only this connection is open (net.Socket#unref). */
  unref (): this { this.socket.unref(); return this }
  /** Undoes unref(). */
  ref (): this { this.socket.ref(); return this }
}
