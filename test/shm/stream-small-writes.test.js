'use strict'
// Streaming many small writes between two processes on different CPUs, in rounds, each acked by
// the receiver once it has every byte: a lost wake-up (bytes left in the ring while the reader
// sleeps) shows up as a round that never completes. Regression test for exactly that race.
const t = require('tap')
const { execFileSync } = require('child_process')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const fastsock = require('../..')
const os = require('os')

const skip = !rungs.includes('shm') && 'shm is not available here'
let taskset = null
try { execFileSync('taskset', ['-c', '0', 'true']); taskset = 'taskset' } catch {}

t.test('rounds of small writes all arrive', { skip, timeout: 60000 }, async t => {
  const cpus = os.cpus().length
  const args = ['-e', `
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    let want = 0, got = 0, sock = null
    // Acks when every byte of the announced total is in: checked on data and on the announcement
    // (every byte may arrive before the stdin line does).
    const check = () => { if (sock !== null && want > 0 && got >= want) { got -= want; want = 0; sock.write('k') } }
    process.stdin.on('data', d => { for (const n of String(d).trim().split(/\\s+/)) want += Number(n); check() })
    const server = fastsock.createServer({ transports: ['shm'] }, s => {
      sock = s
      s.on('data', d => { got += d.length; check() })
    })
    server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })))
  `]
  // This process on the first CPU, the receiver on the last: the cross-core case where it showed.
  const pin = taskset !== null && cpus > 1
  if (pin) execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)], { stdio: 'ignore' })
  const peer = spawnNode(t, pin ? ['-e', `require('child_process').execFileSync('taskset', ['-a', '-pc', '${cpus - 1}', String(process.pid)]); ${args[1]}`] : args)
  t.comment(pin ? 'pinned to CPUs 0 and ' + (cpus - 1) : 'not pinned (no taskset or one CPU)')
  const { port } = await peer.waitFor(m => m.port)
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(c, 'connect')
  for (const size of [4, 16, 64, 65536]) {
    const buf = Buffer.alloc(size, 1)
    for (let round = 0; round < 5; round++) {
      const n = size >= 65536 ? 200 : 20000
      peer.child.stdin.write(`${n * size}\n`)
      await new Promise(resolve => setTimeout(resolve, 5)) // the receiver learns the total first
      const acked = once(c, 'data', 10000)
      let sent = 0
      await new Promise(resolve => {
        const pump = () => { while (sent < n) { sent++; if (!c.write(buf)) return c.once('drain', pump) } resolve() }
        pump()
      })
      await within(acked, 10000, `round ${round} of ${n} x ${size} B`)
    }
  }
  t.pass('every round of 4 B .. 64 KiB writes arrived and was acked')
  c.destroy()
})
