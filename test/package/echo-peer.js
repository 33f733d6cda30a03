'use strict'
// One end of an echo between two processes, loading fastsock as an application does (by its
// package name, from wherever this file sits: an installed project's node_modules, or the
// package itself). Used by test/package/install.test.js (the packed and installed tarball) and
// scripts/test-arm64.js (the arm64 prebuild under qemu-user). Prints one JSON line per event.
//   node echo-peer.js server <rung|default> [esm]       -> {"port":N}, then {"served":transport,...}
//   node echo-peer.js client <rung|default> <port> [esm] -> {"transport":...,"bytes":N,"ok":bool,...}
// `default` uses the default chain; `esm` loads fastsock with import() instead of require().
const crypto = require('crypto')

const [role, rung, ...rest] = process.argv.slice(2)
const esm = rest.includes('esm')
const print = o => process.stdout.write(JSON.stringify(o) + '\n')
const options = rung === 'default' ? {} : { transports: [rung] }
/** Payload size: several ring turns on shm (1 MiB rings by default) and a few syscalls on unix. */
const BYTES = 3 * 1024 * 1024 + 7
/** Gives up after this long (FASTSOCK_ECHO_TIMEOUT_MS: longer under emulation). */
const TIMEOUT_MS = Number(process.env.FASTSOCK_ECHO_TIMEOUT_MS) || 60000

/** The native addon files this process loaded (the prebuild, or build/Release). */
const addons = () => Object.keys(require.cache).filter(k => k.endsWith('.node'))

/** fastsock by its package name (the ESM namespace has the same named exports). */
async function load () {
  const f = esm ? await import('fastsock') : require('fastsock')
  return { f, from: require.resolve('fastsock') }
}

async function server () {
  const { f, from } = await load()
  const srv = f.createServer(options, sock => {
    const chunks = []
    let bytes = 0
    sock.on('data', d => { chunks.push(d); bytes += d.length })
    sock.pipe(sock)
    sock.on('close', () => {
      print({ served: sock.transport, bytes, sha256: crypto.createHash('sha256').update(Buffer.concat(chunks)).digest('hex') })
      srv.close()
    })
  })
  srv.listen(0, '127.0.0.1', () => print({ port: srv.address().port, from, addons: addons(), esm, node: process.version, arch: process.arch }))
}

async function client (port) {
  const { f, from } = await load()
  const payload = crypto.randomBytes(BYTES)
  const sock = f.connect({ port, host: '127.0.0.1', ...options }, () => {
    sock.end(payload)
  })
  const chunks = []
  sock.on('data', d => chunks.push(d))
  sock.on('end', () => {
    const echo = Buffer.concat(chunks)
    print({ transport: sock.transport, bytes: echo.length, ok: echo.equals(payload), from, addons: addons(), esm, node: process.version, arch: process.arch })
  })
  sock.on('error', err => { print({ error: err.message, code: err.code }); process.exitCode = 1 })
}

setTimeout(() => { print({ error: `no echo within ${TIMEOUT_MS} ms` }); process.exit(1) }, TIMEOUT_MS).unref()
const main = role === 'server' ? server() : client(Number(rest[0]))
main.catch(err => { print({ error: err.stack || String(err) }); process.exitCode = 1 })
