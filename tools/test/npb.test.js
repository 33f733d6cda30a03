'use strict'
// `fastsock npb`: every kernel of this build verifies at class S on 1, 2 and 4 ranks under
// `fastsock mpirun` (the kernels absent from the build are skipped with the reason: add a name
// to KERNELS and it is covered once its module is in tools/src/npb/kernels/); a corrupted value
// reports UNSUCCESSFUL; the JSON document's shape; a P the kernel refuses is skipped, not a
// crash; bad usage exits with status 2. No timing assertions.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { tools, run: runCli } = require('./helpers/cli')

const run = (args, opts) => runCli(['npb', ...args], { timeout: 300_000, ...opts })
const registry = require(path.join(tools, 'dist', 'npb', 'kernels', 'index.js'))
const { fortranExp, results } = require(path.join(tools, 'dist', 'npb', 'format.js'))
const { parseReference } = require(path.join(tools, 'dist', 'npb', 'jobs.js'))

/** The kernels the test covers: each one whose module is in the build. */
const KERNELS = ['cg', 'ep', 'ft', 'is', 'mg']

function tmp (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-npb-test-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('bad usage exits with status 2 and says why', async (t) => {
  for (const [args, re] of [
    [['nosuch'], /unknown kernel 'nosuch'/],
    [['ep', '--class', 'Z'], /unknown class 'Z'/],
    [['ep', '--np', '0'], /rank count from 1/],
    [['ep', '--impls', 'mpich'], /expected a list of fastsock, node-net, npb-mpi/],
    [['ep', '--impls', 'npb-mpi'], /needs --npb-mpi-bin/],
    [['ep', '--launcher', 'qsub'], /expected one of fastsock, mpirun, srun, env/],
    [[], /missing required argument 'kernel'/]
  ]) {
    const res = await run(args)
    t.equal(res.code, 2, `${args.join(' ') || '(none)'}: status 2`)
    t.match(res.stderr, re, `${args.join(' ') || '(none)'}: the reason`)
  }
})

t.test('the registry: five names, each loaded on demand or reported absent', async (t) => {
  t.same(registry.KERNEL_NAMES, KERNELS)
  t.throws(() => registry.loadKernel('nosuch'), { code: 'ERR_INVALID_ARG_VALUE' })
  for (const name of KERNELS) {
    if (registry.kernelAvailable(name)) {
      const k = registry.loadKernel(name)
      t.equal(k.name, name, `${name}: its module exports kernel.name '${name}'`)
      t.equal(typeof k.run, 'function')
      t.equal(k.checkProcs('S', 1), null, `${name} runs on one rank`)
    } else {
      t.throws(() => registry.loadKernel(name), { code: 'ERR_NPB_KERNEL_UNAVAILABLE', message: /not available in this build/ }, `${name}: absent, a clear error`)
      const res = await run([name])
      t.equal(res.code, 1, `fastsock npb ${name}: status 1`)
      t.match(res.stderr, /not available in this build/)
    }
  }
})

t.test("the NAS report's formats", async (t) => {
  t.equal(fortranExp(17.13023505403, 20, 13).trim(), '0.1713023505403E+02', 'E20.13 (CG\'s zeta)')
  t.equal(fortranExp(-3247.834652034487, 25, 15, 'D', 1), '   -3.247834652034487D+03', '1p,d25.15 (EP\'s sums)')
  t.equal(fortranExp(2.433365309069e-6, 20, 13).trim(), '0.2433365309069E-05')
  const text = results({ name: 'CG', cls: 'A', size: '14000', iterations: 15, seconds: 0.9, np: 2, mops: 1663.53, operation: 'floating point', verified: true, transport: 'shm' })
  for (const line of [
    ' CG Benchmark Completed.',
    ' Class           =                        A',
    ' Size            =                    14000',
    ' Iterations      =                       15',
    ' Time in seconds =                     0.90',
    ' Total processes =                        2',
    ' Mop/s total     =                  1663.53',
    ' Verification    =               SUCCESSFUL',
    ' Transport       =                      shm'
  ]) t.ok(text.split('\n').includes(line), `prints '${line}'`)
  const ref = parseReference(' EP Benchmark Completed.\nCPU Time =    6.3312\n Time in seconds =                     6.33\n Mop/s total     =                    84.80\n Verification    =               SUCCESSFUL\n')
  t.same(ref, { seconds: 6.3312, mops: 84.8, verified: true }, "the reference's report parsed (EP: the 4-decimal CPU Time)")
  t.equal(parseReference('mpirun noticed that process rank 0 exited'), null)
})

for (const name of KERNELS) {
  t.test(`${name}: class S verifies on 1, 2 and 4 ranks under fastsock mpirun; the JSON shape`, async (t) => {
    if (!registry.kernelAvailable(name)) return t.skip(`${name} is not in this build (tools/src/npb/kernels/${name}.ts absent)`)
    const dir = tmp(t)
    const json = path.join(dir, `${name}.json`)
    const res = await run([name, '--class', 'S', '--np', '1,2,4', '--impls', 'fastsock', '--json', json])
    t.equal(res.code, 0, `exit status 0 (${res.stderr.trim()}${res.stdout.slice(res.stdout.indexOf('Errors:')).trim()})`)
    t.match(res.stdout, new RegExp(` ${name.toUpperCase()} Benchmark Completed\\.`), 'the NAS report')
    t.equal((res.stdout.match(/Verification {4}= {15}SUCCESSFUL/g) || []).length, 3, 'three reports say SUCCESSFUL')
    const doc = JSON.parse(fs.readFileSync(json, 'utf8'))
    t.same(doc.runs.map((r) => r.np), [1, 2, 4], 'one run per P')
    for (const r of doc.runs) {
      t.same(Object.keys(r).slice(0, 8), ['impl', 'kernel', 'class', 'np', 'seconds', 'mops', 'verified', 'transport'], 'the documented keys first')
      t.equal(r.impl, 'fastsock')
      t.equal(r.kernel, name)
      t.equal(r.class, 'S')
      t.equal(r.verified, true, `P = ${r.np} verified`)
      t.ok(r.seconds > 0 && r.mops > 0, `P = ${r.np}: ${r.seconds} s, ${r.mops} Mop/s`)
      t.equal(r.transport, r.np === 1 ? 'self' : 'shm', `P = ${r.np}: transport ${r.transport}`)
    }
    t.same(doc.errors, [])
  })

  t.test(`${name}: a corrupted value reports UNSUCCESSFUL`, async (t) => {
    if (!registry.kernelAvailable(name)) return t.skip(`${name} is not in this build`)
    const dir = tmp(t)
    const json = path.join(dir, 'corrupt.json')
    const res = await run([name, '--class', 'S', '--np', '2', '--impls', 'fastsock', '--corrupt', '--json', json])
    t.equal(res.code, 1, 'exit status 1: not verified')
    t.match(res.stdout, /Verification {4}= {13}UNSUCCESSFUL/, 'the report says UNSUCCESSFUL')
    t.equal(JSON.parse(fs.readFileSync(json, 'utf8')).runs[0].verified, false)
  })
}

t.test('a P the kernel refuses is skipped with the reason; node-net runs over tcp', async (t) => {
  const res = await run(['is', '--class', 'S', '--np', '2,3', '--impls', 'node-net', '--json', '-'])
  t.equal(res.code, 0, `exit status 0 (${res.stderr.slice(-500)})`)
  const doc = JSON.parse(res.stdout)
  t.same(doc.runs.map((r) => [r.impl, r.np, r.transport, r.verified]), [['node-net', 2, 'tcp', true]])
  t.same(doc.skipped, [{ impl: 'node-net', np: 3, reason: "IS needs a power of two ranks (as NPB's): 3 is not" }])
  t.match(res.stderr, /skipped: node-net, 3 ranks: IS needs a power of two/, 'a clear line')
})
