'use strict'
// docs/design.md's layer map ("Layers") is the tree: every lib/ file is listed (a folder ending
// in `/` stands for everything under it), every listed path exists, layers run downward
// (test/layers.test.js checks the imports against them). Its "csrc/ layout" is csrc/'s tree the
// same way.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { layerMap } = require('../scripts/layer-map')

const root = path.join(__dirname, '..')
const lib = path.join(root, 'lib')

/** The map: the first code block after "## Layers", as [layer, path] in order. */
const map = () => layerMap(root)

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

// docs/design.md's "csrc/ layout" block is the csrc/ tree too: every source file is named in its
// directory's entry (a file's stem: `conn` covers conn.h and conn.cc), and every file it names
// (`ring.h`, `segment.{h,cc}`) exists, in that directory or at the top of csrc/.
function csrcLayout () {
  const md = fs.readFileSync(path.join(root, 'docs', 'design.md'), 'utf8')
  const block = md.slice(md.indexOf('## csrc/ layout')).match(/```\n([\s\S]*?)```/)[1]
  const text = new Map() // directory ('' for csrc/ itself) -> the text of its entries
  let dir = ''
  let parent = ''
  for (const line of block.split('\n').slice(1)) {
    const m = line.match(/^( *)(\S+)/)
    if (!m) continue
    const indent = m[1].length
    if (indent === 2 || indent === 4) {
      const base = indent === 2 ? '' : parent
      if (m[2].endsWith('/')) {
        dir = base ? `${base}/${m[2].slice(0, -1)}` : m[2].slice(0, -1)
        if (indent === 2) parent = dir
      } else {
        dir = base
        if (indent === 2) parent = ''
      }
    }
    text.set(dir, (text.get(dir) ?? '') + ' ' + line)
  }
  return text
}

function csrcFiles (dir = path.join(root, 'csrc'), rel = '') {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const r = rel ? `${rel}/${e.name}` : e.name
    return e.isDirectory() ? csrcFiles(path.join(dir, e.name), r) : /\.(h|cc)$/.test(e.name) ? [r] : []
  })
}

t.test('the csrc/ layout names every csrc/ file, and nothing that is not there', async t => {
  const layout = csrcLayout()
  t.ok(layout.has('shm') && layout.has('rdma/verbs'), `the layout was read (${[...layout.keys()].join(', ')})`)
  for (const f of csrcFiles()) {
    const dir = path.posix.dirname(f) === '.' ? '' : path.posix.dirname(f)
    const stem = path.posix.basename(f).replace(/\.(h|cc)$/, '')
    t.match(layout.get(dir) ?? '', new RegExp(`(^|[^\\w/.])${stem}\\b`), `csrc/${f} is in the layout (under ${dir || 'csrc/'})`)
  }
  for (const [dir, txt] of layout) {
    for (const m of txt.matchAll(/(^|[^\w/.])(\w+)\.(\{h,cc\}|h|cc)\b/g)) {
      const exts = m[3] === '{h,cc}' ? ['h', 'cc'] : [m[3]]
      for (const ext of exts) {
        const name = `${m[2]}.${ext}`
        const there = [dir ? `${dir}/${name}` : name, name].some(p => fs.existsSync(path.join(root, 'csrc', p)))
        t.ok(there, `${name} (named under ${dir || 'csrc/'}) exists`)
      }
    }
  }
})
