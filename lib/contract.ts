/**
 * L0, the rung contract: what every rung of the failover chain is (`Rung`), what a connection it
 * made is (`Channel`), what the chain asks of it (`ConnectRequest`, `AttemptContext`) and what a
 * server asks of it (`ListenRequest`). Types and shared constants only: this module imports
 * nothing of fastsock, and every other module may import it.
 *
 * A rung is one file or folder under lib/transports/ exporting one `Rung`, plus one line in
 * lib/transports/registry.ts (docs/design.md, "Adding a rung"). The socket, the server and the
 * chain read a Channel's capabilities and hooks; they never ask which rung made it.
 */
import type * as net from 'net'

/** Address family AF_SMC (the kernel's SMC, net/smc): the `smc` rung's sockets. */
export const AF_SMC = 43
/** Address family AF_INET_SDP (legacy OFED kernels' Sockets Direct Protocol): the `sdp` rung's sockets. */
export const AF_INET_SDP = 27
/** Backlog of every fastsock listener beside the TCP one: Node's default for a TCP listen. */
export const LISTEN_BACKLOG = 511

/** One end's address of a connection, in Node's `_getsockname`/`_getpeername` shape. */
export interface EndpointView { address: string, family: 'IPv4' | 'IPv6', port: number }

/** The TCP 4-tuple a connection that does not run over a kernel TCP socket reports on one end. */
export interface TcpView { local: EndpointView, remote: EndpointView }

/** A rung on this host: usable or not, and why, in a sentence (what `fastsock probe` prints). */
export interface Availability {
  available: boolean
  reason: string
}

/**
 * The parts of Node's StreamBase handle (a `Pipe` or a `TCP` wrap) fastsock touches when a
 * socket takes over a connection made elsewhere.
 */
export interface KernelHandle {
  fd: number
  reading: boolean
  readStop (): number
  readStart (): number
  getAsyncId (): number
  useUserBuffer (buf: Uint8Array): void
  close (cb?: () => void): void
  onread: unknown
  bytesRead: number
  bytesWritten: number
}

/**
 * What a native endpoint without a kernel handle (shm, verbs) offers the stream core
 * (lib/stream/endpoint-stream.ts), as one operations table (UCX's `uct_iface_ops`): non-blocking
 * moves that return byte counts, arming for the next event (false: there is work, retry now), the
 * connection's state, and where its events go. csrc/stream_state.h defines the state bits
 * (exported as `native.streamState`). An optional member is an optional capability: a missing one
 * means the endpoint does not do that, and the Channel's capability flags are derived from them
 * (`endpointCaps`), never declared beside them.
 */
