'use strict'
// tools/src's structure (docs/design.md, "The tools package"): no import cycle (type imports and
// require() included, found by madge); the shared harness imports no tool; a tool (pipe, rate,
// osu, npb) imports the harness and its own files, never another tool's; nothing imports a file
// outside tools/src (but tools/package.json); the library is loaded only by harness/library.ts, through its entry points
// (`fastsock`, `fastsock/mpi`, `fastsock/internal`), other files naming them in type imports
// only; and no file is over 800 lines.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const madge = require('madge')

const tools = path.join(__dirname, '..')
const src = path.join(tools, 'src')
const config = {
  fileExtensions: ['ts'],
  tsConfig: path.join(tools, 'tsconfig.json'),
  detectiveOptions: { ts: { skipTypeImports: false, mixedImports: true } }
}
const TOOLS = ['pipe', 'rate', 'osu', 'npb']
const ENTRY_POINTS = ['fastsock', 'fastsock/mpi', 'fastsock/internal']

function tsFiles (dir, rel = '') {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const r = rel ? `${rel}/${e.name}` : e.name
    return e.isDirectory() ? tsFiles(path.join(dir, e.name), r) : e.name.endsWith('.ts') ? [r] : []
  })
}

/** Every module specifier of a TypeScript file: [specifier, type-only]. */
function specifiers (text) {
  const out = []
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]/gm)) out.push([m[3], m[2] !== undefined])
  for (const m of text.matchAll(/(?<!typeof )(?:require|import)\s*\(\s*['"]([^'"]+)['"]/g)) out.push([m[1], false])
  for (const m of text.matchAll(/typeof import\s*\(\s*['"]([^'"]+)['"]/g)) out.push([m[1], true])
  return out
}

t.test('no import cycle in tools/src', async t => {
  const res = await madge(src, config)
  const files = Object.keys(res.obj()).filter(f => f.endsWith('.ts'))
  t.ok(files.length > 40, `madge read tools/src (${files.length} files)`)
  t.ok(res.obj()['rate/runner.ts'].includes('harness/channels.ts'), 'it sees the rate -> harness edge')
  t.same(res.circular(), [], 'no cycle')
})

t.test('the harness imports no tool; a tool imports no other tool', async t => {
  const res = await madge(src, config)
  const bad = []
  for (const [from, deps] of Object.entries(res.obj())) {
    const top = from.split('/')[0]
    for (const to of deps.filter(d => d.endsWith('.ts') && !d.startsWith('..'))) {
      const other = to.split('/')[0]
      if (top === 'harness' && TOOLS.includes(other)) bad.push(`${from} -> ${to}`)
      if (TOOLS.includes(top) && TOOLS.includes(other) && other !== top) bad.push(`${from} -> ${to}`)
    }
  }
  t.same(bad, [], 'rate and osu share the harness, not pipe/')
})

t.test('the library only through its entry points, loaded by harness/library.ts', async t => {
  const bad = []
  let loads = 0
  for (const f of tsFiles(src)) {
    for (const [spec, typeOnly] of specifiers(fs.readFileSync(path.join(src, f), 'utf8'))) {
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(path.join(src, f)), spec)
        // Its own package.json (the version) is the one file outside src/ it may read.
        if (!target.startsWith(src + path.sep) && target !== path.join(tools, 'package.json')) bad.push(`${f}: '${spec}' leaves tools/src`)
      } else if (spec === 'fastsock' || spec.startsWith('fastsock/')) {
        if (!ENTRY_POINTS.includes(spec)) bad.push(`${f}: '${spec}' is not an entry point`)
        else if (!typeOnly && f !== 'harness/library.ts') bad.push(`${f}: loads '${spec}' itself`)
        else if (!typeOnly) loads++
      }
    }
  }
  t.same(bad, [], 'no relative import out of tools/src, no deep import, no load outside harness/library.ts')
  t.same(specifiers("import type { X } from 'fastsock/internal'\nconst a = require('../../lib/native')"), [['fastsock/internal', true], ['../../lib/native', false]], 'the check sees both kinds')
  const lib = fs.readFileSync(path.join(src, 'harness', 'library.ts'), 'utf8')
  t.match(lib, /libraryRequire\(\)\('fastsock'\)/, "harness/library.ts loads 'fastsock' through the library's own require")
  t.equal(loads, 0, 'those loads go through createRequire (not import statements)')
})

t.test('no tools/src file over 800 lines', async t => {
  const big = tsFiles(src).map(f => [f, fs.readFileSync(path.join(src, f), 'utf8').split('\n').length]).filter(([, n]) => n > 800)
  t.same(big, [], 'every file 800 lines or fewer')
})
