/**
 * L2, the side channel's client half (docs/design.md, "Discovery"), shared by every rung
 * negotiated over it (shm, unix: each has a `sideChannel` offer in its Rung).
 *
 * A client whose destination is local (after DNS) connects to the abstract name of the
 * destination's listener, checks that the process on the other end owns the TCP listener
 * (SO_PEERCRED + SO_PEERPIDFD + /proc), sends HELLO with the capability bits of the rungs it
 * offers, and reads ACCEPT (lib/wire.ts). The chosen rung's offer then turns the verified side
 * channel into a Channel. Nothing is ever sent on TCP for discovery.
 *
 * One attempt offers several rungs: the one the chain is at, plus the side-channel rungs later
 * in this connect's chain that a server would choose after it (the server picks the first, in
 * registry order, that both offer). When the chosen rung's own set-up fails (shm), the side
 * channel is not marked tried: a later side-channel rung (unix) retries, offering itself only.
 * Any other failure marks it tried for this connect and caches it for the destination.
 */
import * as net from 'net'
import { native } from '../native'
import { debug, step, stepsWanted } from '../debug'
import { errnoError, ERRNO, NotOfferedError, UnverifiedPeerError, AttemptTimeoutError, HandshakeError, RejectedError, ServerBusyError } from '../errors'
import { addressBytes, isLocalAddress, familyName, dialedAddress } from '../address'
import * as wire from '../wire'
import { cachedFailure, cacheFailure, negativeTtlMs } from '../negative-cache'
import { candidateNames } from './names'
import type { ReplyWindow } from './framed-read'
import { readFrames } from './framed-read'
import { originals } from '../originals'
import type { AttemptContext, Channel, Connector, ConnectRequest, EarlyClientSetup, EarlyOffer, KernelHandle, Rung, SideChannelClientEnd, SideChannelOffer } from '../contract'
import { socketGone } from '../contract'

const { ECONNREFUSED, ENOENT, EPROTO } = ERRNO

function localAddresses (req: ConnectRequest): string[] {
  return req.addresses.filter(isLocalAddress)
}

/** The negative-cache key of the side channel itself, shared by its rungs. */
function sideKey (local: string[], port: number): string {
  return `side|${local.join(',')}|${port}`
}

/**
 * Why a side-channel rung will not attempt this destination in this connect, or null: not on
 * this host, the side channel cached as failing there, or already tried in this connect.
 */
export function skipSideChannel (connector: Connector, req: ConnectRequest, ctx: AttemptContext): string | null {
  const local = localAddresses(req)
  if (local.length === 0) return `${req.host} is not on this host`
  const hit = cachedFailure(sideKey(local, req.port))
  if (hit !== null) return `cached (${hit})`
  if (ctx.tried.has(connector)) return 'the side channel was already tried'
  return null
}

/**
 * One side-channel attempt for `rung` (see the module comment). Resolves with the Channel of
 * the rung the server chose; rejects with NotOfferedError (no side channel answers),
 * UnverifiedPeerError, RejectedError / ServerBusyError, HandshakeError, AttemptTimeoutError, or
 * the chosen rung's set-up error.
 */
