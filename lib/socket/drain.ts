/**
 * readInto's first step: pending requests take the bytes already in the socket's readable
 * buffer (without emitting them as 'data'), before any new byte arrives.
 */
import type * as net from 'net'
import { feed, failAll, settleFull } from '../stream/readinto'
import { kState, SocketState } from './state'

type FsSocket = net.Socket & { [kState]: SocketState }

/** Serves pending readInto requests from bytes already in the socket's readable buffer. */
export function drainBuffered (sock: FsSocket): void {
  const q = sock[kState].readQueue!
  settleFull(q)
  const flowingListeners = sock.listenerCount('data') > 0
  while (q.length > 0 && sock.readableLength > 0) {
    const want = q[0].bytes.length - q[0].filled
    // read(n) emits 'data' for what it returns: keep those bytes from 'data' listeners.
    let chunk: Buffer | null
    if (flowingListeners) {
      const emit = sock.emit
      sock.emit = function (this: FsSocket, ev: string | symbol, ...rest: unknown[]) {
        return ev === 'data' ? false : emit.apply(this, [ev, ...rest] as Parameters<typeof emit>)
      } as typeof sock.emit
      try {
        chunk = sock.read(Math.min(want, sock.readableLength))
      } finally {
        delete (sock as { emit?: unknown }).emit
      }
    } else {
      chunk = sock.read(Math.min(want, sock.readableLength))
    }
    if (chunk === null) break
    feed(q, chunk)
    settleFull(q)
  }
  if (q.length > 0 && sock.readableEnded) failAll(q, 'the stream ended')
}

