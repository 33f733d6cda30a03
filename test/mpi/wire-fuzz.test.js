'use strict'
// Every byte a peer sends fastsock/mpi's device is checked before use (issue 33): a live rank
// (a real process, test/fixtures/mpi/frame-target.js) gets HELLOs and frames from a socket
// speaking the wire (test/helpers/mpi-wire.js): a frame claiming 2^42 bytes, each field out of
// bounds, then random and mutated HELLOs and frames (fast-check). The rank must stay up with
// bounded memory, close the offending connection, fail what waited on that rank with
// ERR_MPI_PROTOCOL naming the field, and still receive from an honest rank afterwards.
// (bench/mpi-fuzz.js sends 10^5 frames the same way.)
const t = require('tap')
const fc = require('fast-check')
const { HONEST, SECRET, startTarget, hello, header, dial, send, wire } = require('../helpers/mpi-wire')

const { EAGER, RTS, CTS, DATA, BYE } = wire

/** FUZZ_SEED=n replays a run fast-check reported. */
const SEED = process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}

let target
let nextRank = 2 // a fresh world rank per connection (a lost rank is never accepted again)

t.before(async () => { target = await startTarget() })
t.teardown(async () => { if (target) await target.exit() })

/** An honest rank sends 8 bytes: the target's ANY_SOURCE receive must report them. */
async function honest (t) {
  const tag = HONEST
  const rank = nextRank++
  const c = await dial(target.port, hello({ rank }))
  t.ok(c.reply !== null && c.reply.readUInt32LE(4) === 1, `rank ${rank} accepted`)
  await send(c, Buffer.concat([header({ kind: EAGER, source: rank, tag, length: 8 }), Buffer.alloc(8, 7)]))
  const ev = await target.next(e => e.got && e.got.source === rank && e.got.tag === tag)
  t.same(ev.got, { source: rank, tag, count: 8 })
  c.socket.end()
}

/** Sends `bytes` as a fresh rank; resolves with the failure the target reports for that rank. */
async function refused (bytes, eager = 4096) {
  const rank = nextRank++
  await target.watch(rank)
  const c = await dial(target.port, hello({ rank, eager }))
  if (c.reply === null) throw new Error('the HELLO was refused')
  await send(c, bytes)
  const ev = await target.next(e => e.failed && e.failed.rank === rank)
  await c.closed // the target closed the connection
  return ev.failed
}

t.test('a frame claiming 2^42 bytes: ERR_MPI_PROTOCOL, the rank stays up and serves others', async t => {
  const f = await refused(header({ kind: EAGER, source: nextRank, tag: 1, length: 2n ** 42n }))
  t.equal(f.code, 'ERR_MPI_PROTOCOL')
  t.match(f.message, /EAGER frame of 4398046511104 bytes above its eager threshold of 4096/)
  const g = await refused(header({ kind: DATA, source: 0, tag: 1, length: 2n ** 42n, rreq: 5 }))
  t.match(g.message, /DATA for unknown request 5/)
  const h = await refused(header({ kind: RTS, source: 0, tag: 1, length: 2n ** 63n, sreq: 1 }))
  t.match(h.message, /RTS frame claiming 92233720368547\d+ bytes/)
  await honest(t)
})

t.test('each field is checked: kind, tag, source, request ids, lengths', async t => {
  const cases = [
    [r => header({ kind: 9, source: r }), /unknown frame kind 9/],
    [r => header({ kind: EAGER, source: r, tag: -1, length: 0 }), /EAGER frame with tag -1/],
    [r => header({ kind: RTS, source: 1 << 22, tag: 0, length: 10, sreq: 1 }), /source 4194304 \(a job of \d+ ranks\)/],
    [r => header({ kind: EAGER, source: r + 1, tag: 0, length: 0 }), /claiming source \d+, not its own rank there/],
    [r => header({ kind: RTS, source: r, tag: 0, length: 100000 }), /RTS without a request id/],
    [r => header({ kind: CTS, source: r, length: 10, sreq: 77, rreq: 1 }), /CTS for unknown request 77/],
    [r => header({ kind: BYE, length: 3 }), /BYE with 3 payload bytes/]
  ]
  for (const [make, re] of cases) {
    const f = await refused(make(nextRank))
    t.equal(f.code, 'ERR_MPI_PROTOCOL')
    t.match(f.message, re)
  }
  // The threshold is the one the sender announced in its HELLO.
  const f = await refused(Buffer.concat([header({ kind: EAGER, source: nextRank, length: 200 }), Buffer.alloc(200)]), 100)
  t.match(f.message, /EAGER frame of 200 bytes above its eager threshold of 100/)
  await honest(t)
})

