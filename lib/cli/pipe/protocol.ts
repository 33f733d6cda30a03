/**
 * The control protocol between `fastsock pipe` and its peer process, over the IPC channel of
 * child_process.fork. Control never travels on the measured socket: the data path carries only
 * the benchmark's bytes. Every request has an id and gets exactly one reply with the same id.
 */
import type { ChannelAddress } from './channels'
import type { ChannelSpec, ElementType, TypedMethod } from './types'

/** What the peer does with the bytes of connections accepted from now on. */
export type PeerConfig =
  /** Read `bytes` bytes, then write `bytes` bytes back (NetPIPE's receiver). */
  | { mode: 'pingpong', bytes: number }
  /** Count bytes; write one ack byte after each `expectBytes` received. */
  | { mode: 'stream', expectBytes: number }
  /** Receive an array into the peer's own typed array with `method`, send it back the same way. */
  | { mode: 'typed', method: TypedMethod, elementType: ElementType, elements: number }

export type PeerRequest =
  | { id: number, cmd: 'listen', channel: ChannelSpec }
  | { id: number, cmd: 'configure', config: PeerConfig }
  | { id: number, cmd: 'cpu-mark' }
  | { id: number, cmd: 'cpu-read' }
  | { id: number, cmd: 'close' }

export type PeerReply =
  | { id: number, ok: true, address?: ChannelAddress, cpuUs?: { user: number, system: number } }
  | { id: number, ok: false, error: string }

/** Sent once by the peer when it is ready for requests. */
export interface PeerHello { hello: true, pid: number }
