'use strict'
// `fastsock probe`: every rung of the chain in chain order, available or not and why, and the
// state of the native addon, matching what the library itself reports.
const t = require('tap')
const { execFile } = require('child_process')
const path = require('path')

const root = path.join(__dirname, '..')
const cli = path.join(root, 'dist', 'cli', 'main.js')

function run (args, env = {}) {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 30_000, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr })
    })
  })
}

t.test('probe --json lists every rung in chain order with a reason', async (t) => {
  const res = await run(['probe', '--json'])
  t.equal(res.code, 0, res.stderr)
  const doc = JSON.parse(res.stdout)
  const fastsock = require(root)
  const expected = fastsock.transports()
  t.same(doc.rungs.map((r) => r.name), expected.map((r) => r.name), 'same rungs, same order as fastsock.transports()')
  t.same(doc.rungs.map((r) => r.name), ['shm', 'unix', 'verbs', 'rsocket', 'smc', 'sdp', 'tcp'], 'the documented chain')
  for (const r of doc.rungs) {
    t.type(r.available, 'boolean', `${r.name}: available is a boolean`)
    t.ok(typeof r.reason === 'string' && r.reason.length > 0, `${r.name}: says why`)
  }
  t.ok(doc.rungs.find((r) => r.name === 'tcp').available, 'tcp is always available')
  t.same(doc.rungs.map((r) => r.available), expected.map((r) => r.available), 'availability matches the library')

  const addon = require(path.join(root, 'dist', 'native'))
  t.equal(doc.native.loaded, addon.native !== null, 'native addon state matches dist/native')
  t.equal(doc.native.loadError, addon.loadError ? addon.loadError.message : null, 'and so does its load error')
})

t.test('probe prints a table naming every rung and the addon', async (t) => {
  const res = await run(['probe'])
  t.equal(res.code, 0, res.stderr)
  for (const name of ['shm', 'unix', 'verbs', 'rsocket', 'smc', 'sdp', 'tcp']) t.match(res.stdout, new RegExp(`\\b${name}\\b`), `names ${name}`)
  t.match(res.stdout, /native addon: (loaded|NOT LOADED)/)
})

t.test('probe reports FASTSOCK_TRANSPORTS', async (t) => {
  const res = await run(['probe', '--json'], { FASTSOCK_TRANSPORTS: 'unix,tcp' })
  t.equal(res.code, 0, res.stderr)
  const doc = JSON.parse(res.stdout)
  t.equal(doc.envTransports, 'unix,tcp')
  t.equal(doc.rungs.length, 7, 'still lists every rung')
  t.same(doc.rungs.filter((r) => r.enabled).map((r) => r.name), ['unix', 'tcp'], 'only the rungs the environment lists are enabled')
  t.match((await run(['probe'], { FASTSOCK_TRANSPORTS: 'unix,tcp' })).stdout, /in FASTSOCK_TRANSPORTS/, 'the table has the column')
})

t.test('probe rejects unknown flags with status 2', async (t) => {
  const res = await run(['probe', '--frobnicate'])
  t.equal(res.code, 2)
  t.match(res.stderr, /unknown option/)
})
