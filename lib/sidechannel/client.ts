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
import { debug } from '../debug'
import { errnoError, NotOfferedError, UnverifiedPeerError, AttemptTimeoutError, HandshakeError, RejectedError, ServerBusyError } from '../errors'
import { addressBytes, isLocalAddress, familyName, dialedAddress } from '../address'
import * as wire from '../wire'
import { cachedFailure, cacheFailure, negativeTtlMs } from '../negative-cache'
import { candidateNames } from './names'
import { step, stepsWanted } from './steps'
import type { AttemptContext, Channel, ConnectRequest, KernelHandle, Rung, SideChannelClientEnd, SideChannelOffer } from '../transports/contract'

const ECONNREFUSED = -111
const ENOENT = -2

/** Connects whose side channel was tried (and failed for a reason other than a rung's set-up). */
const tried = new WeakSet<AttemptContext>()

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
export function skipSideChannel (req: ConnectRequest, ctx: AttemptContext): string | null {
  const local = localAddresses(req)
  if (local.length === 0) return `${req.host} is not on this host`
  const hit = cachedFailure(sideKey(local, req.port))
  if (hit !== null) return `cached (${hit})`
  if (tried.has(ctx)) return 'the side channel was already tried'
  return null
}

/**
 * One side-channel attempt for `rung` (see the module comment). Resolves with the Channel of
 * the rung the server chose; rejects with NotOfferedError (no side channel answers),
 * UnverifiedPeerError, RejectedError / ServerBusyError, HandshakeError, AttemptTimeoutError, or
 * the chosen rung's set-up error.
 */
export async function connectSideChannel (rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel> {
  const local = localAddresses(req)
  const laterOffers = ctx.rungs.slice(ctx.index + 1).filter(r => r.sideChannel && ctx.rank(r) > ctx.rank(rung))
  const offers = [rung, ...laterOffers].map(r => ({ name: r.name, offer: r.sideChannel! }))
  let accepted: Accepted
  try {
    accepted = await findAndHandshake(rung.name, local, req, offers.map(o => o.offer))
  } catch (err) {
    tried.add(ctx)
    const ttl = negativeTtlMs(err)
    if (ttl > 0) cacheFailure(sideKey(local, req.port), ttl, (err as Error).message)
    throw err
  }
  const chosen = offers.find(o => o.offer === accepted.offer)!
  debug('unix', 'side channel accepted %s', chosen.name)
  // A failure from here on is the chosen rung's own set-up: later side-channel rungs may retry.
  const ch = await accepted.offer.complete(accepted.end)
  step('client', `${chosen.name} set up`)
  return ch
}

/** The handshake's outcome: the offer the server chose, and the side channel for it. */
interface Accepted { offer: SideChannelOffer, end: SideChannelClientEnd }

/**
 * Finds, verifies and handshakes the side channel for the first local destination address that
 * has one. A name whose holder cannot be verified (a squatter) is passed over, not trusted; the
 * next candidate may still be the real listener's (a wildcard one).
 */
async function findAndHandshake (rungName: string, local: string[], req: ConnectRequest, offers: SideChannelOffer[]): Promise<Accepted> {
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
        debug('unix', 'side channel %s not trusted: %s', name, v.reason)
        unverified ??= new UnverifiedPeerError(`side channel ${name} not trusted: ${v.reason}`)
        continue
      }
      debug('unix', 'side channel %s verified: pid %d (%s)', name, v.pid, v.cached ? 'cached' : `pidfd from socket: ${v.pidfdFromSocket}`)
      return await handshake(fd, address, dialed, req, offers)
    }
  }
  if (unverified) throw unverified
  throw new NotOfferedError(`${rungName}: no side channel answers for this destination`)
}

