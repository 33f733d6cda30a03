'use strict'
// A HELLO claiming rank w that never proves the job's secret must not hold this rank's first
// message to w (issue 33, "cannot stop it"): the accepted, unproven claim makes w's connection
// object at once (so that sends queue on it), and before this change the rank waited for the
// claim's 10 s PROVE deadline before it dialed w itself. Two real ranks (env://, a secret); a
// process of this user that does not know the secret (on one host another uid is refused at
// HELLO; from another host nothing tells it apart before PROVE) dials rank 1's device listener,
// claims rank 0, gets ACCEPT, and stays silent. Then rank 1 sends to rank 0, which answers: the
// round trip must end well before the claim's deadline (< 5 s; it takes a round trip or two, a
// bound on a hang, not a speed figure). The crossing-dial rule that this dial relies on is
// checked too: ranks that all send to each other at once end with one connection per pair, and
// the rule's new case is made to happen in order against a live Device (last test).
const t = require('tap')
const crypto = require('crypto')
const net = require('net')
const path = require('path')
const { jsonEvents } = require('../helpers/json-events')
const { spawn } = require('child_process')
const { cleanEnv } = require('../helpers/mpi-launchers')
const { freePort } = require('../../dist/cli/mpirun')
const wire = require('../../dist/mpi/device-wire')
const { helloOf } = require('../../dist/mpi/device-handshake')

const MPI = path.join(__dirname, '..', '..', 'dist', 'mpi')

// Each rank prints its device port, waits for "go" on stdin, then rank 1 sends 8 bytes to rank 0
// and waits for them back (rank 0 receives from ANY_SOURCE first: a receive from rank 1 would
// dial rank 1, and that dial, accepted, would resolve the claim instead), timing
// the round trip; both print it and finalize.
const PROG = `
const mpi = require(${JSON.stringify(MPI)})
const rl = require('readline').createInterface({ input: process.stdin })
;(async () => {
  const comm = await mpi.init({ timeoutMs: 30000 })
  const dev = comm._shared.device
  console.log(JSON.stringify({ rank: comm.rank, port: dev.cards[comm.rank].port }))
  await new Promise(resolve => rl.once('line', resolve))
  rl.close()
  const buf = new Float64Array(1)
  const t0 = Date.now()
  if (comm.rank === 1) {
    await comm.send(new Float64Array([42]), 0, 3)
    await comm.recv(buf, 0, 4)
  } else {
    await comm.recv(buf, mpi.ANY_SOURCE, 3)
    await comm.send(buf, 1, 4)
  }
  console.log(JSON.stringify({ rank: comm.rank, ms: Date.now() - t0, got: buf[0], adopted: dev.adopted }))
  await mpi.finalize()
})().catch(err => { console.log(JSON.stringify({ error: err.code, message: err.message })); process.exit(3) })
`

function startRanks (size, prog, extra = {}) {
  return freePort().then(port => {
    const base = cleanEnv({ WORLD_SIZE: String(size), LOCAL_WORLD_SIZE: String(size), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), FASTSOCK_MPI_JOB_ID: `claim-${port}`, FASTSOCK_MPI_SECRET: crypto.randomBytes(32).toString('hex'), ...extra })
    return Array.from({ length: size }, (_v, rank) => {
      const child = spawn(process.execPath, ['-e', prog], { env: { ...base, RANK: String(rank), LOCAL_RANK: String(rank) }, stdio: ['pipe', 'pipe', 'pipe'] })
      const out = jsonEvents(child, `rank ${rank}`)
      return { rank, child, next: out.next, exited: out.exited.then(e => e.code), jobId: base.FASTSOCK_MPI_JOB_ID, get stderr () { return out.stderr } }
    })
  })
}

/** Dials `port`, sends a HELLO claiming world rank `claim` of job `jobId`, resolves with { socket, verdict }. */
function claim (port, claimRank, jobId) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1')
    let got = Buffer.alloc(0)
    s.once('error', reject)
    s.on('connect', () => s.write(helloOf(claimRank, wire.jobKey(jobId), 4096)))
    s.on('data', d => {
      got = Buffer.concat([got, d])
      if (got.length >= wire.REPLY_BYTES) resolve({ socket: s, verdict: got.readUInt32LE(4) })
    })
  })
}

