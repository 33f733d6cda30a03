'use strict'
// npm run test:package (slow: packs, installs from the npm registry; .ci/run runs it): the packages
// as a user gets them. `npm pack`, then `npm install <tarball> --omit=optional --omit=dev` into a
// fresh project, and there:
// - the library's production dependencies are node-gyp-build alone (its package.json, npm ls):
//   no command-line, table, plotting or statistics package; node_modules weighs at most 8 MiB
//   (du -sb);
// - the install used the prebuild for this platform (no cmake-js, no build/ directory) and the
//   running processes load exactly that file;
// - require('fastsock') and import 'fastsock' give the same API;
// - two processes echo 3 MiB over the default chain (shm on this host);
// - `npx fastsock probe`, `run` and `mpirun` work, `npx fastsock pipe` says in one line to install
//   fastsock-tools;
// - then fastsock-tools, packed from tools/ and installed beside it (--omit=optional: vega left
//   out): `npx fastsock pipe --quick` measures this installed fastsock and says the plot needs vega.
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
const toolsPkg = require('../../tools/package.json')
const TOOLS_DEPS = [...Object.keys(toolsPkg.dependencies), ...Object.keys(toolsPkg.optionalDependencies)]
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
  t.ok(files.includes('dist/index.mjs') && files.includes('dist/cli/main.js') && files.includes('dist/internal.js'), 'dist/ with the ESM entry, the CLI and fastsock/internal')
  t.notOk(files.some(f => f.startsWith('build/') || f.startsWith('test/') || f.startsWith('tools/')), 'no build/, test/ or tools/')
  t.notOk(files.some(f => /^(dist|lib)\/cli\/(pipe|rate|osu)\//.test(f)), 'no benchmark in the library')
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
  const present = [...OPTIONAL, ...TOOLS_DEPS, 'fastsock-tools'].filter(p => fs.existsSync(path.join(app, 'node_modules', p)))
  t.same(present, [], `none of the optional packages (${OPTIONAL.join(', ')}) nor the tools' (${TOOLS_DEPS.join(', ')}) is installed`)
  const manifest = JSON.parse(fs.readFileSync(path.join(app, 'node_modules', 'fastsock', 'package.json'), 'utf8'))
  t.same(Object.keys(manifest.dependencies), ['node-gyp-build'], "the installed library's dependencies: node-gyp-build")
  t.same(Object.keys(manifest.optionalDependencies).sort(), ['cmake-js', 'node-addon-api'], 'optional: the source build only')
  const ls = sh('npm', ['ls', '--all', '--omit=dev', '--parseable'], app)
  t.equal(ls.status, 0, `npm ls ${ls.stderr.slice(-500)}`)
  const names = ls.stdout.trim().split('\n').slice(1).map(p => path.relative(path.join(app, 'node_modules'), p)).sort()
  t.same(names, ['fastsock', 'node-gyp-build'], 'npm ls --omit=dev: fastsock and node-gyp-build, nothing else')
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

t.test('the command line of the library alone', async t => {
  const probe = sh('npx', ['--no', 'fastsock', 'probe'], app)
  t.equal(probe.status, 0, `fastsock probe exits 0 ${probe.stderr}`)
  t.match(probe.stdout, /Failover chain, fastest first:\n#\s+rung\s+available\s+why\n1\s+shm\s+yes/, 'and prints the chain as plain columns')
  t.match(probe.stdout, /native addon: loaded/, 'with the addon loaded')
  const run = sh('npx', ['--no', 'fastsock', 'run', '--', process.execPath, '-e', 'console.log(require("net").Socket === require("fastsock").Socket)'], app)
  t.equal(run.status, 0, `fastsock run exits 0 ${run.stderr}`)
  t.equal(run.stdout.trim(), 'true', "the command's net is fastsock's")
  const mpirun = sh('npx', ['--no', 'fastsock', 'mpirun', '-n', '2', process.execPath, '-e', 'console.log("rank " + process.env.RANK)'], app)
  t.equal(mpirun.status, 0, `fastsock mpirun exits 0 ${mpirun.stderr}`)
  t.same(mpirun.stdout.trim().split('\n').sort(), ['[0] rank 0', '[1] rank 1'], 'two ranks, prefixed')
  const pipe = sh('npx', ['--no', 'fastsock', 'pipe', '--quick'], app)
  t.equal(pipe.status, 1, 'fastsock pipe exits 1')
  const said = pipe.stderr.split('\n').filter(l => l !== '' && !l.startsWith('npm warn')).join('\n')
  t.equal(said, 'fastsock pipe is in the fastsock-tools package, not installed here: npm install --save-dev fastsock-tools', 'saying in one line what to install')
})

t.test('fastsock-tools packed and installed beside it (vega left out)', async t => {
  const packed = sh('npm', ['pack', '--workspace', 'tools', '--pack-destination', work, '--json'], ROOT)
  t.equal(packed.status, 0, `npm pack --workspace tools exits 0 ${packed.stderr.slice(-2000)}`)
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')))
  const files = info.files.map(f => f.path)
  t.ok(files.includes('dist/main.js') && files.includes('dist/pipe/peer.js') && files.includes('src/osu/native/osu_native.c'), 'its dist/ and the OSU C source')
  t.notOk(files.some(f => f.startsWith('test/')), 'no test/')
  t.comment(`${info.filename}: ${info.size} bytes packed, ${files.length} files`)
  // --omit=optional: fastsock-tools' vega stays out (and fastsock's optional packages too).
  const add = sh('npm', ['install', path.join(work, info.filename), '--omit=optional', '--no-audit', '--no-fund'], app)
  t.equal(add.status, 0, `npm install fastsock-tools ${add.stderr.slice(-1000)}`)
  t.notOk(fs.existsSync(path.join(app, 'node_modules', 'vega')), 'vega is not installed')
  const pipe = sh('npx', ['--no', 'fastsock', 'pipe', '--quick', '--mode', 'pingpong', '--transports', 'shm,net-tcp', '--no-nptcp', '--json', 'pipe.json'], app)
  t.equal(pipe.status, 0, `fastsock pipe exits 0 ${pipe.stderr.slice(-2000)}`)
  t.match(pipe.stdout, /Ping-pong: median half round-trip latency/, 'measures and reports')
  t.match(pipe.stdout, /plot: not written: fastsock pipe's plot needs the package 'vega', not installed: run `npm install vega`/, 'and says the plot needs vega')
  const doc = JSON.parse(fs.readFileSync(path.join(app, 'pipe.json'), 'utf8'))
  t.ok(doc.pingpong.some(r => r.transport === 'shm'), 'over shm: the installed library, its prebuild loaded')
  t.equal(doc.version, require('../../package.json').version, "the measured library's version")
  t.notOk(fs.existsSync(path.join(app, 'fastsock-pipe.svg')), 'no plot written')
  const own = sh('npx', ['--no', '--', 'fastsock-tools', '--help'], app)
  t.equal(own.status, 0, `npx fastsock-tools --help ${own.stderr}`)
  t.match(own.stdout, /Usage: fastsock-tools/, 'its own bin too')
})
