'use strict'
// Another user cannot stop a job by taking its store's port first (issue 33; docs/mpi-launch.md,
// "Squatting"). Where that port can be foretold (a MASTER_PORT chosen by hand, Slurm's derived
// port: slurm-srun.test.js), rank 0 serves the store at the next candidate of
// lib/mpi/launch.ts storeCandidates and the clients find it:
// - in-process: a client racing the candidates skips a fake store that forges a CHALLENGE,
//   one that answers HELLO with ERROR ERR_MPI_LAUNCH, a silent one, and one that relays the real
//   store's handshake from another port (the store's proof names its port), and joins the real
//   store; a single address held by a relay is refused as before;
// - real processes, as root: a process of nobody (test/helpers/store-squatter.js) holds
//   MASTER_PORT before the ranks start; env:// on one host with a secret and without, env:// with
//   the ranks as on separate hosts (LOCAL_WORLD_SIZE=1: the ports derived from the secret), and
//   `fastsock mpirun --master-port`: every rank joins, runs an allreduce and a ring, and checks
//   them.
const t = require('tap')
const crypto = require('crypto')
const net = require('net')
const os = require('os')
const path = require('path')
const { StoreServer, StoreClient } = require('../../dist/mpi/store')
const { storeCandidates } = require('../../dist/mpi/launch')
const auth = require('../../dist/mpi/auth')
const { cleanEnv, need, IS_ROOT } = require('../helpers/mpi-launchers')
const { freePort } = require('../../dist/cli/mpirun')

const DIST = path.join(__dirname, '..', '..', 'dist')
const CLI = path.join(DIST, 'cli', 'main.js')

function frame (op, id, ...parts) {
  const body = Buffer.concat(parts)
  const b = Buffer.alloc(9 + body.length)
  b.writeUInt32LE(5 + body.length, 0)
  b[4] = op
  b.writeUInt32LE(id, 5)
  body.copy(b, 9)
  return b
}
function str (s) { const b = Buffer.from(s); const o = Buffer.alloc(2 + b.length); o.writeUInt16LE(b.length, 0); b.copy(o, 2); return o }

/** A fake store of this user on 127.0.0.1 answering HELLO as `kind` says; resolves { port, hellos(), close() }. */
async function fake (kind, realPort) {
  let hellos = 0
  const socks = []
  const server = net.createServer(s => {
    socks.push(s)
    s.on('error', () => {})
    if (kind === 'relay') {
      // Forwards the bytes both ways to the real store: its own connection to it is of this user.
      const up = net.connect(realPort, '127.0.0.1')
      up.on('error', () => s.destroy())
      s.on('close', () => up.destroy())
      up.on('close', () => s.destroy())
      s.on('data', d => { if (d[4] === 1) hellos++; up.write(d) })
      up.on('data', d => s.write(d))
      socks.push(up)
      return
    }
    s.on('data', d => {
      if (d.length < 9 || d[4] !== 1) return
      hellos++
      const id = d.readUInt32LE(5)
      if (kind === 'forged') s.write(frame(0x85, id, crypto.randomBytes(32), crypto.randomBytes(32)))
      if (kind === 'error') s.write(frame(0x84, id, str('ERR_MPI_LAUNCH'), str('rank 1 registered twice with the store')))
      if (kind === 'garbage') s.write(crypto.randomBytes(64))
    })
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    hellos: () => hellos,
    close: () => { for (const s of socks) s.destroy(); server.close() }
  }
}

t.test('a client racing the candidates skips stores that are not the job\'s and joins the real one', async t => {
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  for (const kind of ['forged', 'error', 'silent', 'garbage', 'relay']) {
    const real = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: key })
    const f = await fake(kind, real.address.port)
    const c = await StoreClient.connect([{ host: '127.0.0.1', port: f.port }, real.address], { rank: 1, timeoutMs: 5000, secret: key })
    t.same(c.address, real.address, `${kind}: joined the real store`)
    t.same(real.connectedRanks, [1], `${kind}: registered there once`)
    if (kind !== 'silent') t.ok(f.hellos() > 0, `${kind}: the fake got a HELLO (${f.hellos()}) and was dropped`)
    await c.finalizing()
    await c.close()
    f.close()
    await real.close({ graceMs: 0 })
  }
})

