#!/usr/bin/env node
'use strict'
/**
 * Short connections and cold processes, both ends preloaded (`-r fastsock/register`, or fastsock
 * used directly) against both ends plain Node, in separate processes:
 * - http-close: HTTP/1.1 with a new connection per request (`agent: false`, `Connection: close`),
 *   `--requests` requests (default 500) after 50 to warm up; µs per request.
 * - churn-1, churn-16: open a connection, one round trip (64 B echoed), close; in a loop, with 1
 *   and 16 such loops in flight; `--churn` round trips per loop in flight (default 1000 / 16 per
 *   loop at 16); µs per connection (wall time / connections).
 * - cold-100: a fresh client and a fresh server process, one keep-alive HTTP connection, the
 *   first 100 requests (no warm-up): µs per request, from the first request's start.
 * http-close and churn run in one client process against two servers, one plain and one
 * preloaded, in `--blocks` blocks (default 10) per round alternating between Node's net against
 * the plain server and fastsock against the preloaded one: the client process runs under the
 * preload hook, its plain side calls Node's own `net.connect` (fastsock's `originals`) and its
 * fastsock side what the hook makes `net.connect` (`--direct`: the client loads fastsock itself
 * and calls `fastsock.connect`, the library's API, which always makes a fastsock Socket), so that both see the same moments of a shared host; cold-100 runs fresh
 * processes for each side, alternating. Prints the median over `--rounds` rounds (default 5) per
 * mode, the ratio plain/preloaded of the medians and the median of the paired blocks' ratios
 * (above 1: preloaded is faster), and the rungs the preloaded side's connections used. With
 * `--separate`, http-close and churn run as cold-100 does: per round, a plain client against a
 * plain server and a preloaded client against a preloaded server, each pair fresh processes, the
 * order alternating (the client process is then plain or preloaded as a deployment's would be,
 * not one process carrying both sides; its JIT warm-up is in the figure past the 50 warm-up
 * operations). With `--env K=V` the preloaded processes get
 * that variable too (FASTSOCK_SHORT_CONNECTIONS=fast: the fast rungs for every connection, the
 * behaviour before lib/lifetime.ts). For http-close and churn it also prints the CPU time (user +
 * system) per request/connection of the client process (median of its blocks, per side) and of
 * each server (over the measured blocks, after the warm-up): a gap is then client CPU, server CPU
 * or waiting. The default sizes are mostly the JIT's warm-up (~1,000 connections a side); `--churn
 * 6000 --requests 2000` measures closer to steady state.
 *
 *   node bench/short-connections.js [--rounds 5] [--requests 500] [--churn 1000] [--only http-close,churn-1] [--separate]
 */
const path = require('path')
const { spawn } = require('child_process')

const role = process.argv[2]
const DIST = path.join(__dirname, '..', 'dist')
/** --direct (passed on to the paired client as FASTSOCK_BENCH_DIRECT=1): fastsock.connect instead of the preload's net.connect. */
const DIRECT = process.env.FASTSOCK_BENCH_DIRECT === '1'
/** The rungs the client's connections ended up on (`socket.transport`; undefined: plain Node). */
const seen = new Map()
const note = sock => { const t = String(sock.transport); seen.set(t, (seen.get(t) || 0) + 1) }
const ROLES = {
  'http-server' () {
    const http = require('http')
    const s = http.createServer((q, r) => {
      if (q.headers.connection === 'close') r.setHeader('Connection', 'close')
      r.end('ok')
    })
    s.keepAliveTimeout = 60000
    s.listen(0, '127.0.0.1', () => process.stdout.write(`${s.address().port}\n`))
  },
  'echo-server' () {
    const net = require('net')
    const s = net.createServer(c => { c.on('data', d => c.write(d)).on('end', () => c.end()).on('error', () => {}) })
    s.listen(0, '127.0.0.1', () => process.stdout.write(`${s.address().port}\n`))
  },
  async 'http-close' (port, n) {
    const http = require('http')
    const get = () => new Promise((resolve, reject) => http.get({ port, host: '127.0.0.1', agent: false, headers: { connection: 'close' } }, m => {
      note(m.socket)
      m.resume()
      m.on('end', resolve)
    }).on('error', reject))
    for (let i = 0; i < 50; i++) await get()
    const t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) await get()
    return Number(process.hrtime.bigint() - t) / 1e3 / n
  },
  async churn (port, n, inFlight) {
    const net = require('net')
    const msg = Buffer.alloc(64, 7)
    const once = () => new Promise((resolve, reject) => {
      const c = net.connect(port, '127.0.0.1')
      let got = 0
      c.on('error', reject)
      c.on('connect', () => { note(c); c.write(msg) })
      c.on('data', d => {
        got += d.length
        if (got >= msg.length) c.end()
      })
      c.on('close', resolve)
    })
    const loop = async count => { for (let i = 0; i < count; i++) await once() }
    await Promise.all(Array.from({ length: inFlight }, () => loop(Math.max(1, Math.floor(50 / inFlight)))))
    const per = Math.max(1, Math.floor(n / inFlight))
    const t = process.hrtime.bigint()
    await Promise.all(Array.from({ length: inFlight }, () => loop(per)))
    return Number(process.hrtime.bigint() - t) / 1e3 / (per * inFlight)
  },
  async 'cold-100' (port) {
    const http = require('http')
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const get = () => new Promise((resolve, reject) => http.get({ port, host: '127.0.0.1', agent }, m => {
      m.resume()
      m.on('end', resolve)
    }).on('error', reject))
    const t = process.hrtime.bigint()
    for (let i = 0; i < 100; i++) await get()
    note(agent.sockets[Object.keys(agent.sockets)[0]]?.[0] ?? agent.freeSockets[Object.keys(agent.freeSockets)[0]]?.[0] ?? {})
    const us = Number(process.hrtime.bigint() - t) / 1e3 / 100
    agent.destroy()
    return us
  }
}

