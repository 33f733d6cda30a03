'use strict'
// The library's production install lists only what the library uses: node-gyp-build (loading
// the addon), and cmake-js / node-addon-api (optional: a source build at install). The
// benchmarks and their dependencies (command line, tables, statistics, plots, JSON Schema) are
// the fastsock-tools package (tools/). Proven statically (package.json; no module of lib/ loads a
// tools package), and at run time with every one of them unresolvable, as in an application that
// installed only fastsock (test/package/hide-packages.js): fastsock and its preload hook echo over
// a real connection without asking for any, `fastsock probe`, `run` and `mpirun` work, and
// `fastsock pipe | rate | osu` say in one line what to install. Then the addon: the library loads
// one without the benchmarks' floors (csrc/native_limits.cc), which fastsock/internal reports
// absent. test/package/pack-install.js does the same on a real installation (npm run test:package).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnNode, ROOT } = require('../helpers/util')

const pkg = require('../../package.json')
const toolsPkg = require('../../tools/package.json')
const TOOLS_DEPS = [...Object.keys(toolsPkg.dependencies), ...Object.keys(toolsPkg.optionalDependencies)]
// What an application that installed only fastsock cannot resolve.
const HIDDEN = [...TOOLS_DEPS, 'fastsock-tools']
const HIDE = path.join(__dirname, 'hide-packages.js')
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')

function tsFiles (dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) tsFiles(p, out)
    else if (e.name.endsWith('.ts')) out.push(p)
  }
  return out
}

/** Imports or requires of `pkg` in TypeScript source, type-only imports included. */
function loadsOf (src, pkg) {
  const q = `['"]${pkg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:/[^'"]*)?['"]`
  const hits = []
  for (const m of src.matchAll(new RegExp(`^\\s*import\\s+[^;]*?from\\s+${q}`, 'gm'))) hits.push(m[0].trim())
  for (const m of src.matchAll(new RegExp(`(?:require|import)\\(\\s*${q}`, 'g'))) hits.push(m[0])
  return hits
}

t.test("the library's package.json: its own dependencies only", async t => {
  t.same(Object.keys(pkg.dependencies), ['node-gyp-build'], 'dependencies: node-gyp-build (it loads the addon)')
  t.same(Object.keys(pkg.optionalDependencies).sort(), ['cmake-js', 'node-addon-api'], 'optionalDependencies: the source build\'s tools')
  t.ok(TOOLS_DEPS.includes('commander') && TOOLS_DEPS.includes('vega'), `fastsock-tools has the tools' packages (${TOOLS_DEPS.join(', ')})`)
  const listed = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies), ...Object.keys(pkg.peerDependencies ?? {})]
  t.same(listed.filter(d => HIDDEN.includes(d)), [], 'none of them is the library\'s')
  t.same(pkg.bin, { fastsock: 'dist/cli/main.js' }, 'one bin, the library\'s fastsock')
  t.same(pkg.workspaces, ['tools'], 'fastsock-tools is a workspace of this repository')
  t.notOk(pkg.files.some(f => f === 'tools' || f.startsWith('tools/')), 'and not in the library\'s tarball')
})

t.test('no module of lib/ loads a tools package', async t => {
  const offenders = []
  for (const file of tsFiles(path.join(ROOT, 'lib'))) {
    const src = fs.readFileSync(file, 'utf8')
    for (const p of HIDDEN) for (const hit of loadsOf(src, p)) offenders.push(`${path.relative(ROOT, file)}: ${hit}`)
  }
  t.same(offenders, [], 'none (lib/cli/tools.ts finds fastsock-tools with require.resolve, by a computed name)')
  t.same(loadsOf("import type Table from 'cli-table3'\nconst v = require('vega')", 'cli-table3').length, 1, 'the check sees a type import')
  t.same(loadsOf("const v = require('vega')", 'vega').length, 1, 'and a require')
})

/** Runs `node <args>` with the tools' packages unresolvable; resolves with the child's result. */
async function hidden (t, args, { cwd } = {}) {
  const child = spawnNode(t, ['--require', HIDE, ...args], { env: { FASTSOCK_TEST_HIDE: HIDDEN.join(',') }, cwd })
  const { code } = await child.exited
  return { code, messages: child.messages, stderr: child.stderr() }
}

