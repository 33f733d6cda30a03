'use strict'
// The smc rung on a kernel with real SMC-R: run inside ../shared/tools/rdma-vm with
// `--kernel bookworm-backports --smc` (AF_SMC to RDMAVM_SMC_IP = 127.0.0.1 runs SMC-R over rxe
// on lo). Skipped elsewhere, with the reason.
const t = require('tap')
const net = require('net')
const os = require('os')
const crypto = require('crypto')
const { fastsock, pair, availability } = require('../helpers/rungs')
const { once, within, collect, sha256, listen, spawnNode } = require('../helpers/util')
const { native } = require('../../dist/native')

const smc = availability.find(a => a.name === 'smc')
const skip = !process.env.RDMAVM
  ? 'RDMAVM is unset: run inside ../shared/tools/rdma-vm (--kernel bookworm-backports --smc)'
  : !smc.available ? `smc is not available here: ${smc.reason}` : false
// SMC-R only where the guest configured it (--smc); without it AF_SMC falls back to TCP.
const SMC_IP = process.env.RDMAVM_SMC_IP
const expectSmcr = Boolean(SMC_IP)
const TIMEOUT = 120000
// Each test listens with AF_SMC whatever the device probe says.
process.env.FASTSOCK_SMC_LISTEN = '1'

