'use strict'
// Small test utilities: bounded waits, stream collection, checksums, child processes.
const crypto = require('crypto')
const events = require('events')
const net = require('net')
const path = require('path')
const { spawn } = require('child_process')

const ROOT = path.join(__dirname, '..', '..')

/**
 * The bounded waits below (once, within, waitFor and what uses them) stretch by this factor in
 * the RDMA guest, whose CPU is emulated: there a child `node` takes 1-3 s to start and
 * `require('tap')` 12 s, so a bound sized for a real CPU fails a test that is only slow. The
 * bounds keep a hang from running forever; no test asserts speed with them.
 * FASTSOCK_TEST_SLOWDOWN overrides.
 */
const SLOWDOWN = Number(process.env.FASTSOCK_TEST_SLOWDOWN) || (process.env.RDMAVM ? 5 : 1)

/** Resolves with the event's arguments, rejects after `ms` (or on 'error' unless it is the event). */
function once (emitter, event, ms = 5000) {
  ms *= SLOWDOWN
  return events.once(emitter, event, { signal: AbortSignal.timeout(ms) }).catch(err => {
    if (err.name === 'AbortError') throw new Error(`timed out after ${ms} ms waiting for '${event}'`)
    throw err
  })
}

/** Rejects after `ms` with a message naming what was awaited. */
function within (promise, ms, what) {
  ms *= SLOWDOWN
  let timer
  return Promise.race([
    promise,
    new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** Polls `pred` every 5 ms until it is truthy; rejects after `ms`. */
async function waitFor (pred, ms = 5000, what = 'condition') {
  ms *= SLOWDOWN
  const until = Date.now() + ms
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(5)
  }
}

/** Every byte a readable emits until 'end', as one Buffer. */
function collect (stream, ms = 10000) {
  return within(new Promise((resolve, reject) => {
    const chunks = []
    stream.on('data', c => chunks.push(c))
    stream.once('end', () => resolve(Buffer.concat(chunks)))
    stream.once('error', reject)
  }), ms, 'stream end')
}

/** The first `n` bytes a readable emits as 'data' (at least n; what arrives with them too), as one Buffer. */
function collectBytes (stream, n, ms = 10000, what = `${n} bytes`) {
  return within(new Promise((resolve, reject) => {
    const chunks = []
    let got = 0
    const onData = c => {
      chunks.push(c)
      got += c.length
      if (got >= n) {
        stream.off('data', onData)
        resolve(Buffer.concat(chunks))
      }
    }
    stream.on('data', onData)
    stream.once('error', reject)
  }), ms, what)
}

const sha256 = buf => crypto.createHash('sha256').update(buf).digest('hex')

/** A TCP port that nobody listens on (bound, then released). */
async function closedPort (host = '127.0.0.1') {
  const s = net.createServer()
  await new Promise((resolve, reject) => s.once('error', reject).listen(0, host, resolve))
  const { port } = s.address()
  await new Promise(resolve => s.close(resolve))
  return port
}

function listen (server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.removeListener('error', reject)
      resolve(server)
    })
  })
}

function closeServer (server) {
  return new Promise(resolve => {
    if (!server.listening) return resolve()
    server.close(() => resolve())
  })
}

/** True when this host can listen on and connect to ::1. */
let ipv6Cache = null
async function hasIPv6 () {
  if (ipv6Cache !== null) return ipv6Cache
  const s = net.createServer()
  try {
    await listen(s, 0, '::1')
    ipv6Cache = true
  } catch {
    ipv6Cache = false
  }
  await closeServer(s)
  return ipv6Cache
}

/**
 * Spawns `node <args>` with cwd at the package root; stdout is parsed as JSON lines. The child
 * inherits this environment without FASTSOCK_TRANSPORTS, FASTSOCK_DEBUG and NODE_OPTIONS (the
 * test decides those), plus `env`.
 * Returns { child, messages, stderr(), waitFor(pred, ms), exited }; the child is killed at teardown.
 */
function spawnNode (t, args, { env = {}, cwd = ROOT } = {}) {
  const inherited = { ...process.env }
  for (const k of ['FASTSOCK_TRANSPORTS', 'FASTSOCK_DEBUG', 'NODE_OPTIONS']) delete inherited[k]
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...inherited, ...env },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  const messages = []
  const emitter = new events.EventEmitter()
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', d => {
    out += d
    let nl
    while ((nl = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, nl)
      out = out.slice(nl + 1)
      let msg
      try { msg = JSON.parse(line) } catch { msg = { line } }
      messages.push(msg)
      emitter.emit('message', msg)
    }
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', d => { err += d })
  const exited = new Promise(resolve => child.once('close', (code, signal) => resolve({ code, signal })))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  return {
    child,
    messages,
    exited,
    stderr: () => err,
    /** The first message (past or future) matching `pred`. */
    waitFor (pred, ms = 10000) {
      const found = messages.find(pred)
      if (found) return Promise.resolve(found)
      return within(new Promise((resolve, reject) => {
        const onMsg = m => { if (pred(m)) { cleanup(); resolve(m) } }
        const onExit = (code, signal) => {
          cleanup()
          reject(new Error(`child exited (${code ?? signal}) before the expected message; stderr:\n${err}`))
        }
        const cleanup = () => { emitter.removeListener('message', onMsg); child.removeListener('close', onExit) }
        emitter.on('message', onMsg)
        child.once('close', onExit)
      }), ms, `a message from the child; stderr so far:\n${err}`)
    }
  }
}

/** Resolves with null on 'connect', or with the error on 'error' (whichever comes first). */
function connectOutcome (socket, ms = 5000) {
  return within(new Promise(resolve => {
    const onConnect = () => { socket.removeListener('error', onError); resolve(null) }
    const onError = err => { socket.removeListener('connect', onConnect); resolve(err) }
    socket.once('connect', onConnect)
    socket.once('error', onError)
  }), ms, "'connect' or 'error'")
}

/** A connection handler that also ignores the socket's errors (peers in tests go away abruptly). */
const quiet = fn => s => {
  s.on('error', () => {})
  return fn(s)
}

module.exports = { SLOWDOWN, connectOutcome, quiet, ROOT, once, within, sleep, waitFor, collect, collectBytes, sha256, closedPort, listen, closeServer, hasIPv6, spawnNode }
