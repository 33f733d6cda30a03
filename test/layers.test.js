'use strict'
// lib/ imports point downward only: no import cycle (type imports and require() included, found
// by madge over the TypeScript sources), and no lib/ file over 800 lines (docs/design.md, "Layers").
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const madge = require('madge')

const root = path.join(__dirname, '..')
const config = {
  fileExtensions: ['ts'],
  tsConfig: path.join(root, 'tsconfig.json'),
  // import type, and require() inside TypeScript, are edges too.
  detectiveOptions: { ts: { skipTypeImports: false, mixedImports: true } }
}

t.test('the checker sees type imports and require() (a cycle of each is found)', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-layers-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b'\nexport interface A { b: B }\n")
  fs.writeFileSync(path.join(dir, 'b.ts'), "import { c } from './c'\nexport interface B { n: number }\nexport const x = c\n")
  fs.writeFileSync(path.join(dir, 'c.ts'), "export const c = 1\nexport function f (): unknown { return require('./a') }\n")
  const res = await madge(dir, { ...config, tsConfig: undefined })
  t.same(res.circular().map(c => c.slice().sort()), [['a.ts', 'b.ts', 'c.ts']], 'a -> b (type) -> c -> a (require) is a cycle')
})

t.test('no import cycle in lib/', async t => {
  const res = await madge(path.join(root, 'lib'), config)
  const files = Object.keys(res.obj())
  t.ok(files.length > 30, `madge read lib/ (${files.length} files)`)
  t.ok(res.obj()['socket.ts'].includes('chain.ts'), 'it sees the socket -> chain edge')
  t.same(res.circular(), [], 'no cycle')
})

t.test('no lib/ file over 800 lines', async t => {
  const walk = d => fs.readdirSync(d, { withFileTypes: true }).flatMap(e => e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)])
  const big = walk(path.join(root, 'lib')).filter(f => f.endsWith('.ts'))
    .map(f => [path.relative(root, f), fs.readFileSync(f, 'utf8').split('\n').length]).filter(([, n]) => n > 800)
  t.same(big, [], 'every file 800 lines or fewer')
})
