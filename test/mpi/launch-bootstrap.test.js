'use strict'
// lib/mpi/bootstrap.ts with real processes: env:// ranks (with and without LOCAL_RANK, whose
// absence makes bootstrap derive it through the store), explicit options, a singleton, an
// unreachable store (init rejects with ERR_MPI_INIT_TIMEOUT after its timeout, naming the
// variables read and the address tried), and rank 0's port already taken.
const t = require('tap')
const net = require('net')
const path = require('path')
const { spawn } = require('child_process')
const { bootstrap } = require('../../dist/mpi/bootstrap.js')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'launch-bootstrap.js')

function freePort () {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

/** Runs the fixture once per env of `envs`; resolves with [{ code, out: parsed JSON line, stderr }]. */
function runAll (t, envs, timeoutMs = 30000) {
  return Promise.all(envs.map(extra => new Promise(resolve => {
    const env = { ...process.env, ...extra }
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k]
    const child = spawn(process.execPath, [FIXTURE], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    t.teardown(() => child.kill('SIGKILL'))
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.once('close', code => {
      clearTimeout(timer)
      let out = null
      try { out = JSON.parse(stdout.trim().split('\n').pop()) } catch { out = { junk: stdout } }
      resolve({ code, out, stderr })
    })
  })))
}

// Variables a launcher around this test might have set must not leak into the ranks.
const CLEAN = {}
for (const k of Object.keys(process.env)) {
  if (/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|OMPI_|PMI_|PMIX_|MPI_LOCAL|SLURM_)/.test(k)) CLEAN[k] = undefined
}

t.test('env:// with 3 ranks, LOCAL_* given', async t => {
  const port = await freePort()
  const res = await runAll(t, [0, 1, 2].map(r => ({ ...CLEAN, RANK: String(r), WORLD_SIZE: '3', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) })))
  res.forEach((r, i) => {
    t.equal(r.code, 0, `rank ${i} exits 0 ${r.stderr}`)
    t.match(r.out, { rank: i, size: 3, localRank: i, localSize: 3, launcher: 'env', localAddress: '127.0.0.1', got: `from ${(i + 1) % 3}` })
  })
})

t.test('env:// without LOCAL_*: bootstrap derives the local rank and size', async t => {
  const port = await freePort()
  const res = await runAll(t, [0, 1, 2, 3].map(r => ({ ...CLEAN, RANK: String(r), WORLD_SIZE: '4', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) })))
  res.forEach((r, i) => {
    t.equal(r.code, 0, `rank ${i} exits 0 ${r.stderr}`)
    t.match(r.out, { rank: i, size: 4, localRank: i, localSize: 4 })
  })
})

t.test('a singleton opens nothing', async t => {
  const b = await bootstrap({}, {})
  t.match(b, { info: { rank: 0, size: 1, launcher: 'singleton' }, store: null, server: null })
  const b1 = await bootstrap({ rank: 0, size: 1 }, {})
  t.equal(b1.store, null)
})

t.test('explicit options: two ranks in one process', async t => {
  const port = await freePort()
  const [zero, one] = await Promise.all([
    bootstrap({ rank: 0, size: 2, masterAddr: '127.0.0.1', masterPort: port, timeoutMs: 5000 }, {}),
    bootstrap({ rank: 1, size: 2, masterAddr: '127.0.0.1', masterPort: port, timeoutMs: 5000 }, {})
  ])
  t.ok(zero.server, 'rank 0 serves')
  t.equal(one.server, null)
  t.match(zero.info, { launcher: 'options', localRank: 0, localSize: 2 })
  t.match(one.info, { launcher: 'options', localRank: 1, localSize: 2 })
  await one.store.set('x', 'y')
  t.equal(Buffer.from(await zero.store.get('x')).toString(), 'y')
  for (const b of [zero, one]) { await b.store.finalizing(); await b.store.close() }
  await zero.server.close()
})

