'use strict'
// Every module a bench/ script loads from this repository exists: its require('../...') literals,
// and its require(path.join(X, 'a', 'b.js')) where X is a constant of the script defined as
// path.join(__dirname, '..', ...). (When the tools moved to tools/, three scripts kept loading
// dist/cli/pipe/stats.js and failed at start; nothing ran them.)
const t = require('tap')
const fs = require('fs')
const path = require('path')

const BENCH = path.join(__dirname, '..', 'bench')
/** The string literals of a comma-separated argument list, or null when any argument is not one. */
const literals = args => {
  const parts = args.split(',').map(s => s.trim())
  return parts.every(p => /^'[^']*'$/.test(p)) ? parts.map(p => p.slice(1, -1)) : null
}

t.test('every bench/ script loads modules that exist', async t => {
  const scripts = fs.readdirSync(BENCH).filter(f => f.endsWith('.js'))
  t.ok(scripts.length > 10, `${scripts.length} scripts`)
  let checked = 0
  for (const f of scripts) {
    const src = fs.readFileSync(path.join(BENCH, f), 'utf8')
    // Constants: const X = path.join(__dirname, '..', 'a', ...)
    const consts = new Map()
    for (const m of src.matchAll(/const (\w+) = path\.join\(__dirname, ([^)]*)\)/g)) {
      const parts = literals(m[2])
      if (parts) consts.set(m[1], path.join(BENCH, ...parts))
    }
    const targets = []
    for (const m of src.matchAll(/require\('(\.\.?\/[^']+)'\)/g)) targets.push(path.join(BENCH, m[1]))
    for (const m of src.matchAll(/require\(path\.join\((\w+), ([^)]*)\)\)/g)) {
      const parts = literals(m[2])
      if (consts.has(m[1]) && parts) targets.push(path.join(consts.get(m[1]), ...parts))
    }
    for (const target of targets) {
      let found = true
      try { require.resolve(target) } catch { found = false }
      t.ok(found, `${f}: ${path.relative(path.join(__dirname, '..'), target)} exists`)
      checked++
    }
  }
  t.ok(checked > 20, `${checked} requires checked`)
})
