'use strict'
// Arguments that differ between ranks, detected by default (no { check: true }): every message of
// a collective carries a 16-byte descriptor of the call (lib/mpi/coll/check.ts), so a root, op,
// element kind, count or collective that differs rejects with ERR_MPI_COLL_MISMATCH naming it,
// and the abort notice ends the waits of the ranks that would otherwise wait forever.
// Real processes (test/fixtures/mpi/coll-mismatch.js), P = 2 and 3; every rank must settle within
// the fixture's guard (4 s) with the outcome below. "ok" marks a rank that legitimately completes:
// it only sends in that collective (bcast/scatter root, a reduce/gather leaf other than root + 1),
// so no message of a differing rank reaches it (docs/mpi-collectives.md, "Errors").
const t = require('tap')
const path = require('path')
const { spawnRanks, describe } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'coll-mismatch.js')
const M = 'ERR_MPI_COLL_MISMATCH'

// case → [expected outcome per rank at P = 2, at P = 3, what the message must name]
// (root: rank 0 passes 0, the others 1; op: rank 0 SUM, the others MAX; collective: rank 0 bcast, the others allreduce)
const EXPECT = {
  'bcast-root': [['ok', 'ok'], ['ok', 'ok', 'ok'], null], // every root only sends; rank 2 gets rank 1's data as it asked
  'reduce-root': [[M, M], [M, M, 'ok'], /root/],
  'gather-root': [[M, M], [M, M, 'ok'], /root/],
  'scatter-root': [['ok', 'ok'], ['ok', 'ok', 'ok'], null],
  'allreduce-op': [[M, M], [M, M, M], /op/],
  'reduce-op': [[M, M], [M, M, 'ok'], /op/],
  'allreduce-kind': [[M, M], [M, M, M], /element kind/],
  'reduce-kind': [[M, M], [M, M, 'ok'], /element kind/],
  'allreduce-count': [[M, M], [M, M, M], /count/],
  'bcast-count': [['ok', M], ['ok', M, M], /count/],
  collective: [['ok', M], ['ok', M, M], /collective/],
  'collective-rev': [[M, M], [M, M, M], /collective/],
  'allreduce-op-large': [[M, M], [M, M, M], /op/],
  'bcast-root-swap-check': [[M, M], [M, M, M], /root/],
  agree: [['ok', 'ok'], ['ok', 'ok', 'ok'], null]
}

for (const np of [2, 3]) {
  t.test(`mismatched arguments at P = ${np}: every rank rejects (or completes, where it only sends) within the guard`, async t => {
    const ranks = await spawnRanks(FIXTURE, { np, args: Object.keys(EXPECT), timeoutMs: 120000, env: { GUARD_MS: '4000' } })
    t.same(ranks.map(r => r.code), Array(np).fill(0), `every rank exits 0${ranks.some(r => r.code !== 0) ? '\n' + describe(ranks) : ''}`)
    const got = {}
    for (const r of ranks) {
      for (const line of r.stdout.split('\n')) {
        const m = /^case (\S+) (\d+) (\S+) (\d+)(?: (.*))?$/.exec(line)
        if (m !== null) (got[m[1]] ??= [])[Number(m[2])] = { outcome: m[3], ms: Number(m[4]), message: m[5] ? JSON.parse(m[5]) : '' }
      }
    }
    for (const [name, [p2, p3, names]] of Object.entries(EXPECT)) {
      const want = np === 2 ? p2 : p3
      const res = got[name] ?? []
      t.same(res.map(x => x && x.outcome), want, `${name}: outcomes ${JSON.stringify(res.map(x => x && x.outcome))}`)
      for (let r = 0; r < np; r++) {
        const x = res[r]
        if (x === undefined || x.outcome !== M) continue
        t.ok(x.ms < 3000, `${name}: rank ${r} rejected after ${x.ms} ms`)
        if (names !== null) t.match(x.message, names, `${name}: rank ${r}'s message names the argument: ${x.message}`)
        t.match(x.message, /arguments differ between ranks/, `${name}: rank ${r}: a mismatch message`)
      }
    }
    // the first rank to see the difference states both values
    const first = (got['allreduce-op'] ?? []).find(x => x && /op differs: this rank (SUM|MAX), rank \d (SUM|MAX)/.test(x.message))
    t.ok(first, 'allreduce-op: a rank says "op differs: this rank SUM, rank 1 MAX" (its value and the peer\'s)')
  })
}
