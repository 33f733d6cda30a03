'use strict'
// Lost wake-ups with adaptive polling on (docs/polling.md): two real processes pinned on ONE CPU
// (so they contend, and the progress engine's yield, contention back-off and cap all come into
// play) exchange many rounds of small windows over a small ring (4 KiB: writers wait for space
// as often as readers wait for bytes), in both directions, sometimes at the same time. Every
// round must complete: a round that makes no progress for 10 s is a wake-up lost (bytes or space
// in the ring while the waiting side sleeps, or bytes a write never handed to the ring), reported
// with both ends' ring and polling state. Before it, the race this found, made deterministic.
//
// Round header (client -> server, 16 bytes): messages and bytes per message the client sends,
// messages and bytes per message the server sends back (0 messages: a 1-byte ack once every
// request byte arrived), and whether the server answers at once (both directions at the same
// time) or only after every request byte.
const os = require('os')
const { execFileSync } = require('child_process')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once } = require('../helpers/util')

const HEADER_BYTES = 16
const RING_BYTES = 4096
const ROUND_STALL_MS = 10000
const ROUNDS = Number(process.env.POLL_STALL_ROUNDS || 3000)
const TIME_BUDGET_MS = Number(process.env.POLL_STALL_BUDGET_MS || 20000)

/** The state of one shm endpoint, for the failure message. */
function endpointState (s) {
  const ep = s._fsShm && s._fsShm.ep
  if (!ep) return { transport: s.transport }
  return { readable: ep.readable(), writable: ep.writable(), state: ep.state(), counters: ep.counters(), poll: ep.pollStats(), engine: native.progressStats() }
}

/** Writes `n` messages of `size` bytes as one corked batch (one writev), as `fastsock rate` does. */
function sendWindow (s, n, size, fill) {
  if (n === 0) return
  const buf = Buffer.alloc(size, fill)
  s.cork()
  for (let i = 0; i < n; i++) s.write(buf)
  s.uncork()
}

// --- the server process -------------------------------------------------------------------------
if (process.argv[2] === 'peer') {
  let conn = null
  const server = fastsock.createServer({ transports: ['shm'] }, s => {
    conn = s
    s.on('error', () => {})
    let header = null
    let need = 0
    let pending = Buffer.alloc(0)
    const reply = h => {
      if (h.replyN === 0) s.write('k')
      else sendWindow(s, h.replyN, h.replySize, 0x73)
    }
    s.on('data', d => {
      while (d.length > 0) {
        if (header === null) {
          pending = pending.length ? Buffer.concat([pending, d]) : d
          if (pending.length < HEADER_BYTES) return
          header = { n: pending.readUInt32LE(0), size: pending.readUInt16LE(4), replyN: pending.readUInt32LE(8), replySize: pending.readUInt16LE(12), early: pending[14] === 1 }
          d = pending.subarray(HEADER_BYTES)
          pending = Buffer.alloc(0)
          need = header.n * header.size
          if (header.early) reply(header)
          if (need > 0) continue
        }
        const take = Math.min(d.length, need)
        need -= take
        d = d.subarray(take)
        if (need === 0) {
          const h = header
          header = null
          if (!h.early) reply(h)
        }
      }
    })
  })
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', () => process.stdout.write(JSON.stringify({ event: 'state', state: conn ? endpointState(conn) : null }) + '\n'))
  process.stdin.on('end', () => process.exit(0))
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ event: 'listening', port: server.address().port }) + '\n'))
  return
}

// --- the test -----------------------------------------------------------------------------------
const t = require('tap')
const skip = !rungs.includes('shm') ? 'shm is not available here' : null
let taskset = false
try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); taskset = true } catch {}

/** The 16-byte round header (see the top of this file). */
function encodeHeader (p) {
  const h = Buffer.alloc(HEADER_BYTES)
  h.writeUInt32LE(p.n, 0)
  h.writeUInt16LE(p.size, 4)
  h.writeUInt32LE(p.replyN, 8)
  h.writeUInt16LE(p.replySize, 12)
  h[14] = p.early ? 1 : 0
  return h
}

/** The peer in its own process (pinned with this one on CPU 0 where taskset exists), and a connection to it. */
async function connectPeer (t) {
  if (taskset) execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)], { stdio: 'ignore' })
  // The peer spins under a small cap (5 % of a core): its endpoints are throttled into sleep often.
  const peer = spawnNode(t, taskset
    ? ['-e', `require('child_process').execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)]); process.argv[2] = 'peer'; require(${JSON.stringify(__filename)})`]
    : [__filename, 'peer'], { env: { FASTSOCK_POLL_CAP_PERCENT: '5' } })
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'], shmRingBytes: RING_BYTES })
  t.teardown(() => { c.destroy(); peer.child.stdin.end() })
  await once(c, 'connect')
  t.equal(c.transport, 'shm')
  return { peer, c }
}

