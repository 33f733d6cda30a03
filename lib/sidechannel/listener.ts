/**
 * L2, the side channel's listening half (docs/design.md, "Discovery"): the abstract UNIX name
 * beside a fastsock server's TCP listener. It checks each client's uid, reads HELLO, picks the
 * first rung (in the server's order) that both offer, answers ACCEPT, and hands the side channel
 * to that rung's offer (`SideChannelOffer.accept`), whose Channel the server adopts. A set-up
 * pipelined behind HELLO (`SideChannelOffer.early`, docs/wire-protocol.md "Pipelined SHM_SETUP")
 * is read with it: the rung's pipelined set-up answers ACCEPT and its reply in one sendmsg, or the
 * set-up is dropped (its fds closed) when its rung is not chosen.
 */
import * as net from 'net'
import { native } from '../native'
import { debug, step } from '../debug'
import { formatAddress, isLocalAddress, familyName } from '../address'
import * as wire from '../wire'
import { originals } from '../originals'
import { LISTEN_BACKLOG } from '../contract'
import type { Channel, KernelHandle, SideChannelOffer, SideChannelServerEnd } from '../contract'
import { channelName } from './names'
import { AdmissionQueue, AdmissionSlot } from './admission'
import { ERRNO } from '../errors'
import { readFrames } from './framed-read'

/**
 * How long (ms) a client whose handshake is not done may hold back later clients that are ready
 * (admission in accept order, ./admission.ts).
 */
export const ADMIT_HOLD_MS = 50

const { EPROTO } = ERRNO

/**
 * Port numbers in the kernel's ephemeral range for side-channel clients' TCP views, one after
 * another from a random start: one per connector (./connector.ts), shared by its listeners.
 */
export class ClientPorts {
  private next = 32768 + Math.floor(Math.random() * (60999 - 32768))

  /** The next port number (32768..60999, wrapping). */
  take (): number {
    const p = this.next
    this.next = this.next >= 60999 ? 32768 : this.next + 1
    return p
  }
}

/** What a SideChannelListener serves: the TCP listener it stands beside, and what it may offer. */
export interface SideChannelOptions {
  /** The TCP listener's bound address as Node reports it, and its port. */
  address: string
  port: number
  v6only: boolean
  /** The rungs this listener may choose, in the server's order of preference (registry order). */
  offers: Array<{ name: string, offer: SideChannelOffer }>
  /** Same-uid clients only (the default): others get REJECT(Forbidden) and use TCP. */
  sameUidOnly: boolean
  handshakeTimeoutMs: number
  /** Returns a reason to turn the client away now (maxConnections), or null. */
  busy: () => string | null
  /** Adopts the verified, handshaken connection as an application socket. */
  accept: (c: Channel) => void
  /** Where the clients' TCP view ports come from (the connector's). */
  clientPorts: ClientPorts
}

/**
 * The listening half of the side channel, owned by a fastsock Server. Its own net.Server is
 * unref'd: the TCP listener alone decides whether the process stays alive.
 */
export class SideChannelListener {
  readonly name: string
  private server: net.Server | null = null
  private readonly opts: SideChannelOptions
  private readonly family: 4 | 6
  /** Connections go to the server in the order their side channels were accepted. */
  private readonly admission: AdmissionQueue<Channel>

  constructor (opts: SideChannelOptions) {
    this.opts = opts
    this.admission = new AdmissionQueue(c => { step('server', 'admitted'); opts.accept(c) }, ADMIT_HOLD_MS)
    this.name = channelName(opts.address, opts.port, opts.v6only)
    this.family = net.isIPv4(opts.address) ? 4 : 6
  }

