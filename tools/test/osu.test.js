'use strict'
// `fastsock osu`: bad arguments (exit status 2), a --quick latency run with 2 ranks (OSU's
// columns, one row per size, the JSON shape), Open MPI's C skipped with the reason when mpicc is
// not on PATH, and really run when it is (under CI=true its absence is a failure). No timing
// assertions: only that the figures exist and are consistent.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { tools, run: runCli } = require('./helpers/cli')

/** Runs `fastsock osu <args>` (helpers/cli.js). */
const run = (args, opts) => runCli(['osu', ...args], opts)

function onPath (name) {
  return (process.env.PATH || '').split(path.delimiter).some((d) => d !== '' && fs.existsSync(path.join(d, name)))
}
const haveOpenMpi = onPath('mpicc') && onPath('mpirun')
const ci = process.env.CI === 'true'

t.test('bad arguments exit with status 2 and say why', async (t) => {
  for (const [args, re] of [
    [['nosuch'], /unknown benchmark 'nosuch'/],
    [['latency', '-m', '9:3'], /MIN 9 is above MAX 3/],
    [['latency', '-m', 'lots'], /expected -m \[MIN:\]MAX/],
    [['latency', '--np', '4'], /exactly 2 ranks/],
    [['mbw_mr', '--np', '3'], /rank count from 2|even number/],
    [['bcast', '--algorithm', 'nosuch'], /unknown bcast algorithm 'nosuch'/],
    [[], /missing benchmark/]
  ]) {
    const res = await run(args)
    t.equal(res.code, 2, `${args.join(' ') || '(none)'}: status 2`)
    t.match(res.stderr, re, `${args.join(' ') || '(none)'}: the reason`)
  }
})

t.test('latency --quick, 2 ranks: OSU columns, every size, JSON shape, Open MPI beside', async (t) => {
  if (!haveOpenMpi && ci) t.fail('mpicc/mpirun absent under CI=true (scripts/ci-mpi-deps.sh installs them)')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-osu-test-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const json = path.join(dir, 'osu.json')
  const res = await run(['latency', '--quick', '--json', json])
  t.equal(res.signal, null, 'not killed by the timeout')
  t.equal(res.code, 0, `exit status 0 (${res.stdout.slice(res.stdout.indexOf('Errors:')).trim()}${res.stderr.trim()})`)
  const doc = JSON.parse(fs.readFileSync(json, 'utf8'))
  const sizes = doc.options.sizes
  t.same(sizes, [0, 1, 4, 16, 64, 256, 1024, 4096, 16384, 65536], '--quick sizes: powers of four up to 64 KiB')
  t.equal(doc.tool, 'fastsock osu')
  t.equal(doc.benchmark, 'latency')
  t.equal(doc.unit, 'us')
  t.same(doc.errors, [], 'no job failed')
  const impls = haveOpenMpi ? ['fastsock', 'node-net', 'openmpi'] : ['fastsock', 'node-net']
  for (const impl of impls) {
    const runInfo = doc.runs.find((r) => r.impl === impl)
    t.ok(runInfo && runInfo.ran, `${impl} ran`)
    const rows = doc.rows.filter((r) => r.impl === impl)
    t.same(rows.map((r) => r.bytes), sizes, `${impl}: one row per size`)
    for (const r of rows) {
      t.ok(r.value > 0 && r.jmb.sextile > 0 && r.jmb.measurements > 0 && r.jmb.measurements <= 150, `${impl} ${r.bytes} B: latency ${r.value}, sextile over ${r.jmb.measurements}`)
      t.ok(r.cpuUsPerMsg >= 0, `${impl} ${r.bytes} B: CPU per message ${r.cpuUsPerMsg}`)
      t.equal(r.iterations, r.bytes > 8192 ? doc.options.iterationsLarge : doc.options.iterations, `${impl} ${r.bytes} B: iterations`)
    }
  }
  t.equal(doc.runs.find((r) => r.impl === 'node-net').transports['1'], 'tcp', 'the Node net baseline ran over tcp')
  t.equal(doc.ratios.length, sizes.length, 'a ratio row per size')
  for (const x of doc.ratios) {
    t.ok(x.speedupVsNodeNet > 0, `${x.bytes} B: speedup vs Node net`)
    if (haveOpenMpi) t.ok(x.fastsockOverOpenMpi > 0, `${x.bytes} B: ratio to Open MPI`)
  }
  t.equal(doc.fits.length, impls.length, 'one T(n) = ts + tb·n fit per implementation')
  for (const f of doc.fits) t.ok(Number.isFinite(f.tsUs) && Number.isFinite(f.tbNsPerByte), `${f.impl}: ts and tb`)
  // The report: OSU's header and one line per size for each implementation.
  const blocks = res.stdout.split('\n# OSU MPI Latency Test').slice(1)
  t.equal(blocks.length, impls.length, 'an OSU block per implementation')
  for (const b of blocks) {
    const lines = b.split('\n')
    t.equal(lines[1], '# Size          Latency (us)', 'OSU\'s column header')
    const data = lines.slice(2).filter((l) => /^\d+\s+\d+\.\d\d$/.test(l))
    t.same(data.map((l) => Number(l.split(/\s+/)[0])), sizes, 'every size has its line')
  }
  t.match(res.stdout, /JMB: the sextile/, 'JMB table')
  t.match(res.stdout, /Node net ÷ fastsock/, 'ratio columns')
})

