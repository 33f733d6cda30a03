/**
 * The side channel under cluster's round-robin scheduling (the default on Linux).
 *
 * There the primary owns the TCP listen socket and hands accepted connections to the workers;
 * the workers listen on a stand-in handle. So the primary keeps the side channel (a client's
 * verification finds it owning the TCP listener, as it must) and hands each side-channel client,
 * before a byte of the handshake is read, to one of the workers serving that address and port,
 * round robin, over the cluster IPC channel. The worker runs the whole handshake (including the
 * shm setup) and adopts the connection into its own server, exactly as if it had accepted it.
 *
 * Messages use `cmd: 'NODE_FASTSOCK_*'`, which Node routes to 'internalMessage' (like cluster's
 * own): applications never see them.
 *   worker -> primary  { cmd: NODE_FASTSOCK_RR_LISTEN, key }    this worker serves key
 *   worker -> primary  { cmd: NODE_FASTSOCK_RR_UNLISTEN, key }  no longer
 *   primary -> worker  { cmd: NODE_FASTSOCK_SIDE, key } + the side-channel socket
 * `key` is "<address>|<port>" as server.address() reports them on both sides.
 */
import type * as net from 'net'
import type { Worker } from 'cluster'
import type { SideChannelListener } from './sidechannel/listener'
import { debug } from './debug'

const RR_LISTEN = 'NODE_FASTSOCK_RR_LISTEN'
const RR_UNLISTEN = 'NODE_FASTSOCK_RR_UNLISTEN'
const SIDE = 'NODE_FASTSOCK_SIDE'

type Msg = { cmd?: string, key?: string }
type ChildLike = NodeJS.EventEmitter & { send?: (msg: unknown, handle?: unknown) => boolean, connected?: boolean }

function clusterModule (): import('cluster').Cluster {
  return require('cluster') as import('cluster').Cluster
}

/** The key a primary and its workers share for one listener: "<address>|<port>". */
export function keyOf (address: string, port: number): string {
  return `${address}|${port}`
}

/* ---- primary ---- */

const servingWorkers = new Map<string, Worker[]>()
const dispatchers = new Map<string, SideChannelListener>()
const nextIndex = new Map<string, number>()
let primaryInstalled = false

/** A worker stopped serving `key`; when none is left, the listener is gone: so is its name. */
function drop (key: string, worker: Worker): void {
  const left = (servingWorkers.get(key) ?? []).filter(w => w !== worker)
  servingWorkers.set(key, left)
  const sc = dispatchers.get(key)
  if (left.length === 0 && sc) {
    debug('cluster', 'no worker serves %s any more: side channel %s closed', key, sc.name)
    sc.close()
    dispatchers.delete(key)
    servingWorkers.delete(key)
  }
}

function installPrimary (): void {
  if (primaryInstalled) return
  primaryInstalled = true
  const cluster = clusterModule()
  const watch = (worker: Worker): void => {
    (worker.process as unknown as ChildLike).on('internalMessage', (msg: Msg) => {
      if (!msg || typeof msg.key !== 'string') return
      const list = servingWorkers.get(msg.key) ?? []
      if (msg.cmd === RR_LISTEN) {
        if (!list.includes(worker)) list.push(worker)
        servingWorkers.set(msg.key, list)
        debug('cluster', 'worker %d serves %s', worker.id, msg.key)
      } else if (msg.cmd === RR_UNLISTEN) {
        drop(msg.key, worker)
      }
    })
    worker.once('exit', () => { for (const k of [...servingWorkers.keys()]) drop(k, worker) })
  }
  for (const w of Object.values(cluster.workers ?? {})) if (w) watch(w as Worker)
  cluster.on('fork', watch)
}

/**
 * In the primary: turns a listener whose TCP handle cluster took over into a dispatcher that
 * hands each side-channel client to a worker serving `key`. A client arriving while no worker
 * serves it is closed at once (it then uses TCP).
 */
export function dispatchToWorkers (sc: SideChannelListener, key: string): void {
  installPrimary()
  dispatchers.get(key)?.close()
  dispatchers.set(key, sc)
  sc.handoff = (raw: net.Socket) => {
    const list = (servingWorkers.get(key) ?? []).filter(w => w.isConnected())
    if (list.length === 0) {
      debug('cluster', 'no worker serves %s yet: side-channel client closed (it uses TCP)', key)
      return void raw.destroy()
    }
    const i = (nextIndex.get(key) ?? 0) % list.length
    nextIndex.set(key, i + 1)
    const proc = list[i].process as unknown as ChildLike
    proc.send!({ cmd: SIDE, key }, raw)
  }
  debug('cluster', 'side channel %s hands clients to the workers serving %s', sc.name, key)
}

/* ---- worker ---- */

const servedHere = new Map<string, SideChannelListener>()
let workerInstalled = false

/**
 * In a round-robin worker: `sc` (not bound: the name belongs to the primary) serves the
 * side-channel clients the primary hands over for `key`, until `server` closes.
 */
export function serveFromPrimary (server: net.Server, sc: SideChannelListener, key: string): void {
  if (!workerInstalled) {
    workerInstalled = true
    ;(process as unknown as ChildLike).on('internalMessage', (msg: Msg, handle: unknown) => {
      if (!msg || msg.cmd !== SIDE) return
      const target = typeof msg.key === 'string' ? servedHere.get(msg.key) : undefined
      const raw = handle as net.Socket | undefined
      if (!raw) return
      if (!target) return void raw.destroy()
      target.serve(raw)
    })
  }
  servedHere.set(key, sc)
  const send = (cmd: string): void => {
    const p = process as unknown as ChildLike
    if (p.connected && p.send) p.send({ cmd, key })
  }
  send(RR_LISTEN)
  server.once('close', () => {
    if (servedHere.get(key) === sc) servedHere.delete(key)
    send(RR_UNLISTEN)
  })
}

/** True in a cluster worker whose server listens on a stand-in handle (round-robin). */
export function isRoundRobinWorker (server: net.Server): boolean {
  const h = (server as unknown as { _handle: { fd?: unknown } | null })._handle
  return clusterModule().isWorker && h !== null && !(typeof h.fd === 'number' && h.fd >= 0)
}