t.test('an unproven HELLO claiming rank 0 does not hold rank 1\'s first message to rank 0', async t => {
  const ranks = await startRanks(2, PROG)
  t.teardown(() => { for (const r of ranks) r.child.kill('SIGKILL') })
  const cards = await Promise.all(ranks.map(r => r.next(o => o.port !== undefined)))
  const c = await claim(cards[1].port, 0, ranks[0].jobId)
  t.equal(c.verdict, 1, 'rank 1 accepted the claim\'s HELLO (it waits for PROVE, which never comes)')
  for (const r of ranks) r.child.stdin.write('go\n')
  const done = await Promise.all(ranks.map(r => r.next(o => o.ms !== undefined)))
  t.equal(done[1].got, 42, 'rank 0\'s answer came back')
  t.ok(done[1].ms < 5000, `rank 1's round trip to rank 0 took ${done[1].ms} ms (the claim's PROVE deadline is 10 s)`)
  t.same(await Promise.all(ranks.map(r => r.exited)), [0, 0], 'both ranks finalize and exit 0')
  c.socket.destroy()
})

// Every rank sends to every other at once, so that every pair dials crossing dials, and one
// rank also holds an unproven claim for each other rank (its dials over the claims cross the
// real ranks' dials): each rank must end with exactly one adopted connection per peer.
const ALL = `
const mpi = require(${JSON.stringify(MPI)})
const rl = require('readline').createInterface({ input: process.stdin })
;(async () => {
  const comm = await mpi.init({ timeoutMs: 30000 })
  const dev = comm._shared.device
  const { rank, size } = comm
  console.log(JSON.stringify({ rank, port: dev.cards[rank].port }))
  await new Promise(resolve => rl.once('line', resolve))
  rl.close()
  const t0 = Date.now()
  for (let round = 0; round < 3; round++) {
    const reqs = []
    const got = []
    for (let p = 0; p < size; p++) {
      if (p === rank) continue
      const b = new Float64Array(1)
      got.push([p, b])
      reqs.push(comm.irecv(b, p, round), comm.isend(new Float64Array([rank * 100 + round]), p, round))
    }
    await mpi.waitAll(reqs)
    for (const [p, b] of got) if (b[0] !== p * 100 + round) throw new Error('from ' + p + ': ' + b[0])
  }
  await comm.barrier()
  console.log(JSON.stringify({ rank, ms: Date.now() - t0, adopted: dev.adopted }))
  await mpi.finalize()
})().catch(err => { console.log(JSON.stringify({ error: err.code, message: err.message })); process.exit(3) })
`

t.test('crossing dials, with and without claims in the way, leave one connection per pair', async t => {
  for (const claims of [false, true]) {
    const size = 4
    const ranks = await startRanks(size, ALL)
    t.teardown(() => { for (const r of ranks) r.child.kill('SIGKILL') })
    const cards = await Promise.all(ranks.map(r => r.next(o => o.port !== undefined)))
    const held = []
    if (claims) {
      // At ranks 1 and 2, a claim for every other rank, so their first sends dial over claims.
      for (const at of [1, 2]) {
        for (let w = 0; w < size; w++) if (w !== at) held.push(await claim(cards[at].port, w, ranks[0].jobId))
      }
      t.ok(held.every(c => c.verdict === 1), 'the claims were accepted (pending PROVE)')
    }
    for (const r of ranks) r.child.stdin.write('go\n')
    const done = await Promise.all(ranks.map(r => r.next(o => o.ms !== undefined)))
    for (const d of done) {
      t.equal(d.adopted, size - 1, `${claims ? 'claims: ' : ''}rank ${d.rank} adopted one connection per peer (${d.adopted}); rounds took ${d.ms} ms`)
      t.ok(d.ms < 5000, `rank ${d.rank} did not wait for a claim's deadline (${d.ms} ms)`)
    }
    t.same(await Promise.all(ranks.map(r => r.exited)), Array(size).fill(0), 'every rank exits 0')
    for (const c of held) c.socket.destroy()
  }
})

