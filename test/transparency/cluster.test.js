'use strict'
// Cluster under the launcher (docs/transparency.md, "Cluster"): two workers share a port; a
// fastsock client outside the cluster reaches them on the fast rungs. Round-robin (the default):
// the primary owns the side channel and hands each client, unread, to the workers in turn, so
// both serve fast connections. 'none': the first worker to bind the side channel serves the
// fast connections (the others still serve TCP ones).
const t = require('tap')
const path = require('path')
const net = require('net')
const { spawnNode, ROOT, closedPort } = require('../helpers/util')
const { rungs } = require('../helpers/rungs')
const fastsock = require('../..')

const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')
const APP = path.join(ROOT, 'test', 'fixtures', 'transparency', 'cluster-workers.js')

/** One HTTP/1.0 request on a fastsock connection: [body, client transport]. */
function get (port, transports) {
  return new Promise((resolve, reject) => {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports }, () => c.end('GET / HTTP/1.0\r\n\r\n'))
    let data = ''
    c.on('data', d => { data += d })
    c.on('error', reject)
    c.on('end', () => resolve([data.split('\r\n\r\n')[1], c.transport]))
  })
}

for (const policy of ['rr', 'none']) {
  for (const rung of ['shm', 'unix']) {
    t.test(`cluster (scheduling ${policy}) on ${rung}`, { skip: !rungs.includes(rung) && `${rung} is not available here`, timeout: 30000 }, async t => {
      const port = await closedPort()
      const app = spawnNode(t, [CLI, 'run', '--', process.execPath, APP], {
        env: { NODE_CLUSTER_SCHED_POLICY: policy, CLUSTER_PORT: String(port), FASTSOCK_TRANSPORTS: `${rung},tcp` }
      })
      await app.waitFor(m => m.port === port)
      const pids = new Set()
      for (let i = 0; i < 6; i++) {
        const [body, clientTransport] = await get(port, [rung, 'tcp'])
        const [pid, serverTransport] = body.split(' ')
        t.equal(clientTransport, rung, `request ${i}: client on ${rung}`)
        t.equal(serverTransport, rung, `request ${i}: worker ${pid} on ${rung}`)
        pids.add(pid)
      }
      if (policy === 'rr') t.equal(pids.size, 2, 'both workers served fast connections (round robin)')
      else t.ok(pids.size >= 1, `worker(s) ${[...pids].join(', ')} served them`)
      // A plain net client still gets TCP from the same cluster.
      const body = await new Promise((resolve, reject) => {
        const c = net.connect(port, '127.0.0.1', () => c.end('GET / HTTP/1.0\r\n\r\n'))
        let d = ''
        c.on('data', x => { d += x }).on('end', () => resolve(d.split('\r\n\r\n')[1])).on('error', reject)
      })
      t.match(body, / tcp$/, 'a plain net client is served over tcp')
      // SIGTERM (which the launcher forwards) ends the primary and with it the workers, which
      // hold the launcher's stdout: a SIGKILL of the launcher alone would leave them running.
      app.child.kill('SIGTERM')
      await app.exited
    })
  }
}
