/**
 * The peer process of `fastsock pipe` (started with child_process.fork): it listens on each
 * channel it is asked for and answers the measuring process, as NetPIPE's receiver does. It takes
 * its orders over the IPC channel (see protocol.ts) and exits when that channel closes, so it
 * cannot outlive the command (../harness/peer-main.ts).
 */
import type * as net from 'net'
import { listen } from '../harness/channels'
import { servePeer } from '../harness/peer-main'
import { PingPongEcho } from '../harness/pingpong'
import { createCodec, ELEMENT_TYPES } from './codecs'
import type { PeerConfig, PeerReply, PeerRequest } from './protocol'

const servers = new Set<net.Server>()
const sockets = new Set<net.Socket>()
let config: PeerConfig = { mode: 'pingpong', bytes: 1 }

const echo = new PingPongEcho()

/** The ack byte of stream mode. */
const ACK = Buffer.from([0x06])

let cpuMark = process.cpuUsage()

function configure (next: PeerConfig): void {
  config = next
  if (next.mode === 'pingpong') echo.setSize(next.bytes)
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
  if (cfg.mode === 'pingpong') echo.serve(socket)
  else if (cfg.mode === 'stream') serveStream(socket)
  else serveTyped(socket, cfg)
}

async function handle (req: PeerRequest): Promise<PeerReply & Record<string, unknown>> {
  switch (req.cmd) {
    case 'listen': {
      const { server, address } = await listen(req.channel, onConnection)
      servers.add(server)
      return { address }
    }
    case 'configure':
      configure(req.config)
      return {}
    case 'cpu-mark':
      cpuMark = process.cpuUsage()
      return {}
    case 'cpu-read':
      return { cpuUs: process.cpuUsage(cpuMark) }
    case 'close':
      for (const s of sockets) s.destroy()
      for (const s of servers) s.close()
      servers.clear()
      return {}
  }
}

servePeer('fastsock pipe peer', handle)
