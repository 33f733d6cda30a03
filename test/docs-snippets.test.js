'use strict'
// Every JavaScript code block of README.md and docs/*.md (```js, ```mjs, ```cjs) parses as
// written: a block with `import`/`export` as an ES module, one with `require` as CommonJS (no
// top-level await there), a fragment (neither) as an ES module; and the blocks that are whole
// programs run: the README's echo server, the README's and docs' message-passing programs under
// `fastsock mpirun -n 2`. 'fastsock' resolves to this checkout (node_modules/fastsock in a temp
// directory links to it).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')

const ROOT = path.join(__dirname, '..')
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')
const FILES = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter(f => f.endsWith('.md')).sort().map(f => path.join('docs', f))]

/** The JavaScript blocks of a markdown file: { file, line, lang, code }. */
function blocks (file) {
  const out = []
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(js|javascript|mjs|cjs)\s*$/.exec(lines[i])
    if (m === null) continue
    const start = i + 1
    while (++i < lines.length && !/^```\s*$/.test(lines[i]));
    out.push({ file, line: start, lang: m[1], code: lines.slice(start, i).join('\n') + '\n' })
  }
  return out
}

/** 'esm' or 'cjs', as the block is written. */
function kind (b) {
  if (b.lang === 'mjs') return 'esm'
  if (b.lang === 'cjs') return 'cjs'
  if (/^\s*(import|export)\s/m.test(b.code)) return 'esm'
  if (/\brequire\(/.test(b.code)) return 'cjs'
  return 'esm' // a fragment
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-snippets-'))
fs.mkdirSync(path.join(dir, 'node_modules'))
fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'fastsock'), 'dir')
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))

const all = FILES.flatMap(blocks)
t.ok(all.length >= 10, `found ${all.length} blocks`)

/** Writes block `b` to a file of its kind; its path. */
function fileOf (b, n) {
  const f = path.join(dir, `${path.basename(b.file, '.md')}-${b.line}-${n}.${kind(b) === 'esm' ? 'mjs' : 'cjs'}`)
  fs.writeFileSync(f, b.code)
  return f
}

t.test('every block parses as written', async t => {
  all.forEach((b, n) => {
    const r = spawnSync(process.execPath, ['--check', fileOf(b, n)], { encoding: 'utf8' })
    t.equal(r.status, 0, `${b.file}:${b.line} (${kind(b)}) parses${r.status === 0 ? '' : `\n${r.stderr}`}`)
  })
})

/** The blocks that are whole programs, and how they run. */
const PROGRAMS = [
  { file: 'README.md', has: 'sock.pipe(sock)).listen(7000)', np: 0, expect: /shm[\s\S]*Float64Array\(3\) \[ 1, 2, 3 \]/ },
  { file: 'README.md', has: "import * as mpi from 'fastsock/mpi'", np: 2, expect: /Status.*source: 0.*tag: 7.*count: 24/ },
  { file: path.join('docs', 'mpi.md'), has: '// ring.js', np: 2, expect: /rank 1: got 8192 bytes from rank 0[\s\S]*hello: 'world'/ },
  { file: path.join('docs', 'mpi-launch.md'), has: '// app.js', np: 2, expect: /rank 1 of 2, local 1\/2/ },
  { file: path.join('docs', 'mpi-collectives.md'), has: 'allgatherObject', np: 2, expect: null }
]

for (const p of PROGRAMS) {
  t.test(`${p.file}: the block with '${p.has}' runs${p.np > 0 ? ` under fastsock mpirun -n ${p.np}` : ''}`, async t => {
    const n = all.findIndex(b => b.file === p.file && b.code.includes(p.has))
    t.ok(n >= 0, 'the block is there')
    if (n < 0) return
    const f = fileOf(all[n], n)
    const args = p.np > 0 ? [CLI, 'mpirun', '-n', String(p.np), '--timeout', '60', process.execPath, f] : [f]
    const r = spawnSync(process.execPath, args, { encoding: 'utf8', cwd: dir, timeout: 90000 })
    t.equal(r.status, 0, `exits 0\n${r.stdout}\n${r.stderr}`)
    if (p.expect !== null) t.match(r.stdout, p.expect, 'prints what the docs say')
  })
}