export interface StreamEndpoint {
  write (view: ArrayBufferView): number
  /**
   * Optional: one call for a whole writev, the bytes of views[index] (from byte `offset`), then
   * views[index + 1]..., in order, as far as they fit; returns the bytes moved (the stream core
   * calls write() per view without it).
   */
  writev? (views: ArrayBufferView[], index: number, offset: number): number
  readInto (view: ArrayBufferView): number
  /** At most maxBytes, or a whole rendezvous Buffer when it fits; may return a Uint8Array view. */
  read (maxBytes: number): Uint8Array | null
  readable (): number
  writable (): number
  armRead (): boolean
  armWrite (): boolean
  /**
   * Optional: asked before the stream core reads more bytes once a reader ran (it handed bytes
   * to JS in this turn, or the read was not started by the endpoint's own event). True: other
   * connections of the event loop became ready first, and this one is queued behind them: read
   * nothing more now, arm nothing for reading, `onevent` comes in its turn. So bytes reach JS
   * across connections in the order they became ready (docs/polling.md, "Order across
   * connections"). Without it the stream core reads on.
   */
  yieldRead? (): boolean
  /** Bits: 1 peer EOF, 2 peer reset, 4 peer gone, 8 closed, 16 unread bytes waiting. */
  state (): number
  shutdown (): void
  close (reset: boolean): void
  ref (): void
  unref (): void
  /**
   * Upper bound (µs) of the in-loop polling before sleeping, a number in [0, 1e6]; 0 never polls.
   * Throws a TypeError (ERR_INVALID_ARG_TYPE) for a non-number, a RangeError (ERR_OUT_OF_RANGE)
   * for a negative, non-finite or larger value (csrc/endpoint_face.h: the same on every endpoint).
   */
  setPollUs (us: number): void
  /** [bytesWritten, bytesRead] since creation; once closed, the values it had when it closed. */
  counters (): [number, number]
  /**
   * Where the endpoint's events (doorbells, liveness, completions) go: the endpoint is made
   * during the set-up, before the socket and its stream core exist.
   */
  setOnEvent (fn: () => void): void
  /** Optional (capability `stats`): protocol counters (`socket.transportStats()`). */
  stats? (): Record<string, number | string | boolean>
  /**
   * Optional (capability `syncIo`, with readIntoSync): every byte of `view` into the endpoint,
   * busy-polling for spinUs (with sched_yield() between polls when `yieldSpin`) then sleeping
   * in the calling thread, for at most timeoutMs.
   */
  writeSync? (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin?: boolean): number
  /** Optional (capability `syncIo`): fills `view` (fewer bytes only at EOF), as writeSync waits. */
  readIntoSync? (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin?: boolean): number
  /**
   * Optional (capability `zeroCopyLoan`, with txHeadOffset and commit): one ArrayBuffer over the
   * transmit ring's mirrored mapping (2 x ring bytes), where loans are handed out.
   */
  txRegion? (): ArrayBuffer
  /** Offset in txRegion() of the next byte to send, in [0, ring bytes). */
  txHeadOffset? (): number
  /** Publishes n bytes already placed at txHeadOffset(); 0 when n bytes are not free. */
  commit? (n: number): number
}

/**
 * The capability flags an endpoint's members imply: `syncIo` (writeSync and readIntoSync),
 * `zeroCopyLoan` (txRegion, txHeadOffset, commit), `stats` (stats).
 */
export function endpointCaps (ep: StreamEndpoint): Pick<Capabilities, 'syncIo' | 'zeroCopyLoan' | 'stats'> {
  const has = (m: keyof StreamEndpoint): boolean => typeof ep[m] === 'function'
  return {
    syncIo: has('writeSync') && has('readIntoSync'),
    zeroCopyLoan: has('txRegion') && has('txHeadOffset') && has('commit'),
    stats: has('stats')
  }
}

/** What the kernel runs an smc connection on (smc_diag), as `socket.smcInfo()` reports it. */
export interface SmcInfo {
  /** 'SMCR': SMC-R over RDMA; 'SMCD': SMC-D (ISM); 'TCP': the kernel fell back to TCP. */
  mode: 'SMCR' | 'SMCD' | 'TCP'
  /** The kernel's fallback reason (SMC_CLC_DECL_*, net/smc/smc_clc.h); 0 without a fallback. */
  fallbackReason: number
  /** Its name and meaning ('' without a fallback). */
  fallbackText: string
  /** The reason the peer gave when it declined (0 when none). */
  peerDiagnosis: number
}

/**
 * What a channel can do beyond a byte stream; the socket offers an API only where its flag is
 * set (UCX's capability flags: the caller asks what the transport can do, never which it is).
 */
export interface Capabilities {
  /** `writeSync` / `readIntoSync`: the endpoint is a ring this thread may busy-poll (shm). */
  syncIo: boolean
  /** `allocShared`: a view inside the transmit ring to fill and write without a copy (shm). */
  zeroCopyLoan: boolean
  /** `transportStats()`: the endpoint has protocol counters (`stats()`, verbs). */
  stats: boolean
  /**
   * The endpoint joins its event loop's progress engine (csrc/progress.h): a waiting connection
   * is busy-polled for an adaptive window before it sleeps, ON by default with a cap of
   * DEFAULT_POLL_WINDOW_US (docs/polling.md). Without it the endpoint polls only when asked
   * (`pollUs` > 0).
   */
  adaptivePolling: boolean
  /** `smcInfo()`: the handle is an AF_SMC socket whose real mode smc_diag reports. */
  smcInfo: boolean
  /**
   * The kernel handle is a UNIX stream socket standing in for TCP (unix, rsocket's bridge):
   * `resetAndDestroy()` raises the channel's `resetFlag` (no RST exists) and destroys, the end of
   * the stream is ECONNRESET when the peer raised it, and the first EPIPE after the peer
   * closed is swallowed as TCP does (the peer answers that write with a RST) when the write would
   * have fit the send buffer (`Channel.sendBufferBytes`).
   */
  pipeStandIn: boolean
}

