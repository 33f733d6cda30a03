'use strict'
/**
 * Connection set-up cost per rung: time from connect() to 'connect' (µs) against a fastsock
 * server in another process, for fastsock's tcp, unix and shm rungs, fastsock's default chain
 * (`default`: what an application gets; its connections close at once, so after the first few
 * the chain starts them on tcp, lib/lifetime.ts) and Node's net.connect, interleaved, `--n`
 * connections each (default 300). Prints median, p90 and the ratio of medians against net, and
 * the teardown: destroy() to 'close' (µs), median and ratio. The fast rungs pay verification (sock_diag + /proc) and the
 * side-channel handshake. `--steps`: when each set-up step happened on client and server (the
 * median µs after connect(), and the median over connections of the time since the row before,
 * paired per connection), the native verification's cost, and how often busy polling caught
 * the handshake's reply.
 * With an RDMA device address in FASTSOCK_BENCH_RDMA_HOST (inside ../shared/tools/rdma-vm:
 * RDMAVM_IP), `verbs` and `rsocket` are measured too, dialing that address (and net beside them,
 * as net:rdma-ip); `smc` where the kernel has AF_SMC and an RDMA device (dialing RDMAVM_SMC_IP,
 * else 127.0.0.1). The guest's CPU is emulated, so those figures compare rows of one run only.
 */
const net = require('net')
const { fork } = require('child_process')
const diagnostics = require('diagnostics_channel')
const fastsock = require('..')

const args = process.argv.slice(2)
const N = (() => { const i = args.indexOf('--n'); return i >= 0 ? Number(args[i + 1]) : 300 })()
const STEPS = args.includes('--steps')
const STEP_CHANNEL = 'fastsock:sidechannel-step'
/** Steps seen in this process since the last take(). */
const seen = []
if (STEPS) diagnostics.subscribe(STEP_CHANNEL, m => seen.push(m))
const take = () => seen.splice(0, seen.length)
const rdmaHost = process.env.FASTSOCK_BENCH_RDMA_HOST || process.env.RDMAVM_IP || null
const available = name => fastsock.transports().some(a => a.name === name && a.available)
const rdmaKinds = rdmaHost !== null ? ['verbs', 'rsocket'].filter(available) : []
const smcOn = rdmaHost !== null && available('smc')
const smcHost = process.env.RDMAVM_SMC_IP || '127.0.0.1'
const hostOf = k => rdmaKinds.includes(k) || k === 'net:rdma-ip' ? rdmaHost : k === 'smc' ? smcHost : '127.0.0.1'

if (process.argv[2] === 'peer') {
  const server = fastsock.createServer(s => {
    if (STEPS) seen.push({ side: 'server', step: `'connection'`, atNs: process.hrtime.bigint() })
    s.end()
  })
  server.listen(0, rdmaHost ? '0.0.0.0' : '127.0.0.1', () => process.send(server.address().port))
  // --steps: the parent asks for the steps of each connection once it is connected.
  process.on('message', m => { if (m === 'steps') process.send(take().map(x => ({ side: x.side, step: x.step, atNs: String(x.atNs) }))) })
  process.on('disconnect', () => process.exit(0))
  return
}

