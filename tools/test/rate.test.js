'use strict'
// `fastsock rate`: the command runs end to end with its peer processes, per pattern, and its JSON
// rows match the published row schema; --csv, --config (and reproducing a run from its JSON),
// --schema, and bad input (exit status 2 with a message). No timing assertions: only that the
// figures exist, are consistent and that each row names the transport that actually ran.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const Ajv = require('ajv')
const { root, tools, run } = require('./helpers/cli')
const { CONFIG_SCHEMA, ROW_SCHEMA } = require(path.join(tools, 'dist', 'rate', 'schema.js'))


const ajv = new Ajv({ allErrors: true })
const validRow = ajv.compile(ROW_SCHEMA)
const validConfig = ajv.compile(CONFIG_SCHEMA)

// The rungs the library itself reports available here, asked independently of the CLI.
const fastsock = require(root)
const available = fastsock.transports().filter((r) => r.available).map((r) => r.name)
const expected = [
  ...available.map((name) => ({ channel: `fastsock:${name}`, transport: name })),
  ...(available.includes('shm') ? [{ channel: 'fastsock:shm (no polling)', transport: 'shm' }] : []),
  { channel: 'net:tcp', transport: 'tcp' },
  { channel: 'net:unix', transport: 'unix' }
]

function checkRun (t, res, pattern) {
  t.equal(res.signal, null, 'not killed by the timeout')
  const tail = res.stderr.includes('Errors:') ? res.stderr.slice(res.stderr.indexOf('Errors:')) : res.stderr.slice(-500)
  t.equal(res.code, 0, `exit status 0 (${tail.trim()})`)
  const doc = JSON.parse(res.stdout)
  t.equal(doc.tool, 'fastsock rate')
  t.same(doc.errors, [], 'no cell failed')
  t.ok(validConfig(doc.config), `the embedded config matches the schema ${ajv.errorsText(validConfig.errors)}`)
  t.same(doc.config.patterns, [pattern])
  const { sizes, peers, coldCache, window } = doc.config
  const directions = pattern === 'single-direction' ? ['fan-out', 'fan-in'] : ['both']
  const caches = pattern === 'bidirectional' ? [false] : coldCache
  for (const { channel, transport } of expected) {
    const rows = doc.rows.filter((r) => r.channel === channel)
    t.equal(rows.length, directions.length * sizes.length * peers.length * caches.length, `${channel}: one row per cell`)
    for (const r of rows) {
      const what = `${channel} ${r.direction} ${r.bytes} B × ${r.peers}${r.coldCache ? ' cold' : ''}`
      t.ok(validRow(r), `${what} matches the row schema ${ajv.errorsText(validRow.errors)}`)
      t.equal(r.pattern, pattern)
      t.ok(directions.includes(r.direction), `${what}: direction`)
      t.equal(r.transport, transport, `${what} ran over ${transport}`)
      // Counting: one window per peer per iteration (bidirectional: a run of messages), both ways
      // for the two-way patterns; msgrate counts each message twice (sent and received).
      const perDirection = r.peers * (pattern === 'bidirectional' ? doc.config.bidirectionalMessages : window) * r.iterations
      t.equal(r.delivered, (r.direction === 'both' ? 2 : 1) * perDirection, `${what}: messages delivered`)
      t.equal(r.messages, 2 * r.delivered, `${what}: sent + received`)
      t.ok(Math.abs(r.msgPerSec - r.messages / (r.elapsedMs / 1e3)) < 1e-6 * r.msgPerSec, `${what}: msg/s = messages / elapsed`)
      if (channel === 'net:tcp') t.equal(r.ratioVsNetTcp, 1, 'net:tcp against itself is 1×')
      else t.ok(r.ratioVsNetTcp > 0, `${what}: ratio vs net:tcp`)
      t.equal(r.coldOverWarm === null, !r.coldCache, `${what}: cold rows carry their ratio to warm`)
      t.equal(r.postUsPerMsg === null, r.direction === 'fan-in', `${what}: posting time wherever this process sends`)
    }
  }
  for (const phase of ['initializationMs', 'connectionMs', 'warmupMs', 'operationMs', 'cleanupMs']) {
    t.ok(doc.phases[phase] > 0, `phase ${phase} timed (${doc.phases[phase]})`)
  }
  for (const c of doc.channels) t.ok(c.connectMs > 0, `${c.id}: connection time`)
  return doc
}

