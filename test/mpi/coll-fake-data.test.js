'use strict'
// Data-movement collectives, barrier, the object tier, communicators, errors and the selection
// table over the in-process fake of the point-to-point layer (test/mpi/coll-fake.js):
// every algorithm × P = 1..7 × roots × sizes, compared with the data each rank sent.
const t = require('tap')
const fc = require('fast-check')
const coll = require('../../dist/mpi/coll')
const { run, World } = require('./coll-fake')

const pattern = (r, n, salt = 0) => Uint8Array.from({ length: n }, (_, i) => (r * 31 + i * 7 + salt) & 255)
const isPof2 = (p) => (p & (p - 1)) === 0

t.test('barrier: every algorithm, P 1..7, nobody leaves before everyone arrived', async t => {
  for (const alg of ['dissemination', 'linear', 'tree']) {
    for (let P = 1; P <= 7; P++) {
      let arrived = 0; let early = false
      await run(P, async (c, r) => {
        await new Promise(resolve => setTimeout(resolve, r * 3))
        arrived++
        await coll.barrier(c, { algorithm: alg })
        if (arrived !== P) early = true
      })
      t.notOk(early, `${alg} P=${P}`)
    }
  }
})

t.test('bcast: every algorithm × P 1..7 × root × sizes (segmented)', async t => {
  const bad = []
  for (const alg of ['binomial', 'scatterAllgather', 'linear']) {
    for (let P = 1; P <= 7; P++) {
      for (let root = 0; root < P; root++) {
        for (const n of [0, 1, 7, 100, 1001]) {
          const want = pattern(root, n, 5)
          const outs = await run(P, (c, r) => coll.bcast(c, r === root ? Uint8Array.from(want) : new Uint8Array(n), root, { algorithm: alg, segmentBytes: 64 }), { seed: n + P })
          outs.forEach((o, r) => { if (Buffer.compare(o, want) !== 0) bad.push(`${alg} P=${P} root=${root} n=${n} rank ${r}`) })
        }
      }
    }
  }
  t.same(bad, [])
  const f = await run(3, (c, r) => coll.bcast(c, r === 1 ? Float64Array.of(1.5, -2) : new Float64Array(2), 1))
  t.same(Array.from(f[0]), [1.5, -2], 'a Float64Array')
})

t.test('gather / scatter: every algorithm × P × root × block sizes, IN_PLACE at the root', async t => {
  const bad = []
  for (const alg of ['binomial', 'linear']) {
    for (let P = 1; P <= 7; P++) {
      for (let root = 0; root < P; root++) {
        for (const n of [0, 1, 13]) {
          const g = await run(P, (c, r) => coll.gather(c, pattern(r, n), r === root ? new Uint8Array(P * n) : null, root, { algorithm: alg }))
          const want = Buffer.concat(Array.from({ length: P }, (_, r) => pattern(r, n)))
          if (Buffer.compare(g[root], want) !== 0) bad.push(`gather ${alg} P=${P} root=${root} n=${n}`)
          g.forEach((x, r) => { if (r !== root && x !== null) bad.push('non-root got non-null') })
          const gi = await run(P, (c, r) => {
            if (r !== root) return coll.gather(c, pattern(r, n), null, root, { algorithm: alg })
            const out = new Uint8Array(P * n); out.set(pattern(r, n), r * n)
            return coll.gather(c, coll.IN_PLACE, out, root, { algorithm: alg })
          })
          if (Buffer.compare(gi[root], want) !== 0) bad.push(`gather IN_PLACE ${alg} P=${P} root=${root} n=${n}`)
          const s = await run(P, (c, r) => coll.scatter(c, r === root ? Uint8Array.from(want) : null, new Uint8Array(n), root, { algorithm: alg }))
          s.forEach((x, r) => { if (Buffer.compare(x, pattern(r, n)) !== 0) bad.push(`scatter ${alg} P=${P} root=${root} n=${n} rank ${r}`) })
        }
      }
    }
  }
  t.same(bad, [])
})