// The crossing-dial rule's case that dialing over a claim adds, made to happen in order: a live
// Device as world rank 1 dials rank 0 (this test, playing rank 0 with the job's secret); rank 0
// holds its REPLY, dials rank 1 itself (as a rank does over a claim it accepted), and only then
// answers. Rank 1 must hold its verdict on rank 0's dial until its own dial's REPLY: REJECT when
// rank 0 accepted rank 1's dial (rank 1 adopts that one: before this rule it accepted both, and
// each side could keep a different connection), ACCEPT when rank 0 refused it (the classic
// crossing: the lower rank's dial is kept). Either way rank 1's message arrives on the one kept.
t.test('a higher rank dialing a lower one holds its verdict on the lower one\'s dial until its own dial\'s REPLY', async t => {
  const { Device } = require('../../dist/mpi/device')
  const { replyOf } = require('../../dist/mpi/device-handshake')
  const auth = require('../../dist/mpi/auth')
  const secret = crypto.randomBytes(32)
  const nonce = (b, at) => Buffer.from(b.subarray(at, at + 32))
  /** Bytes read from `s`, awaitable by count. */
  const reader = s => {
    let got = Buffer.alloc(0)
    let want = null
    s.on('data', d => { got = Buffer.concat([got, d]); if (want && got.length >= want.n) { const w = want; want = null; w.resolve(take(w.n)) } })
    const take = n => { const b = got.subarray(0, n); got = got.subarray(n); return b }
    return { read: n => got.length >= n ? Promise.resolve(take(n)) : new Promise(resolve => { want = { n, resolve } }) }
  }
  const fakeServer = net.createServer()
  await new Promise(resolve => fakeServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => fakeServer.close())
  for (const lowerAccepts of [true, false]) {
    const dialed = new Promise(resolve => { fakeServer.once('connection', resolve) })
    const device = new Device({ rank: 1, size: 2, jobId: 'cross', eagerBytes: 4096, spinUs: 0, secret })
    device.registerContexts(0, [0, 1])
    const port = await device.listen('127.0.0.1')
    device.cards = [{ host: 'fake', addr: '127.0.0.1', port: fakeServer.address().port, pid: 0 }, { host: 'me', addr: '127.0.0.1', port, pid: process.pid }]
    device.isend(0, 1, 0, 0, 7, Buffer.from('12345678'))
    const y = await dialed
    y.on('error', () => {})
    const yr = reader(y)
    const helloY = await yr.read(wire.HELLO_BYTES)
    t.equal(helloY.readUInt32LE(8), 1, 'rank 1 dialed')
    // Rank 0 dials rank 1 before it answers rank 1's dial.
    const x = net.connect(port, '127.0.0.1')
    x.on('error', () => {})
    const xr = reader(x)
    const helloX = helloOf(0, wire.jobKey('cross'), 4096)
    await new Promise(resolve => x.once('connect', resolve))
    x.write(helloX)
    await new Promise(resolve => setTimeout(resolve, 200)) // rank 1 has read it by now
    const nonceBY = crypto.randomBytes(32)
    y.write(replyOf(lowerAccepts, 4096, secret, nonce(helloY, wire.HELLO_NONCE), nonceBY))
    const replyX = await xr.read(wire.REPLY_BYTES)
    const frameOn = lowerAccepts ? yr : xr
    if (lowerAccepts) {
      t.equal(replyX.readUInt32LE(4), 0, 'rank 0 accepted rank 1\'s dial: rank 1 refuses rank 0\'s')
      const prove = await yr.read(wire.PROVE_BYTES)
      t.ok(auth.verify(secret, 'hello', 'A', nonce(helloY, wire.HELLO_NONCE), nonceBY, prove), 'rank 1 proved itself on its own dial')
    } else {
      t.equal(replyX.readUInt32LE(4), 1, 'rank 0 refused rank 1\'s dial: rank 1 accepts rank 0\'s')
      x.write(auth.proof(secret, 'hello', 'A', nonce(helloX, wire.HELLO_NONCE), replyX.subarray(wire.REPLY_NONCE, wire.REPLY_NONCE + 32)))
    }
    const header = await frameOn.read(wire.HEADER_BYTES)
    t.same([header.readUInt32LE(0), header.readUInt32LE(12), header.readUInt32LE(16)], [wire.EAGER, 7, 8], `rank 1's message came on the ${lowerAccepts ? 'connection rank 1 dialed' : 'connection rank 0 dialed'}`)
    t.equal((await frameOn.read(8)).toString(), '12345678')
    t.equal(device.adopted, 1, 'one connection adopted')
    x.destroy()
    y.destroy()
    await device.close()
  }
})
