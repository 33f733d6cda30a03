'use strict'
// `fastsock pipe`: the command runs end to end against its own peer process and reports every
// channel it should. No timing assertions: only that the figures exist, are finite and positive,
// and that each row names the transport that actually ran.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { root, tools, run } = require('./helpers/cli')

function positiveFinite (t, x, what) {
  t.ok(typeof x === 'number' && Number.isFinite(x) && x > 0, `${what} is a positive finite number (${x})`)
}

t.test('pipe --quick --json - measures every available rung and the net baselines', async (t) => {
  const dir = t.testdir({})
  const svg = path.join(dir, 'pipe.svg')
  const res = await run(['pipe', '--quick', '--json', '-', '--plot', svg, '--no-progress'], { cwd: dir })
  t.equal(res.signal, null, 'not killed by the timeout')
  const tail = res.stderr.includes('Errors:') ? res.stderr.slice(res.stderr.indexOf('Errors:')) : res.stderr.slice(-500)
  t.equal(res.code, 0, `exit status 0 (${tail.trim()})`)
  const doc = JSON.parse(res.stdout)
  t.equal(doc.tool, 'fastsock pipe')
  t.same(doc.errors, [], 'no cell failed')

  // The rungs the library itself reports available here, asked independently of the CLI.
  const fastsock = require(root)
  const available = fastsock.transports().filter((r) => r.available).map((r) => r.name)
  t.ok(available.includes('tcp'), 'the tcp rung is always available')
  const expected = [
    ...available.map((name) => ({ channel: `fastsock:${name}`, transport: name })),
    { channel: 'net:tcp', transport: 'tcp' },
    { channel: 'net:unix', transport: 'unix' }
  ]
  const sizes = doc.options.sizes
  t.ok(sizes.length >= 3, 'a few sizes')
  t.equal(sizes[0], 1, 'the sweep starts at 1 byte')

  for (const { channel, transport } of expected) {
    const rows = doc.pingpong.filter((r) => r.channel === channel)
    t.same(rows.map((r) => r.bytes), sizes, `${channel}: one ping-pong row per size`)
    for (const r of rows) {
      t.equal(r.transport, transport, `${channel} ${r.bytes} B ran over ${transport}`)
      positiveFinite(t, r.halfRttUs.median, `${channel} ${r.bytes} B median RTT/2`)
      positiveFinite(t, r.halfRttUs.sextile, `${channel} ${r.bytes} B sextile RTT/2`)
      positiveFinite(t, r.halfRttUs.p99, `${channel} ${r.bytes} B p99 RTT/2`)
      t.ok(r.halfRttUs.sextile <= r.halfRttUs.median && r.halfRttUs.median <= r.halfRttUs.p99, `${channel} ${r.bytes} B quantiles are ordered`)
      positiveFinite(t, r.mbPerSec, `${channel} ${r.bytes} B MB/s`)
      t.ok(r.iterations >= doc.options.minIters, `${channel} ${r.bytes} B ran at least minIters round trips`)
    }
    const stream = doc.stream.filter((r) => r.channel === channel)
    t.ok(stream.length > 0, `${channel}: stream rows`)
    for (const r of stream) positiveFinite(t, r.mbPerSec, `${channel} stream ${r.bytes} B MB/s`)
    const fit = doc.fits.find((f) => f.channel === channel)
    t.ok(fit && Number.isFinite(fit.tsUs) && Number.isFinite(fit.tbNsPerByte), `${channel}: ts/tb fitted`)
  }

  // Typed mode: fastsock direct on each rung, JSON / v8 / raw over net TCP, all checked end to end.
  for (const method of ['fastsock', 'raw', 'v8', 'json']) {
    const rows = doc.typed.filter((r) => r.method === method)
    t.ok(rows.length > 0, `typed rows for ${method}`)
    for (const r of rows) positiveFinite(t, r.perArrayUs.median, `typed ${r.label} ${r.elementType} ${r.bytes} B`)
  }
  for (const r of doc.typed.filter((x) => x.method === 'json')) t.equal(r.speedupVsJson, 1, 'JSON against itself is 1×')

  if (doc.native.loaded) {
    positiveFinite(t, doc.native.spinHalfRttNs, 'busy-poll floor')
    t.ok(['near', 'far', 'busy'].includes(doc.placement.before.state), `placement state reported (${doc.placement.before.state})`)
  }

  t.ok(fs.existsSync(svg), 'the SVG plot was written')
  const text = fs.readFileSync(svg, 'utf8')
  t.match(text, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, 'it is an SVG document')
  for (const { channel } of expected) t.ok(text.includes(channel), `the plot names ${channel}`)
  t.match(res.stderr, /Ping-pong: median half round-trip latency/, 'the tables went to stderr while JSON took stdout')
})

t.test('pipe --csv - writes one CSV row per measured size', async (t) => {
  const dir = t.testdir({})
  const res = await run(['pipe', '--quick', '--mode', 'pingpong', '--transports', 'net-tcp', '--csv', '-', '--no-plot'], { cwd: dir })
  t.equal(res.code, 0, res.stderr.slice(-500))
  const lines = res.stdout.trim().split('\n')
  const head = lines[0].split(',')
  t.equal(head[0], 'section')
  const pingpong = lines.slice(1).map((l) => l.split(',')).filter((c) => c[0] === 'pingpong')
  t.equal(pingpong.length, 4, 'the four --quick sizes')
  const median = head.indexOf('median_us')
  for (const c of pingpong) {
    t.equal(c[1], 'net:tcp')
    positiveFinite(t, Number(c[median]), `median_us of ${c[head.indexOf('bytes')]} B`)
  }
  t.notOk(fs.existsSync(path.join(dir, 'fastsock-pipe.svg')), '--no-plot writes no plot')
})

t.test('bad flags: commander\'s message and exit status 2', async (t) => {
  const cwd = t.testdir({}) // were a flag accepted by mistake, no plot lands in the repository
  for (const args of [
    ['pipe', '--max-size', 'lots'],
    ['pipe', '--mode', 'sideways'],
    ['pipe', '--no-such-flag'],
    ['pipe', '--json', '-', '--csv', '-']
  ]) {
    const res = await run(args, { cwd })
    t.equal(res.code, 2, `${args.join(' ')} exits with 2`)
    t.match(res.stderr, /error/, `${args.join(' ')} says why`)
    t.equal(res.stdout, '', `${args.join(' ')} prints nothing on stdout`)
  }
})

t.test('pipe --help explains the missing 0-byte point', async (t) => {
  const res = await run(['pipe', '--help'])
  t.equal(res.code, 0)
  t.match(res.stdout, /0-byte write sends nothing/)
})

t.test('the headline: the best rung, and the best that never spins (neither shm nor verbs)', async (t) => {
  const { headline } = require(path.join(tools, 'dist', 'pipe', 'summary.js'))
  const row = (channel, us) => ({ channel, label: channel, bytes: 64, halfRttUs: { median: us } })
  const rows = headline([
    row('fastsock:shm', 1), row('fastsock:verbs', 2), row('fastsock:shm (no polling)', 20), row('fastsock:unix', 25),
    row('net:tcp', 40), row('net:unix', 30)
  ], [])
  t.equal(rows.length, 1)
  const [h] = rows
  t.equal(h.best, 'fastsock:shm')
  t.equal(h.latencyRatio, 40)
  t.equal(h.latencyRatioVsUnix, 30)
  t.equal(h.bestNoPoll, 'fastsock:shm (no polling)', 'verbs polls by default too: not "without polling"')
  t.equal(h.latencyRatioNoPoll, 2)
})
