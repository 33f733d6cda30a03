/**
 * L2, a rung's set-up message pipelined behind HELLO (docs/wire-protocol.md, "Pipelined
 * SHM_SETUP"): the client sends it in the same sendmsg as HELLO, without waiting for ACCEPT, to a
 * server that announced it reads one (ACCEPT_SHM_EARLY); the server answers ACCEPT and the
 * set-up's reply in one sendmsg. One round trip before 'connect' instead of two.
 *
 * A rung registers how it does that for its SideChannelOffer (`offerEarly`, called by the rung's
 * own module, which sits above this layer); the side channel's client and listener look it up
 * (`earlyOf`). Only shm has one.
 */
import type * as wire from '../wire'
import type { Channel, SideChannelServerEnd, TcpView } from '../transports/contract'

/** The client's prepared set-up for one connect, sent right behind HELLO. */
export interface EarlyClientSetup {
  /** The set-up message, and the fds that travel with it (SCM_RIGHTS). */
  bytes: Buffer
  fds: number[]
  /** Closes what was made for it when the server did not take it (another rung, REJECT, an error). Idempotent. */
  release (): void
  /**
   * After ACCEPT chose this rung: `reply` is the message that followed ACCEPT, `replyFds` its fds
   * (owned by the callee from here on, also when it throws), `fd` the side channel (owned by the
   * callee too: it stays as the liveness signal, or is closed). Rejects (releasing everything)
   * when the server refused the set-up: the side channel's later rungs may then still be tried.
   */
  complete (fd: number, reply: wire.Message, replyFds: number[], view: TcpView): Promise<Channel>
}

/** How a rung pipelines its set-up (see the module comment). */
export interface EarlyOffer {
  /** The HELLO capability bit that says the set-up follows HELLO. */
  cap: number
  /** Length of the set-up message and how many fds travel with it. */
  bytes: number
  fds: number
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

const registry = new WeakMap<object, EarlyOffer>()

/** Registers `early` as the pipelined set-up of `offer` (a rung's SideChannelOffer). */
export function offerEarly (offer: object, early: EarlyOffer): void {
  registry.set(offer, early)
}

/** The pipelined set-up registered for `offer`, if any. */
export function earlyOf (offer: object): EarlyOffer | undefined {
  return registry.get(offer)
}