t.test('fastsock, its preload hook and a real echo never ask for them', async t => {
  const r = await hidden(t, ['-e', `
    require('./dist/register.js')
    const f = require('.')
    const net = require('net')
    const server = f.createServer(s => s.pipe(s)).listen(0, '127.0.0.1', () => {
      const c = net.connect(server.address().port, '127.0.0.1', () => c.end('ping'))
      let got = ''
      c.on('data', d => { got += d })
      c.on('close', () => {
        server.close()
        console.log(JSON.stringify({ got, transport: c.transport, asked: globalThis.__fastsockHiddenAsked }))
      })
    })`])
  t.equal(r.code, 0, `the child ran (${r.stderr})`)
  const out = r.messages.find(m => 'got' in m)
  t.equal(out.got, 'ping', `echoed over ${out.transport} through the preload hook's net`)
  t.ok(['shm', 'unix'].includes(out.transport), 'on a fast rung (the native addon loaded)')
  t.same(out.asked, [], 'no tools package was asked for')
})

t.test('the hider really hides', async t => {
  const r = await hidden(t, ['-e', `
    let code = null
    try { require('fastsock-tools') } catch (e) { code = e.code }
    console.log(JSON.stringify({ code, asked: globalThis.__fastsockHiddenAsked }))`])
  t.same(r.messages[0], { code: 'MODULE_NOT_FOUND', asked: ['fastsock-tools'] })
})

t.test('fastsock probe, run and mpirun work without them', async t => {
  const probe = await hidden(t, [CLI, 'probe'])
  t.equal(probe.code, 0, `probe: exit 0 (${probe.stderr})`)
  const text = probe.messages.map(m => m.line).join('\n')
  t.match(text, /Failover chain, fastest first:\n#\s+rung\s+available\s+why\n1\s+shm\s+(yes|no)\s+\S/, 'the chain as plain columns')
  const run = await hidden(t, [CLI, 'run', '--', process.execPath, '-e', 'console.log(JSON.stringify({ hook: process.env.NODE_OPTIONS.includes("register.js") }))'])
  t.equal(run.code, 0, `run: exit 0 (${run.stderr})`)
  t.same(run.messages.find(m => 'hook' in m), { hook: true }, 'the command ran with the preload hook')
  const mpirun = await hidden(t, [CLI, 'mpirun', '-n', '2', '--no-prefix', process.execPath, '-e', 'console.log(JSON.stringify({ rank: process.env.RANK }))'])
  t.equal(mpirun.code, 0, `mpirun: exit 0 (${mpirun.stderr})`)
  t.same(mpirun.messages.filter(m => 'rank' in m).map(m => m.rank).sort(), ['0', '1'], 'two ranks')
})

t.test('fastsock pipe, rate and osu say in one line what to install', async t => {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-pipe-'))
  t.teardown(() => fs.rmSync(cwd, { recursive: true, force: true }))
  for (const command of ['pipe', 'rate', 'osu']) {
    const r = await hidden(t, [CLI, command, '--quick'], { cwd })
    t.equal(r.code, 1, `${command}: exit 1`)
    t.equal(r.stderr, `fastsock ${command} is in the fastsock-tools package, not installed here: npm install --save-dev fastsock-tools\n`, 'one line, naming the package')
  }
  t.same(fs.readdirSync(cwd), [], 'before measuring anything or writing a file')
  const help = await hidden(t, [CLI, '--help'])
  t.equal(help.code, 0)
  t.match(help.messages.map(m => m.line).join('\n'), /Benchmarks, from the fastsock-tools package \(not installed: npm install --save-dev fastsock-tools\)/, '--help says so too')
})

t.test('the library loads an addon without the benchmarks\' floors', async t => {
  // node-gyp-build returns the real addon less memcpyTimeNs, spinPingPongNs, ringPingPongNs: an
  // addon built without csrc/native_limits.cc.
  const r = await hidden(t, ['-e', `
    const Module = require('module')
    const load = Module._load
    Module._load = function (request, ...rest) {
      const got = load.call(this, request, ...rest)
      if (request !== 'node-gyp-build') return got
      return dir => {
        const addon = { ...got(dir) }
        for (const k of ['memcpyTimeNs', 'spinPingPongNs', 'ringPingPongNs']) delete addon[k]
        return addon
      }
    }
    const { native, loadError } = require('./dist/native')
    const internal = require('./dist/internal')
    const shm = require('.').transports().find(r => r.name === 'shm')
    console.log(JSON.stringify({ loaded: native !== null, loadError: loadError && loadError.message, shm: shm.available, floors: internal.floors, why: internal.floorsUnavailable, addon: internal.addon.loaded }))`])
  t.equal(r.code, 0, r.stderr)
  const o = r.messages.find(m => 'loaded' in m)
  t.equal(o.loaded, true, `the addon loaded (${o.loadError})`)
  t.equal(o.shm, true, 'shm is available')
  t.equal(o.addon, true, 'fastsock/internal: the addon loaded')
  t.equal(o.floors, null, 'without floors')
  t.match(o.why, /no benchmark floors/, 'and says why')
})
