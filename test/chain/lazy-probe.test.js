'use strict'
// A connect probes the rungs a connector (the side channel) serves first; the other fast rungs
// (verbs, rsocket, smc, sdp) are probed only when the chain reaches them: a process whose first
// connection goes over shm or unix to a fastsock server in another process never runs their
// probes (verbs' dlopen of rdma-core). A chain that reaches them still probes and skips them.
// The client is a fresh process (probe results are kept for the life of a process).
const t = require('tap')
const { rungs: available } = require('../helpers/rungs')
const { spawnNode } = require('../helpers/util')

const fast = available.find(r => r === 'shm' || r === 'unix')
const skip = !fast && 'no side-channel rung is available here'

const SERVER = `
const fastsock = require('.')
const server = fastsock.createServer(s => { s.on('error', () => {}); s.pipe(s) })
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ event: 'listening', port: server.address().port }) + '\\n'))
`

// Counts the later rungs' probe() calls, connects with the default chain, then with only the
// later rungs and tcp; prints the rung and the counts after each.
const CLIENT = `
const fastsock = require('.')
const { RUNGS } = require('./dist/transports/registry.js')
const later = ['verbs', 'rsocket', 'smc', 'sdp']
const calls = Object.fromEntries(later.map(n => [n, 0]))
for (const r of RUNGS) {
  if (!later.includes(r.name)) continue
  const probe = r.probe
  r.probe = function (...a) { calls[r.name]++; return probe.apply(this, a) }
}
const port = Number(process.argv[1])
const report = (step, c) => process.stdout.write(JSON.stringify({ event: step, transport: c.transport, calls }) + '\\n')
const c = fastsock.connect({ port, host: '127.0.0.1', transportTimeoutMs: 5000 }, () => {
  report('default', c)
  c.destroy()
  const d = fastsock.connect({ port, host: '127.0.0.1', transports: [...later, 'tcp'] }, () => {
    report('later', d)
    d.destroy()
  })
})
`

t.test('a connection on a side-channel rung probes no later rung; a chain that reaches them does', { skip }, async t => {
  const server = spawnNode(t, ['-e', SERVER])
  const port = (await server.waitFor(m => m.event === 'listening')).port
  const client = spawnNode(t, ['-e', CLIENT, String(port)])
  const first = await client.waitFor(m => m.event === 'default')
  t.ok(first.transport === 'shm' || first.transport === 'unix', `connected over a side-channel rung (${first.transport})`)
  t.same(first.calls, { verbs: 0, rsocket: 0, smc: 0, sdp: 0 }, 'verbs, rsocket, smc and sdp were not probed')
  const second = await client.waitFor(m => m.event === 'later')
  t.ok(second.transport, `a chain of the later rungs and tcp connected (${second.transport})`)
  t.same(second.calls, { verbs: 1, rsocket: 1, smc: 1, sdp: 1 }, 'each later rung probed once when the chain reached it')
})
