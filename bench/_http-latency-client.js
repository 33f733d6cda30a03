'use strict'
/**
 * The load client of bench/http-latency.js, run as an unmodified http client (the preload hook,
 * when the parent gives it, comes in through NODE_OPTIONS):
 *
 *   node bench/_http-latency-client.js <port> <open|closed> <connections> <rate> <duration s> <warmup s>
 *
 * Opens exactly <connections> keep-alive connections to 127.0.0.1:<port> (one http.Agent with
 * maxSockets 1 per connection, every connection opened by one probe request before the clock
 * starts) and sends GET / on them:
 *   open    a fixed schedule: request i is due at t0 + i / <rate> on connection i mod
 *           <connections> (each connection carries <rate> / <connections>, as wrk2 does). A request
 *           whose connection is still busy waits in that connection's queue; its latency counts from
 *           its DUE time, not from when it went out (the coordinated-omission correction). The
 *           schedule is driven by a setImmediate loop that never sleeps (one core busy) and, on
 *           every turn, sends every request whose due time has passed (catch-up): a timer would
 *           add up to 1 ms of its own lateness to every latency.
 *   closed  every connection sends its next request when its response has ended; latency from the
 *           send. The same setImmediate loop spins beside it, so the client costs the same CPU as
 *           in the open loop: the parent reads the rate it reaches (responses that ended in the
 *           recorded <duration> s, per second) as the saturation rate.
 * Requests due (open) or completed (closed) in the first <warmup> s are not recorded; the schedule
 * then runs <duration> s more and the client waits for the responses still outstanding (open).
 *
 * Latencies go into an HDR histogram (hdr-histogram-js, pure JS, 1 µs .. 60 s, 3 significant
 * digits), in µs; a second one holds the send lag (open: actual send - due time, the client's own
 * lateness plus the connection's queue). Percentiles and max are read from the histograms (the
 * highest value of their bucket: at most 0.1 % above the value recorded). Prints one JSON line: { mode, rate, connections, count,
 * errors, unfinished, sockets (distinct sockets used: should equal connections), achieved (req/s),
 * p50, p99, p999, max (µs), lagP99 (µs), transports / serverTransports (per connection, as seen on
 * the probe responses), hist and lag (the histograms, compressed base64) }.
 */
const http = require('http')
const { performance } = require('perf_hooks')
const hdr = require('hdr-histogram-js')
const { monoNs, writeTailLog } = require('./_tail-log')

const [port, connections, rate, duration, warmup] = [2, 4, 5, 6, 7].map(i => Number(process.argv[i]))
const mode = process.argv[3]
const MAX_US = 60e6
const newHistogram = () => hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: MAX_US, numberOfSignificantValueDigits: 3 })
const hist = newHistogram()
const lag = newHistogram()
const recordUs = (h, ms) => h.recordValue(Math.min(MAX_US, Math.max(1, Math.round(ms * 1000))))

const sockets = new Set()
let errors = 0
/**
 * Recorded open-loop requests slower than SLOW_MS, [due, end] (CLOCK_MONOTONIC ns), written for
 * bench/tail-sched.js when FASTSOCK_TAIL_LOG names a directory (bench/_tail-log.js).
 */
const SLOW_MS = 1
const slow = []

/**
 * One GET / on `conn`; calls back with the response (headers) and its socket once its body has
 * ended (the agent has detached the socket from the response by then), or with null on error.
 */
function get (conn, cb) {
  const req = http.request({ host: '127.0.0.1', port, path: '/', agent: conn.agent }, res => {
    const socket = res.socket
    res.resume()
    res.once('end', () => cb(res, socket))
  })
  req.once('socket', s => sockets.add(s))
  req.once('error', () => { errors++; cb(null) })
  req.end()
}

/** Opens every connection with one request and notes the transport each end saw. */
function probe (conns) {
  return Promise.all(conns.map(conn => new Promise((resolve, reject) => get(conn, (res, socket) => {
    if (res === null) return reject(new Error('the probe request failed'))
    conn.transport = String(socket.transport ?? 'net')
    conn.serverTransport = String(res.headers['x-transport'] ?? '?')
    resolve()
  }))))
}