export async function connectSideChannel (connector: Connector, memory: ClientMemory, rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel> {
  const local = localAddresses(req)
  const laterOffers = ctx.rungs.slice(ctx.index + 1).filter(r => r.connector === connector && r.sideChannel && ctx.rank(r) > ctx.rank(rung))
  const offers = [rung, ...laterOffers].map(r => ({ name: r.name, offer: r.sideChannel! }))
  let accepted: Accepted
  try {
    accepted = await findAndHandshake(memory, rung.name, local, req, offers.map(o => o.offer))
  } catch (err) {
    ctx.tried.add(connector)
    const ttl = negativeTtlMs(err)
    if (ttl > 0 && !socketGone(req)) cacheFailure(sideKey(local, req.port), ttl, (err as Error).message) // the socket went away: says nothing of the destination
    throw err
  }
  const chosen = offers.find(o => o.offer === accepted.offer)!
  debug('sidechannel', 'side channel accepted %s', chosen.name)
  // A failure from here on is the chosen rung's own set-up: later side-channel rungs may retry.
  const ch = await accepted.finish()
  step('client', `${chosen.name} set up`)
  return ch
}

/**
 * How many bytes the next read of the server's reply may take without passing the end of the
 * message `acc` starts with (ACCEPT, REJECT, the set-up's reply): the bytes after ACCEPT(unix)
 * are the application's and stay in the kernel for the socket's handle, which reads them as
 * Node would (onread, pause, bytesRead). Before the header is complete, ACCEPT's length (the
 * shortest reply that is not a final REJECT, and nothing follows a REJECT).
 */
function bytesToMessageEnd (acc: Buffer): number {
  const length = wire.messageLength(acc)
  return length === null ? wire.ACCEPT_BYTES - acc.length : Math.max(1, length - acc.length)
}

/** The handshake's outcome: the offer the server chose, and how to finish its set-up. */
interface Accepted { offer: SideChannelOffer, finish: () => Promise<Channel> }

const MAX_EARLY_SERVERS = 64

/** What a connector remembers across connects (its own fields): which servers pipeline, how soon replies come. */
export interface ClientMemory {
  readonly early: EarlyServers
  readonly replies: ReplyWindow
}

/**
 * Servers (side-channel name and pid) whose ACCEPT said they read a set-up pipelined behind
 * HELLO (wire.ACCEPT_READS_PIPELINED), kept by the connector (./connector.ts). Used only when the
 * peer verification was a cache hit: the same process, pinned by its pidfd, that said so (a miss
 * forgets the entry: the pid may name another process by now). Bounded; oldest first out.
 */
export class EarlyServers {
  private readonly keys = new Set<string>()

  has (key: string): boolean { return this.keys.has(key) }
  forget (key: string): void { this.keys.delete(key) }

  /** What the server `key` said in its last ACCEPT. */
  remember (key: string, early: boolean): void {
    this.keys.delete(key)
    if (!early) return
    if (this.keys.size >= MAX_EARLY_SERVERS) this.keys.delete(this.keys.values().next().value as string)
    this.keys.add(key)
  }
}

/**
 * Finds, verifies and handshakes the side channel for the first local destination address that
 * has one. A name whose holder cannot be verified (a squatter) is passed over, not trusted; the
 * next candidate may still be the real listener's (a wildcard one).
 */
async function findAndHandshake (memory: ClientMemory, rungName: string, local: string[], req: ConnectRequest, offers: SideChannelOffer[]): Promise<Accepted> {
  if (!native) throw new NotOfferedError(`${rungName}: native addon not loaded`)
  const euid = process.geteuid ? process.geteuid() : 0
  let unverified: UnverifiedPeerError | null = null
  step('client', 'side channel attempt')
  for (const target of local) {
    const address = dialedAddress(target) // 0.0.0.0 and :: reach 127.0.0.1 and ::1
    const dialed = addressBytes(address)!
    for (const name of candidateNames(address, req.port)) {
      const fd = native.connectAbstract(name)
      if (fd === ECONNREFUSED || fd === ENOENT) continue
      if (fd < 0) throw errnoError(fd, 'connect', `(side channel ${name})`)
      step('client', 'connected')
      const v = native.verifyListener(fd, dialed.family, dialed.bytes, req.port, euid)
      if (stepsWanted()) step('client', 'verified', { cached: v.cached, listenersNs: v.listenersNs, scanNs: v.scanNs, totalNs: v.totalNs })
      if (!v.ok) {
        native.closeFd(fd)
        debug('sidechannel', 'side channel %s not trusted: %s', name, v.reason)
        unverified ??= new UnverifiedPeerError(`side channel ${name} not trusted: ${v.reason}`)
        continue
      }
      debug('sidechannel', 'side channel %s verified: pid %d (%s)', name, v.pid, v.cached ? 'cached' : `pidfd from socket: ${v.pidfdFromSocket}`)
      const key = `${name}|${v.pid}`
      if (!v.cached) memory.early.forget(key)
      return await handshake(memory, fd, key, v.cached && memory.early.has(key), address, dialed, req, offers)
    }
  }
  if (unverified) throw unverified
  throw new NotOfferedError(`${rungName}: no side channel answers for this destination`)
}

/** A pipelined set-up for this connect, or null (HELLO then goes alone). */
function prepareEarly (offers: SideChannelOffer[], ringBytes: number): { early: EarlyOffer, setup: EarlyClientSetup } | null {
  for (const o of offers) {
    const early = o.early
    if (!early) continue
    try {
      return { early, setup: early.prepare(ringBytes) }
    } catch (err) {
      debug('sidechannel', 'no pipelined set-up: %s', (err as Error).message)
      return null
    }
  }
  return null
}

/**
 * HELLO / ACCEPT on the verified side channel `fd` (docs/wire-protocol.md). With `pipeline` (the
 * server `key` names announced ACCEPT_READS_PIPELINED, and it is the same process), the set-up of the
 * rung that has one (shm) goes out in the same sendmsg as HELLO, and its reply is read with
 * ACCEPT. Replies are read with recvmsg (a reply may carry fds), never through a handle.
 */
function handshake (memory: ClientMemory, fd: number, key: string, pipeline: boolean, address: string, dialed: { family: 4 | 6, bytes: Uint8Array },
  req: ConnectRequest, offers: SideChannelOffer[]): Promise<Accepted> {
  return new Promise((resolve, reject) => {
    const n = native!
    const pipelined = pipeline ? prepareEarly(offers, req.shmRingBytes) : null
    const capabilities = offers.reduce((bits, o) => bits | o.cap | (o.featureCaps ?? 0), 0) | (pipelined ? pipelined.early.cap : 0)
    const hello = wire.encodeHello({ capabilities, family: dialed.family, address: dialed.bytes, port: req.port })
    const out = pipelined ? Buffer.concat([hello, pipelined.setup.bytes]) : hello
    const sent = n.sendFds(fd, out, pipelined ? pipelined.setup.fds : [])
    if (sent !== out.length) {
      pipelined?.setup.release()
      n.closeFd(fd)
      reject(sent < 0 ? new HandshakeError(`side channel failed sending HELLO: ${errnoError(sent, 'sendmsg').message}`) : new HandshakeError('side channel took part of HELLO'))
      return
    }
    step('client', pipelined ? 'HELLO+SHM_SETUP written' : 'HELLO written')
    const helloAt = process.hrtime.bigint()
    /** Busy-poll budget (µs) for the reply, spent at the first wait (ReplyWindow, ./framed-read.ts). */
    const pollUs = memory.replies.pollUs(req.pollUs)
    let replyUs = -1
    let caught = false
    // A rung finished over the handle (unix, shm without pipelining) gets it in a socket made
    // now, while the server works (not reading: the reply is read natively).
    let probe: net.Socket | null = null
    const makeProbe = (): net.Socket => {
      const NodeSocket = originals.Socket as unknown as new (o: object) => net.Socket
      probe = new NodeSocket({ fd, readable: true, writable: true, pauseOnCreate: true })
      return probe
    }
    if (!pipelined) {
      try {
        makeProbe()
      } catch (err) {
        n.closeFd(fd)
        reject(err)
        return
      }
    }
    let acc: Buffer = Buffer.alloc(0)
    let fds: number[] = []
    const fail = (err: Error): void => {
      for (const f of fds) n.closeFd(f)
      pipelined?.setup.release()
      // A server that may not have understood the pipelined bytes: the next connect asks again.
      // (REJECT Busy, Forbidden, NoTransport are answers to the HELLO, whatever followed it.)
      const answered = err instanceof RejectedError && err.reason !== wire.RejectReason.Malformed && err.reason !== wire.RejectReason.Version
      if (pipelined && !answered) memory.early.forget(key)
      if (probe) (probe as net.Socket).destroy()
      else n.closeFd(fd)
      reject(err)
    }
    const maxFds = Math.max(pipelined ? pipelined.early.replyFds : 0, ...offers.map(o => o.acceptFds ?? 0))
    /** The next read's size: to the end of ACCEPT; pipelined, then to the end of the set-up's reply. */
    const wanted = (acc: Buffer): number => {
      const first = wire.messageLength(acc)
      return pipelined && first !== null && acc.length >= first ? bytesToMessageEnd(acc.subarray(first)) : bytesToMessageEnd(acc)
    }
    const timeout = (): Error => new AttemptTimeoutError(`side channel handshake took longer than ${req.timeoutMs} ms`)
    const readReply = (): void => readFrames(fd, {
      maxFds,
      deadline: req.deadline,
      wanted,
      spinUs: pollUs,
      aborted: () => req.signal.aborted
    }, read => {
      acc = read.acc
      fds = read.fds
      caught = read.polled
      let result: Accepted | Error | null
      try {
        result = onReply()
      } catch (err) {
        result = err as Error
      }
      read.fds = fds
      if (result === null) return false
      if (result instanceof Error) fail(result)
      else resolve(result)
      return true
    }, (why, read) => {
      fds = read.fds
      if (why instanceof Error) return fail(why)
      if (why === 'aborted') return fail(req.signal.reason) // the socket's destroy, or the chain's timer
      if (why === 'timeout') return fail(timeout())
      if (why === 'closed') return fail(new HandshakeError('side channel closed during the handshake'))
      fail(new HandshakeError(why === EPROTO ? 'side channel reply carried unexpected fds' : `side channel failed during the handshake: ${errnoError(why, 'recvmsg').message}`))
    })
    /** The handshake's result from the bytes read so far; null while more are needed. */
    const onReply = (): Accepted | Error | null => {
      const parsed = wire.decode(acc)
      if (!parsed) return null
      const m = parsed.message
      if (replyUs < 0) memory.replies.record(replyUs = Number(process.hrtime.bigint() - helloAt) / 1000)
      if (m.type === wire.MessageType.Reject) {
        const text = `side channel rejected the connection: ${m.text}`
        return m.reason === wire.RejectReason.Busy ? new ServerBusyError(m.reason, text) : new RejectedError(m.reason, text)
      }
      const offer = m.type === wire.MessageType.Accept ? offers.find(o => o.wireTransport === m.transport) : undefined
      if (m.type !== wire.MessageType.Accept || m.version !== wire.PROTOCOL_VERSION || offer === undefined) {
        return new HandshakeError(`unexpected side-channel reply (type ${m.type}, version ${m.version})`)
      }
      const family = familyName(address)
      const view = { remote: { address, family, port: req.port }, local: { address, family, port: m.clientPort } }
      const early = pipelined !== null && offer.early === pipelined.early
      if (early) {
        // The set-up's reply (SHM_READY or REJECT) comes with ACCEPT; nothing after it.
        const reply = wire.decode(acc.subarray(parsed.bytes))
        if (!reply) return null
        if (parsed.bytes + reply.bytes !== acc.length) return new HandshakeError('bytes after the set-up\'s reply')
        step('client', 'reply read', { polled: caught, replyUs })
        memory.early.remember(key, (m.flags & wire.ACCEPT_READS_PIPELINED) !== 0)
        const replyFds = fds
        fds = []
        return { offer, finish: () => pipelined.setup.complete(fd, reply.message, replyFds, view) }
      }
      step('client', 'reply read', { polled: caught, replyUs })
      if (fds.length > (offer.acceptFds ?? 0)) return new HandshakeError('fds with ACCEPT')
      memory.early.remember(key, (m.flags & wire.ACCEPT_READS_PIPELINED) !== 0)
      // The server chose a rung other than the pipelined one: it dropped our set-up; so do we.
      pipelined?.setup.release()
      // Nothing is read past ACCEPT (wanted()).
      if (parsed.bytes < acc.length) return new HandshakeError('bytes after ACCEPT')
      const socket = probe ?? makeProbe()
      const handle = (socket as unknown as { _handle: KernelHandle })._handle
      const acceptFds = fds
      fds = []
      const end: SideChannelClientEnd = {
        probe: socket,
        handle,
        acceptFds,
        view,
        handshakeRead: 0, // read natively: the handle never counted it
        handshakeWritten: 0, // HELLO went out natively too
        remainingMs: Math.max(1, req.deadline - Date.now()),
        signal: req.signal,
        shmRingBytes: req.shmRingBytes
      }
      return { offer, finish: () => offer.complete(end) }
    }
    readReply()
  })
}
