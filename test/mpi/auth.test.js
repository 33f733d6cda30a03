'use strict'
// lib/mpi/auth.ts: secret discovery (env, 0600 file, Open MPI's per-job key), the HMAC proof and
// its check, and the peer uid of a same-host socket (SO_PEERCRED, /proc/net/tcp).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const net = require('net')
const auth = require('../../dist/mpi/auth')

t.test('discoverSecret: sources, order and refusals', async t => {
  t.equal(auth.discoverSecret({}), null, 'no source: null')
  const hex = auth.newSecret()
  t.equal(hex.length, 64)
  const a = auth.discoverSecret({ FASTSOCK_MPI_SECRET: hex })
  t.equal(a.source, 'FASTSOCK_MPI_SECRET')
  t.equal(a.key.length, 32)
  t.same(auth.discoverSecret({ FASTSOCK_MPI_SECRET: hex }).key, a.key, 'stable')
  t.notSame(auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key, a.key)
  t.throws(() => auth.discoverSecret({ FASTSOCK_MPI_SECRET: 'abcd1234' }), { code: 'ERR_MPI_LAUNCH', message: /too short/ })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsauth-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 's')
  fs.writeFileSync(file, hex + '\n', { mode: 0o600 })
  const f = auth.discoverSecret({ FASTSOCK_MPI_SECRET_FILE: file })
  t.equal(f.source, 'FASTSOCK_MPI_SECRET_FILE')
  t.same(f.key, a.key, 'the file holds the same secret: same key')
  fs.chmodSync(file, 0o644)
  t.throws(() => auth.discoverSecret({ FASTSOCK_MPI_SECRET_FILE: file }), { code: 'ERR_MPI_LAUNCH', message: /mode 644/ })
  t.throws(() => auth.discoverSecret({ FASTSOCK_MPI_SECRET_FILE: path.join(dir, 'absent') }), { code: 'ERR_MPI_LAUNCH' })
  const o = auth.discoverSecret({ OMPI_MCA_orte_precondition_transports: '95f646e015ae1fbd-cb3f78a64fac0de2' }, 'job1')
  t.equal(o.source, 'openmpi')
  t.notSame(auth.discoverSecret({ OMPI_MCA_orte_precondition_transports: '95f646e015ae1fbd-cb3f78a64fac0de2' }, 'job2').key, o.key, 'bound to the job id')
  t.equal(auth.discoverSecret({ FASTSOCK_MPI_SECRET: hex, OMPI_MCA_orte_precondition_transports: '95f646e015ae1fbd-cb3f78a64fac0de2' }).source, 'FASTSOCK_MPI_SECRET', 'explicit first')
})

t.test('proof and verify', async t => {
  const k = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  const k2 = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  const na = auth.newNonce()
  const nb = auth.newNonce()
  const p = auth.proof(k, 'store', 'B', na, nb)
  t.equal(p.length, auth.PROOF_BYTES)
  t.ok(auth.verify(k, 'store', 'B', na, nb, p))
  t.notOk(auth.verify(k, 'store', 'A', na, nb, p), 'a reflected proof (other role) fails')
  t.notOk(auth.verify(k, 'hello', 'B', na, nb, p), 'another protocol label fails')
  t.notOk(auth.verify(k2, 'store', 'B', na, nb, p), 'another secret fails')
  t.notOk(auth.verify(k, 'store', 'B', nb, na, p), 'swapped nonces fail')
  t.notOk(auth.verify(k, 'store', 'B', na, nb, p.subarray(0, 16)), 'short proof fails')
})

t.test('peerUid of a loopback TCP socket and of a UNIX socket', async t => {
  const me = auth.myUid()
  for (const listenArgs of [{ host: '127.0.0.1', port: 0 }, { path: path.join(os.tmpdir(), `fsauth-${process.pid}.sock`) }]) {
    const seen = []
    const server = net.createServer(s => { seen.push(auth.peerUid(s)); s.end() })
    await new Promise(resolve => server.listen(listenArgs, resolve))
    const addr = server.address()
    const c = net.connect(typeof addr === 'string' ? { path: addr } : { host: '127.0.0.1', port: addr.port })
    await new Promise(resolve => c.on('close', resolve).on('error', resolve))
    server.close()
    t.same(seen, [me], `${typeof addr === 'string' ? 'unix' : 'tcp'}: the peer's uid is ours`)
  }
})

t.test('tcpSocketUid finds the row read in small chunks (rows straddling chunks) and another user\'s socket', async t => {
  const cp = require('child_process')
  const server = net.createServer(s => s.on('error', () => {}))
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = server.address().port
  const asNobody = auth.myUid() === 0 && cp.spawnSync('setpriv', ['--version']).status === 0
  const uid = asNobody ? 65534 : auth.myUid()
  const script = `const c = require('net').connect(${port}, '127.0.0.1', () => { process.stdout.write(c.localPort + '\\n') }); setTimeout(() => {}, 30000)`
  const child = asNobody
    ? cp.spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script])
    : cp.spawn(process.execPath, ['-e', script])
  const clientPort = await new Promise((resolve, reject) => {
    child.stdout.once('data', d => resolve(Number(String(d).trim())))
    child.once('exit', code => reject(new Error(`client exited ${code}`)))
  })
  try {
    for (const chunk of [7, 97, 256, 4096, 256 * 1024]) {
      t.equal(auth.tcpSocketUid('127.0.0.1', port, '127.0.0.1', clientPort, chunk), auth.myUid(), `our end, ${chunk}-byte chunks`)
      t.equal(auth.tcpSocketUid('127.0.0.1', clientPort, '127.0.0.1', port, chunk), uid, `the client's end (uid ${uid}), ${chunk}-byte chunks`)
    }
    t.equal(auth.tcpSocketUid('127.0.0.1', 1, '127.0.0.1', 2, 97), null, 'no such socket: null')
  } finally {
    child.kill()
    server.close()
  }
})
