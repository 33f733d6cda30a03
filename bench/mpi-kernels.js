#!/usr/bin/env node
'use strict'
/**
 * The reduction kernels of fastsock/mpi (lib/mpi/coll/ops.ts and simd.ts: what allreduce, reduce
 * and the scans apply per element) on one CPU: ns per element of `op.apply(acc, ao, in, bo, n)`
 * for SUM, MAX and PROD on Float32, Float64, Int32 and BigInt64 arrays, at offset 0 and at an
 * offset (as the segmented and Rabenseifner algorithms call it): the vector kernels (WebAssembly
 * SIMD, the default) beside the scalar ones (FASTSOCK_MPI_SIMD=0, in a child process of the same
 * run) and the copy of the same bytes (TypedArray.prototype.set, memcpy: the floor of any kernel
 * that reads both operands). Median of `--runs` timings of `--reps` calls each.
 *
 *   node bench/mpi-kernels.js [--bytes 1048576] [--runs 15] [--reps 20]   (~15 s)
 */
const { parseArgs } = require('util')
const { execFileSync } = require('child_process')
const mpi = require('../dist/mpi')

const { values } = parseArgs({
  options: {
    bytes: { type: 'string', default: String(1 << 20) },
    runs: { type: 'string', default: '15' },
    reps: { type: 'string', default: '20' },
    json: { type: 'boolean', default: false }
  }
})
const bytes = Number(values.bytes)
const runs = Number(values.runs)
const reps = Number(values.reps)
if (!(bytes >= 64 && runs >= 1 && reps >= 1)) throw new Error('--bytes >= 64, --runs >= 1, --reps >= 1')

const { median } = require('./_procs')

/** ns per element of f(), which handles n elements per call. */
function time (f, n) {
  for (let i = 0; i < reps; i++) f() // warm-up: the kernel is optimized before the timed runs
  const per = []
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < reps; i++) f()
    per.push(Number(process.hrtime.bigint() - t0) / reps / n)
  }
  return median(per)
}

/** This process's kernels: { 'Kind OP': { at0, atOff, copy } } in ns per element. */
function measure () {
  const out = {}
  for (const [kind, one] of [['Float32Array', 1.5], ['Float64Array', 1.5], ['Int32Array', 3], ['BigInt64Array', 3n]]) {
    const C = globalThis[kind]
    const n = Math.floor(bytes / C.BYTES_PER_ELEMENT)
    const acc = new C(n + 64).fill(one)
    const inp = new C(n + 64).fill(one)
    const copy = time(() => acc.set(inp.subarray(0, n)), n)
    for (const op of ['SUM', 'MAX', 'PROD']) {
      const o = mpi[op]
      out[`${kind} ${op}`] = { at0: time(() => o.apply(acc, 0, inp, 0, n), n), atOff: time(() => o.apply(acc, 16, inp, 32, n), n), copy }
    }
  }
  return out
}

if (values.json) {
  process.stdout.write(JSON.stringify(measure()))
} else {
  const args = [__filename, '--json', '--bytes', String(bytes), '--runs', String(runs), '--reps', String(reps)]
  const scalar = JSON.parse(execFileSync(process.execPath, args, { env: { ...process.env, FASTSOCK_MPI_SIMD: '0' } }))
  const vector = measure()
  const rows = Object.keys(vector).map(k => {
    const [kind, op] = k.split(' ')
    const v = vector[k]; const s = scalar[k]
    return {
      kind,
      op,
      'vector ns/elem': v.at0.toFixed(2),
      'vector, offset': v.atOff.toFixed(2),
      'scalar ns/elem': s.at0.toFixed(2),
      'scalar, offset': s.atOff.toFixed(2),
      'scalar ÷ vector': (s.at0 / v.at0).toFixed(1),
      'copy ns/elem': v.copy.toFixed(2),
      'vector ÷ copy': (v.at0 / v.copy).toFixed(1)
    }
  })
  process.stdout.write(`fastsock/mpi reduction kernels, ${bytes} bytes per call, median of ${runs} runs of ${reps} calls (vector: WebAssembly SIMD where the op has one for the kind; scalar: FASTSOCK_MPI_SIMD=0)\n`)
  console.table(rows)
}