/** No capability: a plain byte stream (tcp, sdp, and Node's own sockets). */
export const NO_CAPABILITIES: Capabilities = Object.freeze({ syncIo: false, zeroCopyLoan: false, adaptivePolling: false, stats: false, smcInfo: false, pipeStandIn: false })

/** Behaviour a rung adds to a socket on its channel; each hook is optional. */
export interface ChannelHooks {
  /** Runs before Node's `_final` shuts the handle down (smc: once the kernel sent every byte). */
  beforeFinal? (socket: net.Socket, then: () => void): void
  /** `socket.smcInfo()` (with `caps.smcInfo`). */
  smcInfo? (socket: net.Socket): SmcInfo | null
}

/**
 * One connection a rung made (client side) or accepted (server side), before a socket adopts it:
 * either a kernel `handle` the socket drives as Node's own, or a native `endpoint` the stream
 * core drives. Replaces the per-side records a rung used to fill field by field.
 */
export interface Channel {
  /** The rung the connection runs on (an smc socket the kernel runs on TCP says 'tcp'). */
  transport: string
  /** The TCP view both ends report; null: the handle's own addresses are the truth. */
  view: TcpView | null
  /** A connected kernel handle (Pipe or TCP wrap), owned by the channel until adopted. */
  handle: KernelHandle | null
  /** A native endpoint without a kernel handle (shm, verbs). */
  endpoint: StreamEndpoint | null
  /** Handshake bytes on the handle's counters, kept out of bytesRead / bytesWritten. */
  handshakeRead: number
  handshakeWritten: number
  /**
   * pipeStandIn: the kernel send buffer of the handle (bytes), the most a TCP socket would take
   * of one write to a peer that already left before the peer's RST fails it; 0: unknown.
   */
  sendBufferBytes: number
  /** pipeStandIn: the flag both ends share that stands in for a RST (see ResetFlag), or null. */
  resetFlag: ResetFlag | null
  /** What the socket may offer on it; with an endpoint, syncIo, zeroCopyLoan and stats are its members'. */
  caps: Capabilities
  hooks: ChannelHooks
}

/**
 * A Channel with defaults for what a rung leaves out; an endpoint's capability flags are derived
 * from its members (endpointCaps), the rest (adaptivePolling...) are the rung's.
 */
export function channel (c: Pick<Channel, 'transport'> & Partial<Channel>): Channel {
  const ch: Channel = {
    view: null,
    handle: null,
    endpoint: null,
    handshakeRead: 0,
    handshakeWritten: 0,
    sendBufferBytes: 0,
    resetFlag: null,
    caps: NO_CAPABILITIES,
    hooks: {},
    ...c
  }
  if (ch.endpoint !== null) ch.caps = Object.freeze({ ...ch.caps, ...endpointCaps(ch.endpoint) })
  return ch
}

/**
 * A UNIX stream socket has no RST: the ends of a pipeStandIn channel share a flag instead. The
 * end that resets raises it before it closes; the other, at the end of the stream, takes it and
 * reports ECONNRESET instead of the end (docs/wire-protocol.md, "Reset flag").
 */
export interface ResetFlag {
  raise (): void
  /** True once the peer raised the flag (checked when the stream ends; remembered). */
  raised (): boolean
  /** Closes this end's fd. Idempotent. */
  close (): void
}

/** Releases a channel nobody adopted (its socket was destroyed meanwhile): a reset. */
export function discardChannel (c: Channel): void {
  c.resetFlag?.close()
  c.handle?.close()
  c.endpoint?.close(true)
}

