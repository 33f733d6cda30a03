'use strict'
// docs/design.md's layer map ("Layers") is the tree: every lib/ file is listed (a folder ending
// in `/` stands for everything under it), every listed path exists, layers run downward
// (test/layers.test.js checks the imports against them).
const t = require('tap')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..')
const lib = path.join(root, 'lib')

/** The map: the first code block after "## Layers", as [layer, path] in order. */
function map () {
  const md = fs.readFileSync(path.join(root, 'docs', 'design.md'), 'utf8')
  const block = md.slice(md.indexOf('## Layers')).match(/```\n([\s\S]*?)```/)[1]
  const entries = []
  let layer = null
  for (const line of block.split('\n')) {
    const m = line.match(/^(L\d)?\s+([\w./-]+\.ts|[\w./-]+\/)(\s|$)/)
    if (!m) continue
    if (m[1]) layer = Number(m[1].slice(1))
    entries.push([layer, m[2]])
  }
  return entries
}

function filesUnder (dir, rel = '') {
  const out = []
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name
    if (e.isDirectory()) out.push(...filesUnder(path.join(dir, e.name), r))
    else if (e.name.endsWith('.ts')) out.push(r)
  }
  return out
}

t.test('the map lists every lib/ file, and nothing that is not there', async t => {
  const entries = map()
  t.ok(entries.length > 40, `the map was read (${entries.length} entries)`)
  const paths = entries.map(([, p]) => p)
  for (const p of paths) t.ok(fs.existsSync(path.join(lib, p)), `lib/${p} exists`)
  const folders = paths.filter(p => p.endsWith('/'))
  for (const f of filesUnder(lib)) {
    const listed = paths.includes(f) || folders.some(d => f.startsWith(d))
    t.ok(listed, `lib/${f} is in docs/design.md's layer map`)
  }
  t.equal(new Set(paths).size, paths.length, 'no path twice')
})

t.test('layers run from L7 down to L0', async t => {
  const layers = map().map(([l]) => l)
  t.equal(layers[0], 7)
  t.equal(layers[layers.length - 1], 0)
  for (let i = 1; i < layers.length; i++) t.ok(layers[i] <= layers[i - 1], 'each entry at or below the one before')
})

t.test('the check can fail', async t => {
  const line = '    socket/nowhere.ts  not a file'.match(/^(L\d)?\s+([\w./-]+\.ts|[\w./-]+\/)(\s|$)/)
  t.equal(line[2], 'socket/nowhere.ts', 'an entry is read')
  t.notOk(fs.existsSync(path.join(lib, line[2])), 'and a missing file is caught')
})
