'use strict'
// npm run test:package (slow: packs, installs from the npm registry; .ci/run runs it): the package
// as a user gets it. `npm pack`, then `npm install <tarball> --omit=optional --omit=dev` into a
// fresh project, and there:
// - node_modules weighs at most 8 MiB (du -sb) and holds none of the tools' optional packages;
// - the install used the prebuild for this platform (no cmake-js, no build/ directory) and the
//   running processes load exactly that file;
// - require('fastsock') and import 'fastsock' give the same API;
// - two processes echo 3 MiB over the default chain (shm on this host);
// - `npx fastsock probe` works, `npx fastsock pipe` says which packages to install, and with
//   those installed (vega left out) it measures and says the plot needs vega.
// Not a *.test.js file: `npm test` does not run it.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const { echoPair, PEER } = require('./echo-pair')

const ROOT = path.join(__dirname, '..', '..')
const BUDGET_BYTES = 8 * 1024 * 1024
const OPTIONAL = Object.keys(require('../../package.json').optionalDependencies)
const platformArch = `${process.platform}-${process.arch}`

// The nested npm must not see the outer `npm run`'s lifecycle and package variables.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) =>
  !/^(npm_lifecycle_|npm_package_|INIT_CWD$|FASTSOCK_)/.test(k) && k !== 'NODE_OPTIONS'))

function sh (cmd, args, cwd, opts = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...opts.env }, encoding: 'utf8', maxBuffer: 64 << 20, timeout: opts.timeoutMs ?? 300000 })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-package-'))
t.teardown(() => fs.rmSync(work, { recursive: true, force: true }))
const app = path.join(work, 'app')

t.test('npm pack', async t => {
  const r = sh('npm', ['pack', '--pack-destination', work, '--json'], ROOT)
  t.equal(r.status, 0, `npm pack exits 0 ${r.stderr.slice(-2000)}`)
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('[')))
  const files = info.files.map(f => f.path)
  t.ok(files.includes(`prebuilds/${platformArch}/fastsock.napi.node`), `the tarball has the ${platformArch} prebuild`)
  t.ok(files.includes('prebuilds/linux-arm64/fastsock.napi.node'), 'and the linux-arm64 one')
  t.ok(files.includes('dist/index.mjs') && files.includes('dist/cli/main.js'), 'dist/ with the ESM entry and the CLI')
  t.notOk(files.some(f => f.startsWith('build/') || f.startsWith('test/')), 'no build/ or test/')
  t.comment(`${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${files.length} files`)
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
  fs.renameSync(path.join(work, info.filename), path.join(work, 'fastsock.tgz'))
})

t.test('npm install <tarball> --omit=optional --omit=dev', async t => {
  const r = sh('npm', ['install', path.join(work, 'fastsock.tgz'), '--omit=optional', '--omit=dev',
    '--no-audit', '--no-fund', '--foreground-scripts'], app)
  t.equal(r.status, 0, `npm install exits 0 ${r.stderr.slice(-2000)}`)
  const log = r.stdout + r.stderr
  const used = `fastsock: using the native addon prebuilds/${platformArch}/fastsock.napi.node (built from csrc/ as it is)`
  t.ok(log.includes(used), `the install script used the prebuild: ${log.split('\n').filter(l => l.includes('fastsock:')).join(' | ')}`)
  t.notOk(fs.existsSync(path.join(app, 'node_modules', 'fastsock', 'build')), 'no build/ (no compiler ran)')
  const present = OPTIONAL.filter(p => fs.existsSync(path.join(app, 'node_modules', p)))
  t.same(present, [], `none of the optional packages (${OPTIONAL.join(', ')}) is installed`)
  const du = sh('du', ['-sb', path.join(app, 'node_modules')], app)
  const bytes = Number(du.stdout.split('\t')[0])
  const top = fs.readdirSync(path.join(app, 'node_modules')).filter(n => !n.startsWith('.'))
  t.ok(bytes > 0 && bytes <= BUDGET_BYTES, `node_modules: ${(bytes / 2 ** 20).toFixed(2)} MiB <= 8 MiB (${top.join(', ')})`)
})

