/**
 * Node handles made or held elsewhere, handed to the socket that will own them: a rung makes a
 * connection with an internal `net.Socket` (or over a raw fd), then gives the socket's handle
 * (a Pipe or TCP wrap) to its Channel; the internal socket goes without closing it.
 */
import type * as net from 'net'
import { originals } from './originals'
import type { KernelHandle } from './contract'

/** Takes `sock`'s handle away (the caller owns it now) and destroys `sock` without closing it. */
export function detachHandle (sock: net.Socket): KernelHandle {
  const s = sock as unknown as { _handle: KernelHandle | null }
  const handle = s._handle!
  s._handle = null
  sock.destroy()
  return handle
}

/**
 * A Node handle over a connected stream fd (Node picks Pipe or TCP from the fd), not reading.
 * Throws as Node's Socket constructor does; the fd is then still the caller's to close.
 */
export function handleOverFd (fd: number): KernelHandle {
  const NodeSocket = originals.Socket as unknown as new (o: object) => net.Socket
  return detachHandle(new NodeSocket({ fd, readable: true, writable: true, pauseOnCreate: true }))
}
