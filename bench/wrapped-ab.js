#!/usr/bin/env node
'use strict'
/**
 * The rungs side by side inside one pair of processes (server and client both with the preload
 * hook): one keep-alive connection or session per rung, sequential requests, the rungs
 * alternating every --slice-ms, median of --slices slices. Drift and other load hit every rung
 * alike, so this resolves differences the separate-process benchmarks (bench/https.js,
 * http2.js) cannot on a busy host. Rungs: `tcp` (transports: ['tcp']: Node's own connect, so
 * TLSWrap / nghttp2 over the TCP handle, as plain Node), `default` (the hook's choice), and any
 * rung named in --rungs (forced with `transports`). Prints µs/request, the client's CPU
 * µs/request, × tcp, the rung, and whether TLS / nghttp2 reach the socket through Node's
 * JSStreamSocket.
 *
 *   node bench/wrapped-ab.js [--proto https|h2|h2c] [--rungs tcp,default,shm] [--slices 15] [--slice-ms 150]
 */
const { spawn } = require('child_process')
const path = require('path')

const ROOT = path.join(__dirname, '..')
const REGISTER = path.join(ROOT, 'dist', 'register.js')
const { key, cert } = require('./_tls-fixture')

function args () {
  const o = { proto: 'https', rungs: 'tcp,default,shm', slices: 15, 'slice-ms': 150 }
  const a = process.argv.slice(2)
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '')
    if (k === 'help') { process.stdout.write('options: --proto https|h2|h2c, --rungs tcp,default,shm, --slices 15, --slice-ms 150\n'); process.exit(0) }
    if (!(k in o) || a[i] === k) throw new Error(`unknown option ${a[i]}`)
    o[k] = typeof o[k] === 'number' ? Number(a[++i]) : a[++i]
  }
  return o
}

function server (proto) {
  const done = s => s.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: s.address().port }) + '\n'))
  if (proto === 'https') return done(require('https').createServer({ key, cert }, (req, res) => res.end('hello world')))
  const http2 = require('http2')
  const s = proto === 'h2' ? http2.createSecureServer({ key, cert }) : http2.createServer()
  s.on('stream', st => { st.respond({ ':status': 200 }); st.end('hello world') })
  done(s)
}

/** A function doing one request on `rung` (a keep-alive connection / a session of its own), and its socket. */
function requester (proto, port, rung) {
  const opts = rung === 'default' ? {} : { transports: [rung] }
  if (proto === 'https') {
    const https = require('https')
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
    let socket = null
    const get = () => new Promise((resolve, reject) => {
      https.get({ host: '127.0.0.1', port, ca: cert, agent, ...opts }, res => { socket = res.socket; res.resume(); res.on('end', resolve) }).on('error', reject)
    })
    return { get, socket: () => socket }
  }
  const http2 = require('http2')
  const session = http2.connect(proto === 'h2' ? `https://localhost:${port}` : `http://127.0.0.1:${port}`, { ca: cert, ...opts })
  const get = () => new Promise((resolve, reject) => {
    const r = session.request({ ':path': '/' })
    r.resume()
    r.on('end', resolve)
    r.on('error', reject)
    r.end()
  })
  return { get, socket: () => session.socket }
}

/** True when TLS or nghttp2 reach this socket through Node's JSStreamSocket. */
function throughJsStream (s) {
  if (!s) return false
  if (s.stream !== undefined) return true // an http2 session's socket over a JSStreamSocket
  return s._handle?._parentWrap?.constructor?.name === 'JSStreamSocket'
}

async function client (o, port) {
  const fastsock = require(ROOT)
  const rungs = o.rungs.split(',')
  const r = Object.fromEntries(rungs.map(n => [n, requester(o.proto, port, n)]))
  const seen = {}
  for (const n of rungs) {
    await r[n].get()
    const s = r[n].socket()
    seen[n] = `${fastsock.transportOf(s)}${throughJsStream(s) ? ' (JSStreamSocket)' : ''}`
  }
  const wall = Object.fromEntries(rungs.map(n => [n, []]))
  const cpu = Object.fromEntries(rungs.map(n => [n, []]))
  for (let i = 0; i < o.slices; i++) {
    for (const n of rungs) {
      for (let w = 0; w < 20; w++) await r[n].get()
      const c0 = process.cpuUsage()
      const t0 = process.hrtime.bigint()
      const end = Date.now() + o['slice-ms']
      let k = 0
      while (Date.now() < end) { await r[n].get(); k++ }
      const c = process.cpuUsage(c0)
      wall[n].push(Number(process.hrtime.bigint() - t0) / 1e3 / k)
      cpu[n].push((c.user + c.system) / k)
    }
  }
  const med = a => { const v = [...a].sort((x, y) => x - y); return v[v.length >> 1] }
  const base = med(wall[rungs[0]])
  const lines = [`${o.proto}: sequential requests, one connection / session per rung, the rungs alternating every ${o['slice-ms']} ms, median of ${o.slices} slices (load average ${require('os').loadavg()[0].toFixed(1)})`, '',
    `| rung asked | carried by | µs/request | client CPU µs/request | × ${rungs[0]} |`, '| --- | --- | ---: | ---: | ---: |']
  for (const n of rungs) lines.push(`| ${n} | ${seen[n]} | ${med(wall[n]).toFixed(0)} | ${med(cpu[n]).toFixed(0)} | ${(base / med(wall[n])).toFixed(2)} |`)
  process.stdout.write(lines.join('\n') + '\n')
  process.exit(0)
}

if (process.argv[2] === '--server') {
  server(process.argv[3])
  process.on('SIGTERM', () => process.exit(0))
} else if (process.argv[2] === '--client') {
  client(JSON.parse(process.argv[3]), Number(process.argv[4])).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
} else {
  const o = args()
  const env = { ...process.env, NODE_OPTIONS: `--require "${REGISTER}"` }
  delete env.FASTSOCK_TRANSPORTS
  const srv = spawn(process.execPath, [__filename, '--server', o.proto], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  srv.stdout.once('data', d => {
    const cl = spawn(process.execPath, [__filename, '--client', JSON.stringify(o), String(JSON.parse(d).port)], { env, stdio: 'inherit' })
    cl.on('exit', code => { srv.kill('SIGTERM'); process.exitCode = code })
  })
}