t.test('require and import', async t => {
  const cjs = sh(process.execPath, ['-e', `
    const f = require('fastsock')
    const names = Object.keys(f).sort()
    console.log(JSON.stringify({ names, file: require.resolve('fastsock'), shm: f.transports().find(r => r.name === 'shm') }))`], app)
  t.equal(cjs.status, 0, `require('fastsock') ${cjs.stderr}`)
  const c = JSON.parse(cjs.stdout)
  t.equal(c.file, path.join(app, 'node_modules', 'fastsock', 'dist', 'index.js'), 'from the installed package')
  t.ok(c.names.includes('connect') && c.names.includes('createServer') && c.names.includes('Socket'), 'with net\'s API')
  t.equal(c.shm.available, true, `shm available: ${c.shm.reason}`)
  const esm = sh(process.execPath, ['--input-type=module', '-e', `
    import fastsock, { connect, createServer } from 'fastsock'
    import { createRequire } from 'node:module'
    const same = connect === createRequire(import.meta.url)('fastsock').connect && createServer === fastsock.createServer
    console.log(JSON.stringify({ same, names: Object.keys(await import('fastsock')).filter(n => n !== 'default').sort() }))`], app)
  t.equal(esm.status, 0, `import 'fastsock' ${esm.stderr}`)
  const e = JSON.parse(esm.stdout)
  t.ok(e.same, 'import gives the same functions as require')
  t.same(e.names, c.names.filter(n => n !== 'default'), 'and the same names')
})

t.test('an echo between two processes over the default chain', async t => {
  const peer = path.join(app, 'echo-peer.js')
  fs.copyFileSync(PEER, peer)
  const prebuild = path.join(app, 'node_modules', 'fastsock', 'prebuilds', platformArch, 'fastsock.napi.node')
  const { client, served } = await echoPair({ command: args => [process.execPath, args], peer, cwd: app, env, rung: 'default', esmClient: true })
  t.ok(client.ok, `${client.bytes} bytes echoed intact`)
  t.equal(client.transport, 'shm', 'over shm, the first rung of the default chain')
  t.equal(served.served, 'shm', 'on both ends')
  t.same(client.addons, [prebuild], 'with the prebuild loaded (the client imported fastsock as ESM)')
})

t.test('the command line without the optional packages', async t => {
  const probe = sh('npx', ['--no', 'fastsock', 'probe'], app)
  t.equal(probe.status, 0, `fastsock probe exits 0 ${probe.stderr}`)
  t.match(probe.stdout, /Failover chain, fastest first:\n#\s+rung\s+available\s+why\n1\s+shm\s+yes/, 'and prints the chain as plain columns')
  t.match(probe.stdout, /native addon: loaded/, 'with the addon loaded')
  const pipe = sh('npx', ['--no', 'fastsock', 'pipe', '--quick'], app)
  t.equal(pipe.status, 1, 'fastsock pipe exits 1')
  const said = pipe.stderr.split('\n').filter(l => l !== '' && !l.startsWith('npm warn')).join('\n')
  t.equal(said, "fastsock: fastsock pipe needs the optional packages 'simple-statistics', 'cli-table3', not installed: " +
    'run `npm install simple-statistics cli-table3` (or install fastsock without --omit=optional)', 'saying what to install, no stack')
})

t.test('fastsock pipe with its tables and statistics, without vega', async t => {
  // --omit=optional again, or npm would now add fastsock's optional packages, vega included.
  const add = sh('npm', ['install', 'simple-statistics', 'cli-table3', '--omit=optional', '--no-audit', '--no-fund'], app)
  t.equal(add.status, 0, `npm install simple-statistics cli-table3 ${add.stderr.slice(-1000)}`)
  const pipe = sh('npx', ['--no', 'fastsock', 'pipe', '--quick', '--mode', 'pingpong', '--transports', 'shm,net-tcp', '--no-nptcp'], app)
  t.equal(pipe.status, 0, `fastsock pipe exits 0 ${pipe.stderr.slice(-2000)}`)
  t.match(pipe.stdout, /Ping-pong: median half round-trip latency/, 'measures and reports')
  t.match(pipe.stdout, /plot: not written: fastsock pipe's plot needs the optional package 'vega', not installed: run `npm install vega`/, 'and says the plot needs vega')
  t.notOk(fs.existsSync(path.join(app, 'node_modules', 'vega')), 'vega is still not installed')
  t.notOk(fs.existsSync(path.join(app, 'fastsock-pipe.svg')), 'no plot written')
})