if (role !== undefined && role in ROLES && role.endsWith('server')) {
  ROLES[role]()
  process.on('disconnect', () => process.exit(0))
  // A 'cpu' line on stdin: this process's CPU time so far (µs, user + system), one line back.
  process.stdin.on('data', d => {
    if (String(d).includes('cpu')) { const u = process.cpuUsage(); process.stdout.write(`${u.user + u.system}\n`) }
  }).on('end', () => process.exit(0)).resume()
  return
}
if (role === 'paired') {
  // One client process, two servers (plain, preloaded): blocks of --block operations alternate
  // between Node's net against the plain server and fastsock against the preloaded one.
  const [kind, plainPort, fastPort, blocks, block, inFlight] = process.argv.slice(3).map((v, i) => i === 0 ? v : Number(v))
  // This process runs under the preload hook (or, with --direct, loads fastsock itself): the
  // plain side connects with Node's own net.connect (kept by fastsock's originals), the other
  // with what the hook makes net.connect (--direct: fastsock.connect, the library's API).
  const net = require('net')
  const http = require('http')
  const { originals } = require(path.join(DIST, 'originals.js'))
  const fastConnect = DIRECT ? require(path.join(__dirname, '..')).connect : net.connect
  const sides = [
    { name: 'plain', port: plainPort, connect: (p, h) => originals.connect(p, h), http: {} },
    { name: 'preloaded', port: fastPort, connect: (p, h) => fastConnect(p, h), http: null }
  ]
  // What `agent: false` does (a new Agent per request), with Node's connect and with the preloaded one.
  class PlainAgent extends http.Agent { createConnection (...a) { return originals.createConnection(...a) } }
  class FastAgent extends http.Agent { createConnection (...a) { return fastConnect(...a) } }
  const msg = Buffer.alloc(64, 7)
  const churnOnce = side => new Promise((resolve, reject) => {
    const c = side.connect(side.port, '127.0.0.1')
    let got = 0
    c.on('error', reject)
    c.on('connect', () => { if (side.http === null) note(c); c.write(msg) })
    c.on('data', d => { got += d.length; if (got >= msg.length) c.end() })
    c.on('close', resolve)
  })
  const httpOnce = side => new Promise((resolve, reject) => http.get({ port: side.port, host: '127.0.0.1', agent: side.name === 'plain' ? new PlainAgent() : new FastAgent(), headers: { connection: 'close' } }, m => {
    if (side.http === null) note(m.socket)
    m.resume()
    m.on('end', resolve)
  }).on('error', reject))
  let one = kind === 'http-close' ? httpOnce : churnOnce
  const cpu = { plain: [], preloaded: [] }
  const runBlock = async (side, count) => {
    const loop = async n => { for (let i = 0; i < n; i++) await one(side) }
    const per = Math.max(1, Math.floor(count / inFlight))
    const c0 = process.cpuUsage()
    const t = process.hrtime.bigint()
    await Promise.all(Array.from({ length: inFlight }, () => loop(per)))
    const us = Number(process.hrtime.bigint() - t) / 1e3 / (per * inFlight)
    const c = process.cpuUsage(c0)
    if (cpu[side.name]) cpu[side.name].push((c.user + c.system) / (per * inFlight))
    return us
  }
  ;(async () => {
    for (const side of sides) await runBlock(side, 50) // warm-up, and the destination's history
    seen.clear()
    cpu.plain.length = 0
    cpu.preloaded.length = 0
    let connections = 0
    const counted = one
    one = side => { connections++; return counted(side) }
    process.stdout.write('warm\n')
    await new Promise(resolve => process.stdin.once('data', resolve))
    const us = { plain: [], preloaded: [] }
    for (let b = 0; b < blocks; b++) {
      const order = b % 2 === 0 ? sides : [sides[1], sides[0]]
      for (const side of order) us[side.name].push(await runBlock(side, block))
    }
    process.stdout.write(`${JSON.stringify({ us, cpu, connections, transports: Object.fromEntries(seen) })}\n`)
    process.exit(0)
  })().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
  return
}
if (role === 'client') {
  const [kind, port, n, inFlight] = process.argv.slice(3)
  const fn = kind.startsWith('churn') ? ROLES.churn : ROLES[kind]
  fn(Number(port), Number(n), Number(inFlight)).then(us => {
    process.stdout.write(`${JSON.stringify({ us, transports: Object.fromEntries(seen) })}\n`)
    process.exit(0)
  }, err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
  return
}

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt }
const ROUNDS = Number(opt('rounds', 5))
const REQUESTS = Number(opt('requests', 500))
const CHURN = Number(opt('churn', 1000))
const BLOCKS = Number(opt('blocks', 10))
const extraEnv = Object.fromEntries(args.flatMap((a, i) => a === '--env' ? [args[i + 1].split('=')] : []))
const DIRECT_OPT = args.includes('--direct')
/** --separate: http-close and churn as cold-100 runs, a client process of each kind of its own (see the module comment). */
const SEPARATE = args.includes('--separate')
if (DIRECT_OPT) extraEnv.FASTSOCK_BENCH_DIRECT = '1'
const MODES = (opt('only', 'http-close,churn-1,churn-16,cold-100')).split(',')
const register = path.join(DIST, 'register.js')

