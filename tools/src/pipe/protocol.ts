/**
 * The control protocol between `fastsock pipe` and its peer process, in the envelope of
 * ../harness/peer-process.ts (over the IPC channel of child_process.fork; an id per request,
 * exactly one reply each). Control never travels on the measured socket.
 */
import type { ChannelAddress } from '../harness/channels'
import type { ChannelSpec, ElementType, TypedMethod } from './types'

/** What the peer does with the bytes of connections accepted from now on. */
export type PeerConfig =
  /** Read `bytes` bytes, then write `bytes` bytes back (NetPIPE's receiver). */
  | { mode: 'pingpong', bytes: number }
  /** Count bytes; write one ack byte after each `expectBytes` received. */
  | { mode: 'stream', expectBytes: number }
  /** Receive an array into the peer's own typed array with `method`, send it back the same way. */
  | { mode: 'typed', method: TypedMethod, elementType: ElementType, elements: number }

/** A request of the measuring side (the envelope adds its id). */
export type PeerRequest =
  | { cmd: 'listen', channel: ChannelSpec }
  | { cmd: 'configure', config: PeerConfig }
  | { cmd: 'cpu-mark' }
  | { cmd: 'cpu-read' }
  | { cmd: 'close' }

/** The body of a successful reply: `address` answers listen, `cpuUs` cpu-read. */
export interface PeerReply { address?: ChannelAddress, cpuUs?: { user: number, system: number } }