/** HELLO / ACCEPT on the verified side channel `fd` (HELLO sent at once, ACCEPT read on a probe socket). */
function handshake (fd: number, address: string, dialed: { family: 4 | 6, bytes: Uint8Array },
  req: ConnectRequest, offers: SideChannelOffer[]): Promise<Accepted> {
  return new Promise((resolve, reject) => {
    // HELLO goes out before the probe socket is built, so the server works on it meanwhile.
    const capabilities = offers.reduce((bits, o) => bits | o.cap, 0)
    const hello = wire.encodeHello({ capabilities, family: dialed.family, address: dialed.bytes, port: req.port })
    const sent = native!.sendFds(fd, hello, [])
    if (sent !== hello.length) {
      native!.closeFd(fd)
      reject(sent < 0 ? new HandshakeError(`side channel failed sending HELLO: ${errnoError(sent, 'sendmsg').message}`) : new HandshakeError('side channel took part of HELLO'))
      return
    }
    step('client', 'HELLO written')
    let probe: net.Socket
    try {
      probe = new net.Socket({ fd, readable: true, writable: true })
    } catch (err) {
      native!.closeFd(fd)
      reject(err)
      return
    }
    let acc: Buffer = Buffer.alloc(0)
    let done = false
    const started = Date.now()
    /** Ends the handshake: the probe's listeners and the timer go; the result is settled. */
    const finish = (err: Error | null, result?: Accepted): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      probe.removeListener('data', onData)
      probe.removeListener('error', onError)
      probe.removeListener('close', onClose)
      if (err) {
        probe.destroy()
        reject(err)
      } else {
        resolve(result!)
      }
    }
    const timer = setTimeout(() => finish(new AttemptTimeoutError(`side channel handshake took longer than ${req.timeoutMs} ms`)), req.timeoutMs)
    const onError = (err: Error): void => finish(new HandshakeError(`side channel failed during the handshake: ${err.message}`, { cause: err }))
    const onClose = (): void => finish(new HandshakeError('side channel closed during the handshake'))
    const onData = (chunk: Buffer): void => {
      if (req.aborted()) return finish(new NotOfferedError('socket destroyed during the handshake'))
      acc = acc.length ? Buffer.concat([acc, chunk]) : chunk
      let parsed
      try {
        parsed = wire.decode(acc)
      } catch (err) {
        return finish(err as Error)
      }
      if (!parsed) return
      const m = parsed.message
      step('client', 'reply read')
      if (m.type === wire.MessageType.Reject) {
        const text = `side channel rejected the connection: ${m.text}`
        return finish(m.reason === wire.RejectReason.Busy ? new ServerBusyError(m.reason, text) : new RejectedError(m.reason, text))
      }
      const offer = m.type === wire.MessageType.Accept ? offers.find(o => o.wireTransport === m.transport) : undefined
      if (m.type !== wire.MessageType.Accept || m.version !== wire.PROTOCOL_VERSION || offer === undefined) {
        return finish(new HandshakeError(`unexpected side-channel reply (type ${m.type}, version ${m.version})`))
      }
      // Stop reading on the probe: from here on the bytes belong to the application socket.
      const handle = (probe as unknown as { _handle: KernelHandle })._handle
      probe.pause()
      handle.reading = false
      handle.readStop()
      const leftover: Buffer[] = []
      if (parsed.bytes < acc.length) leftover.push(acc.subarray(parsed.bytes))
      let more: Buffer | null
      while ((more = probe.read() as Buffer | null) !== null) leftover.push(more)
      if (!offer.carriesData && leftover.length) return finish(new HandshakeError('bytes after ACCEPT'))
      const family = familyName(address)
      const view = { remote: { address, family, port: req.port }, local: { address, family, port: m.clientPort } }
      finish(null, {
        offer,
        end: {
          probe,
          handle,
          leftover,
          view,
          handshakeRead: parsed.bytes,
          handshakeWritten: 0, // HELLO went out natively: the handle never counted it
          remainingMs: Math.max(1, req.timeoutMs - (Date.now() - started)),
          shmRingBytes: req.shmRingBytes
        }
      })
    }
    probe.on('data', onData)
    probe.on('error', onError)
    probe.on('close', onClose)
  })
}
