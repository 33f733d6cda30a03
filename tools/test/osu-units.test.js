'use strict'
// `fastsock osu`'s pure pieces, without processes: OSU's size sweeps and -m parsing, the figures
// derived from a job's raw rows (RTT/2, MB/s and messages/s from a window time, the JMB sextile),
// the ratios of the targets, and the OSU line format.
const t = require('tap')
const path = require('path')

const dist = path.join(__dirname, '..', 'dist', 'osu')
const { sweep, parseMessageRange, resolveOptions } = require(path.join(dist, 'options.js'))
const { toRow, ratios, fitSeries } = require(path.join(dist, 'summary.js'))
const { osuHeader, osuLine } = require(path.join(dist, 'report.js'))

t.test('sizes as OSU sweeps them', async (t) => {
  t.same(sweep('latency', 0, 16, false), [0, 1, 2, 4, 8, 16])
  t.same(sweep('bw', 3, 24, false), [3, 6, 12, 24], 'doubling from the minimum')
  t.same(sweep('latency', 0, 64, true), [0, 1, 4, 16, 64], '--quick: powers of four')
  t.same(sweep('allreduce', 1, 32, false), [4, 8, 16, 32], 'reductions: floats, from 4 B')
  t.same(sweep('barrier', 1, 1 << 20, false), [0], 'barrier: one row')
  t.same(parseMessageRange('0:4K'), [0, 4096])
  t.same(parseMessageRange('1M'), [null, 1 << 20])
  t.same(parseMessageRange('8:'), [8, null])
  t.throws(() => parseMessageRange('9:3'), /MIN 9 is above MAX 3/)
  t.throws(() => parseMessageRange(':'), /expected -m/)
  const opts = resolveOptions('latency', { np: [2], impls: ['fastsock'], timeout: 10, iterations: 500, messageSize: [0, 1 << 20] })
  t.equal(opts.iterations, 500)
  t.equal(opts.iterationsLarge, 500, '-i caps the large-message count')
  t.equal(opts.warmup, 100, "OSU's warm-up")
  t.equal(opts.jitWarmupMs, null, 'the Node ranks\' JIT warm-up: each job\'s default')
  const { defaultJitWarmupMs } = require('../dist/osu/options')
  t.equal(defaultJitWarmupMs(2, 2), 3000, '3 s with a CPU per rank')
  t.equal(defaultJitWarmupMs(1, 2), 3000, 'fewer ranks than CPUs: 3 s')
  t.equal(defaultJitWarmupMs(4, 2), 6000, '4 ranks on 2 CPUs: 6 s')
  t.equal(defaultJitWarmupMs(5, 2), 9000, '5 ranks on 2 CPUs: 9 s')
  t.equal(defaultJitWarmupMs(4, 0), 12000, 'an unknown CPU count counts as one')
  t.equal(resolveOptions('latency', { np: [2], impls: ['fastsock'], timeout: 10, quick: true }).jitWarmupMs, 0, '--quick: none')
  t.equal(resolveOptions('latency', { np: [2], impls: ['fastsock'], timeout: 10, quick: true, jitWarmupMs: 50 }).jitWarmupMs, 50, '--jit-warmup-ms wins')
  t.throws(() => resolveOptions('allreduce', { np: [2], impls: ['fastsock'], timeout: 10, messageSize: [1, 2] }), /no message size/)
})

t.test('figures from raw rows, ratios, fits', async (t) => {
  const samples = Array.from({ length: 150 }, (_, i) => 10 + i) // µs
  const lat = toRow('latency', 'fastsock', 2, null, 64, { bytes: 8, iterations: 1000, warmup: 10, avgUs: 12, minUs: 12, maxUs: 12, samplesUs: samples })
  t.equal(lat.value, 12, 'latency: the average')
  t.ok(Math.abs(lat.jmb.sextile - (10 + 149 / 6)) < 1e-9, `sextile of the measurements (${lat.jmb.sextile})`)
  t.equal(lat.jmb.measurements, 150)
  const bw = toRow('bibw', 'openmpi', 2, null, 64, { bytes: 1000, iterations: 20, warmup: 2, avgUs: 64, minUs: 64, maxUs: 64, samplesUs: [64] })
  t.equal(bw.value, 2 * 64 * 1000 / 64, 'bibw: 2 × window × n ÷ time per window (MB/s)')
  t.equal(bw.msgPerSec, 2 * 64 * 1e6 / 64)
  const mr = toRow('mbw_mr', 'fastsock', 4, null, 64, { bytes: 8, iterations: 20, warmup: 2, avgUs: 32, minUs: 32, maxUs: 32, samplesUs: [32] })
  t.equal(mr.msgPerSec, 2 * 64 * 1e6 / 32, 'mbw_mr: two pairs')
  const row = (impl, value) => toRow('latency', impl, 2, null, 64, { bytes: 8, iterations: 1, warmup: 0, avgUs: value, minUs: value, maxUs: value, samplesUs: [value] })
  const [r] = ratios('latency', [row('fastsock', 2), row('openmpi', 0.5), row('node-net', 50)])
  t.equal(r.fastsockOverOpenMpi, 4)
  t.equal(r.speedupVsNodeNet, 25)
  const pts = [1, 1024, 4096].map((n) => toRow('latency', 'fastsock', 2, null, 64, { bytes: n, iterations: 1, warmup: 0, avgUs: 2 + n / 1000, minUs: 0, maxUs: 0, samplesUs: [2 + n / 1000] }))
  const [fit] = fitSeries('latency', pts, () => 'fastsock', () => 'shm')
  t.ok(Math.abs(fit.tsUs - 2) < 1e-6 && Math.abs(fit.tbNsPerByte - 1) < 1e-6, `ts 2 µs, tb 1 ns/B (${fit.tsUs}, ${fit.tbNsPerByte})`)
})

t.test("OSU's columns", async (t) => {
  const r = { bytes: 1024, value: 1.234, minUs: 1, maxUs: 2, iterations: 1000, msgPerSec: 5e6 }
  t.equal(osuHeader('latency', false), '# Size          Latency (us)')
  t.equal(osuLine('latency', r, false), '1024                      1.23')
  t.equal(osuHeader('allreduce', true), '# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations')
  t.match(osuLine('allreduce', r, true), /^1024 +1\.23 +1\.00 +2\.00 +1000$/)
  t.match(osuLine('mbw_mr', r, false), /^1024 +1\.23 +5000000\.00$/)
})
