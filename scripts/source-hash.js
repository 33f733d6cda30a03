'use strict'
// The same hash as scripts/source-hash.cmake: sha256 over "<relpath>:<sha256>\n" of every
// csrc/*.cc and csrc/*.h file, sorted by path. Used to prove a prebuilt addon matches csrc/.
const crypto = require('crypto')
const fs = require('fs')
const path = require('path')

function walk (dir, root, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) walk(p, root, out)
    else if (/\.(cc|h)$/.test(e.name)) out.push(path.relative(root, p).split(path.sep).join('/'))
  }
  return out
}

function sourceHash (root = path.join(__dirname, '..')) {
  const files = walk(path.join(root, 'csrc'), root, []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  let manifest = ''
  for (const f of files) {
    const h = crypto.createHash('sha256').update(fs.readFileSync(path.join(root, f))).digest('hex')
    manifest += `${f}:${h}\n`
  }
  return crypto.createHash('sha256').update(manifest).digest('hex')
}

module.exports = { sourceHash }
if (require.main === module) console.log(sourceHash())
