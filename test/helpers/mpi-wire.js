'use strict'
// A client speaking fastsock/mpi's device wire (lib/mpi/device-wire.ts) to a live rank
// (test/fixtures/mpi/frame-target.js), for the wire fuzz (test/mpi/wire-fuzz.test.js) and its
// bench (bench/mpi-fuzz.js): the target's process, HELLOs and frame headers built field by
// field, and a connection that sends bytes and tells when the target closed it.
const path = require('path')
const { spawn } = require('child_process')
const { jsonEvents } = require('./json-events')
const ROOT = path.join(__dirname, '..', '..')
const fastsock = require(path.join(ROOT, 'dist', 'index.js'))
const crypto = require('crypto')
const wire = require(path.join(ROOT, 'dist', 'mpi', 'device-wire.js'))
const auth = require(path.join(ROOT, 'dist', 'mpi', 'auth.js'))

/** The job secret the target is given (FRAME_TARGET_SECRET) and an honest dialer proves. */
const SECRET = Buffer.from('wire-fuzz-job-secret-of-256-bits')

const TARGET = path.join(ROOT, 'test', 'fixtures', 'mpi', 'frame-target.js')

/**
 * Starts the live rank; resolves with { port, child, events (every JSON line so far), next(pred,
 * ms) (the first event, past or future, matching pred), stats() (its memory), exit() }.
 */
function startTarget (env = {}) {
  const child = spawn(process.execPath, ['--expose-gc', '--no-warnings', TARGET], { env: { ...process.env, FRAME_TARGET_SECRET: SECRET.toString('hex'), ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  const out = jsonEvents(child, 'the target')
  const { events, exited } = out
  const next = (pred, ms = 10000) => out.next(pred, ms)
  const target = {
    child,
    events,
    exited,
    get stderr () { return out.stderr },
    next,
    async stats () {
      const n = events.length
      child.stdin.write('stats\n')
      return (await next(ev => ev.stats && events.indexOf(ev) >= n)).stats
    },
    /** Posts a receive that fails when world rank `rank` is lost. */
    async watch (rank) {
      child.stdin.write(`watch ${rank}\n`)
      await next(ev => ev.watching === rank)
    },
    async exit () { child.stdin.write('exit\n'); return exited }
  }
  return next(ev => ev.port !== undefined).then(ev => { target.port = ev.port; return target })
}

/** A HELLO as world rank `rank` of job `job` announcing `eager` bytes, with a fresh nonce (fields overridable). */
function hello ({ rank, job = 'fuzz', eager = 4096, magic = wire.MAGIC, version = wire.VERSION }) {
  const b = Buffer.alloc(wire.HELLO_BYTES)
  crypto.randomBytes(32).copy(b, wire.HELLO_NONCE)
  b.writeUInt32LE(magic >>> 0, 0)
  b.writeUInt16LE(version & 0xffff, 4)
  b.writeUInt32LE(rank >>> 0, 8)
  b.writeUInt32LE(wire.jobKey(job), 12)
  b.writeUInt32LE(eager >>> 0, 16)
  return b
}

/** A frame header (8 x u32 little-endian; `length` up to 2^64 - 1 as a number or bigint). */
function header ({ kind, ctx = 0, source = 0, tag = 0, length = 0, sreq = 0, rreq = 0 }) {
  const b = Buffer.alloc(wire.HEADER_BYTES)
  b.writeUInt32LE(kind >>> 0, 0)
  b.writeUInt32LE(ctx >>> 0, 4)
  b.writeUInt32LE(source >>> 0, 8)
  b.writeUInt32LE(tag >>> 0, 12)
  const len = BigInt(length)
  b.writeUInt32LE(Number(len & 0xffffffffn), 16)
  b.writeUInt32LE(Number((len >> 32n) & 0xffffffffn), 20)
  b.writeUInt32LE(sreq >>> 0, 24)
  b.writeUInt32LE(rreq >>> 0, 28)
  return b
}

/**
 * Connects to the target (fastsock's chain: shm on this host); resolves with { socket, reply
 * (the REPLY, or null when the target closed without one), closed (a promise of the close),
 * isClosed() }. `helloBytes`: what to send first; `waitMs`: resolve with reply null after that
 * long without one (a short HELLO gets no answer). After an ACCEPT the dial proves `secret` (the
 * handshake's PROVE, over the HELLO's and the REPLY's nonces) as a rank of the job does.
 */
function dial (port, helloBytes, waitMs = Infinity, secret = SECRET) {
  return new Promise((resolve, reject) => {
    if (waitMs !== Infinity) setTimeout(() => finish(null), waitMs).unref()
    const socket = fastsock.connect({ host: '127.0.0.1', port })
    let closed = false
    const closedP = new Promise(r => socket.once('close', () => { closed = true; r() }))
    socket.on('error', () => {})
    let got = Buffer.alloc(0)
    let done = false
    const finish = reply => { if (done) return; done = true; socket.off('data', onData); resolve({ socket, reply, closed: closedP, isClosed: () => closed }) }
    const onData = d => {
      got = Buffer.concat([got, d])
      if (got.length < wire.REPLY_BYTES) return
      const reply = got.subarray(0, wire.REPLY_BYTES)
      if (reply.readUInt32LE(4) === 1 && helloBytes.length >= wire.HELLO_BYTES) {
        socket.write(auth.proof(secret, 'hello', 'A', helloBytes.subarray(wire.HELLO_NONCE, wire.HELLO_NONCE + 32), reply.subarray(wire.REPLY_NONCE, wire.REPLY_NONCE + 32)))
      }
      finish(reply)
    }
    socket.on('data', onData)
    socket.once('close', () => finish(null))
    socket.once('connect', () => socket.write(helloBytes))
    socket.once('error', err => { if (!done) { done = true; reject(err) } })
  })
}

/** Writes `bytes` and resolves once they are flushed (or the socket closed). */
function send (conn, bytes) {
  return new Promise(resolve => {
    if (conn.isClosed() || conn.socket.destroyed) { resolve(); return }
    conn.socket.write(bytes, () => resolve())
  })
}

/** The tag the target's standing receive takes (frame-target.js). */
const HONEST = 1000

module.exports = { HONEST, SECRET, startTarget, hello, header, dial, send, wire }
