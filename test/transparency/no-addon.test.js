'use strict'
// Without the native addon the hook warns once and leaves net untouched: a copy of the package
// with no build/ and no prebuilds/ (node-gyp-build finds nothing to load).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnNode, ROOT } = require('../helpers/util')

t.test('no addon: one warning, net untouched, connections are Node\'s', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-noaddon-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true })
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'))
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
  const reg = path.join(dir, 'dist', 'register.js')
  // Counts the hook's warnings in the child (stderr may carry them twice under tap's tracking).
  const counter = path.join(dir, 'count-warnings.js')
  fs.writeFileSync(counter, "globalThis.fsWarnings = 0; process.on('warning', w => { if (w.code === 'FASTSOCK_NATIVE_UNAVAILABLE') globalThis.fsWarnings++ })\n")
  const code = `
    const net = require('net')
    const again = require(${JSON.stringify(reg)}).register()
    const s = net.createServer(c => c.end()).listen(0, '127.0.0.1', () => {
      const c = net.connect(s.address().port, '127.0.0.1', () => {
        process.stdout.write(JSON.stringify({ patched: again.patched, reason: again.reason, transport: c.transport === undefined ? 'none' : c.transport, nodeConnect: net.connect.toString().includes('normalizeArgs'), warnings: globalThis.fsWarnings }) + '\\n')
        c.destroy(); s.close()
      })
    })`
  const child = spawnNode(t, ['-r', counter, '-r', reg, '-e', code])
  const m = await child.waitFor(m => 'patched' in m)
  await child.exited
  t.equal(m.patched, false)
  t.match(m.reason, /No native build was found|Cannot find|addon/i)
  t.equal(m.transport, 'none', 'a socket of Node\'s own net')
  t.equal(m.nodeConnect, true, 'net.connect is Node\'s')
  t.equal(m.warnings, 1, 'one warning, though registered twice')
  t.match(child.stderr(), /FASTSOCK_NATIVE_UNAVAILABLE.*native addon did not load/, 'on stderr')
})
