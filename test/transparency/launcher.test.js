'use strict'
// `fastsock run -- <command>` and the preload hook, with real processes: an unmodified http
// app and its forked grandchild use the best rung (shm, or unix when shm is off); without the
// hook they use Node's net; exit codes and signals pass through; NODE_OPTIONS is appended to.
const t = require('tap')
const path = require('path')
const { spawnNode, within, ROOT } = require('../helpers/util')
const { bestRung, rungs } = require('../helpers/rungs')

const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')
const APP = path.join(ROOT, 'test', 'fixtures', 'transparency', 'http-app.js')
const unixOnly = rungs.includes('unix') ? 'unix,tcp' : null

t.test('node -r fastsock/register: an unmodified http app on the best rung', async t => {
  const child = spawnNode(t, ['-r', 'fastsock/register', APP])
  const m = await child.waitFor(m => m.role === 'child')
  t.same([m.server, m.client, m.hook], [bestRung, bestRung, true])
  t.equal((await child.exited).code, 0)
})

t.test('without the hook: Node\'s net', async t => {
  const child = spawnNode(t, [APP])
  const m = await child.waitFor(m => m.role === 'child')
  t.same([m.server, m.client, m.hook], ['net', 'net', false])
})

t.test('with shm off (FASTSOCK_TRANSPORTS=unix,tcp): unix', { skip: unixOnly ? false : 'no unix rung here' }, async t => {
  const child = spawnNode(t, ['-r', 'fastsock/register', APP], { env: { FASTSOCK_TRANSPORTS: unixOnly } })
  const m = await child.waitFor(m => m.role === 'child')
  t.same([m.server, m.client], ['unix', 'unix'])
})

t.test('fastsock run -- node app: the app and its forked grandchild, from another directory', async t => {
  const child = spawnNode(t, [CLI, 'run', '--', process.execPath, APP, 'fork', 'exit=3'], { cwd: '/' })
  const c = await child.waitFor(m => m.role === 'child')
  const g = await child.waitFor(m => m.role === 'grandchild')
  t.same([c.server, c.client, c.hook], [bestRung, bestRung, true], 'child')
  t.same([g.server, g.client, g.hook], [bestRung, bestRung, true], 'forked grandchild (NODE_OPTIONS inherited)')
  t.not(g.pid, c.pid)
  const { code } = await within(child.exited, 10000, 'launcher exit')
  t.equal(code, 3, 'the launcher exits with the child\'s code')
})

t.test('fastsock run keeps existing NODE_OPTIONS and registers once', async t => {
  const code = 'process.stdout.write(JSON.stringify({ opts: process.env.NODE_OPTIONS, heap: require("v8").getHeapStatistics().heap_size_limit }) + "\\n")'
  const child = spawnNode(t, [CLI, 'run', '--', process.execPath, '-e', code], { env: { NODE_OPTIONS: '--max-old-space-size=123' } })
  const m = await child.waitFor(m => 'opts' in m)
  // (tap's process tracking may add its own --import in between, and quote the options)
  t.match(m.opts, /^"?--max-old-space-size=123"? .*"?--require"? "[^"]*dist\/register\.js"$/, m.opts)
  // heap_size_limit is the old space's 123 MiB plus the young generation, which V8 sizes per
  // release (171 MiB in all under Node 20, 219 under 26); without the option it is 4 GiB here.
  t.ok(m.heap < 512 * 1024 * 1024, `the existing option still applies (heap limit ${(m.heap / 1048576).toFixed(0)} MiB)`)
  const nested = spawnNode(t, [CLI, 'run', '--', process.execPath, CLI, 'run', '--', process.execPath, '-e', code])
  const n = await nested.waitFor(m => 'opts' in m)
  t.equal(n.opts.split('register.js').length - 1, 1, 'nested launchers add the hook once')
})

t.test('fastsock run: signals are forwarded, a command that cannot start exits 127', async t => {
  const code = 'process.on("SIGTERM", () => { process.stdout.write(JSON.stringify({ got: "SIGTERM" }) + "\\n"); process.exit(42) }); process.stdout.write(JSON.stringify({ ready: true }) + "\\n"); setInterval(() => {}, 1000)'
  const child = spawnNode(t, [CLI, 'run', '--', process.execPath, '-e', code])
  await child.waitFor(m => m.ready)
  child.child.kill('SIGTERM')
  await child.waitFor(m => m.got === 'SIGTERM')
  t.equal((await within(child.exited, 5000, 'exit')).code, 42)
  const bad = spawnNode(t, [CLI, 'run', '--', '/nonexistent/command'])
  t.equal((await within(bad.exited, 5000, 'exit')).code, 127)
  t.match(bad.stderr(), /cannot run \/nonexistent\/command: ENOENT/)
})

t.test('node --import fastsock/register: ESM named imports of node:net are patched', async t => {
  const child = spawnNode(t, ['--import', 'fastsock/register', path.join(ROOT, 'test', 'fixtures', 'transparency', 'esm-app.mjs')])
  const m = await child.waitFor(m => 'netServer' in m)
  t.same(m, { netServer: bestRung, netClient: bestRung, isSocket: true, httpClient: bestRung, httpServer: bestRung })
})

t.test('http loaded before the hook (require order): still fast', async t => {
  const code = `
    const http = require('http')
    require('fastsock/register')
    const s = http.createServer((req, res) => res.end(req.socket.transport)).listen(0, '127.0.0.1', () => {
      http.get({ port: s.address().port, host: '127.0.0.1' }, res => {
        const client = res.socket.transport
        let b = ''; res.on('data', d => { b += d }); res.on('end', () => {
          process.stdout.write(JSON.stringify({ server: b, client }) + '\\n'); process.exit(0)
        })
      })
    })`
  const child = spawnNode(t, ['-e', code])
  const m = await child.waitFor(m => 'server' in m)
  t.same(m, { server: bestRung, client: bestRung })
})

t.test('worker threads inherit the hook through NODE_OPTIONS', async t => {
  const code = `
    const { Worker } = require('worker_threads')
    const w = new Worker("const net = require('net'); const s = net.createServer(c => c.end()).listen(0, '127.0.0.1', () => { const c = net.connect(s.address().port, '127.0.0.1', () => { require('worker_threads').parentPort.postMessage(c.transport); c.destroy(); s.close() }) })", { eval: true })
    w.on('message', m => { process.stdout.write(JSON.stringify({ worker: m }) + '\\n') })`
  const child = spawnNode(t, [CLI, 'run', '--', process.execPath, '-e', code])
  const m = await child.waitFor(m => 'worker' in m)
  t.equal(m.worker, bestRung)
})
