'use strict'
// docs/design.md's map of tools/src ("The tools package") is the tree: every tools/src file is
// listed (a folder ending in `/` stands for everything under it), and every listed path exists.
// The rules the map states are tools/test/layers.test.js's.
const t = require('tap')
const fs = require('fs')
const path = require('path')

const root = path.join(__dirname, '..', '..')
const src = path.join(__dirname, '..', 'src')

function map () {
  const md = fs.readFileSync(path.join(root, 'docs', 'design.md'), 'utf8')
  const block = md.slice(md.indexOf('## The tools package')).match(/```\ntools\/src\/\n([\s\S]*?)```/)[1]
  return block.split('\n').map(l => l.match(/^\s+([\w./-]+\.ts|[\w./-]+\/)(\s|$)/)).filter(Boolean).map(m => m[1])
}

function filesUnder (dir, rel = '') {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const r = rel ? `${rel}/${e.name}` : e.name
    return e.isDirectory() ? filesUnder(path.join(dir, e.name), r) : e.name.endsWith('.ts') ? [r] : []
  })
}

t.test('the map lists every tools/src file, and nothing that is not there', async t => {
  const paths = map()
  t.ok(paths.length > 15, `the map was read (${paths.length} entries)`)
  for (const p of paths) t.ok(fs.existsSync(path.join(src, p)), `tools/src/${p} exists`)
  const folders = paths.filter(p => p.endsWith('/'))
  for (const f of filesUnder(src)) t.ok(paths.includes(f) || folders.some(d => f.startsWith(d)), `tools/src/${f} is in the map`)
  t.equal(new Set(paths).size, paths.length, 'no path twice')
})
