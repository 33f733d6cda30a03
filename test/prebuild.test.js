'use strict'
// The native addon matches csrc/: the binary node-gyp-build loads carries the sha256 of the
// sources it was built from (scripts/source-hash.js), and so does the prebuilt one in
// prebuilds/<platform>-<arch>/. With PREBUILDS_ONLY=1 (npm run test:prebuild) only prebuilds/
// may be used (node-gyp-build reads that variable); without a prebuild for this platform the
// test is skipped, saying so.
// Every prebuild, for whatever architecture (linux-arm64 cannot load here: npm run test:arm64
// runs it under qemu-user), is a binary for its directory's architecture carrying csrc/'s hash.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { ROOT, spawnNode } = require('./helpers/util')
const { sourceHash } = require('../scripts/source-hash')
const { elfMachine, TARGETS } = require('../scripts/prebuild')

const prebuildsOnly = !!process.env.PREBUILDS_ONLY
const platformDir = `${process.platform}-${process.arch}`

// Loads the addon in a child (PREBUILDS_ONLY as given) and reports what was loaded, directly and
// by fastsock itself.
const PROBE = `
  const path = require('path')
  const out = {}
  try {
    const ngb = require('node-gyp-build')
    out.path = ngb.resolve(process.cwd())
    out.sourceHash = require(out.path).sourceHash
  } catch (e) { out.error = e.message }
  const fastsock = require('.')
  out.unix = fastsock.transports().find(a => a.name === 'unix')
  out.loadedByFastsock = Object.keys(require.cache).filter(k => k.endsWith('.node'))
  process.stdout.write(JSON.stringify(out) + '\\n')
`

async function probe (t, env) {
  const child = spawnNode(t, ['-e', PROBE], { env })
  const out = await child.waitFor(m => 'unix' in m || 'error' in m)
  await child.exited
  return out
}

t.test('the addon node-gyp-build picks was built from csrc/ as it is', async t => {
  const expected = sourceHash()
  const out = await probe(t, prebuildsOnly ? { PREBUILDS_ONLY: '1' } : {})
  if (out.error && prebuildsOnly && /No native build was found/.test(out.error)) {
    return t.skip(`PREBUILDS_ONLY=1 and prebuilds/ has no binary for ${platformDir}`)
  }
  t.notOk(out.error, `node-gyp-build found an addon (${out.error || out.path})`)
  if (prebuildsOnly) t.ok(out.path.startsWith(path.join(ROOT, 'prebuilds') + path.sep), `PREBUILDS_ONLY: loaded from prebuilds/ (${out.path})`)
  t.equal(out.sourceHash, expected, `sourceHash of ${path.relative(ROOT, out.path || '?')} matches csrc/`)
  t.same(out.loadedByFastsock, [out.path], 'fastsock loads that same binary')
  t.equal(out.unix.available, true, `the unix rung is available with it (${out.unix.reason})`)
})

t.test(`the prebuilt binary in prebuilds/${platformDir}`, { skip: prebuildsOnly ? 'covered by the test above (PREBUILDS_ONLY=1)' : false }, async t => {
  const out = await probe(t, { PREBUILDS_ONLY: '1' })
  if (out.error && /No native build was found/.test(out.error)) {
    return t.skip(`prebuilds/ has no binary for ${platformDir} (npm run build:prebuilds makes one)`)
  }
  t.notOk(out.error, 'it loads')
  t.ok(out.path.startsWith(path.join(ROOT, 'prebuilds') + path.sep), `from prebuilds/ (${path.relative(ROOT, out.path)})`)
  t.equal(out.sourceHash, sourceHash(), 'and was built from csrc/ as it is')
  t.equal(out.unix.available, true, 'fastsock uses it: unix available')
})

t.test('every prebuild is for its architecture and built from csrc/ as it is', async t => {
  const dirs = fs.readdirSync(path.join(ROOT, 'prebuilds')).sort()
  t.same(dirs, Object.keys(TARGETS).map(a => `linux-${a}`).sort(), 'one prebuild per target of npm run build:prebuilds')
  const hash = sourceHash()
  for (const dir of dirs) {
    const file = path.join(ROOT, 'prebuilds', dir, 'fastsock.napi.node')
    const arch = dir.replace(/^linux-/, '')
    t.equal(elfMachine(file), TARGETS[arch]?.machine, `${dir}: an ELF binary for ${arch}`)
    t.ok(fs.readFileSync(file).includes(hash), `${dir}: carries csrc/'s source hash ${hash.slice(0, 12)} (else: npm run build:prebuilds)`)
  }
})