for (const pattern of ['single-direction', 'pair-based', 'all-start', 'bidirectional']) {
  t.test(`rate --quick --pattern ${pattern} --json - measures every channel`, async (t) => {
    const dir = t.testdir({})
    // pair-based also runs the JIT warm-up (none in the --quick preset).
    const jit = pattern === 'pair-based' ? ['--jit-warmup-ms', '30'] : []
    const res = await run(['rate', '--quick', '--pattern', pattern, '--rtt-iterations', '0', ...jit, '--json', '-', '--no-plot', '--no-progress'], { cwd: dir })
    const doc = checkRun(t, res, pattern)
    t.match(res.stderr, /message rate/, 'the tables went to stderr while JSON took stdout')
    t.equal(doc.config.jitWarmupMs, jit.length > 0 ? 30 : 0, 'the JIT warm-up the run was asked for')
    for (const c of doc.channels) {
      if (jit.length > 0) t.ok(c.jitWarmupIterations >= 10, `${c.id}: JIT warm-up ran (${c.jitWarmupIterations} iterations)`)
      else t.equal(c.jitWarmupIterations, 0, `${c.id}: no JIT warm-up in --quick`)
    }
  })
}

t.test('the plot, the round-trip percentiles and --csv', async (t) => {
  const dir = t.testdir({})
  const svg = path.join(dir, 'rate.svg')
  const csv = path.join(dir, 'rate.csv')
  const res = await run(['rate', '--quick', '--pattern', 'single', '--cache', 'warm', '--rtt-iterations', '50', '--plot', svg, '--csv', csv, '--json', '-', '--no-progress'], { cwd: dir })
  const doc = checkRun(t, res, 'single-direction')
  for (const { channel } of expected) {
    const rtt = doc.rtt.filter((r) => r.channel === channel)
    t.same(rtt.map((r) => r.bytes), doc.config.sizes, `${channel}: RTT per size`)
    for (const r of rtt) {
      t.equal(r.samples, 50)
      t.ok(r.minUs > 0 && r.minUs <= r.p50Us && r.p50Us <= r.p90Us && r.p90Us <= r.p99Us && r.p99Us <= r.p999Us, `${channel} ${r.bytes} B: percentiles ordered`)
    }
  }
  const text = fs.readFileSync(svg, 'utf8')
  t.match(text, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, 'an SVG document')
  for (const { channel } of expected) t.ok(text.includes(channel), `the plot names ${channel}`)
  t.match(text, /vs message size/)
  t.match(text, /vs peers/)
  const lines = fs.readFileSync(csv, 'utf8').trim().split('\n')
  const head = lines[0].split(',')
  t.equal(head[0], 'section')
  const rate = lines.slice(1).map((l) => l.split(',')).filter((c) => c[0] === 'rate')
  t.equal(rate.length, doc.rows.length, 'one CSV line per row')
  const i = head.indexOf('msg_per_s')
  for (const c of rate) t.ok(Number(c[i]) > 0, `msg_per_s of ${c[1]}`)
  t.equal(lines.slice(1).filter((l) => l.startsWith('rtt,')).length, doc.rtt.length, 'one CSV line per RTT row')
})

