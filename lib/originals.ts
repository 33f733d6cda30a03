/**
 * Node's own `net` objects, captured once per process before anything patches them (the preload
 * hook, lib/register.ts, replaces `net.Socket`, `net.connect`, ... and patches
 * `net.Server.prototype` in place). fastsock's classes are built on these and call them for
 * Node's behaviour, so they never call themselves through a patched `net`.
 *
 * Kept on the `net` module under a registered symbol (non-enumerable), so that a second copy of
 * fastsock loaded in the same process (another path in node_modules) sees the same originals.
 */
import net = require('net')

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** What fastsock keeps of Node's `net`. */
export interface NetOriginals {
  Socket: typeof net.Socket
  Stream: typeof net.Socket
  connect: AnyFn
  createConnection: AnyFn
  createServer: AnyFn
  /** net.Server.prototype methods the hook replaces in place. */
  serverProto: { _listen2: AnyFn, close: AnyFn }
}

const KEY = Symbol.for('fastsock.net.originals')
const holder = net as unknown as Record<symbol, NetOriginals | undefined>

function capture (): NetOriginals {
  const proto = net.Server.prototype as unknown as { _listen2: AnyFn, close: AnyFn }
  const o: NetOriginals = {
    Socket: net.Socket,
    Stream: (net as unknown as { Stream: typeof net.Socket }).Stream,
    connect: net.connect,
    createConnection: net.createConnection,
    createServer: net.createServer,
    serverProto: { _listen2: proto._listen2, close: proto.close }
  }
  Object.defineProperty(net, KEY, { value: o, enumerable: false, configurable: false, writable: false })
  return o
}

/** Node's own net objects (never fastsock's replacements). */
export const originals: NetOriginals = holder[KEY] ?? capture()

/**
 * Node's `net._normalizeArgs`: net.connect's arguments (`(port[, host][, cb])`, `(options[, cb])`,
 * `(path[, cb])`) as `[options, cb]`, the array marked as normalized. Internal to Node, present
 * in every version fastsock supports; one reference for every caller.
 */
export const normalizeArgs = (net as unknown as { _normalizeArgs: (args: unknown[]) => unknown[] })._normalizeArgs
