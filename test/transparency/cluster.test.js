'use strict'
// Cluster under the launcher, as documented in docs/transparency.md ("Cluster"): workers sharing
// a port serve over TCP in this version (round-robin: the primary owns the listen socket; 'none':
// the side channel cannot listen from a worker yet), with no side channel left half-alive, so
// connections neither break nor wait out a fast-rung timeout.
const t = require('tap')
const path = require('path')
const { spawnNode, ROOT } = require('../helpers/util')

const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')
const APP = path.join(ROOT, 'test', 'fixtures', 'transparency', 'cluster-app.js')

for (const policy of ['rr', 'none']) {
  t.test(`cluster (scheduling ${policy}): workers serve, over tcp, without delay`, async t => {
    const child = spawnNode(t, [CLI, 'run', '--', process.execPath, APP], { env: { NODE_CLUSTER_SCHED_POLICY: policy } })
    const m = await child.waitFor(m => 'server' in m)
    t.same([m.server, m.client], ['tcp', 'tcp'])
    t.ok(m.ms < 500, `the request took ${m.ms} ms (no fast-rung timeout waited out)`)
  })
}