// The race the stress test below found (it stalled `fastsock rate` fan-in): a write handed to
// the endpoint from Node's Writable (_writev, inside its clearBuffer) that also read the ring and
// emitted 'data' there ran the application's 'data' handler inside clearBuffer; a corked window
// that handler wrote was buffered, then dropped by clearBuffer's resetBuffer once _writev
// returned: bytes never reached the ring, the peer waited for them forever. Made deterministic
// here: the reply sits in the ring (this loop busy) when the next corked write goes out.
t.test('a corked window written by a data handler during another write is not lost', { skip, timeout: 30000 }, async t => {
  const { c } = await connectPeer(t)
  const replyBytes = 64 * 8
  let got = 0
  let wroteFromHandler = false
  const acks = new Promise(resolve => {
    c.on('data', d => {
      got += d.length
      if (got >= replyBytes && !wroteFromHandler) {
        wroteFromHandler = true // the reply is complete: the next request, a corked window, at once
        c.cork()
        c.write(encodeHeader({ n: 4, size: 8, replyN: 0, replySize: 0, early: false }))
        for (let i = 0; i < 4; i++) c.write(Buffer.alloc(8, 0x68))
        c.uncork()
      }
      if (got >= replyBytes + 2) resolve()
    })
  })
  c.write(encodeHeader({ n: 0, size: 0, replyN: 64, replySize: 8, early: true }))
  // Keep this loop busy until the whole reply is in the ring (unread): the next write finds it.
  const ep = c._fsShm.ep
  for (const until = Date.now() + 5000; ep.readable() < replyBytes && Date.now() < until;);
  t.equal(ep.readable(), replyBytes, 'the reply waits in the ring')
  c.cork() // two chunks: Node hands them over with one _writev from clearBuffer
  c.write(encodeHeader({ n: 1, size: 8, replyN: 0, replySize: 0, early: false }))
  c.write(Buffer.alloc(8, 0x67))
  c.uncork()
  const timer = new Promise(resolve => setTimeout(resolve, 5000, 'timeout'))
  const outcome = await Promise.race([acks, timer])
  t.not(outcome, 'timeout', `both requests acked (${got - replyBytes} of 2 acks; socket buffer ${c.writableLength} B, ring ${JSON.stringify(endpointState(c))})`)
  t.ok(wroteFromHandler, 'the data handler wrote its window')
})

/** A deterministic mix of rounds: tiny and ring-filling windows, one way, the other way, both. */
function roundParams (i) {
  const windows = [1, 8, 64, 700, 3000]
  const sizes = [1, 8, 8, 64, 3]
  const n = windows[i % windows.length]
  const size = sizes[(i >> 2) % sizes.length]
  switch (i % 3) {
    case 0: return { n, size, replyN: 0, replySize: 0, early: false } // fan-out, acked
    case 1: return { n: 0, size: 0, replyN: n, replySize: size, early: true } // fan-in
    default: return { n, size, replyN: windows[(i + 2) % windows.length], replySize: 8, early: (i & 1) === 0 } // both
  }
}

t.test('rounds of small windows never stall with polling on (both processes on one CPU)', { skip, timeout: TIME_BUDGET_MS + 60000 }, async t => {
  const { peer, c } = await connectPeer(t)
  t.comment(taskset ? `both processes pinned to CPU 0 (of ${os.cpus().length})` : 'not pinned (no taskset)')
  t.ok(c._fsShm.ep.pollStats().maxUs > 0, 'adaptive polling is on')
  // Timers and immediates now and then: the engine's "loop would not block" path and its yields.
  const noise = setInterval(() => setImmediate(() => {}), 1)

  // Each round starts from the 'data' handler that completes the previous one, synchronously
  // (as `fastsock rate`'s peers answer), so its writes may land inside another write's pump.
  let rounds = 0
  let round = null
  let need = 0
  let progressed = 0
  let finish
  const finished = new Promise(resolve => { finish = resolve })
  const started = Date.now()
  const next = () => {
    if (rounds >= ROUNDS || Date.now() - started >= TIME_BUDGET_MS) return finish()
    round = roundParams(rounds)
    need = round.replyN === 0 ? 1 : round.replyN * round.replySize
    c.write(encodeHeader(round))
    sendWindow(c, round.n, round.size, 0x63)
  }
  c.on('data', d => {
    need -= d.length
    progressed++
    if (need <= 0) {
      rounds++
      next()
    }
  })
  // A round may take long on a loaded machine, but not make no progress for 10 s.
  let last = -1
  let watchdog
  const stalled = new Promise((resolve, reject) => {
    watchdog = setInterval(() => {
      if (progressed === last) reject(new Error(`round ${rounds} ${JSON.stringify(round)} stalled: ${need} bytes still expected`))
      last = progressed
    }, ROUND_STALL_MS)
  })
  try {
    next()
    await Promise.race([finished, stalled])
  } catch (err) {
    const local = endpointState(c)
    peer.child.stdin.write('state\n')
    const remote = await peer.waitFor(m => m.event === 'state', 5000).catch(e => ({ error: e.message }))
    t.fail(err.message, { client: local, server: remote.state ?? remote })
  } finally {
    clearInterval(watchdog)
    clearInterval(noise)
  }
  t.comment(`${rounds} rounds in ${Date.now() - started} ms; engine ${JSON.stringify(native.progressStats())}`)
  t.ok(rounds >= Math.min(ROUNDS, 50), `${rounds} rounds completed, none stalled`)
})
