'use strict'
// fastsock-tools loads its heavier packages when a tool needs them (harness/optional.ts) and
// names a missing one in one line with what to install. vega is its optionalDependency: without
// it (`--omit=optional`) pipe measures and says the plot needs vega. The others are dependencies:
// missing means a partial install, still said in one line, before measuring anything.
// test/package/pack-install.js checks the same on real installations (npm run test:package).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnNode, ROOT } = require('../../test/helpers/util')

const HIDE = path.join(ROOT, 'test', 'package', 'hide-packages.js')
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')

async function hidden (t, packages, args, cwd) {
  const child = spawnNode(t, ['--require', HIDE, ...args], { env: { FASTSOCK_TEST_HIDE: packages.join(',') }, cwd })
  const { code } = await child.exited
  return { code, stdout: child.messages.map(m => m.line ?? JSON.stringify(m)).join('\n'), stderr: child.stderr() }
}

function tmp (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-tools-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('fastsock pipe without its tables and statistics: one line, before measuring', async t => {
  const cwd = tmp(t)
  const r = await hidden(t, ['simple-statistics', 'cli-table3', 'vega'], [CLI, 'pipe', '--quick'], cwd)
  t.equal(r.code, 1, 'exit 1')
  t.equal(r.stderr.trim(), "fastsock: fastsock pipe needs the packages 'simple-statistics', 'cli-table3', not installed: " +
    'run `npm install simple-statistics cli-table3`', 'naming the packages, no stack')
  t.same(fs.readdirSync(cwd), [], 'nothing written')
})

t.test('fastsock pipe without vega: measures, and says the plot needs vega', async t => {
  const cwd = tmp(t)
  const r = await hidden(t, ['vega'], [CLI, 'pipe', '--quick', '--mode', 'pingpong', '--transports', 'net-tcp', '--no-nptcp', '--no-progress'], cwd)
  t.equal(r.code, 0, `exit 0 ${r.stderr.slice(-1000)}`)
  t.match(r.stdout, /Ping-pong: median half round-trip latency/, 'measures and reports')
  t.match(r.stdout, /plot: not written: fastsock pipe's plot needs the package 'vega', not installed: run `npm install vega`/, 'and says the plot needs vega')
  t.notOk(fs.existsSync(path.join(cwd, 'fastsock-pipe.svg')), 'no plot written')
})
