/**
 * A peer process of `fastsock rate` (started through the harness's PeerProcess): it listens on
 * each channel it is asked for (the harness's listeners) and plays the peer's side of the
 * protocol in protocol.ts on every accepted connection, for the cell it was last configured
 * with; or, on the RTT phase's listeners, echoes NetPIPE's ping-pong (rtt.ts). Orders come over
 * the fork IPC channel; it exits when that channel closes, so it cannot outlive the command
 * (../harness/peer-main.ts).
 */
import type * as net from 'net'
import { listen } from '../harness/channels'
import { servePeer } from '../harness/peer-main'
import { PingPongEcho } from '../harness/pingpong'
import { CacheFlusher } from './cache'
import { mark, since, type Mark } from './counters'
import { ACK, READY, roles, type PeerCell, type RatePeerRequest } from './protocol'
import { Payload, sendMessages } from './window'

const servers = new Set<net.Server>()
const sockets = new Set<net.Socket>()
const payload = new Payload()
const flusher = new CacheFlusher(0)
const echo = new PingPongEcho()
let cell: PeerCell | null = null
let cpuMark: Mark = mark()
/** Resets each connection's protocol state at a cell boundary. */
const resets = new Set<() => void>()

type Stage = 'barrier' | 'go' | 'data'

/** The peer's side of the protocol on one connection: counts what arrives, acts at each stage's end. */
function serve (socket: net.Socket): void {
  let stage: Stage = 'barrier'
  let need = 0
  const first = (): void => {
    if (cell === null) return
    const { peerSends } = roles(cell.direction)
    stage = cell.coldCache ? 'barrier' : peerSends ? 'go' : 'data'
    need = stage === 'data' ? cell.messages * cell.bytes : 1
  }
  const next = (): void => {
    const c = cell as PeerCell
    const { peerSends, hubSends } = roles(c.direction)
    if (stage === 'barrier') {
      flusher.flush()
      payload.touch()
      socket.write(READY)
      if (peerSends) { stage = 'go'; need = 1 } else { stage = 'data'; need = c.messages * c.bytes }
    } else if (stage === 'go') {
      sendMessages(socket, payload, c.messages).catch((err: Error) => socket.destroy(err))
      if (hubSends) { stage = 'data'; need = c.messages * c.bytes } else first()
    } else {
      socket.write(ACK)
      first()
    }
  }
  const reset = (): void => first()
  resets.add(reset)
  first()
  socket.on('data', (chunk: Buffer) => {
    if (cell === null) return
    let n = chunk.length
    while (n > 0) {
      const take = Math.min(n, need)
      n -= take
      need -= take
      if (need === 0) next()
    }
  })
  socket.on('close', () => { sockets.delete(socket); resets.delete(reset) })
  socket.on('error', () => { /* the measuring side reports failures */ })
  sockets.add(socket)
}

/** A connection of the RTT phase: ping-pong echo, tracked for 'close' as the others. */
function pingpong (socket: net.Socket): void {
  sockets.add(socket)
  socket.on('close', () => sockets.delete(socket))
  socket.on('error', () => { /* the measuring side reports failures */ })
  echo.serve(socket)
}

function configure (next: PeerCell): void {
  cell = next
  payload.resize(next.window, next.bytes)
  payload.touch()
  flusher.resize(next.coldCache ? next.cacheBytes : 0)
  for (const reset of resets) reset()
}

async function handle (req: RatePeerRequest): Promise<Record<string, unknown>> {
  switch (req.cmd) {
    case 'listen': {
      const { server, address } = await listen(req.channel, req.serve === 'pingpong' ? pingpong : serve)
      servers.add(server)
      return { address }
    }
    case 'pingpong':
      echo.setSize(req.bytes)
      return {}
    case 'cell':
      configure(req.cell)
      return {}
    case 'cpu-mark':
      cpuMark = mark()
      return {}
    case 'cpu-read': {
      const d = since(cpuMark)
      return { cpuUs: d.cpuUs, syscalls: d.syscalls }
    }
    case 'close':
      for (const s of sockets) s.destroy()
      for (const s of servers) s.close()
      servers.clear()
      return {}
  }
}

servePeer('fastsock rate peer', handle)
