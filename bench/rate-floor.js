#!/usr/bin/env node
'use strict'
/**
 * The floor of `fastsock rate`'s 64 B single-direction cell through the net.Socket API: what one
 * window costs in JavaScript with a transport that costs nothing. Per window, as the rate's
 * sender and receiver do it (tools/src/rate/window.ts): cork(), write() of 64 views of 64 B,
 * uncork() (one _writev), and on the receiving socket one 4 KiB 'data' chunk counted. Three
 * no-op transports, in one thread:
 *
 *   node:Duplex      a stream.Duplex whose _writev calls back at once, push() for the chunk
 *   net.Socket       Node's net.Socket over a stand-in handle whose writev completes at once
 *                    (Node's own write path: WriteWrap, writevGeneric) and onread for the chunk
 *   fastsock:noop    fastsock's Socket over a stream endpoint that takes every byte and hands
 *                    out a ready chunk (the stream core, lib/stream/endpoint-stream.ts)
 *
 * Beside them, real connections with both ends in this process (fastsock forced onto shm, and
 * Node's net over TCP loopback): the send alone, and the whole window and its 1-byte ack, which
 * on one thread is the CPU one window costs, without two processes' waits and wake-ups.
 *
 * It prints µs per message for the sending side, the receiving side and both, and the rate a
 * transport would reach if it cost nothing, counted as `fastsock rate` counts (msgrate: each
 * message once sent and once received, so 2 / (send + receive): the two sides one after the
 * other, as the rate's window-then-ack makes them; the ack itself is left out), then runs `fastsock rate` on the same
 * cell (shm and net:tcp) and prints each floor as a multiple of net:tcp measured in that run:
 * the ceiling of "shm ÷ net:tcp" through this API.
 *
 *   node bench/rate-floor.js                 # 5 runs of 2000 windows per transport, then rate
 *   node bench/rate-floor.js --runs 7 --windows 5000 --no-rate
 */
const path = require('path')
const net = require('net')
const { Duplex } = require('stream')
const { spawnSync } = require('child_process')

const args = process.argv.slice(2)
const take = (flag, fallback) => {
  const i = args.indexOf(flag)
  return i < 0 ? fallback : Number(args[i + 1])
}
const RUNS = take('--runs', 5)
const WINDOWS = take('--windows', 2000)
const WINDOW = 64
const BYTES = 64
const noRate = args.includes('--no-rate')

const store = Buffer.alloc(WINDOW * BYTES, 0x5a)
const views = []
for (let i = 0; i < WINDOW; i++) views.push(store.subarray(i * BYTES, (i + 1) * BYTES))
const chunk = Buffer.alloc(WINDOW * BYTES, 0x5a)

/** One window through `tx` (cork, 64 writes, uncork). */
function send (tx) {
  tx.cork()
  for (let i = 0; i < WINDOW; i++) tx.write(views[i])
  tx.uncork()
}

/** µs per message of `fn` run once per window, WINDOWS times (after a warm-up). */
function time (fn) {
  for (let i = 0; i < 500; i++) fn()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < WINDOWS; i++) fn()
  return Number(process.hrtime.bigint() - t0) / 1e3 / (WINDOWS * WINDOW)
}

/** A counting 'data' listener; returns the getter of the count. */
function count (rx) {
  let n = 0
  rx.on('data', (c) => { n += c.length })
  return () => n
}

function nodeDuplex () {
  const tx = new Duplex({ writev (chunks, cb) { cb() }, write (c, e, cb) { cb() }, read () {} })
  const rx = new Duplex({ write (c, e, cb) { cb() }, read () {} })
  const got = count(rx)
  return { send: () => send(tx), receive: () => rx.push(chunk), got }
}

