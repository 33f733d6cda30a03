'use strict'
// docs/design.md's layer map ("## Layers"), read from the docs of checkout `root`: used by
// test/design-map.test.js (the map is the tree) and scripts/connect-walk.js (a call's layers).
const fs = require('fs')
const path = require('path')

/**
 * The first code block after "## Layers" of `root`/docs/design.md, as [layer, path] in map
 * order: `path` is a lib/-relative file (`x.ts`) or folder (`x/`, everything under it).
 */
function layerMap (root) {
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

/** The layer of lib/-relative `file` (.ts or .js) in `entries`: its own line, else its deepest folder's; null when unlisted. */
function layerOf (entries, file) {
  const ts = file.replace(/\.js$/, '.ts')
  const own = entries.find(([, p]) => p === ts)
  if (own) return own[0]
  const folder = entries.filter(([, p]) => p.endsWith('/') && ts.startsWith(p)).sort((a, b) => b[1].length - a[1].length)[0]
  return folder ? folder[0] : null
}

module.exports = { layerMap, layerOf }