t.test('gatherv / scatterv / allgatherv / alltoallv with uneven counts (elements of Int32Array)', async t => {
  for (let P = 1; P <= 7; P++) {
    const counts = Array.from({ length: P }, (_, i) => (i * 3) % 4)
    const displs = []; let tot = 0
    for (const c of counts) { displs.push(tot + 1); tot += c + 1 }
    const mine = (r) => Int32Array.from({ length: counts[r] }, (_, i) => r * 1000 + i)
    const want = new Int32Array(tot + 1); for (let r = 0; r < P; r++) want.set(mine(r), displs[r])
    const root = P - 1
    const g = await run(P, (c, r) => coll.gatherv(c, mine(r), r === root ? new Int32Array(tot + 1) : null, counts, displs, root))
    t.same(Array.from(g[root]), Array.from(want), `gatherv P=${P}`)
    const s = await run(P, (c, r) => coll.scatterv(c, r === root ? want : null, counts, displs, new Int32Array(counts[r]), root))
    s.forEach((x, r) => t.same(Array.from(x), Array.from(mine(r)), `scatterv P=${P} rank ${r}`))
    const a = await run(P, (c, r) => coll.allgatherv(c, mine(r), new Int32Array(tot + 1), counts, displs))
    a.forEach((x) => t.same(Array.from(x), Array.from(want)))
    // alltoallv: rank i sends (i + j) % 3 elements to rank j
    const sc = (i) => Array.from({ length: P }, (_, j) => (i + j) % 3)
    const pre = (a) => a.reduce((acc, x) => { acc.push(acc[acc.length - 1] + x); return acc }, [0]).slice(0, -1)
    const outs = await run(P, (c, i) => {
      const scn = sc(i); const sd = pre(scn)
      const send = Float64Array.from({ length: scn.reduce((x, y) => x + y, 0) }, (_, k) => i * 100 + k)
      const rcn = Array.from({ length: P }, (_, j) => sc(j)[i]); const rd = pre(rcn)
      return coll.alltoallv(c, send, scn, sd, new Float64Array(rcn.reduce((x, y) => x + y, 0)), rcn, rd)
    })
    for (let i = 0; i < P; i++) {
      const exp = []
      for (let j = 0; j < P; j++) { const sd = pre(sc(j)); for (let k = 0; k < sc(j)[i]; k++) exp.push(j * 100 + sd[i] + k) }
      t.same(Array.from(outs[i]), exp, `alltoallv P=${P} rank ${i}`)
    }
  }
})

t.test('allgather / alltoall: every algorithm × P 1..7 × block sizes, IN_PLACE', async t => {
  const bad = []
  for (let P = 1; P <= 7; P++) {
    for (const n of [0, 1, 9, 300]) {
      const want = Buffer.concat(Array.from({ length: P }, (_, r) => pattern(r, n)))
      for (const alg of ['recursiveDoubling', 'bruck', 'ring']) {
        let outs
        try {
          outs = await run(P, (c, r) => coll.allgather(c, pattern(r, n), new Uint8Array(P * n), { algorithm: alg }))
        } catch (e) {
          if (!(alg === 'recursiveDoubling' && !isPof2(P) && e.code === 'ERR_MPI_COLL_ALGORITHM')) bad.push(`allgather ${alg} P=${P}: ${e.message}`)
          continue
        }
        outs.forEach((o, r) => { if (Buffer.compare(o, want) !== 0) bad.push(`allgather ${alg} P=${P} n=${n} rank ${r}`) })
        const ip = await run(P, (c, r) => { const o = new Uint8Array(P * n); o.set(pattern(r, n), r * n); return coll.allgather(c, coll.IN_PLACE, o, { algorithm: alg }) })
        ip.forEach((o, r) => { if (Buffer.compare(o, want) !== 0) bad.push(`allgather IN_PLACE ${alg} P=${P} n=${n} rank ${r}`) })
      }
      // alltoall: block j of rank i = pattern(i * P + j)
      const sendOf = (i) => Buffer.concat(Array.from({ length: P }, (_, j) => pattern(i * P + j, n)))
      for (const alg of ['bruck', 'linear', 'pairwise']) {
        const outs = await run(P, (c, r) => coll.alltoall(c, sendOf(r), new Uint8Array(P * n), { algorithm: alg }))
        outs.forEach((o, j) => {
          const exp = Buffer.concat(Array.from({ length: P }, (_, i) => pattern(i * P + j, n)))
          if (Buffer.compare(o, exp) !== 0) bad.push(`alltoall ${alg} P=${P} n=${n} rank ${j}`)
        })
        const ip = await run(P, (c, r) => coll.alltoall(c, coll.IN_PLACE, Uint8Array.from(sendOf(r)), { algorithm: alg }))
        ip.forEach((o, j) => {
          const exp = Buffer.concat(Array.from({ length: P }, (_, i) => pattern(i * P + j, n)))
          if (Buffer.compare(o, exp) !== 0) bad.push(`alltoall IN_PLACE ${alg} P=${P} n=${n} rank ${j}`)
        })
      }
    }
  }
  t.same(bad, [])
})