function start (script, argv, preload, withEnv = preload) {
  const env = { ...process.env, ...(withEnv ? extraEnv : {}) }
  return spawn(process.execPath, [...(preload ? ['-r', register] : []), script, ...argv], { env, stdio: ['pipe', 'pipe', 'inherit'] })
}
/** Successive lines of the child's stdout: each call, a promise of the next. */
function lineReader (child) {
  let buf = ''
  const waiting = []
  child.stdout.on('data', d => {
    buf += d
    for (let i = buf.indexOf('\n'); i >= 0 && waiting.length > 0; i = buf.indexOf('\n')) {
      waiting.shift().resolve(buf.slice(0, i))
      buf = buf.slice(i + 1)
    }
  })
  child.on('exit', code => { for (const w of waiting.splice(0)) w.reject(new Error(`exited ${code} before answering`)) })
  return () => new Promise((resolve, reject) => {
    const i = buf.indexOf('\n')
    if (i >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1); return resolve(line) }
    waiting.push({ resolve, reject })
  })
}
/** A server's CPU time so far (µs), asked on its stdin. */
const serverReaders = new WeakMap()
function serverCpu (server) {
  if (!serverReaders.has(server)) serverReaders.set(server, lineReader(server))
  server.stdin.write('cpu\n')
  return serverReaders.get(server)().then(Number)
}
function firstLine (child) {
  return new Promise((resolve, reject) => {
    let buf = ''
    child.stdout.on('data', d => {
      buf += d
      const i = buf.indexOf('\n')
      if (i >= 0) resolve(buf.slice(0, i))
    })
    child.on('exit', code => reject(new Error(`exited ${code} before answering`)))
  })
}
/** http-close and churn: one client process, both servers, blocks alternating (see 'paired'). */
async function paired (mode) {
  const kind = mode.startsWith('churn') ? 'echo-server' : 'http-server'
  const plain = start(__filename, [kind], false)
  const fast = start(__filename, [kind], true)
  try {
    const [pp, fp] = await Promise.all([firstLine(plain), firstLine(fast)])
    const inFlight = mode === 'churn-16' ? 16 : 1
    const total = mode === 'http-close' ? REQUESTS : CHURN
    const client = start(__filename, ['paired', mode, pp, fp, String(BLOCKS), String(Math.ceil(total / BLOCKS)), String(inFlight)], !DIRECT_OPT, true)
    const lines = lineReader(client)
    await lines() // warmed up: the servers' CPU time is counted from here
    const cpu0 = await Promise.all([plain, fast].map(serverCpu))
    client.stdin.write('go\n')
    const out = JSON.parse(await lines())
    const cpu1 = await Promise.all([plain, fast].map(serverCpu))
    for (const [t, c] of Object.entries(out.transports)) if (t !== 'undefined') rungs[mode][t] = (rungs[mode][t] || 0) + c
    // Each server serves only its side's blocks: half the connections counted.
    const per = out.connections / 2
    cpuUs[mode].push({ client: out.cpu, server: { plain: (cpu1[0] - cpu0[0]) / per, preloaded: (cpu1[1] - cpu0[1]) / per } })
    return out.us
  } finally {
    for (const c of [plain, fast]) { c.stdin.end(); c.kill() }
  }
}