  /** Binds the name. Returns false (and logs why with FASTSOCK_DEBUG) when it cannot. */
  listen (): boolean {
    if (!native) return false
    let fd: number
    try {
      fd = native.listenAbstract(this.name, LISTEN_BACKLOG)
    } catch (err) {
      debug('sidechannel', 'no side channel for %s:%d: %s (clients will use TCP)', this.opts.address, this.opts.port, (err as Error).message)
      return false
    }
    const server = (originals.createServer as typeof net.createServer)({ pauseOnConnect: true })
    server.on('error', err => debug('sidechannel', 'side channel %s error: %s', this.name, err.message))
    if ((require('cluster') as import('cluster').Cluster).isWorker) {
      // listen({ fd }) would go through the cluster primary (net.js listenInCluster), which
      // cannot take this fd: set the handle up here, as a lone process's listen would.
      ;(server as unknown as { _listen2: (...a: unknown[]) => void })._listen2(null, null, null, LISTEN_BACKLOG, fd)
    } else {
      server.listen({ fd })
    }
    // Accept here rather than through Node's onconnection: these internal connections are not
    // the application's, so they do not go on the 'net.server.socket' diagnostics channel (the
    // connection the handshake yields is published, as the server's own, when it is adopted).
    const h = (server as unknown as { _handle: { onconnection: unknown } | null })._handle
    if (h) {
      h.onconnection = (err: number, clientHandle: unknown) => {
        if (err || !clientHandle) return
        if (this.handoff) return this.handoff(socketOver(clientHandle as KernelHandle))
        this.onClient(clientHandle as KernelHandle, null)
      }
    }
    server.unref()
    this.server = server
    debug('sidechannel', 'side channel listening on @%s', this.name)
    return true
  }

  /** Unbinds the name; clients then use TCP. Idempotent. */
  close (): void {
    if (this.server) {
      this.server.close()
      this.server = null
    }
  }

  private reject (client: RawClient, reason: wire.RejectReason, text: string): void {
    debug('sidechannel', 'side channel %s rejects a client: %s', this.name, text)
    client.closeWith(wire.encodeReject(reason, text))
  }

  /**
   * Set in a cluster primary whose TCP handle cluster took over (lib/cluster.ts): each client is
   * handed, unread, to a worker instead of being served here.
   */
  handoff: ((raw: net.Socket) => void) | null = null

  /** Serves one side-channel client: `raw` is its connected socket, nothing read yet. */
  serve (raw: net.Socket): void {
    if (this.handoff) return this.handoff(raw)
    const handle = (raw as unknown as { _handle: KernelHandle | null })._handle
    if (!handle) return void raw.destroy()
    this.onClient(handle, raw)
  }

  /** One side-channel client: its handle, and the socket over it if it came with one (cluster). */
  private onClient (handle: KernelHandle, socket: net.Socket | null): void {
    step('server', 'accepted')
    const slot = this.admission.enter()
    // Until the rung's set-up takes the side channel, closing it (a REJECT sent, a timeout, the
    // client gone) frees the slot.
    const client = new RawClient(handle, socket, () => slot.fail())
    if (!native) return client.close()
    // A socket handed over by a cluster primary was made reading (Node's handle conversion):
    // nothing was read yet (this runs in the same tick); from here on only recvmsg reads it.
    if (handle.reading) {
      handle.reading = false
      handle.readStop()
    }
    if (this.opts.sameUidOnly) {
      let uid = -1
      try {
        uid = native.peerCred(handle.fd).uid
      } catch {}
      const euid = process.geteuid ? process.geteuid() : 0
      if (uid !== euid) return this.reject(client, wire.RejectReason.Forbidden, `uid ${uid} is not this server's uid`)
    }
    // Read natively (recvmsg), never through the handle: a set-up pipelined behind HELLO
    // carries fds, which a plain read() would drop.
    const dropFds = (fds: number[]): void => { for (const f of fds) native!.closeFd(f) }
    readFrames(handle.fd, { maxFds: wire.MAX_HELLO_FDS, deadline: Date.now() + this.opts.handshakeTimeoutMs, aborted: () => client.closed }, read => {
      const done = this.onBytes(client, slot, read.acc, read.fds)
      if (done === 'more') return false
      if (done !== 'taken') dropFds(read.fds)
      read.fds = []
      return true
    }, (why, read) => {
      dropFds(read.fds)
      read.fds = []
      // EPROTO: fds truncated (more than a pipelined set-up carries, or no fd numbers left).
      if (why === EPROTO) return this.reject(client, wire.RejectReason.Malformed, 'fds truncated in the handshake')
      client.close()
    })
  }