t.test('Open MPI absent from PATH: skipped with the reason', async (t) => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-osu-nompi-'))
  t.teardown(() => fs.rmSync(empty, { recursive: true, force: true }))
  const res = await run(['latency', '--quick', '-m', '0:4', '--impls', 'openmpi', '--json', '-'], { env: { ...process.env, PATH: empty } })
  t.equal(res.code, 1, 'nothing else asked for: nothing measured, status 1')
  const doc = JSON.parse(res.stdout)
  const ompi = doc.runs.find((r) => r.impl === 'openmpi')
  t.equal(ompi.ran, false)
  t.match(ompi.skipped, /mpicc and mpirun not found on PATH/, 'the reason')
  t.match(res.stderr, /Open MPI \(C\) skipped: mpicc and mpirun not found/, 'the reason in the report')
})

t.test('--jit-warmup-ms: untimed passes over every size before the first timed one (allreduce, P = 2)', async (t) => {
  const res = await run(['allreduce', '--quick', '-m', '4:64', '--impls', 'fastsock', '--jit-warmup-ms', '300', '--json', '-'])
  t.equal(res.code, 0, res.code === 0 ? 'status 0' : `status ${res.code}: ${res.stderr.slice(-800)}`)
  const doc = JSON.parse(res.stdout)
  t.equal(doc.options.jitWarmupMs, 300, 'recorded in the options')
  const run0 = doc.runs.find((r) => r.impl === 'fastsock')
  t.ok(run0.ran && run0.jitWarmupPasses >= 1, `the ranks made ${run0.jitWarmupPasses} warm-up pass(es)`)
  t.ok(run0.durationMs >= 300, `the job lasted at least the warm-up (${run0.durationMs} ms)`)
  t.same(doc.rows.map((r) => r.bytes), [4, 16, 64], 'every size timed once after it')
  t.match(res.stderr, /Node ranks: 300 ms JIT warm-up/, 'the method line says so')
})

t.test('Open MPI present: the C program is compiled and run (bw, 2 sizes)', { skip: !haveOpenMpi && !ci ? 'mpicc/mpirun not on PATH' : false }, async (t) => {
  t.ok(haveOpenMpi, 'mpicc and mpirun on PATH')
  const res = await run(['bw', '--quick', '-m', '4:64', '--impls', 'openmpi', '--json', '-'])
  t.equal(res.code, 0, res.code === 0 ? "status 0" : `status ${res.code}: ${res.stderr.slice(-800)}`)
  const doc = JSON.parse(res.stdout)
  t.match(doc.openMpi.version, /^\d+\.\d+/, 'Open MPI version read')
  const dir = path.dirname(doc.openMpi.binary)
  t.equal(fs.statSync(dir).mode & 0o777, 0o700, 'the cache directory is mode 700')
  t.same(doc.rows.map((r) => r.bytes), [4, 16, 64])
  for (const r of doc.rows) t.ok(r.value > 0 && r.msgPerSec > 0, `${r.bytes} B: ${r.value} MB/s, ${r.msgPerSec} msg/s`)
  t.match(res.stderr, /# Size {6}Bandwidth \(MB\/s\)/, 'OSU\'s bw header')
})

t.test('a rank that fails ends the job at once with its message', async (t) => {
  const { runNodeJob } = require(path.join(tools, 'dist', 'osu', 'jobs.js'))
  const config = { benchmark: 'latency', sizes: [0], iterations: 10, warmup: 1, iterationsLarge: 10, warmupLarge: 1, largeBytes: 8192, window: 64, measurements: 150, transports: ['nosuch'], algorithm: null }
  await t.rejects(runNodeJob(2, config, 20000), { code: 'ERR_OSU_RANK_FAILED', message: /rank \d of 2 exited with status 1:[^]*unknown transport "nosuch"/ })
})