/** What the chain asks a rung to reach. */
export interface ConnectRequest {
  /** The host as the caller gave it, and its resolved addresses, in order. */
  host: string
  addresses: string[]
  port: number
  /** How long one rung's attempt may take (ms, `transportTimeoutMs`): for messages; waits use `signal` and `deadline`. */
  timeoutMs: number
  /**
   * The attempt's one AbortSignal, the chain's (as Node's internalConnectMultiple keeps one timer
   * per attempt): aborted when the socket is destroyed (reason: an AbortError DOMException) or
   * when the chain's attempt timer fires at `deadline` (reason: an AttemptTimeoutError). The
   * chain stops waiting for the rung then and discards a channel it brings later; the rung stops
   * at its next step and releases what it holds. Rungs never time themselves.
   */
  signal: AbortSignal
  /**
   * When the chain's attempt timer fires (Date.now() ms): the bound of a wait the rung hands to
   * native code, which cannot watch `signal` (a connect's, a readable fd's).
   */
  deadline: number
  /** shm ring bytes per direction (the socket's `shmRingBytes`). */
  shmRingBytes: number
  /**
   * The socket's `pollUs` (µs; undefined: the default): how long a set-up may busy-poll for
   * its peer's answer is bounded by it, and 0 turns that off.
   */
  pollUs?: number
}

/**
 * True when `req`'s socket was destroyed during the attempt (its signal's reason is an
 * AbortError), not when the attempt's timer fired: a failure then says nothing of the destination.
 */
export function socketGone (req: ConnectRequest): boolean {
  return req.signal.aborted && (req.signal.reason as { name?: string } | undefined)?.name === 'AbortError'
}

/**
 * The state of one connect across its rungs, as Node's internalConnectMultiple keeps its
 * `context`: rungs that share a set-up (the side channel) read it to decide what to offer.
 */
export interface AttemptContext {
  /** The rungs this connect tries, in order (after the per-socket, per-process and host filters). */
  readonly rungs: readonly Rung[]
  /** Index in `rungs` of the rung attempting now. */
  index: number
  /**
   * A rung's position in the registry: the order a fastsock server prefers rungs in when a
   * client offers several in one side-channel HELLO.
   */
  rank (r: Rung): number
  /** Every failed attempt's error so far, in order. */
  readonly errors: Error[]
  /**
   * The shared set-ups (Connectors) already tried in this connect: a later rung on the same one
   * skips (Connector.skip). Written by the connector, kept with the connect, as Node keeps an
   * attempt's state in its `context`.
   */
  readonly tried: Set<Connector>
}

/**
 * A set-up several rungs share (the side channel, lib/sidechannel/), as one object with one job
 * (undici's `buildConnector`, UCX's wire-up): it owns whether to attempt a destination, what one
 * attempt offers (the rung the chain is at and the later rungs it also carries), the tried set of
 * a connect (`AttemptContext.tried`), listening (one listener per server for all its rungs) and
 * the handshake's deadline. Its rungs are endpoint factories (`sideChannel` offers); the chain
 * and the server call the connector for them.
 */