async function once (mode, preload) {
  const server = start(__filename, [mode.startsWith('churn') ? 'echo-server' : 'http-server'], preload)
  try {
    const port = await firstLine(server)
    const n = mode === 'http-close' ? REQUESTS : CHURN
    const inFlight = mode === 'churn-16' ? 16 : 1
    const client = start(__filename, ['client', mode, port, String(n), String(inFlight)], preload)
    const out = JSON.parse(await firstLine(client))
    if (preload) for (const [t, c] of Object.entries(out.transports)) rungs[mode][t] = (rungs[mode][t] || 0) + c
    return out.us
  } finally {
    server.stdin.end()
    server.kill()
  }
}
const rungs = Object.fromEntries(MODES.map(m => [m, {}]))
/** Per paired mode and round: the client's CPU µs per connection by block, each server's over the run. */
const cpuUs = Object.fromEntries(MODES.map(m => [m, []]))
const median = a => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }

;(async () => {
  const res = Object.fromEntries(MODES.map(m => [m, { plain: [], preloaded: [] }]))
  const blockRatios = Object.fromEntries(MODES.map(m => [m, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (const m of MODES) {
      if (m === 'cold-100' || SEPARATE) {
        const order = r % 2 === 0 ? [false, true] : [true, false]
        for (const pre of order) res[m][pre ? 'preloaded' : 'plain'].push(await once(m, pre))
        blockRatios[m].push(res[m].plain[r] / res[m].preloaded[r])
      } else {
        const us = await paired(m)
        res[m].plain.push(median(us.plain))
        res[m].preloaded.push(median(us.preloaded))
        us.plain.forEach((p, i) => blockRatios[m].push(p / us.preloaded[i]))
      }
    }
    process.stderr.write(`round ${r + 1}/${ROUNDS} done\n`)
  }
  const env = Object.keys(extraEnv).length ? ` (preloaded with ${Object.entries(extraEnv).map(([k, v]) => `${k}=${v}`).join(' ')})` : ''
  console.log(`short connections, both ends preloaded vs both plain, ${ROUNDS} rounds${env}${SEPARATE ? ", a client process per side (--separate)" : ""}; µs per request/connection, median (range)`)
  console.log('| mode | plain | preloaded | plain/preloaded (medians) | median of paired ratios | preloaded connections by rung |')
  console.log('| --- | --- | --- | --- | --- | --- |')
  for (const m of MODES) {
    const p = res[m].plain; const f = res[m].preloaded
    const fmt = a => `${median(a).toFixed(0)} (${Math.min(...a).toFixed(0)}-${Math.max(...a).toFixed(0)})`
    console.log(`| ${m} | ${fmt(p)} | ${fmt(f)} | ${(median(p) / median(f)).toFixed(2)}x | ${median(blockRatios[m]).toFixed(2)}x | ${Object.entries(rungs[m]).map(([t, c]) => `${t} ${c}`).join(', ')} |`)
  }
  const withCpu = MODES.filter(m => cpuUs[m].length > 0)
  if (withCpu.length === 0) return
  console.log('\nCPU time per request/connection (µs, user + system): the client process, median of its blocks; each server, over the run (median of rounds)')
  console.log('| mode | client plain | client preloaded | difference | server plain | server preloaded | difference |')
  console.log('| --- | --- | --- | --- | --- | --- | --- |')
  for (const m of withCpu) {
    const cp = median(cpuUs[m].flatMap(r => r.client.plain)); const cf = median(cpuUs[m].flatMap(r => r.client.preloaded))
    const sp = median(cpuUs[m].map(r => r.server.plain)); const sf = median(cpuUs[m].map(r => r.server.preloaded))
    const d = (a, b) => `${b - a >= 0 ? '+' : ''}${(b - a).toFixed(1)}`
    console.log(`| ${m} | ${cp.toFixed(1)} | ${cf.toFixed(1)} | ${d(cp, cf)} | ${sp.toFixed(1)} | ${sf.toFixed(1)} | ${d(sp, sf)} |`)
  }
})().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