t.test('property: random collective × algorithm × P × size × root × delays agrees with the reference', async t => {
  const cases = fc.record({
    P: fc.integer({ min: 1, max: 7 }),
    n: fc.integer({ min: 0, max: 70 }),
    root: fc.nat(),
    seed: fc.integer({ min: 1, max: 1e6 }),
    seg: fc.constantFrom(8, 16, 24, 1024, 65536),
    which: fc.constantFrom('bcast', 'allgather', 'alltoall', 'allreduce', 'reduce', 'scan')
  })
  await fc.assert(fc.asyncProperty(cases, async ({ P, n, root, seed, seg, which }) => {
    root %= P
    const algs = { bcast: ['binomial', 'scatterAllgather'], allgather: ['bruck', 'ring'], alltoall: ['bruck', 'pairwise', 'linear'], allreduce: ['recursiveDoubling', 'rabenseifner', 'ring', 'reduceBcast'], reduce: ['binomial', 'rabenseifner'], scan: ['recursiveDoubling', 'linear'] }[which]
    for (const algorithm of algs) {
      const opts = { algorithm, segmentBytes: seg }
      const ins = Array.from({ length: P }, (_, r) => Float64Array.from(pattern(r, which === 'alltoall' ? n * P : n, seed)))
      let outs
      try {
        outs = await run(P, (c, r) => {
        switch (which) {
          case 'bcast': return coll.bcast(c, r === root ? ins[root] : new Float64Array(n), root, opts)
          case 'allgather': return coll.allgather(c, ins[r], new Float64Array(P * n), opts)
          case 'alltoall': return coll.alltoall(c, ins[r], new Float64Array(P * n), opts)
          case 'allreduce': return coll.allreduce(c, ins[r], new Float64Array(n), coll.SUM, opts)
          case 'reduce': return coll.reduce(c, ins[r], new Float64Array(n), coll.SUM, root, opts)
          case 'scan': return coll.scan(c, ins[r], new Float64Array(n), coll.SUM, opts)
        }
      }, { seed, maxDelay: 4 })
      } catch (e) {
        if (e.code === 'ERR_MPI_COLL_ALGORITHM' && /pof2|items|power of two/.test(e.message)) continue
        throw e
      }
      for (let r = 0; r < P; r++) {
        let want
        if (which === 'bcast') want = ins[root]
        else if (which === 'allgather') want = Float64Array.from(ins.flatMap(a => Array.from(a)))
        else if (which === 'alltoall') want = Float64Array.from(Array.from({ length: P }, (_, i) => Array.from(ins[i].subarray(r * n, (r + 1) * n))).flat())
        else {
          const upto = which === 'scan' ? r + 1 : P
          want = new Float64Array(n); for (let k = 0; k < upto; k++) for (let i = 0; i < n; i++) want[i] += ins[k][i]
          if (which === 'reduce' && r !== root) continue
        }
        if (Buffer.compare(Buffer.from(outs[r].buffer), Buffer.from(want.buffer)) !== 0) throw new Error(`${which}/${algorithm} P=${P} n=${n} root=${root} rank ${r}`)
      }
    }
  }), { numRuns: 150 })
  t.pass('150 random cases')
})

t.test('object tier: bcastObject, gatherObject, allgatherObject', async t => {
  for (let P = 1; P <= 5; P++) {
    const obj = (r) => ({ r, s: 'x'.repeat(r * 10), m: new Map([[r, [r]]]), a: new Float32Array([r]) })
    const b = await run(P, (c, r) => coll.bcastObject(c, r === P - 1 ? obj(r) : null, P - 1))
    b.forEach((x) => t.same(x, obj(P - 1)))
    const g = await run(P, (c, r) => coll.gatherObject(c, obj(r), 0))
    t.same(g[0], Array.from({ length: P }, (_, r) => obj(r)), `gatherObject P=${P}`)
    if (P > 1) t.equal(g[1], null)
    const a = await run(P, (c, r) => coll.allgatherObject(c, obj(r)))
    a.forEach((x) => t.same(x, Array.from({ length: P }, (_, r) => obj(r))))
  }
})

