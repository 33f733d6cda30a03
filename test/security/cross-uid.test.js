'use strict'
// Another uid is outside the trust boundary: a fastsock client running as another user cannot
// verify the server's process and lands on tcp; a raw side-channel client of another uid that
// sends a well-formed HELLO gets REJECT Forbidden (sameUidOnly, the default). Needs root (to
// start children as nobody); skipped otherwise.
// The children load fastsock from a copy that nobody can read (the package's runtime files, in a
// world-readable temporary directory): the checkout itself may sit in a private directory (mode
// 700), where another uid cannot read it.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { fastsock, ALL_RUNGS, rungs } = require('../helpers/rungs')
const { listen, spawnNode, within, ROOT } = require('../helpers/util')
const { channelName } = require('../helpers/squatter')

const NOBODY = 65534
const skip = process.getuid && process.getuid() === 0
  ? (rungs.includes('unix') ? false : 'the unix rung is not available here')
  : 'needs root to run a child process as another uid'

/**
 * A copy of what fastsock needs at run time (package.json, dist/, the addon node-gyp-build picks,
 * node-gyp-build itself) in a new directory of mode 755 under the system's temporary directory,
 * removed at teardown. Returns its path.
 */
function readableCopy (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-cross-uid-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const addon = require('node-gyp-build').resolve(ROOT)
  const ngb = path.dirname(require.resolve('node-gyp-build/package.json'))
  for (const [from, to] of [['package.json'], ['dist'], [path.relative(ROOT, addon)], [ngb, 'node_modules/node-gyp-build']]) {
    fs.cpSync(path.resolve(ROOT, from), path.join(dir, to ?? from), { recursive: true })
  }
  // Directories 755, files 644 (the addon 755): readable by nobody whatever the umask.
  const open = p => {
    const st = fs.statSync(p)
    fs.chmodSync(p, st.isDirectory() || p === path.join(dir, path.relative(ROOT, addon)) ? 0o755 : 0o644)
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) open(path.join(p, e))
  }
  open(dir)
  return dir
}

const copy = skip ? null : readableCopy(t)

function spawnAs (t, code) {
  return spawnNode(t, ['-e', code], { cwd: copy })
}

t.test('a client of another uid uses tcp', { skip }, async t => {
  let serverSide = null
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => { serverSide = s; s.on('error', () => {}); s.pipe(s) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const code = `
    process.setgid(${NOBODY}); process.setuid(${NOBODY})
    const f = require(${JSON.stringify(copy)})
    const print = o => process.stdout.write(JSON.stringify(o) + '\\n')
    const c = f.connect({ port: ${server.address().port}, host: '127.0.0.1' })
    c.on('transportAttemptFailed', e => print({ event: 'failed', transport: e.transport, code: e.error.code }))
    c.on('connect', () => { print({ event: 'connect', transport: c.transport, uid: process.getuid() }); c.end('cross') })
    c.on('data', d => print({ event: 'data', text: d.toString() }))
    c.on('error', e => print({ event: 'error', code: e.code }))`
  const child = spawnAs(t, code)
  const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error')
  t.equal(msg.uid, NOBODY, 'the child runs as nobody')
  t.equal(msg.transport, 'tcp', 'and lands on tcp')
  t.same(await child.waitFor(m => m.event === 'data'), { event: 'data', text: 'cross' }, 'served over tcp')
  const failures = child.messages.filter(m => m.event === 'failed')
  t.ok(failures.length >= 1 && failures.every(f => f.code === 'ERR_FASTSOCK_UNVERIFIED_PEER'), `fast rungs refused as unverified: ${JSON.stringify(failures)}`)
  t.equal(serverSide && serverSide.transport, 'tcp')
  await within(child.exited, 5000, 'child exit')
})

t.test('a raw side-channel client of another uid gets REJECT Forbidden', { skip }, async t => {
  const connections = []
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => { connections.push(s); s.destroy() })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const port = server.address().port
  const code = `
    const path = require('path')
    const net = require('net')
    const native = require('node-gyp-build')(${JSON.stringify(copy)})
    const wire = require(${JSON.stringify(path.join(copy, 'dist', 'wire.js'))})
    process.setgid(${NOBODY}); process.setuid(${NOBODY})
    const fd = native.connectAbstract(${JSON.stringify(channelName('127.0.0.1', port))})
    // HELLO with a plain write(2): a net.Socket would destroy itself on EPIPE before reading the
    // REJECT the server may already have queued (it can answer on the peer's uid alone).
    let writeError = null
    try {
      require('fs').writeSync(fd, wire.encodeHello({ capabilities: wire.CAP_UNIX, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port: ${port} }))
    } catch (e) { writeError = e.code }
    const s = new net.Socket({ fd, readable: true, writable: false })
    const chunks = []
    let error = null
    s.on('data', d => chunks.push(d))
    s.on('error', e => { error = e.code })
    s.on('close', () => {
      const buf = Buffer.concat(chunks)
      let reply = null
      try { const d = wire.decode(buf); reply = d && d.message } catch (e) { reply = { error: e.message } }
      process.stdout.write(JSON.stringify({ event: 'reply', reply, error, writeError, bytes: buf.length, uid: process.getuid() }) + '\\n')
    })`
  const child = spawnAs(t, code)
  const { reply, uid, error, writeError, bytes } = await child.waitFor(m => m.event === 'reply')
  t.comment(`client: HELLO write ${writeError || 'ok'}, then ${bytes} bytes, error ${error}`)
  t.equal(uid, NOBODY)
  t.equal(reply && reply.type, 3, `REJECT (got ${JSON.stringify(reply)})`)
  t.equal(reply && reply.reason, 3, 'Forbidden')
  t.same(connections, [], "no 'connection' on the server")
})