;(async () => {
  const peer = fork(__filename, ['peer', ...(STEPS ? ['--steps'] : [])])
  const steps = {} // kind -> one Map per connection: step label -> µs after connect()
  const verify = {} // kind -> the native verification's own timings (µs)
  const polls = {} // kind -> the reply's latency after HELLO (µs) and how often busy polling caught it
  const port = await new Promise(resolve => peer.once('message', resolve))
  const kinds = ['net', 'default', 'tcp', 'unix', 'shm', ...(rdmaKinds.length ? ['net:rdma-ip', ...rdmaKinds] : []), ...(smcOn ? ['smc'] : [])]
  const t = Object.fromEntries(kinds.map(k => [k, []]))
  const closeUs = Object.fromEntries(kinds.map(k => [k, []]))
  const rungsOfDefault = {}
  for (let i = 0; i < N; i++) {
    // Each kind takes every place in the order in turn (the one after a gap pays for it).
    for (const k of [...kinds.slice(i % kinds.length), ...kinds.slice(0, i % kinds.length)]) {
      const host = hostOf(k)
      const t0 = process.hrtime.bigint()
      const c = k.startsWith('net') ? net.connect(port, host) : k === 'default' ? fastsock.connect({ port, host }) : fastsock.connect({ port, host, transports: [k], transportTimeoutMs: 20000 })
      const tReturned = process.hrtime.bigint()
      let tAttempt = tReturned
      if (STEPS) c.once('transportAttempt', () => { tAttempt = process.hrtime.bigint() })
      await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
      const t1 = process.hrtime.bigint()
      t[k].push(Number(t1 - t0) / 1000)
      if (k === 'default') rungsOfDefault[c.transport] = (rungsOfDefault[c.transport] || 0) + 1
      else if (!k.startsWith('net') && c.transport !== k) throw new Error(`asked for ${k}, got ${c.transport}`)
      const t2 = process.hrtime.bigint()
      c.destroy()
      await new Promise(resolve => c.once('close', resolve))
      closeUs[k].push(Number(process.hrtime.bigint() - t2) / 1000)
      if (STEPS && (k === 'shm' || k === 'unix')) {
        const theirs = await new Promise(resolve => { peer.once('message', resolve); peer.send('steps') })
        const mine = take().filter(x => x.atNs <= t1)
        mine.push({ side: 'client', step: `'connect'`, atNs: t1 })
        const per = steps[k] ??= []
        const verified = mine.find(x => x.step === 'verified' && x.detail)
        if (verified) {
          const d = verified.detail
          const v = verify[k] ??= { listeners: [], scan: [], total: [], cached: 0 }
          v.listeners.push(d.listenersNs / 1000)
          v.scan.push(d.scanNs / 1000)
          v.total.push(d.totalNs / 1000)
          if (d.cached) v.cached++
        }
        const reply = mine.find(x => x.step === 'reply read' && x.detail)
        if (reply) {
          const r = polls[k] ??= { replyUs: [], caught: 0 }
          r.replyUs.push(reply.detail.replyUs)
          if (reply.detail.polled) r.caught++
        }
        mine.push({ side: 'client', step: 'connect() returned', atNs: tReturned }, { side: 'client', step: "'transportAttempt'", atNs: tAttempt })
        // One connection: label -> µs after connect() was called.
        const one = new Map([...mine, ...theirs].map(x => [`${x.side.padEnd(6)} ${x.step}`, Number(BigInt(x.atNs) - t0) / 1000]))
        per.push(one)
      } else {
        take()
      }
    }
  }
  peer.kill()
  console.log(`connect() to 'connect', µs, ${N} connections per channel (interleaved)`)
  const median = k => t[k].slice().sort((x, y) => x - y)[t[k].length >> 1]
  for (const k of kinds) {
    const a = t[k].slice().sort((x, y) => x - y)
    const base = rdmaKinds.includes(k) ? 'net:rdma-ip' : 'net'
    const ratio = k.startsWith('net') ? '' : `   ${(median(k) / median(base)).toFixed(2)}x ${base === 'net' ? 'net:tcp' : base}`
    console.log(`${(k === 'net' ? 'net:tcp' : k.startsWith('net') ? k : 'fastsock:' + k).padEnd(16)} median ${a[a.length >> 1].toFixed(0).padStart(7)}   p90 ${a[Math.floor(a.length * 0.9)].toFixed(0).padStart(7)}${ratio}`)
  }
  console.log(`default chain's connections by rung: ${Object.entries(rungsOfDefault).map(([r, n]) => `${r} ${n}`).join(', ')}`)
  console.log('teardown, destroy() to \'close\', µs')
  const medClose = k => closeUs[k].slice().sort((x, y) => x - y)[closeUs[k].length >> 1]
  for (const k of kinds) {
    const base = rdmaKinds.includes(k) ? 'net:rdma-ip' : 'net'
    const ratio = k.startsWith('net') ? '' : `   ${(medClose(k) / medClose(base)).toFixed(2)}x`
    console.log(`${(k === 'net' ? 'net:tcp' : k.startsWith('net') ? k : 'fastsock:' + k).padEnd(16)} median ${medClose(k).toFixed(0).padStart(7)}${ratio}`)
  }
  if (STEPS) {
    for (const [k, per] of Object.entries(steps)) {
      console.log(`\n${k}: median µs after connect() at which each step happened, and the median over connections of the time since the row before (client / server process)`)
      const med = a => a.slice().sort((x, y) => x - y)[a.length >> 1]
      const labels = [...new Set(per.flatMap(one => [...one.keys()]))]
      const rows = labels.map(label => [label, med(per.filter(one => one.has(label)).map(one => one.get(label)))]).sort((x, y) => x[1] - y[1])
      rows.forEach(([label, at], i) => {
        // Paired per connection, so that the deltas are not differences of unrelated medians.
        const before = i > 0 ? rows[i - 1][0] : null
        const since = before === null ? at : med(per.filter(one => one.has(label) && one.has(before)).map(one => one.get(label) - one.get(before)))
        console.log(`  ${label.padEnd(34)} ${at.toFixed(0).padStart(7)}  +${since.toFixed(0).padStart(5)}`)
      })
      const v = verify[k]
      if (v) console.log(`  peer verification (native), median µs: LISTEN sockets (sock_diag) ${med(v.listeners).toFixed(1)}, /proc/PID/fd scan ${med(v.scan).toFixed(1)}, total ${med(v.total).toFixed(1)}; cached in ${v.cached} of ${v.total.length}`)
      const r = polls[k]
      if (r) console.log(`  reply seen ${med(r.replyUs).toFixed(0)} µs (median) after HELLO; caught by busy polling in ${r.caught} of ${r.replyUs.length}`)
    }
  }
  if (rdmaKinds.length || smcOn) console.log('(RDMA rungs measured in the RDMA guest: emulated CPU, compare rows of this run only)')
})()