t.test('--config runs a configuration file, and the JSON of a run reproduces it', async (t) => {
  const dir = t.testdir({
    'run.json': JSON.stringify({ quick: true, patterns: ['pair-based'], sizes: [16], peers: [1], coldCache: [false], transports: ['net-tcp', 'net-unix'], rttIterations: 0 })
  })
  const first = await run(['rate', '--config', 'run.json', '--json', 'out.json', '--no-plot', '--no-progress'], { cwd: dir })
  t.equal(first.code, 0, first.stderr.slice(-500))
  const doc = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8'))
  t.same(doc.rows.map((r) => [r.channel, r.pattern, r.bytes, r.peers, r.coldCache]),
    [['net:tcp', 'pair-based', 16, 1, false], ['net:unix', 'pair-based', 16, 1, false]], 'exactly the configured cells')
  // A flag given on the command line wins over the file.
  const again = await run(['rate', '--config', 'out.json', '--sizes', '32', '--json', '-', '--no-plot', '--no-progress'], { cwd: dir })
  t.equal(again.code, 0, again.stderr.slice(-500))
  const doc2 = JSON.parse(again.stdout)
  t.same({ ...doc2.config, sizes: doc.config.sizes }, doc.config, 'the run\'s JSON reproduced its configuration')
  t.same(doc2.config.sizes, [32], '--sizes overrides the file')
})

t.test('bad input: a clear message and exit status 2', async (t) => {
  const cwd = t.testdir({
    'broken.json': '{ "patterns": [',
    'unknown.json': JSON.stringify({ patterns: ['pair-based'], warp: 9 }),
    'wrong.json': JSON.stringify({ sizes: [8, 1048576], window: 0 }),
    'pattern.json': JSON.stringify({ patterns: ['round-robin'] })
  })
  const cases = [
    [['rate', '--sizes', '128KiB'], /over 64 KiB/],
    [['rate', '--sizes', 'lots'], /expected a size in bytes/],
    [['rate', '--pattern', 'sideways'], /unknown pattern 'sideways'/],
    [['rate', '--peers', '0'], /positive integer/],
    [['rate', '--cache', 'tepid'], /warm, cold or both/],
    [['rate', '--jit-warmup-ms', '-5'], /--jit-warmup-ms.*(non-negative|integer)/],
    [['rate', '--config', 'missing.json'], /missing\.json: cannot read \(ENOENT\)/],
    [['rate', '--config', 'broken.json'], /broken\.json: not JSON/],
    [['rate', '--config', 'unknown.json'], /must NOT have additional properties 'warp'/],
    [['rate', '--config', 'wrong.json'], /\/sizes\/1 must be <= 65536.*\/window must be >= 1/],
    [['rate', '--config', 'pattern.json'], /\/patterns\/0 must be equal to one of the allowed values/],
    [['rate', '--json', '-', '--csv', '-'], /cannot both write to stdout/]
  ]
  // In parallel: each one ends before measuring anything.
  const results = await Promise.all(cases.map(async ([args]) => await run(args, { cwd })))
  for (const [i, [args, why]] of cases.entries()) {
    const res = results[i]
    t.equal(res.code, 2, `${args.join(' ')} exits with 2`)
    t.match(res.stderr, why, `${args.join(' ')} says why`)
    t.equal(res.stdout, '', `${args.join(' ')} prints nothing on stdout`)
  }
})

t.test('--schema prints the configuration schema, as docs/rate-config.md shows it', async (t) => {
  const res = await run(['rate', '--schema'])
  t.equal(res.code, 0)
  const printed = JSON.parse(res.stdout)
  t.same(printed, CONFIG_SCHEMA)
  const doc = fs.readFileSync(path.join(root, 'docs', 'rate-config.md'), 'utf8')
  const block = /```json\n([\s\S]*?)\n```/.exec(doc.slice(doc.indexOf('## The schema')))
  t.ok(block, 'docs/rate-config.md has the schema in a json block')
  t.same(JSON.parse(block[1]), printed, 'the documented schema is the one the command validates with')
  for (const field of Object.keys(CONFIG_SCHEMA.properties)) t.match(doc, new RegExp('`' + field + '`'), `docs/rate-config.md explains ${field}`)
})