t.test('a relay on the only address is refused: the store proves the port it listens on', async t => {
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  const real = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: key })
  t.teardown(() => real.close({ graceMs: 0 }))
  const relay = await fake('relay', real.address.port)
  t.teardown(() => relay.close())
  const err = await StoreClient.connect({ host: '127.0.0.1', port: relay.port }, { rank: 1, timeoutMs: 3000, secret: key }).catch(e => e)
  t.equal(err.code, 'ERR_MPI_LAUNCH')
  t.match(err.message, /did not prove the job's secret/)
  t.ok(relay.hellos() > 0, 'the relay passed the HELLO on')
  t.same(real.connectedRanks, [], 'nothing registered through the relay')
})

t.test('no candidate answers: ERR_MPI_INIT_TIMEOUT naming the ones held by others', async t => {
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  const f = await fake('forged')
  t.teardown(() => f.close())
  const free = await freePort()
  const err = await StoreClient.connect([{ host: '127.0.0.1', port: f.port }, { host: '127.0.0.1', port: free }], { rank: 1, timeoutMs: 3000, secret: key }).catch(e => e)
  t.equal(err.code, 'ERR_MPI_INIT_TIMEOUT')
  t.match(err.message, new RegExp(`no store at 127.0.0.1:${free} \\(nor at its other addresses 127.0.0.1:${f.port}\\).*held by processes that are not this job's store: 127.0.0.1:${f.port} \\(.*did not prove`))
})

t.test('storeCandidates: one host adds a private UNIX socket and a loopback port; several, ports only the secret foretells', async t => {
  const a = { host: 'node1', port: 29500 }
  const k1 = crypto.randomBytes(32)
  const one = storeCandidates(a, { jobId: 'j', key: k1, oneHost: true }, { TMPDIR: '/tmp' })
  t.equal(one.length, 3)
  t.same(one[0], a)
  t.match(one[1], { path: /^\/tmp\/fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/ })
  t.match(one[2], { host: '127.0.0.1' })
  const unix = storeCandidates({ path: '/x/s.sock' }, { jobId: 'j', key: k1, oneHost: true })
  t.equal(unix.length, 2)
  t.same(unix[0], { path: '/x/s.sock' })
  t.match(unix[1], { host: '127.0.0.1' }, 'a UNIX socket store: a loopback port, for a directory another user made first')
  const many = storeCandidates(a, { jobId: 'j', key: k1, oneHost: false })
  t.equal(many.length, 8)
  t.equal(new Set(many.map(c => c.port)).size, 8, 'distinct ports')
  for (const c of [...many.slice(1), one[2], unix[1]]) t.ok(c.port >= 20000 && c.port <= 32767, `port ${c.port} in 20000..32767`)
  t.ok(many.every(c => c.host === 'node1'), 'on the store\'s host')
  t.same(storeCandidates(a, { jobId: 'j', key: k1, oneHost: false }), many, 'every rank derives the same')
  const k2 = crypto.randomBytes(32)
  t.notSame(storeCandidates(a, { jobId: 'j', key: k2, oneHost: false }).slice(1), many.slice(1), 'another secret, other ports')
  t.not(storeCandidates({ path: '/x/s.sock' }, { jobId: 'j', key: k2, oneHost: true })[1].port, unix[1].port)
})

// ---- real processes, the squatter as nobody

// Each rank: init, an allreduce and a ring of Float64Arrays, each checked; one JSON line.
const RANK = require('../helpers/store-squatter').ringRank({ n: 1024, timeoutMs: 30000 })

const { runJob: run } = require('../helpers/store-squatter')
/** P ranks of RANK by hand (env://) from one shell; resolves as run(). */
const byHand = (size, env) => require('../helpers/store-squatter').ranksByHand(size, env, RANK)

function checkJob (t, r, size, squatter) {
  t.equal(r.code, 0, `the job exits 0\n${r.stderr}\n${r.stdout}`)
  t.same(r.outs.filter(o => o.ok === true).map(o => o.rank).sort(), Array.from({ length: size }, (_v, i) => i), 'every rank checked its allreduce and ring')
  t.ok(squatter.connections > 0, `the ranks met the squatter and went on (${squatter.connections} connections)`)
  t.equal(squatter.hellos, 0, 'on this host the squatter\'s uid turned them away before a HELLO')
}

