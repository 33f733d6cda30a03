/**
 * The peer process of `fastsock pipe` (started with child_process.fork): it listens on each
 * channel it is asked for and answers the measuring process, as NetPIPE's receiver does. It takes
 * its orders over the IPC channel (see protocol.ts) and exits when that channel closes, so it
 * cannot outlive the command.
 */
import type * as net from 'net'
import { listen } from './channels'
import { createCodec, ELEMENT_TYPES } from './codecs'
import type { PeerConfig, PeerReply, PeerRequest } from './protocol'

const servers = new Set<net.Server>()
const sockets = new Set<net.Socket>()
let config: PeerConfig = { mode: 'pingpong', bytes: 1 }

/** Ping-pong reply bytes: one buffer, grown on demand; `reply` is its first `config.bytes`. */
let replyStore = Buffer.alloc(64, 0x5a)
let reply = replyStore.subarray(0, 1)

/** The ack byte of stream mode. */
const ACK = Buffer.from([0x06])

let cpuMark = process.cpuUsage()

function configure (next: PeerConfig): void {
  config = next
  if (next.mode === 'pingpong') {
    if (replyStore.length < next.bytes) replyStore = Buffer.alloc(next.bytes, 0x5a)
    reply = replyStore.subarray(0, next.bytes)
  }
}

/** NetPIPE's receiver: wait for a whole message, then send one of the same size back. */
function servePingPong (socket: net.Socket): void {
  let pending = 0
  socket.on('data', (chunk: Buffer) => {
    pending += chunk.length
    while (pending >= reply.length) {
      pending -= reply.length
      socket.write(reply)
    }
  })
}

/** Counts streamed bytes; acks once the expected total arrived. */
function serveStream (socket: net.Socket): void {
  let received = 0
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length
    if (config.mode === 'stream' && config.expectBytes > 0 && received >= config.expectBytes) {
      received -= config.expectBytes
      socket.write(ACK)
    }
  })
}

/** Receives each array into this process's own typed array and sends it back. */
function serveTyped (socket: net.Socket, cfg: Extract<PeerConfig, { mode: 'typed' }>): void {
  let codec
  try {
    codec = createCodec(cfg.method, socket)
  } catch (err) {
    socket.destroy(err as Error)
    return
  }
  const dst = new ELEMENT_TYPES[cfg.elementType](cfg.elements)
  const loop = async (): Promise<void> => {
    for (;;) {
      await codec.receive(dst)
      codec.send(dst)
    }
  }
  loop().catch(() => socket.destroy())
}

function onConnection (socket: net.Socket): void {
  sockets.add(socket)
  socket.on('close', () => sockets.delete(socket))
  socket.on('error', () => { /* the measuring side reports failures */ })
  const cfg = config
  if (cfg.mode === 'pingpong') servePingPong(socket)
  else if (cfg.mode === 'stream') serveStream(socket)
  else serveTyped(socket, cfg)
}

async function handle (req: PeerRequest): Promise<PeerReply> {
  switch (req.cmd) {
    case 'listen': {
      const { server, address } = await listen(req.channel, onConnection)
      servers.add(server)
      return { id: req.id, ok: true, address }
    }
    case 'configure':
      configure(req.config)
      return { id: req.id, ok: true }
    case 'cpu-mark':
      cpuMark = process.cpuUsage()
      return { id: req.id, ok: true }
    case 'cpu-read':
      return { id: req.id, ok: true, cpuUs: process.cpuUsage(cpuMark) }
    case 'close':
      for (const s of sockets) s.destroy()
      for (const s of servers) s.close()
      servers.clear()
      return { id: req.id, ok: true }
  }
}

function main (): void {
  if (typeof process.send !== 'function') {
    process.stderr.write('fastsock pipe peer: start me with child_process.fork\n')
    process.exit(2)
  }
  const send = process.send.bind(process)
  process.on('message', (req: PeerRequest) => {
    handle(req).then(
      (rep) => send(rep),
      (err: Error) => send({ id: req.id, ok: false, error: err.message ?? String(err) })
    )
  })
  // The measuring process is gone (or done): so is the peer.
  process.on('disconnect', () => process.exit(0))
  send({ hello: true, pid: process.pid })
}

main()