/** net.Socket over a stand-in stream handle (the methods Node's net.js and stream_base_commons call). */
function netSocket () {
  const handle = () => ({
    reading: false,
    bytesRead: 0,
    bytesWritten: 0,
    fd: -1,
    writeQueueSize: 0,
    readStart () { this.reading = true; return 0 },
    readStop () { this.reading = false; return 0 },
    writev (req, data) { req.async = false; req.bytes = 0; return 0 },
    writeBuffer (req, data) { req.async = false; return 0 },
    writeLatin1String (req) { req.async = false; return 0 },
    writeUtf8String (req) { req.async = false; return 0 },
    getAsyncId () { return 1 },
    setNoDelay () {},
    setKeepAlive () {},
    ref () {},
    unref () {},
    close (cb) { if (cb) cb() },
    shutdown () { return 0 },
    getsockname () { return 0 },
    getpeername () { return 0 }
  })
  const tx = new net.Socket({ handle: handle(), readable: true, writable: true })
  const rxHandle = handle()
  const rx = new net.Socket({ handle: rxHandle, readable: true, writable: true })
  const got = count(rx)
  // Node's onStreamRead takes (arrayBuffer) with the byte count in streamBaseState; the
  // simplest faithful stand-in for a delivered chunk is what onStreamRead ends in: push().
  return { send: () => send(tx), receive: () => rx.push(chunk), got }
}

function fastsockNoop () {
  const dist = path.join(__dirname, '..', 'dist')
  const { Socket } = require(path.join(dist, 'index.js'))
  const { adoptChannel } = require(path.join(dist, 'socket', 'adopt.js'))
  const { channel, NO_CAPABILITIES } = require(path.join(dist, 'contract.js'))
  const endpoint = () => {
    let pending = null
    let onevent = null
    const ep = {
      write (v) { return v.byteLength },
      writev (vs, i, off) {
        let n = -off
        for (; i < vs.length; i++) n += vs[i].byteLength
        return n
      },
      readInto () { return 0 },
      read () { const c = pending; pending = null; return c },
      readable () { return pending === null ? 0 : pending.length },
      writable () { return 1 << 30 },
      armRead () { return true },
      armWrite () { return true },
      state () { return pending === null ? 0 : 16 },
      shutdown () {},
      close () {},
      ref () {},
      unref () {},
      setPollUs () {},
      counters () { return [0, 0] },
      deliver (c) { pending = c; onevent() }
    }
    const ch = channel({ transport: 'noop', endpoint: ep, bindEvents: (fn) => { onevent = fn }, caps: NO_CAPABILITIES })
    return { ep, ch }
  }
  const a = endpoint()
  const b = endpoint()
  const tx = new Socket()
  const rx = new Socket()
  adoptChannel(tx, a.ch, [], null)
  adoptChannel(rx, b.ch, [], null)
  const got = count(rx)
  return { send: () => send(tx), receive: () => b.ep.deliver(chunk), got, done: () => { tx.destroy(); rx.destroy() } }
}

/**
 * One window, then a 1-byte ack back, over a real connection whose both ends are in this
 * process (`lib`: fastsock forced onto shm, or Node's net over TCP loopback). Returns µs per
 * message of the send alone and of the whole round (send, the server's 'data', its ack, the
 * client's 'data'): with both ends on one thread, the CPU one window costs, without the waits
 * and the wake-ups of two processes.
 */
async function inProcess (lib, opts) {
  let got = 0
  let want = 0
  let server = null
  const srv = lib.createServer(opts, (s) => {
    server = s
    s.on('data', (c) => { got += c.length; if (got >= want) s.write(ACK) })
  })
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const c = lib.connect({ port: srv.address().port, host: '127.0.0.1', ...opts })
  await new Promise((resolve, reject) => { c.once('connect', resolve); c.once('error', reject) })
  if (opts.transports && c.transport !== opts.transports[0]) throw new Error(`ran over ${c.transport}`)
  let wake = null
  c.on('data', () => { const w = wake; wake = null; if (w) w() })
  let sendNs = 0n
  const round = async () => {
    want += WINDOW * BYTES
    const acked = new Promise((resolve) => { wake = resolve })
    const t0 = process.hrtime.bigint()
    send(c)
    sendNs += process.hrtime.bigint() - t0
    await acked
  }
  for (let i = 0; i < 200; i++) await round()
  sendNs = 0n
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < WINDOWS; i++) await round()
  const roundNs = process.hrtime.bigint() - t0
  c.destroy()
  server.destroy()
  srv.close()
  const per = WINDOWS * WINDOW
  return { send: Number(sendNs) / 1e3 / per, round: Number(roundNs) / 1e3 / per }
}
const ACK = Buffer.from('k')