  /**
   * Acts on the handshake bytes read so far (`acc`, with the fds that came with them): 'more'
   * when HELLO (or the set-up pipelined behind it) is not complete yet; 'taken' when the
   * chosen rung's pipelined set-up took `fds`; else 'done' (the caller closes `fds`).
   */
  private onBytes (client: RawClient, slot: AdmissionSlot<Channel>, acc: Buffer, fds: number[]): 'more' | 'taken' | 'done' {
    let parsed
    try {
      parsed = wire.decode(acc)
    } catch (err) {
      this.reject(client, wire.RejectReason.Malformed, (err as Error).message)
      return 'done'
    }
    if (!parsed) return 'more'
    const m = parsed.message
    if (m.type !== wire.MessageType.Hello) {
      this.reject(client, wire.RejectReason.Malformed, 'expected HELLO')
      return 'done'
    }
    if (m.version !== wire.PROTOCOL_VERSION) {
      this.reject(client, wire.RejectReason.Version, `protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
      return 'done'
    }
    // A set-up pipelined behind HELLO: wait for it whole, fds and all. It is read whether or
    // not this server offers its rung (dropped, its fds closed, when not chosen).
    const early = wire.pipelinedSetup(m.capabilities)
    if (early && (m.capabilities & early.with) === 0) {
      this.reject(client, wire.RejectReason.Malformed, 'a pipelined set-up without its rung\'s HELLO bit')
      return 'done'
    }
    const wanted = parsed.bytes + (early ? early.bytes : 0)
    if (acc.length < wanted) return 'more'
    step('server', 'HELLO read')
    if (acc.length !== wanted) {
      this.reject(client, wire.RejectReason.Malformed, early ? 'bytes after the pipelined set-up before ACCEPT' : 'bytes after HELLO before ACCEPT')
      return 'done'
    }
    if (!early && fds.length > 0) {
      this.reject(client, wire.RejectReason.Malformed, 'fds with HELLO')
      return 'done'
    }
    const chosen = this.opts.offers.find(o => (m.capabilities & o.offer.cap) !== 0)
    if (!chosen) {
      this.reject(client, wire.RejectReason.NoTransport, 'no common transport')
      return 'done'
    }
    const dialed = formatAddress(m.family, m.address)
    const why = this.checkDialed(m.family, dialed, m.port)
    if (why) {
      this.reject(client, wire.RejectReason.Malformed, why)
      return 'done'
    }
    const busy = this.opts.busy()
    if (busy) {
      this.reject(client, wire.RejectReason.Busy, busy)
      return 'done'
    }
    const clientPort = this.opts.clientPorts.take()
    // The server reports the address the client reached, in its own family (IPv4-mapped on
    // an IPv6 listener), like the kernel does for a loopback TCP connection.
    const seen = this.family === 6 && m.family === 4 ? `::ffff:${dialed}` : dialed
    const family = familyName(seen)
    const view = { local: { address: seen, family, port: this.opts.port }, remote: { address: seen, family, port: clientPort } }
    const accept = wire.encodeAccept({ transport: chosen.offer.wireTransport, clientPort, flags: wire.ACCEPT_READS_PIPELINED })
    const side = client.serverEnd(view, this.opts.handshakeTimeoutMs)
    const pipelined = early ? chosen.offer.early : undefined
    if (pipelined !== undefined && pipelined.cap === early!.cap) {
      // ACCEPT and the set-up's reply go out together (one sendmsg) from the rung's set-up.
      this.setUp(slot, chosen, pipelined.accept(side, accept, acc.subarray(parsed.bytes), fds))
      return 'taken'
    }
    // ACCEPT goes out at once (16 bytes into an empty socket buffer), not through the handle's
    // write queue, so the rung's set-up starts in this turn of the loop. A pipelined set-up
    // for a rung not chosen is dropped: the caller closes its fds.
    side.acceptFds = chosen.offer.makeAcceptFds?.(m.capabilities) ?? []
    const sent = native!.sendFds(side.handle.fd, accept, side.acceptFds)
    if (sent !== accept.length) {
      debug('sidechannel', 'side channel %s: ACCEPT not sent (%d)', this.name, sent)
      for (const f of side.acceptFds) native!.closeFd(f)
      slot.fail()
      side.close()
      return 'done'
    }
    step('server', 'ACCEPT written')
    this.setUp(slot, chosen, chosen.offer.accept(side))
    return 'done'
  }

  /** The chosen rung's set-up on the side channel; its Channel is admitted in accept order. */
  private setUp (slot: AdmissionSlot<Channel>, chosen: { name: string }, setUp: Promise<Channel>): void {
    setUp.then(c => {
      step('server', `${chosen.name} set up`)
      slot.admit(c)
    }, e => {
      debug('sidechannel', '%s set-up with a client failed: %s', chosen.name, (e as Error).message)
      slot.fail()
    })
  }

  /** Null when a client may have reached this listener by dialing `dialed`, else why not. */
  private checkDialed (family: 4 | 6, dialed: string, port: number): string | null {
    if (port !== this.opts.port) return `HELLO names port ${port}, this listener is on ${this.opts.port}`
    if (!isLocalAddress(dialed)) return `HELLO names ${dialed}, not an address of this host`
    const bound = this.opts.address
    if (bound === '0.0.0.0') return family === 4 ? null : `IPv6 ${dialed} on an IPv4 listener`
    if (bound === '::') return this.opts.v6only && family === 4 ? `IPv4 ${dialed} on an IPv6-only listener` : null
    return dialed === bound ? null : `HELLO names ${dialed}, this listener is bound to ${bound}`
  }
}

/** A net.Socket over an accepted side-channel handle (what a rung or cluster may need of it). */
function socketOver (handle: KernelHandle): net.Socket {
  const NodeSocket = originals.Socket as unknown as new (o: object) => net.Socket
  const socket = new NodeSocket({ handle, pauseOnCreate: true, readable: true, writable: true })
  socket.on('error', err => debug('sidechannel', 'side channel client error: %s', err.message))
  return socket
}

/**
 * A side-channel client during the handshake: its handle, read natively. A net.Socket over it
 * costs measurable time on the server's path to ACCEPT (docs/transports.md, "Set-up time"), and
 * only the unix rung (which adopts it) and cluster need one, so it is made on first use of `raw`.
 */
class RawClient {
  closed = false
  constructor (readonly handle: KernelHandle, private socket: net.Socket | null, private onClosed: (() => void) | null) {
    socket?.on('error', err => debug('sidechannel', 'side channel client error: %s', err.message))
  }

  /** The socket over the handle, made now if there is none yet. */
  get raw (): net.Socket {
    this.socket ??= socketOver(this.handle)
    return this.socket
  }

  /** Sends `bytes` (a REJECT: a few bytes into an empty socket buffer) and closes. */
  closeWith (bytes: Buffer): void {
    if (this.closed) return
    if (this.socket) {
      this.socket.end(bytes)
      this.socket.destroySoon()
      return this.settle()
    }
    native!.sendFds(this.handle.fd, bytes, [])
    this.close()
  }

  close (): void {
    if (this.closed) return
    if (this.socket) this.socket.destroy()
    else this.handle.close()
    this.settle()
  }

  /** The handshake is over: the slot is the rung's to settle now; `view` is the TCP view to report. */
  serverEnd (view: SideChannelServerEnd['view'], handshakeTimeoutMs: number): SideChannelServerEnd {
    this.onClosed = null
    const client = this // eslint-disable-line @typescript-eslint/no-this-alias
    const side: SideChannelServerEnd = {
      get raw () { return client.raw },
      handle: this.handle,
      acceptFds: [],
      view,
      handshakeRead: 0,
      handshakeWritten: 0,
      handshakeTimeoutMs,
      close: () => client.close()
    }
    return side
  }

  /** Closed during the handshake: the slot is freed a tick later, as a socket's 'close' would. */
  private settle (): void {
    this.closed = true
    const f = this.onClosed
    this.onClosed = null
    if (f) process.nextTick(f)
  }
}