t.test('HELLOs: random and mutated ones are refused or accepted, never fatal', async t => {
  const before = await target.stats()
  // Far from the ranks the other tests take (below 2^16): a mutated rank field names a rank they never use.
  const valid = hello({ rank: 1 << 19 })
  const mutated = fc.tuple(fc.nat(wire.HELLO_BYTES - 1), fc.integer({ min: 0, max: 255 }))
    .map(([i, v]) => { const b = Buffer.from(valid); b[i] = v; return b })
  const helloArb = fc.oneof(fc.uint8Array({ maxLength: 40 }).map(a => Buffer.from(a)), mutated)
  await fc.assert(fc.asyncProperty(helloArb, async bytes => {
    const c = await dial(target.port, bytes.length > 0 ? bytes : Buffer.alloc(1), bytes.length < wire.HELLO_BYTES ? 20 : Infinity)
    if (c.reply !== null) {
      const magic = c.reply.readUInt32LE(0)
      if (magic !== wire.MAGIC) return false
    }
    c.socket.destroy()
    await c.closed
    return true
  }), { numRuns: 80, ...SEED })
  const after = await target.stats()
  t.ok(after.rss - before.rss < 64 * 2 ** 20, `rss grew ${((after.rss - before.rss) / 2 ** 20).toFixed(1)} MiB`)
  await honest(t)
})

t.test('a dialer without the job secret gets nothing in: its proof is refused, its frames never delivered', async t => {
  for (const secret of [Buffer.from('another-secret-of-at-least-128-bits'), Buffer.alloc(0)]) {
    const rank = nextRank++
    const c = await dial(target.port, hello({ rank }), Infinity, secret)
    t.ok(c.reply !== null && c.reply.readUInt32LE(4) === 1, 'the REPLY comes (it proves the target, not the dialer)')
    await send(c, Buffer.concat([header({ kind: EAGER, source: rank, tag: HONEST, length: 8 }), Buffer.alloc(8, 9)]))
    await c.closed
    t.ok(c.isClosed(), `a proof under a ${secret.length}-byte key: the target closed the connection`)
    t.notOk(target.events.some(e => e.got && e.got.source === rank), 'its message was not received')
  }
  // The REPLY's proof: a dialer can tell the target knows the secret (and it is not the secret).
  const h = hello({ rank: nextRank++ })
  const c = await dial(target.port, h)
  const nA = h.subarray(wire.HELLO_NONCE, wire.HELLO_NONCE + 32)
  const nB = c.reply.subarray(wire.REPLY_NONCE, wire.REPLY_NONCE + 32)
  const auth = require('../../dist/mpi/auth.js')
  t.ok(auth.verify(SECRET, 'hello', 'B', nA, nB, c.reply.subarray(wire.REPLY_PROOF, wire.REPLY_PROOF + 32)), "the target's proof verifies under the job secret")
  t.equal(c.reply.indexOf(SECRET), -1, 'the secret is not on the wire')
  c.socket.destroy()
  await c.closed
  await honest(t)
})

/** A frame as a fuzzed sender would write it: valid-looking, then maybe one u32 replaced, plus payload bytes. */
const frameArb = rank => fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map(a => Buffer.from(a)),
  fc.record({
    kind: fc.constantFrom(EAGER, RTS, CTS, DATA, BYE),
    ctx: fc.constantFrom(0, 1, 2, 7),
    tag: fc.integer({ min: 0, max: 20 }),
    length: fc.nat(64),
    sreq: fc.nat(3),
    rreq: fc.nat(3),
    mutate: fc.option(fc.tuple(fc.nat(7), fc.nat(0xffffffff)), { nil: null })
  }).map(f => {
    const h = header({ ...f, source: rank })
    if (f.mutate !== null) h.writeUInt32LE(f.mutate[1], 4 * f.mutate[0])
    return Buffer.concat([h, Buffer.alloc(f.kind === EAGER || f.kind === DATA ? f.length : 0, 1)])
  })
)

t.test('frames: random and mutated sequences leave the rank up with bounded memory', async t => {
  const before = await target.stats()
  const seq = fc.integer({ min: 2, max: 1 << 19 }).chain(rank => fc.tuple(fc.constant(rank), fc.array(frameArb(rank), { minLength: 1, maxLength: 8 })))
  let runs = 0
  await fc.assert(fc.asyncProperty(seq, async ([, frames]) => {
    const rank = nextRank++
    const c = await dial(target.port, hello({ rank }))
    if (c.reply === null || c.reply.readUInt32LE(4) !== 1) throw new Error(`rank ${rank} not accepted: ${c.reply === null ? "closed" : c.reply.toString("hex")}; ${target.stderr}`)
    for (const f of frames) await send(c, f)
    c.socket.destroy()
    await c.closed
    runs++
    return true
  }), { numRuns: 150, ...SEED })
  const after = await target.stats()
  t.equal(runs, 150)
  t.ok(after.lost >= 100, `the target saw the senders go (${after.lost} losses)`)
  t.ok(after.rss - before.rss < 128 * 2 ** 20, `rss grew ${((after.rss - before.rss) / 2 ** 20).toFixed(1)} MiB`)
  t.ok(after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers < 32 * 2 ** 20,
    `heap + array buffers grew ${((after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / 2 ** 20).toFixed(1)} MiB`)
  await honest(t)
  t.equal(target.child.exitCode, null, 'the target is still running')
})