const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[s.length >> 1] }

async function main () {
  const makers = { 'node:Duplex': nodeDuplex, 'net.Socket': netSocket, 'fastsock:noop': fastsockNoop }
  const res = {}
  for (const name of Object.keys(makers)) res[name] = { send: [], receive: [] }
  for (let r = 0; r < RUNS; r++) {
    for (const [name, make] of Object.entries(makers)) {
      const t = make()
      // Let 'connect'-time work (nextTicks) settle first.
      await new Promise((resolve) => setImmediate(resolve))
      res[name].send.push(time(t.send))
      const before = t.got()
      res[name].receive.push(time(t.receive))
      if (t.got() === before) throw new Error(`${name}: no 'data' arrived`)
      if (t.done) t.done()
    }
  }
  const real = { 'fastsock:shm': [], 'net:tcp': [] }
  if (!args.includes('--no-real')) {
    const fastsock = require(path.join(__dirname, '..', 'dist', 'index.js'))
    for (let r = 0; r < RUNS; r++) {
      real['fastsock:shm'].push(await inProcess(fastsock, { transports: ['shm'] }))
      real['net:tcp'].push(await inProcess(net, {}))
    }
  }
  const floors = {}
  console.log(`64 B messages, windows of ${WINDOW}, ${WINDOWS} windows x ${RUNS} runs, medians (µs per message)`)
  console.log('transport       send    receive  both    floor msg/s')
  for (const [name, r] of Object.entries(res)) {
    const s = median(r.send)
    const rcv = median(r.receive)
    floors[name] = 2 / ((s + rcv) / 1e6)
    console.log(`${name.padEnd(15)} ${s.toFixed(4)}  ${rcv.toFixed(4)}   ${(s + rcv).toFixed(4)}  ${(floors[name] / 1e6).toFixed(2)} M`)
  }
  if (real['net:tcp'].length > 0) {
    console.log('\nreal connections, both ends in this process (µs per message): send, and the whole window + ack')
    const tcpRound = median(real['net:tcp'].map((x) => x.round))
    for (const [name, xs] of Object.entries(real)) {
      const rnd = median(xs.map((x) => x.round))
      console.log(`${name.padEnd(15)} ${median(xs.map((x) => x.send)).toFixed(4)}  ${rnd.toFixed(4)}  (${(tcpRound / rnd).toFixed(2)}x net:tcp's CPU per window)`)
    }
  }
  if (noRate) return
  const cli = path.join(__dirname, '..', 'dist', 'cli', 'main.js')
  const r = spawnSync(process.execPath, [cli, 'rate', '--pattern', 'single', '--direction', 'fan-out', '--sizes', '64', '--peers', '1',
    '--cache', 'warm', '--budget-ms', '500', '--rtt-iterations', '0', '--transports', 'shm,net-tcp', '--no-plot', '--no-progress', '--json', '-'],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  if (r.status !== 0) {
    console.log(`fastsock rate exited with ${r.status ?? r.signal}`)
    return
  }
  const rows = {}
  for (const x of JSON.parse(r.stdout).rows) rows[x.channel] = x
  const tcp = rows['net:tcp'].msgPerSec
  const shm = rows['fastsock:shm'].msgPerSec
  console.log(`\nfastsock rate, same cell, this run: net:tcp ${(tcp / 1e6).toFixed(2)} M msg/s, fastsock:shm ${(shm / 1e6).toFixed(2)} M msg/s (${(shm / tcp).toFixed(2)}x net:tcp)`)
  for (const [name, f] of Object.entries(floors)) console.log(`floor ${name.padEnd(14)} = ${(f / tcp).toFixed(2)}x net:tcp`)
}

main().catch((err) => { console.error(err); process.exit(1) })