t.test('store unreachable: init rejects after timeoutMs naming the variables and the address', async t => {
  const port = await freePort()
  const env = { RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) }
  const t0 = Date.now()
  const err = await bootstrap({ timeoutMs: 600 }, env).catch(e => e)
  const took = Date.now() - t0
  t.equal(err.code, 'ERR_MPI_INIT_TIMEOUT')
  t.equal(err.name, 'MpiError')
  t.match(err.message, /RANK=1/)
  t.match(err.message, /WORLD_SIZE=2/)
  t.match(err.message, /MASTER_ADDR=127\.0\.0\.1/)
  t.match(err.message, new RegExp(`MASTER_PORT=${port}`))
  t.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`), 'the address tried')
  t.match(err.message, /600 ms/)
  t.ok(took >= 590 && took < 15000, `rejected after ${took} ms`)

  // Same in a real process with the default path through the fixture.
  const [r] = await runAll(t, [{ ...CLEAN, ...env, FSMPI_TEST_TIMEOUT_MS: '500' }])
  t.equal(r.code, 3)
  t.match(r.out, { error: 'ERR_MPI_INIT_TIMEOUT', message: /MASTER_PORT=/ })
})

t.test('an Open MPI job on one host with no rank 0: the UNIX path is named', async t => {
  const env = { OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '2', PMIX_NAMESPACE: `test-${process.pid}-${Date.now()}` }
  const err = await bootstrap({ timeoutMs: 300 }, env).catch(e => e)
  t.equal(err.code, 'ERR_MPI_INIT_TIMEOUT')
  t.match(err.message, /unix:\/.*fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock/)
  t.match(err.message, /OMPI_COMM_WORLD_RANK=1/)
  t.match(err.message, /PMIX_NAMESPACE=test-/)
})

t.test("rank 0's port is taken: it serves the store at the next candidate; all taken: ERR_MPI_LAUNCH naming them", async t => {
  const { storeCandidates } = require('../../dist/mpi/launch.js')
  const squatter = net.createServer().listen(0, '127.0.0.1')
  await new Promise(resolve => squatter.once('listening', resolve))
  t.teardown(() => squatter.close())
  const port = squatter.address().port
  // One host: a UNIX socket in the user's private directory.
  const b = await bootstrap({ timeoutMs: 5000 }, { RANK: '0', WORLD_SIZE: '1', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) })
  t.equal(b.store, null, 'a world of one has no store')
  const one = await bootstrap({ rank: 0, size: 2, localRank: 0, localSize: 2, masterAddr: '127.0.0.1', masterPort: port, timeoutMs: 5000 }, {})
  t.match(one.server.address, { path: /fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/ }, 'one host: the store moved to a UNIX socket')
  t.match(one.store.address, one.server.address)
  await one.store.close()
  await one.server.close({ graceMs: 0 })
  // Ranks on several hosts (as far as this rank knows), with a secret: every candidate port taken.
  // (The host's name: not a loopback address, so rank 0 binds every interface, and each port
  // held on 127.0.0.1 is in use for it.)
  const host = require('os').hostname()
  const env = { RANK: '0', WORLD_SIZE: '2', LOCAL_RANK: '0', LOCAL_WORLD_SIZE: '1', MASTER_ADDR: host, MASTER_PORT: String(port), FASTSOCK_MPI_SECRET: 'b'.repeat(64), FASTSOCK_MPI_JOB_ID: 'taken' }
  const key = require('../../dist/mpi/auth.js').discoverSecret(env).key
  const all = storeCandidates({ host, port }, { jobId: 'taken', key, oneHost: false })
  t.equal(all.length, 8, 'the port and 7 derived from the secret')
  const held = []
  for (const c of all.slice(1)) {
    const s = net.createServer()
    await new Promise(resolve => { s.once('error', resolve); s.listen(c.port, '127.0.0.1', resolve) })
    held.push(s)
  }
  t.teardown(() => { for (const s of held) s.close() })
  const err = await bootstrap({ timeoutMs: 500 }, env).catch(e => e)
  t.equal(err.code, 'ERR_MPI_LAUNCH')
  t.match(err.message, /store addresses .* are all in use/)
  for (const c of all) t.ok(err.message.includes(`${host}:${c.port}`), `names ${c.port}`)
})