export interface Connector {
  /** For diagnostics ('side channel'). */
  readonly name: string
  /** Why `rung` will not be attempted through this connector now, or null (see Rung.skip). */
  skip (rung: Rung, req: ConnectRequest, ctx: AttemptContext): string | null
  /** One attempt for `rung` (and the later rungs it offers with it); as Rung.connect. */
  connect (rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel>
  /** One listener for every rung of `req.rungs` that goes through this connector; null when none. */
  listen (req: ListenRequest): RungListener | null
}

/** The client's prepared pipelined set-up for one connect, sent right behind HELLO. */
export interface EarlyClientSetup {
  /** The set-up message, and the fds that travel with it (SCM_RIGHTS). */
  bytes: Buffer
  fds: number[]
  /** Closes what was made for it when the server did not take it (another rung, REJECT, an error). Idempotent. */
  release (): void
  /**
   * After ACCEPT chose this rung: `reply` is the message that followed ACCEPT (decoded, its type
   * and fields as lib/wire.ts gives them), `replyFds` its fds (owned by the callee from here on,
   * also when it throws), `fd` the side channel (owned by the callee too: it stays as the liveness
   * signal, or is closed). Rejects (releasing everything) when the server refused the set-up: the
   * side channel's later rungs may then still be tried.
   */
  complete (fd: number, reply: unknown, replyFds: number[], view: TcpView): Promise<Channel>
}

/**
 * How a rung pipelines its set-up behind HELLO (docs/wire-protocol.md, "Pipelined SHM_SETUP"):
 * the client sends it in the same sendmsg as HELLO, to a server that announced it reads one; the
 * server answers ACCEPT and the set-up's reply in one sendmsg. One round trip instead of two.
 */
export interface EarlyOffer {
  /** The HELLO capability bit that says the set-up follows HELLO. */
  cap: number
  /** How many fds may travel with the set-up's reply (after ACCEPT). */
  replyFds: number
  /** Client: makes the set-up for a connect. Throws when it cannot (HELLO then goes alone). */
  prepare (ringBytes: number): EarlyClientSetup
  /**
   * Server, once the listener chose this rung: takes the pipelined set-up (`setup`, its `fds`
   * owned by the callee from here on), sends `accept` followed by the set-up's reply (or a
   * REJECT) in one sendmsg, and resolves with the Channel to adopt; rejects when the set-up was
   * refused (the client was told).
   */
  accept (side: SideChannelServerEnd, accept: Buffer, setup: Buffer, fds: number[]): Promise<Channel>
}

/** How a side-channel rung (shm, unix) is negotiated: docs/wire-protocol.md, HELLO and ACCEPT. */
export interface SideChannelOffer {
  /** The HELLO capability bit a client offers it with. */
  cap: number
  /** The transport id a server's ACCEPT chooses it with. */
  wireTransport: number
  /** HELLO capability bits sent along with `cap`: the rung's optional features this client takes. */
  featureCaps?: number
  /** The most fds an ACCEPT choosing it carries (default 0). */
  acceptFds?: number
  /**
   * Server side, before ACCEPT goes out choosing this rung: the fds to send with it (for the
   * features the client's HELLO `capabilities` take); they go to SideChannelServerEnd.acceptFds.
   */
  makeAcceptFds? (capabilities: number): number[]
  /**
   * Client side, after ACCEPT chose this rung: turns the verified side channel into a Channel.
   * Rejects (releasing everything) when this rung's own set-up fails; the side channel's other
   * rungs may then still be tried.
   */
  complete (side: SideChannelClientEnd): Promise<Channel>
  /** Server side, after ACCEPT went out choosing this rung: resolves with the Channel to adopt. */
  accept (side: SideChannelServerEnd): Promise<Channel>
  /** Its set-up pipelined behind HELLO, if it has one (shm). */
  readonly early?: EarlyOffer
}

/** The client's side channel once ACCEPT arrived: the socket that holds it, paused. */
export interface SideChannelClientEnd {
  /** The internal socket holding the connected side channel (reading stopped). */
  probe: net.Socket
  handle: KernelHandle
  /** The fds that came with ACCEPT (owned by the offer's complete() from then on). */
  acceptFds: number[]
  view: TcpView
  /** Bytes of the handshake each way (ACCEPT's length as read, HELLO's as written). */
  handshakeRead: number
  handshakeWritten: number
  /** What is left of the attempt's time (ms). */
  remainingMs: number
  /** The attempt's signal (ConnectRequest.signal): the set-up stops when it aborts. */
  signal: AbortSignal
  shmRingBytes: number
}

/** The server's side channel once ACCEPT went out: the client's socket, paused. */
export interface SideChannelServerEnd {
  raw: net.Socket
  handle: KernelHandle
  /** This end's fds of what went with ACCEPT (makeAcceptFds; owned by the offer's accept()). */
  acceptFds: number[]
  view: TcpView
  handshakeRead: number
  handshakeWritten: number
  handshakeTimeoutMs: number
  /**
   * Closes the side channel when the rung does not keep it (shm, once its dup took over): its
   * socket if one was made (`raw`), else its handle alone. Idempotent.
   */
  close (): void
}

/** What a fastsock server asks each rung it offers, for every TCP listener it opens. */
export interface ListenRequest {
  /** The Node server (cluster hand-offs, the listen handle). */
  server: net.Server
  /** The TCP listener's bound address as Node reports it ('0.0.0.0', '::', or a literal). */
  address: string
  port: number
  v6only: boolean
  /** Every rung this server offers here, in chain order (side-channel rungs share one listener). */
  rungs: readonly Rung[]
  /** Same-uid side-channel clients only (the default). */
  sameUidOnly: boolean
  /** How long a side-channel client may take to say HELLO (ms). */
  handshakeTimeoutMs: number
  /** True in a cluster worker under round-robin (its listen handle is a stand-in). */
  roundRobinWorker: boolean
  /** Why the listen handle cannot be trusted for verification (not a kernel socket), or null. */
  listenHandleProblem: string | null
  /** A reason to turn the client away now (maxConnections, not accepting), or null. */
  busy: () => string | null
  /** Hands an established connection to the server. */
  accept: (c: Channel) => void
}

/** A rung's listener: closed with the server. `close()` may be called more than once. */
export interface RungListener {
  close (): void
}

/**
 * One rung of the failover chain. Every operation but `name` and `probe` is optional: a missing
 * one means the rung does not do that (UCX's ops tables).
 */
export interface Rung<N extends string = string> {
  readonly name: N
  /** Availability on this host with a reason; the registry calls it once per process. */
  probe (): Availability
  /**
   * This rung is Node's own connect (tcp): the chain hands the socket over and ends; it is never
   * declined and needs no lookup first. Such a rung has no `connect`.
   */
  readonly nodeConnect?: true
  /** A connect to a UNIX path (Node's own) reports this rung as its transport (unix). */
  readonly unixPath?: true
  /**
   * Its Channels have no kernel handle (a native endpoint the stream core drives: shm, verbs).
   * Node's C++ stream consumers (TLSWrap for tls/https, nghttp2 for http2) reach such a socket
   * only through Node's JSStreamSocket; sockets they will wrap prefer rungs without this flag
   * (lib/socket/wrapped.ts, docs/transparency.md "Sockets TLS and HTTP/2 wrap").
   */
  readonly handleless?: true
  /**
   * A `tls.connect` client that lands on this rung has its TLS moved onto the socket's kernel
   * handle at 'connect' (TLSWrap then drives it natively: lib/socket/wrapped.ts). Set where that
   * is tested (unix, tcp); the kernel handles over other families (smc, sdp) keep Node's
   * JSStreamSocket: over smc an unref() made before connect no longer let the process exit once
   * re-wrapped (test/conformance/tls-unref.test.js in the RDMA guest).
   */
  readonly tlsOnHandle?: true
  /**
   * Why this rung will not attempt this destination now (no attempt, no event, no error), or
   * null: not on this host, a shared set-up already tried in this connect, cached elsewhere.
   */
  skip? (req: ConnectRequest, ctx: AttemptContext): string | null
  /**
   * Connects. Rejects with a typed error (lib/errors.ts): NotOfferedError or UnservedError when
   * nobody serves this rung there (cached briefly), ServerBusyError (not cached), anything else
   * a failure (cached longer).
   */
  connect? (req: ConnectRequest, ctx: AttemptContext): Promise<Channel>
  /** Negotiated over the side channel (lib/sidechannel/): its HELLO bit and set-up. */
  readonly sideChannel?: SideChannelOffer
  /**
   * The shared set-up this rung goes through (the side channel): the chain calls its `skip` and
   * `connect` for this rung instead of the rung's own, the server its `listen` once for all its
   * rungs. Such a rung has no `skip`, `connect` or `listen` of its own.
   */
  readonly connector?: Connector
  /** Starts listening beside a TCP listener; null when it cannot serve that address. */
  listen? (req: ListenRequest): RungListener | null
  /**
   * For a rung whose listener must BE the TCP listener (smc: AF_SMC shares the TCP port space and
   * accepts plain TCP clients too): a bound, not yet listening, socket fd Node's listen adopts in
   * place of its own, or null to leave Node's TCP listener. Arguments are Node's _listen2 ones.
   */
  listenFd? (address: string, port: number, addressType: number, flags: number): number | null
  /** With listenFd: the Channel for a connection that listener accepted (its Node handle). */
  acceptedChannel? (handle: KernelHandle): Channel
}