t.test('communicators: dup and split isolation, split order, UNDEFINED, splitLocal, free', async t => {
  const P = 6
  const w = new World(P, { hosts: ['a', 'b', 'a', 'b', 'a', 'b'] })
  const res = await Promise.all(w.comms.map(async (c, r) => {
    const d = await coll.dup(c)
    const s = await coll.split(c, r === 5 ? coll.UNDEFINED : r % 2, -r) // key -r: reversed order
    const l = await coll.splitLocal(c)
    // concurrent collectives on the parent, the dup and the split, not awaited in between: no cross-talk
    const [x, y, z] = await Promise.all([
      coll.allreduce(c, Int32Array.of(1), new Int32Array(1)),
      coll.allreduce(d, Int32Array.of(10), new Int32Array(1)),
      s === null ? null : coll.allreduce(s, Int32Array.of(r), new Int32Array(1))
    ])
    const lr = await coll.allgatherObject(l, r)
    const sr = s === null ? null : [s.rank, s.size, await coll.allgatherObject(s, r)]
    await coll.free(d)
    const afterFree = await coll.barrier(d).then(() => 'resolved', (e) => e.code)
    return { x: x[0], y: y[0], z: z && z[0], sr, lr, ctxs: [d.ctx, s && s.ctx, l.ctx], afterFree }
  }))
  for (let r = 0; r < P; r++) {
    t.equal(res[r].x, 6); t.equal(res[r].y, 60)
    if (r === 5) t.equal(res[r].sr, null, 'UNDEFINED → null')
  }
  t.same(res[0].sr, [2, 3, [4, 2, 0]], 'color 0 = ranks 4, 2, 0 by key -r')
  t.same(res[1].sr, [1, 2, [3, 1]], 'color 1 without rank 5')
  t.equal(res[0].z, 6); t.equal(res[1].z, 4)
  t.same(res[0].lr, [0, 2, 4]); t.same(res[3].lr, [1, 3, 5], 'splitLocal groups by host')
  const ctx = new Set(res[0].ctxs); t.equal(ctx.size, 3, 'distinct contexts')
  t.equal(res[0].afterFree, 'ERR_MPI_COMM_FREED', 'a collective on a freed communicator rejects (the p2p layer refuses)')
  t.equal(w.comms[0].freed, false, 'the parent is still usable')
})