if (!IS_ROOT) {
  t.test('the squatter runs as nobody', { skip: 'needs root to run a process as nobody' }, () => {})
} else {
  const { squatStore, squatDir } = require('../helpers/store-squatter')
  const secret = () => crypto.randomBytes(32).toString('hex')

  const cases = [
    ['env:// on one host with a secret: the store moves to a UNIX socket', { LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1', FASTSOCK_MPI_SECRET: secret() }],
    ['env:// on one host without a secret: the same, uid checks', { LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1' }],
    ['env:// as on three hosts with a secret: a port derived from the secret', { LOCAL_WORLD_SIZE: '1', MASTER_ADDR: os.hostname(), FASTSOCK_MPI_SECRET: secret() }]
  ]
  for (const [name, extra] of cases) {
    t.test(name, async t => {
      const port = await freePort()
      const sq = await squatStore([port])
      const env = cleanEnv({ WORLD_SIZE: '3', MASTER_PORT: String(port), FASTSOCK_MPI_JOB_ID: `squat-${port}`, ...extra })
      if (extra.FASTSOCK_MPI_SECRET === undefined) delete env.FASTSOCK_MPI_SECRET
      const r = await byHand(3, env)
      checkJob(t, r, 3, await sq.stop())
    })
  }

  // nobody made the user's fastsock-mpi-<uid> directory first in a shared tmp (TMPDIR): the UNIX
  // socket candidates are refused as not private; the store takes the loopback port derived from
  // the secret.
  t.test('env:// on one host, MASTER_PORT and the private directory both taken by nobody', async t => {
    const d = squatDir()
    t.teardown(d.cleanup)
    const port = await freePort()
    const sq = await squatStore([port])
    const env = cleanEnv({ WORLD_SIZE: '3', LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), FASTSOCK_MPI_JOB_ID: `squat-${port}`, FASTSOCK_MPI_SECRET: secret(), TMPDIR: d.tmp })
    const r = await byHand(3, env)
    checkJob(t, r, 3, await sq.stop())
  })

  const ompi = need(t, ['mpirun', 'ompi_info'], "Open MPI's mpirun")
  t.test("Open MPI's mpirun -np 3 on one host, the private directory taken by nobody", { skip: ompi.skip }, async t => {
    const d = squatDir()
    t.teardown(d.cleanup)
    const r = await run(ompi.paths.mpirun, ['--allow-run-as-root', '--oversubscribe', '-np', '3', process.execPath, '-e', RANK], cleanEnv({ TMPDIR: d.tmp }))
    t.equal(r.code, 0, `the job exits 0\n${r.stderr}\n${r.stdout}`)
    t.same(r.outs.filter(o => o.ok === true).map(o => o.rank).sort(), [0, 1, 2], 'every rank checked its allreduce and ring')
  })

  t.test('nothing works: init names the address held by another user', async t => {
    const { bootstrap } = require('../../dist/mpi/bootstrap')
    const port = await freePort()
    const sq = await squatStore([port])
    t.teardown(() => sq.stop())
    // Rank 1 alone: rank 0 never comes, the port is nobody's.
    const env = { RANK: '1', WORLD_SIZE: '2', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), FASTSOCK_MPI_SECRET: secret(), FASTSOCK_MPI_JOB_ID: 'alone' }
    const err = await bootstrap({ timeoutMs: 3000 }, env).catch(e => e)
    t.equal(err.code, 'ERR_MPI_INIT_TIMEOUT')
    t.match(err.message, new RegExp(`held by processes that are not this job's store: 127\\.0\\.0\\.1:${port} \\(.*uid 65534`))
    t.match(err.message, /variables read: RANK=1/)
  })

  t.test('fastsock mpirun --master-port P, P taken by nobody', async t => {
    const port = await freePort()
    const sq = await squatStore([port])
    const r = await run(process.execPath, [CLI, 'mpirun', '-n', '3', '--master-port', String(port), process.execPath, '-e', RANK], cleanEnv())
    checkJob(t, r, 3, await sq.stop())
  })
}
