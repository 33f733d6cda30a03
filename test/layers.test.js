'use strict'
// lib/ imports point downward only: no import cycle (type imports and require() included, found
// by madge over the TypeScript sources), and no lib/ file over 800 lines (docs/design.md, "Layers").
// In csrc/, the protocol cores include no N-API, even through another header, and no source file
// is over 800 lines either (docs/design.md, "csrc/ layout").
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

// docs/design.md, "Layers": the layer of each lib/ file, first match wins.
const LAYERS = [
  [/^contract\.ts$/, 0],
  [/^(errors|debug|address|wire|native|config|negative-cache|lifetime|originals|handles)\.ts$/, 1],
  [/^(stream|sidechannel)\/|^cluster\.ts$/, 2],
  [/^transports\/(registry|names)\.ts$/, 4],
  [/^transports\//, 3],
  [/^chain\.ts$/, 5],
  [/^(socket|server)\.ts$|^socket\//, 6],
  [/^(index|register|internal)\.ts$|^cli\//, 7],
  // fastsock/mpi sits on the public facade only (next test).
  [/^mpi\//, 7]
]
const layerOf = f => { const hit = LAYERS.find(([re]) => re.test(f)); return hit ? hit[1] : null }

t.test('imports point down: every lib/ file imports its own layer or lower ones', async t => {
  const res = await madge(path.join(root, 'lib'), config)
  const upward = []
  for (const [from, deps] of Object.entries(res.obj())) {
    if (!from.endsWith('.ts')) continue // package.json (the command line reads its version)
    t.not(layerOf(from), null, `${from} has a layer in docs/design.md's map`)
    for (const to of deps.filter(d => d.endsWith('.ts'))) if (layerOf(to) > layerOf(from)) upward.push(`${from} (L${layerOf(from)}) -> ${to} (L${layerOf(to)})`)
  }
  t.same(upward, [], 'no upward import')
  t.equal(layerOf('chain.ts') > layerOf('socket.ts'), false, 'the check can tell up from down')
})

t.test('no lib/ file over 800 lines', async t => {
  const walk = d => fs.readdirSync(d, { withFileTypes: true }).flatMap(e => e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)])
  const big = walk(path.join(root, 'lib')).filter(f => f.endsWith('.ts'))
    .map(f => [path.relative(root, f), fs.readFileSync(f, 'utf8').split('\n').length]).filter(([, n]) => n > 800)
  t.same(big, [], 'every file 800 lines or fewer')
})

// lib/mpi/ imports fastsock through its public facade (lib/index.ts), and lib/errors.ts, whose
// argument and abort errors it shares (no copies: lib/mpi/errors.ts re-exports them; errors.ts
// imports only Node's util and os).
const MPI_MAY_IMPORT = ['index.ts', 'errors.ts']

t.test('lib/mpi/ imports fastsock only through its public facade (lib/index.ts) and lib/errors.ts', async t => {
  const res = await madge(path.join(root, 'lib'), config)
  const mpiFiles = Object.keys(res.obj()).filter(f => f.startsWith('mpi/') && f.endsWith('.ts'))
  t.ok(mpiFiles.length >= 8, `madge read lib/mpi/ (${mpiFiles.length} files)`)
  const bad = []
  for (const f of mpiFiles) {
    for (const dep of res.obj()[f]) if (!dep.startsWith('mpi/') && !MPI_MAY_IMPORT.includes(dep) && dep.endsWith('.ts')) bad.push(`${f} -> ${dep}`)
    // The source text too: every relative specifier leaving lib/mpi/ must name lib/index
    // ('../index' from lib/mpi, '../../index' from lib/mpi/coll), dynamic import() included.
    const src = fs.readFileSync(path.join(root, 'lib', f), 'utf8')
    const specs = [...src.matchAll(/(?:from\s+|require\s*\(\s*|import\s*\(\s*)['"]([^'"]+)['"]/g)].map(m => m[1])
    for (const spec of specs) {
      if (!spec.startsWith('.')) continue
      const target = path.relative(path.join(root, 'lib'), path.resolve(path.dirname(path.join(root, 'lib', f)), spec))
      if (!target.startsWith('mpi' + path.sep) && target !== 'mpi' && !MPI_MAY_IMPORT.includes(target + '.ts')) bad.push(`${f} imports '${spec}'`)
    }
  }
  t.same(bad, [], 'only ../index, ../errors (or ../../ from coll/) and lib/mpi/ files')
  // The check can fail: a file importing socket.ts directly is caught.
  const probe = "import { Socket } from '../socket'"
  const m = /(?:from\s+)['"]([^'"]+)['"]/.exec(probe)
  t.not(path.relative(path.join(root, 'lib'), path.resolve(path.join(root, 'lib', 'mpi'), m[1])), 'index', 'a direct import of ../socket is not the facade')
})

// docs/design.md, "csrc/ layout": the protocol cores, plain C++ beside their JS faces.
const CSRC = path.join(root, 'csrc')
const CORES = [/^shm\/(?!endpoint)/, /^rdma\/verbs\//, /^rdma\/bridge\//, /^wire\//,
  /^(progress|ready_list|sealed_memfd|peer_doorbell)\.(h|cc)$/, /^(stream_state|clock|uv_handles)\.h$/]
const NAPI = /^#include\s*[<"](napi\.h|node_api\.h|js_native_api\.h|node_api_types\.h|js_native_api_types\.h)[>"]/m
const csrcFiles = (d = CSRC) => fs.readdirSync(d, { withFileTypes: true })
  .flatMap(e => e.isDirectory() ? csrcFiles(path.join(d, e.name)) : /\.(h|cc)$/.test(e.name) ? [path.relative(CSRC, path.join(d, e.name)).split(path.sep).join('/')] : [])

/** The csrc/ headers `file` includes with quotes, and theirs, as csrc/-relative paths. */
function includesOf (file, seen = new Set()) {
  const src = fs.readFileSync(path.join(CSRC, file), 'utf8')
  for (const m of src.matchAll(/^#include\s*"([^"]+)"/gm)) {
    const rel = m[1]
    if (seen.has(rel) || !fs.existsSync(path.join(CSRC, rel))) continue // generated/source_hash.h
    seen.add(rel)
    includesOf(rel, seen)
  }
  return seen
}

t.test('the protocol cores in csrc/ include no N-API (directly or through a header)', async t => {
  const cores = csrcFiles().filter(f => CORES.some(re => re.test(f)))
  t.ok(cores.includes('shm/conn.h') && cores.includes('rdma/verbs/conn.h') && cores.includes('progress.h'), `the cores were found (${cores.length} files)`)
  const bad = []
  for (const f of cores) {
    for (const g of [f, ...includesOf(f)]) if (NAPI.test(fs.readFileSync(path.join(CSRC, g), 'utf8'))) bad.push(g === f ? f : `${f} (through ${g})`)
  }
  t.same(bad, [], 'no <napi.h> nor node_api headers')
  t.ok(NAPI.test('#include <napi.h>\n') && includesOf('shm/endpoint.h').has('endpoint_face.h'), 'the check can fail: a face includes N-API')
})

t.test('no csrc/ file over 800 lines', async t => {
  const big = csrcFiles().map(f => [f, fs.readFileSync(path.join(CSRC, f), 'utf8').split('\n').length]).filter(([, n]) => n > 800)
  t.same(big, [], 'every file 800 lines or fewer')
})

// docs/design.md, "lib/mpi's own layers": the level of each lib/mpi file (a folder ending in `/`
// stands for everything under it), read from the doc's block.
function mpiLayers () {
  const md = fs.readFileSync(path.join(root, 'docs', 'design.md'), 'utf8')
  const block = md.slice(md.indexOf("### lib/mpi's own layers")).match(/```\n([\s\S]*?)```/)[1]
  const entries = []
  let level = null
  for (const line of block.split('\n')) {
    const m = /^(?:M(\d))?\s+([a-z-]+)\s+(.+)$/.exec(line)
    if (m === null) continue
    if (m[1] !== undefined) level = Number(m[1])
    for (const p of m[3].trim().split(/\s+/)) entries.push([p, level, m[2]])
  }
  return entries
}

t.test("lib/mpi's own layers: every file has one, and imports point down (wire < connection < matching < device < collectives < communicator < init)", async t => {
  const entries = mpiLayers()
  t.ok(entries.length >= 15, `the block was read (${entries.length} entries)`)
  const levelOf = f => { const e = entries.find(([p]) => p.endsWith('/') ? f.startsWith(p) : f === p); return e ? e[1] : null }
  const order = ['wire', 'connection', 'matching', 'device', 'collectives', 'communicator', 'init'].map(name => entries.find(e => e[2] === name)[1])
  t.same(order, [...order].sort((a, b) => a - b), 'the named layers are in that order')
  t.ok(order[0] < order[order.length - 1])
  const res = await madge(path.join(root, 'lib', 'mpi'), config)
  const upward = []
  for (const [from, deps] of Object.entries(res.obj())) {
    if (!from.endsWith('.ts') || from.startsWith('..')) continue // fastsock itself, through the facade
    t.not(levelOf(from), null, `mpi/${from} has a layer in docs/design.md's lib/mpi block`)
    for (const to of deps.filter(d => d.endsWith('.ts') && !d.startsWith('..'))) {
      if (levelOf(to) > levelOf(from)) upward.push(`${from} (M${levelOf(from)}) -> ${to} (M${levelOf(to)})`)
    }
  }
  t.same(upward, [], 'no upward import inside lib/mpi')
  t.ok(levelOf('device-conn.ts') < levelOf('device.ts') && levelOf('coll/index.ts') < levelOf('comm.ts'), 'the check can tell up from down')
})
