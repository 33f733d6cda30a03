'use strict'
// The library never loads the optional dependencies (package.json optionalDependencies: the
// tools' plotting, tables, progress bar and statistics, and the source-build tools); only the
// command-line tools do, through lib/cli/optional.ts. Proven twice: statically (no module of lib/
// outside lib/cli/ names one; in lib/cli/ only type imports do, the loading goes through
// optional.ts), and at run time, with the packages made unresolvable as after
// `npm install --omit=optional` (test/package/hide-packages.js): fastsock and its preload hook
// load and echo over a real connection without asking for any, `fastsock probe` works, and
// `fastsock pipe` says which packages to install. test/package/pack-install.js does the same on
// a real installation (npm run test:package).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnNode, ROOT } = require('../helpers/util')

const OPTIONAL = Object.keys(require('../../package.json').optionalDependencies)
const HIDE = path.join(__dirname, 'hide-packages.js')

function tsFiles (dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) tsFiles(p, out)
    else if (e.name.endsWith('.ts')) out.push(p)
  }
  return out
}

/** Value imports or requires of `pkg` in TypeScript source (type-only imports are erased). */
function loadsOf (src, pkg) {
  const q = `['"]${pkg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:/[^'"]*)?['"]`
  const hits = []
  for (const m of src.matchAll(new RegExp(`^\\s*import\\s+(?!type\\b)[^;]*?from\\s+${q}`, 'gm'))) hits.push(m[0].trim())
  for (const m of src.matchAll(new RegExp(`(?<!typeof )(?:require|import)\\(\\s*${q}`, 'g'))) hits.push(m[0])
  return hits
}

t.test('no module of lib/ loads an optional package itself', async t => {
  t.ok(OPTIONAL.includes('vega') && OPTIONAL.includes('cmake-js'), `optionalDependencies: ${OPTIONAL.join(', ')}`)
  const offenders = []
  for (const file of tsFiles(path.join(ROOT, 'lib'))) {
    const src = fs.readFileSync(file, 'utf8')
    for (const pkg of OPTIONAL) for (const hit of loadsOf(src, pkg)) offenders.push(`${path.relative(ROOT, file)}: ${hit}`)
  }
  t.same(offenders, [], 'every load goes through lib/cli/optional.ts (loadOptional, resolveOptional)')
  t.same(loadsOf("import Table from 'cli-table3'\nconst v = require('vega')", 'cli-table3').length, 1, 'the check sees a value import')
  t.same(loadsOf("import type Table from 'cli-table3'\nlet x: typeof import('cli-table3')", 'cli-table3'), [], 'and lets type imports be')
})

/** Runs `node <args>` with the optional packages unresolvable; resolves with the child's result. */
async function hidden (t, args, { cwd } = {}) {
  const child = spawnNode(t, ['--require', HIDE, ...args], { env: { FASTSOCK_TEST_HIDE: OPTIONAL.join(',') }, cwd })
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
  t.same(out.asked, [], 'no optional package was asked for')
})

t.test('the hider really hides', async t => {
  const r = await hidden(t, ['-e', `
    let code = null
    try { require('vega') } catch (e) { code = e.code }
    console.log(JSON.stringify({ code, asked: globalThis.__fastsockHiddenAsked }))`])
  t.same(r.messages[0], { code: 'MODULE_NOT_FOUND', asked: ['vega'] })
})

t.test('fastsock probe works without them', async t => {
  const r = await hidden(t, [path.join(ROOT, 'dist', 'cli', 'main.js'), 'probe'])
  t.equal(r.code, 0, `exit 0 (${r.stderr})`)
  const text = r.messages.map(m => m.line).join('\n')
  t.match(text, /Failover chain, fastest first:\n#\s+rung\s+available\s+why\n1\s+shm\s+(yes|no)\s+\S/, 'the chain as plain columns')
})

t.test('fastsock pipe says what to install', async t => {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-pipe-'))
  t.teardown(() => fs.rmSync(cwd, { recursive: true, force: true }))
  const r = await hidden(t, [path.join(ROOT, 'dist', 'cli', 'main.js'), 'pipe', '--quick'], { cwd })
  t.equal(r.code, 1, 'exit 1')
  t.equal(r.stderr.trim(), "fastsock: fastsock pipe needs the optional packages 'simple-statistics', 'cli-table3', not installed: " +
    'run `npm install simple-statistics cli-table3` (or install fastsock without --omit=optional)', 'naming the packages, no stack')
  t.same(fs.readdirSync(cwd), [], 'before measuring anything or writing a file')
})