t.test('errors: count mismatch, peer lost mid-collective, bad arguments, forced algorithms', async t => {
  // count mismatch between 2 ranks: both reject with ERR_MPI_COLL_MISMATCH
  const w = new World(2)
  const rs = await Promise.allSettled(w.comms.map((c, r) => coll.allreduce(c, new Float64Array(r === 0 ? 4 : 8), new Float64Array(r === 0 ? 4 : 8))))
  t.same(rs.map(x => x.reason && x.reason.code), ['ERR_MPI_COLL_MISMATCH', 'ERR_MPI_COLL_MISMATCH'])
  t.match(rs[0].reason.message, /differ between ranks/)
  const w2 = new World(3)
  const bs = await Promise.allSettled(w2.comms.map((c, r) => coll.bcast(c, new Uint8Array(r === 2 ? 5 : 4), 0, { algorithm: 'linear' })))
  t.equal(bs[2].reason.code, 'ERR_MPI_COLL_MISMATCH', 'bcast size mismatch')
  // a rank killed mid-collective: every survivor rejects with ERR_MPI_PEER_LOST within 1 s
  for (const [name, fn] of [
    ['allreduce', (c) => coll.allreduce(c, new Float64Array(1000), new Float64Array(1000), coll.SUM, { algorithm: 'ring', segmentBytes: 64 })],
    ['bcast from the lost rank', (c) => coll.bcast(c, new Uint8Array(5000), 3, { segmentBytes: 64 })],
    ['barrier', (c) => coll.barrier(c)],
    ['alltoall', (c) => coll.alltoall(c, new Uint8Array(500), new Uint8Array(500))]
  ]) {
    const wk = new World(5, { maxDelay: 3 })
    const t0 = Date.now()
    const ps = wk.comms.map((c, r) => r === 3 ? new Promise(() => {}) : fn(c))
    const settled = Promise.allSettled(ps.filter((_, r) => r !== 3))
    setTimeout(() => wk.kill(3), 2)
    const out = await settled
    t.same(out.map(x => x.status === 'rejected' && x.reason.code), Array(4).fill('ERR_MPI_PEER_LOST'), `${name}: every survivor rejects`)
    t.ok(Date.now() - t0 < 1000, `${name}: within 1 s`)
  }
  await t.rejects(run(2, (c) => coll.bcast(c, [1, 2], 0)), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(run(2, (c) => coll.bcast(c, new Uint8Array(1), 2)), { code: 'ERR_OUT_OF_RANGE' })
  await t.rejects(run(2, (c) => coll.allreduce(c, new Int32Array(1), new Int32Array(1), coll.SUM, { algorithm: 'nope' })), { code: 'ERR_MPI_COLL_ALGORITHM', message: /known: recursiveDoubling/ })
  const nc = coll.Op.create((a, b) => {}, { commute: false })
  await t.rejects(run(2, (c) => coll.allreduce(c, new Int32Array(8), new Int32Array(8), nc, { algorithm: 'ring' })), { code: 'ERR_MPI_COLL_ALGORITHM', message: /not commutative/ })
  await t.rejects(run(3, (c, r) => coll.gather(c, new Uint8Array(r === 1 ? 3 : 2), r === 0 ? new Uint8Array(6) : null, 0)), { code: 'ERR_MPI_COLL_MISMATCH' })
})

t.test('scratch pool: a full pool keeps the larger buffers (a large call after smaller ones reuses its scratch)', async t => {
  const { scratch, release } = require('../../dist/mpi/coll/util')
  const comm = {}
  for (const n of [256, 512, 1024, 2048]) release(comm, new ArrayBuffer(n))
  const big = new ArrayBuffer(1 << 20)
  release(comm, big)
  t.equal(scratch(comm, 1 << 19), big, 'the 1 MiB buffer was kept in the full pool')
  release(comm, big)
  t.equal(scratch(comm, 1 << 20), big, 'and is found again after its release')
  release(comm, big)
  release(comm, new ArrayBuffer(128))
  const got = [scratch(comm, 1), scratch(comm, 1), scratch(comm, 1), scratch(comm, 1)].map(b => b.byteLength).sort((a, b) => a - b)
  t.same(got, [512, 1024, 2048, 1 << 20], 'a smaller buffer does not displace a larger one')
})

t.test('selection table: rows, defaults, environment forcing and its fallback', async t => {
  const table = coll.algorithmTable()
  t.ok(table.length >= 25)
  for (const row of table) t.ok(row.collective && row.algorithm && row.when && row.source, `${row.collective}/${row.algorithm} has when and source`)
  t.equal(coll.envName('reduceScatterBlock'), 'FASTSOCK_MPI_COLL_REDUCE_SCATTER_BLOCK')
  const { choose, algorithmOf, wireOf } = require('../../dist/mpi/coll/select')
  // the descriptor's algorithm id comes from the record: each one names its own record back
  for (const row of table) t.equal(algorithmOf(row.collective, wireOf(row.collective, row.algorithm)).name, row.algorithm, `${row.collective}/${row.algorithm}: its wire id is its own`)
  t.throws(() => wireOf('allreduce', 'nosuch'), /no record/, 'an algorithm without a record has no wire id (never 0)')
  const c = (bytes, P, commute = true) => ({ bytes, total: bytes * P, P, commute, items: bytes / 8 })
  t.equal(choose('allreduce', c(8, 4)), 'recursiveDoubling')
  t.equal(choose('allreduce', c(1 << 20, 4)), 'rabenseifner')
  t.equal(choose('allreduce', c(1 << 20, 3)), 'ring')
  t.equal(choose('allreduce', c(65536, 2)), 'recursiveDoubling', 'P = 2: RD up to ALLREDUCE_PAIR_SHORT_MSG_SIZE')
  t.equal(choose('allreduce', c(65536 + 8, 2)), 'rabenseifner', 'P = 2: Rabenseifner above it')
  t.equal(choose('allreduce', c(1 << 20, 2)), 'rabenseifner', 'P = 2: Rabenseifner up to one segment')
  t.equal(choose('allreduce', c((1 << 20) + 8, 2)), 'recursiveDoubling', 'P = 2: RD above one segment')
  t.equal(choose('allreduce', c(65536, 4)), 'rabenseifner', 'P = 4: Rabenseifner above ALLREDUCE_SHORT_MSG_SIZE')
  t.equal(choose('allreduce', c(1 << 20, 2, false)), 'recursiveDoubling', 'P = 2, non-commutative: RD')
  t.equal(choose('allreduce', c(1 << 20, 3, false)), 'recursiveDoubling')
  t.equal(choose('barrier', c(0, 3)), 'dissemination', 'barrier P = 3: dissemination')
  for (const P of [4, 5, 6, 7]) t.equal(choose('barrier', c(0, P)), 'linear', `barrier P = ${P}: linear (Open MPI 4.1's choice for 4 <= P < 8)`)
  t.equal(choose('barrier', c(0, 8)), 'dissemination', 'barrier P = 8: dissemination')
  t.equal(choose('bcast', c(1 << 20, 4)), 'binomial')
  t.equal(choose('bcast', c(1 << 20, 8)), 'scatterAllgather')
  t.equal(choose('allgather', c(8, 4)), 'recursiveDoubling')
  t.equal(choose('allgather', c(8, 3)), 'bruck')
  t.equal(choose('alltoall', c(1 << 16, 4)), 'pairwise')
  t.equal(choose('allreduce', c(64, 4), undefined, { FASTSOCK_MPI_COLL_ALLREDUCE: 'ring' }), 'ring', 'env forces')
  t.equal(choose('allreduce', c(8, 4, false), undefined, { FASTSOCK_MPI_COLL_ALLREDUCE: 'ring' }), 'recursiveDoubling', 'env-forced ring cannot serve a non-commutative op: default')
  t.throws(() => choose('allreduce', c(8, 4), undefined, { FASTSOCK_MPI_COLL_ALLREDUCE: 'bogus' }), { code: 'ERR_MPI_COLL_ALGORITHM', message: /FASTSOCK_MPI_COLL_ALLREDUCE/ })
})

t.test('non-blocking: ibarrier, ibcast, iallreduce handles', async t => {
  const outs = await run(4, async (c, r) => {
    const b = coll.ibarrier(c)
    const bc = coll.ibcast(c, r === 0 ? Int32Array.of(7, 8) : new Int32Array(2), 0)
    const ar = coll.iallreduce(c, Int32Array.of(r), new Int32Array(1))
    const first = ar.test()
    const st = await ar.wait({ timeout: 5000 })
    await b.wait(); await bc.wait()
    return [first, st.count, Array.from(await bc.result), (await ar.result)[0], b.test() !== null]
  })
  for (const o of outs) t.same(o, [null, 4, [7, 8], 6, true])
  const { Request, waitAll } = require('../../dist/mpi/request')
  const sts = await run(3, async (c, r) => {
    const reqs = [coll.ibarrier(c), coll.iallreduce(c, Int32Array.of(r), new Int32Array(1))]
    return [reqs.every(q => q instanceof Request), (await waitAll(reqs)).map(s => s.count)]
  })
  for (const s of sts) t.same(s, [true, [0, 4]], 'part 1\'s Request: waitAll takes them')
  const w = new World(2)
  const h = coll.ibarrier(w.comms[0])
  await t.rejects(h.wait({ timeout: 20 }), { code: 'ERR_MPI_TIMEOUT' })
})

t.test('argument check (opts.check): op, root, count, kind or collective differing → ERR_MPI_COLL_MISMATCH on every rank', async t => {
  const cases = [
    ['op', (c, r) => coll.allreduce(c, new Int32Array(4), new Int32Array(4), r === 1 ? coll.MAX : coll.SUM, { check: true })],
    ['root', (c, r) => coll.bcast(c, new Uint8Array(4), r === 2 ? 1 : 0, { check: true })],
    ['count', (c, r) => coll.reduce(c, new Float64Array(r === 0 ? 3 : 4), new Float64Array(4), coll.SUM, 0, { check: true })],
    ['array kind', (c, r) => coll.allreduce(c, r === 0 ? new Int32Array(2) : new Float32Array(2), r === 0 ? new Int32Array(2) : new Float32Array(2), coll.SUM, { check: true })],
    ['collective', (c, r) => r === 0 ? coll.allgather(c, new Uint8Array(1), new Uint8Array(3), { check: true }) : coll.alltoall(c, new Uint8Array(3), new Uint8Array(3), { check: true })]
  ]
  for (const [field, fn] of cases) {
    const w = new World(3)
    const out = await Promise.allSettled(w.comms.map((c, r) => fn(c, r)))
    t.same(out.map(x => x.reason && x.reason.code), Array(3).fill('ERR_MPI_COLL_MISMATCH'), `${field}: every rank rejects`)
    t.match(out[0].reason.message, field)
  }
  const ok = await run(3, (c, r) => coll.allreduce(c, Int32Array.of(r), new Int32Array(1), coll.SUM, { check: true }))
  t.same(ok.map(x => x[0]), [3, 3, 3], 'matching arguments pass')
})