function open (conns, t0, done) {
  const period = 1000 / rate
  const total = Math.floor((warmup + duration) * rate)
  const recordFrom = t0 + warmup * 1000
  let next = 0
  let finished = 0
  let count = 0
  let lastEnd = recordFrom
  const send = (conn, due) => {
    conn.busy = true
    const sent = performance.now()
    if (due >= recordFrom) recordUs(lag, sent - due)
    get(conn, res => {
      const end = performance.now()
      finished++
      if (res !== null && due >= recordFrom) { recordUs(hist, end - due); count++; lastEnd = end; if (end - due > SLOW_MS) slow.push([monoNs(due), monoNs(end)]) }
      conn.busy = false
      if (conn.head < conn.queue.length) send(conn, conn.queue[conn.head++])
      if (finished === total) done({ count, elapsed: lastEnd - recordFrom, unfinished: 0 })
    })
  }
  const tick = () => {
    const now = performance.now()
    while (next < total && t0 + next * period <= now) {
      const conn = conns[next % conns.length]
      const due = t0 + next * period
      next++
      if (conn.busy) conn.queue.push(due)
      else send(conn, due)
    }
    if (next < total) setImmediate(tick)
  }
  if (total === 0) return done({ count: 0, elapsed: 0, unfinished: 0 })
  setImmediate(tick)
  // The responses still outstanding when the schedule ends get this long to arrive.
  const drainMs = Math.max(10000, 2 * duration * 1000)
  setTimeout(() => done({ count, elapsed: lastEnd - recordFrom, unfinished: total - finished }), (warmup + duration) * 1000 + drainMs).unref()
}

function closed (conns, t0, done) {
  const recordFrom = t0 + warmup * 1000
  const until = recordFrom + duration * 1000
  let count = 0
  let running = conns.length
  const send = conn => {
    const sent = performance.now()
    get(conn, res => {
      const end = performance.now()
      if (res !== null && end >= recordFrom && end <= until) { recordUs(hist, end - sent); count++ }
      if (end < until) send(conn)
      else if (--running === 0) done({ count, elapsed: duration * 1000, unfinished: 0 })
    })
  }
  const spin = () => { if (performance.now() < until) setImmediate(spin) }
  setImmediate(spin)
  for (const conn of conns) send(conn)
}

async function main () {
  const conns = Array.from({ length: connections }, () => ({
    agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
    busy: false,
    queue: [],
    head: 0
  }))
  await probe(conns)
  const t0 = performance.now() + 5
  let reported = false
  const done = ({ count, elapsed, unfinished }) => {
    if (reported) return
    reported = true
    if (mode === 'open') writeTailLog(`http GET at ${rate} req/s on ${connections} connection(s) over ${conns[0].transport}, requests over ${SLOW_MS} ms from their due time`, slow)
    process.stdout.write(JSON.stringify({
      mode,
      rate,
      connections,
      count,
      errors,
      unfinished,
      sockets: sockets.size,
      achieved: elapsed > 0 ? count / (elapsed / 1000) : 0,
      p50: hist.getValueAtPercentile(50),
      p99: hist.getValueAtPercentile(99),
      p999: hist.getValueAtPercentile(99.9),
      max: hist.getValueAtPercentile(100),
      lagP99: lag.getValueAtPercentile(99),
      transports: conns.map(c => c.transport),
      serverTransports: conns.map(c => c.serverTransport),
      hist: hdr.encodeIntoCompressedBase64(hist),
      lag: hdr.encodeIntoCompressedBase64(lag)
    }) + '\n')
  }
  if (mode === 'open') open(conns, t0, done)
  else if (mode === 'closed') closed(conns, t0, done)
  else throw new Error(`unknown mode ${mode}`)
}

main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
process.on('SIGTERM', () => process.exit(0))