t.test('smc', { skip, timeout: TIMEOUT * 6 }, async t => {
  t.test('a fastsock pair on smc: both ends report the mode, 4 MiB byte-exact', { timeout: TIMEOUT }, async t => {
    const { client, serverSocket, server } = await pair('smc', { t, onConnection: s => s.pipe(s) })
    t.equal(native.smcDiag(server._handle.fd).state, 10, 'the listener is an AF_SMC socket in LISTEN state')
    const ci = client.smcInfo()
    const si = serverSocket.smcInfo()
    t.ok(ci && si, 'smc_diag lists both ends')
    t.comment(`client ${JSON.stringify(ci)}; server ${JSON.stringify(si)}`)
    if (expectSmcr) {
      t.equal(ci.mode, 'SMCR', 'client runs on SMC-R')
      t.equal(si.mode, 'SMCR', 'server runs on SMC-R')
    }
    t.equal(client.remotePort, server.address().port, 'the handle reports its own peer address')
    const data = crypto.randomBytes(4 << 20)
    const got = collect(client, TIMEOUT)
    client.end(data)
    const back = await got
    t.equal(back.length, data.length, 'every byte came back')
    t.equal(sha256(back), sha256(data), 'byte-exact')
  })

  t.test('smc to a plain net server: connects, mode TCP with a fallback reason', { timeout: TIMEOUT }, async t => {
    const server = net.createServer(s => s.pipe(s))
    await listen(server, 0, '0.0.0.0')
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    const client = fastsock.connect({ port: server.address().port, host: SMC_IP || '127.0.0.1', transports: ['smc'], transportTimeoutMs: 30000 })
    t.teardown(() => client.destroy())
    await once(client, 'connect', TIMEOUT)
    t.equal(client.transport, 'tcp', 'an AF_SMC socket the kernel runs on TCP reports tcp')
    const info = client.smcInfo()
    t.comment(JSON.stringify(info))
    t.equal(info.mode, 'TCP', 'the kernel fell back to TCP')
    t.not(info.fallbackReason, 0, 'with a reason')
    t.match(info.fallbackText, /\w+: /, 'named')
    const got = collect(client, TIMEOUT)
    client.end('hello over a fallback')
    t.equal((await got).toString(), 'hello over a fallback')
  })

  t.test('a plain net client talks to a fastsock server listening with AF_SMC', { timeout: TIMEOUT }, async t => {
    const server = fastsock.createServer(s => {
      t.equal(s.transport, 'tcp', 'accepted on the smc listener, served over TCP')
      t.equal(s.smcInfo().mode, 'TCP', 'smc_diag: the kernel runs it on TCP')
      s.pipe(s)
    })
    await listen(server, 0, '0.0.0.0')
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    t.equal(native.smcDiag(server._handle.fd).state, 10, 'the listener is AF_SMC')
    const client = net.connect(server.address().port, '127.0.0.1')
    t.teardown(() => client.destroy())
    await once(client, 'connect', TIMEOUT)
    const data = crypto.randomBytes(1 << 20)
    const got = collect(client, TIMEOUT)
    client.end(data)
    t.equal(sha256(await got), sha256(data), 'byte-exact')
  })

  t.test('clients that reset before accept(): no server error on the AF_SMC listener, the server goes on', { timeout: TIMEOUT }, async t => {
    // The kernel discards such a connection or fails accept() with ECONNRESET (docs/transports.md,
    // smc); TCP's accept() never reports it, so Node would make it the server's 'error'.
    const server = fastsock.createServer({ transports: ['shm', 'unix', 'smc', 'tcp'] }, s => { s.on('error', () => {}); s.pipe(s) })
    const errors = []
    server.on('error', e => errors.push(e))
    await listen(server, 0, '127.0.0.1')
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    t.equal(native.smcDiag(server._handle.fd).state, 10, 'the listener is AF_SMC')
    const port = server.address().port
    for (let i = 0; i < 40; i++) {
      const c = net.connect(port, '127.0.0.1')
      c.on('error', () => {})
      await once(c, 'connect', TIMEOUT)
      c.resetAndDestroy()
    }
    // what libuv hands over when accept() fails with ECONNRESET, as the kernel did in 4 of 100 tries
    server._handle.onconnection(-os.constants.errno.ECONNRESET, undefined)
    server._handle.onconnection(-os.constants.errno.ECONNABORTED, undefined)
    const client = net.connect(port, '127.0.0.1')
    t.teardown(() => client.destroy())
    await once(client, 'connect', TIMEOUT)
    const got = collect(client, TIMEOUT)
    client.end('still serving')
    t.equal((await got).toString(), 'still serving', 'the server still serves')
    t.same(errors.map(e => e.code), [], 'no server error')
    // the same accept error on Node's TCP listener is the server's 'error', as in Node
    const tcp = fastsock.createServer({ transports: ['tcp'] })
    const tcpErrors = []
    tcp.on('error', e => tcpErrors.push(e))
    await listen(tcp, 0, '127.0.0.1')
    t.teardown(() => new Promise(resolve => tcp.close(resolve)))
    tcp._handle.onconnection(-os.constants.errno.ECONNRESET, undefined)
    t.same(tcpErrors.map(e => [e.code, e.syscall]), [['ECONNRESET', 'accept']], "on a TCP listener it is the server's 'error', as Node's")
  })

  t.test('the full chain between two fastsock processes still picks shm over an AF_SMC listener', { timeout: TIMEOUT }, async t => {
    const code = `
      const fastsock = require('./dist')
      const { native } = require('./dist/native')
      const print = o => process.stdout.write(JSON.stringify(o) + '\\n')
      // The emulated CPU makes the first handshake of a fresh process slow: a generous timeout.
      const server = fastsock.createServer({ handshakeTimeoutMs: 30000 }, s => { print({ event: 'connection', transport: s.transport }); s.on('error', () => {}); s.pipe(s) })
      server.listen(0, '127.0.0.1', () => {
        const d = native.smcDiag(server._handle.fd)
        print({ event: 'listening', port: server.address().port, smcListen: typeof d === 'object' && d.state === 10 })
      })`
    const peer = spawnNode(t, ['-e', code], { env: { FASTSOCK_SMC_LISTEN: '1' } })
    const { port, smcListen } = await peer.waitFor(m => m.event === 'listening', TIMEOUT)
    t.ok(smcListen, 'the other process listens with AF_SMC')
    const client = fastsock.connect({ port, host: '127.0.0.1', transportTimeoutMs: 30000 })
    t.teardown(() => client.destroy())
    const failed = []
    client.on('transportAttemptFailed', e => failed.push(`${e.transport}: ${e.error.message}`))
    await once(client, 'connect', TIMEOUT)
    t.equal(client.transport, 'shm', `shm chosen (failed attempts: ${failed.join('; ') || 'none'})`)
    const m = await peer.waitFor(m => m.event === 'connection', TIMEOUT)
    t.equal(m.transport, 'shm', 'the server end is on shm too')
    const got = collect(client, TIMEOUT)
    client.end('through shm')
    t.equal((await within(got, TIMEOUT, 'echo')).toString(), 'through shm')
  })

  t.test('nothing listening: the smc attempt fails with ECONNREFUSED, not offered', { timeout: TIMEOUT }, async t => {
    const probe = net.createServer()
    await listen(probe, 0, '127.0.0.1')
    const port = probe.address().port
    await new Promise(resolve => probe.close(resolve))
    const client = fastsock.connect({ port, host: '127.0.0.1', transports: ['smc'], transportTimeoutMs: 30000 })
    const attempts = []
    client.on('transportAttemptFailed', e => attempts.push(e.error))
    const [err] = await once(client, 'error', TIMEOUT)
    t.equal(err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
    t.equal(attempts.length, 1)
    t.equal(attempts[0].code, 'ECONNREFUSED')
    t.equal(attempts[0].notOffered, true)
  })
})
