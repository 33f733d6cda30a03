'use strict'
// fastsock/mpi's device under random and mutated frames (issue 33's target: 10^5 frames leave a
// rank up with bounded memory): a live rank (test/fixtures/mpi/frame-target.js) gets `--frames`
// frames from connections of fresh ranks, each a valid HELLO then up to 8 frames, each random
// bytes or a valid-looking header (EAGER, RTS, CTS, DATA, BYE) with one field replaced by a
// random u32 in half of them. Prints the frames sent, the connections and losses the rank saw,
// its memory before and after (rss, heap + array buffers, after gc), and whether it is still up
// and receiving from an honest rank. Exits 1 when the rank died or stopped answering.
//
//   node bench/mpi-fuzz.js [--frames 100000] [--seed 1]
//
// The test of the same (test/mpi/wire-fuzz.test.js) sends a few hundred.
const { HONEST, startTarget, hello, header, dial, send, wire } = require('../test/helpers/mpi-wire.js')

const argv = process.argv.slice(2)
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt }
const FRAMES = Number(opt('--frames', 100000))
let seed = Number(opt('--seed', 1)) >>> 0

/** xorshift32: a reproducible stream of u32s. */
const rnd = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed }
const KINDS = [wire.EAGER, wire.RTS, wire.CTS, wire.DATA, wire.BYE]

function frame (rank) {
  if (rnd() % 4 === 0) { const b = Buffer.alloc(rnd() % 65); for (let i = 0; i < b.length; i++) b[i] = rnd() & 255; return b }
  const kind = KINDS[rnd() % KINDS.length]
  const length = rnd() % 65
  const h = header({ kind, ctx: [0, 1, 2, 7][rnd() % 4], source: rank, tag: rnd() % 20, length, sreq: rnd() % 4, rreq: rnd() % 4 })
  if (rnd() % 2 === 0) h.writeUInt32LE(rnd(), 4 * (rnd() % 8))
  return Buffer.concat([h, Buffer.alloc(kind === wire.EAGER || kind === wire.DATA ? length : 0, 1)])
}

const mib = n => (n / 2 ** 20).toFixed(1)

async function main () {
  const target = await startTarget({ FRAME_TARGET_SIZE: String(Math.max(1 << 16, FRAMES + 2)) })
  const before = await target.stats()
  let sent = 0
  let conns = 0
  let rank = 2
  const t0 = Date.now()
  while (sent < FRAMES) {
    const c = await dial(target.port, hello({ rank: rank++ }))
    conns++
    if (c.reply === null || c.reply.readUInt32LE(4) !== 1) throw new Error(`rank ${rank - 1} was not accepted`)
    const n = 1 + rnd() % 8
    for (let i = 0; i < n && sent < FRAMES; i++, sent++) await send(c, frame(rank - 1))
    c.socket.destroy()
    await c.closed
    if (conns % (process.env.FUZZ_EVERY ? 1 : 2000) === 0) process.stderr.write(`${sent} frames, ${conns} connections\n`)
  }
  const after = await target.stats()
  // An honest rank still gets through.
  const honest = rank++
  const c = await dial(target.port, hello({ rank: honest }))
  await send(c, Buffer.concat([header({ kind: wire.EAGER, source: honest, tag: HONEST, length: 8 }), Buffer.alloc(8)]))
  await target.next(e => e.got && e.got.source === honest && e.got.tag === HONEST, 10000)
  c.socket.destroy()
  console.log(`frames ${sent}, connections ${conns}, ranks lost ${after.lost}, ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  console.log(`rss ${mib(before.rss)} -> ${mib(after.rss)} MiB; heap + array buffers ${mib(before.heapUsed + before.arrayBuffers)} -> ${mib(after.heapUsed + after.arrayBuffers)} MiB`)
  console.log('the rank is up and received from an honest rank afterwards')
  await target.exit()
}

main().catch(err => { console.error(err.message); process.exit(1) })
