#!/usr/bin/env node
'use strict'
// The connect walk of docs/design.md: the library files a client passes through from
// fastsock.connect() to its first 'data' event, in order, measured at run time:
//
//   node scripts/connect-walk.js [--rung shm] [--root DIR]
//
// Every function a dist/ module exports (and the methods of exported classes and objects) is
// wrapped, so each call from one file into another is seen with its caller: the walk is the
// sequence of files entered (repeats of one file in a row folded), a climb is a call from a file
// of a lower layer into one of a higher layer (docs/design.md's layer map of the checkout), and
// V8's precise coverage (node:inspector) adds every file that ran a function of its own. A
// fastsock server echoing one byte runs in a child process (its accept path is not counted); the
// client connects once to load and warm everything, then a second connect is measured. --root
// points at another checkout (an older commit's, built) to compare; the map is that checkout's.
const { parseArgs } = require('util')
const { spawn } = require('child_process')
const inspector = require('inspector/promises')
const path = require('path')
const { layerMap, layerOf: layerOfIn } = require('./layer-map')

const { values: args } = parseArgs({ options: { rung: { type: 'string', default: 'shm' }, root: { type: 'string', default: path.join(__dirname, '..') } } })
const root = path.resolve(args.root)
const dist = path.join(root, 'dist')
const fastsock = require(dist)

const MAP = layerMap(root)
/** The layer of a dist/ file (relative, .js) in that checkout's map. */
const layerOf = rel => layerOfIn(MAP, rel)

// Wrap every export of every dist/ module loaded so far.
const events = []
const stack = []
let recording = false
function wrap (fn, file, name) {
  const wrapped = function (...a) {
    const caller = stack.length ? stack[stack.length - 1] : null
    if (recording) events.push({ file, name, caller })
    stack.push(file)
    try {
      return fn.apply(this, a)
    } finally {
      stack.pop()
    }
  }
  Object.defineProperty(wrapped, 'name', { value: fn.name })
  return wrapped
}
/** A class, or a function meant for `new` (a capitalised name): its prototype's methods are wrapped instead. */
const isClass = f => /^class\b/.test(Function.prototype.toString.call(f)) || /^[A-Z]/.test(f.name)
function wrapMethods (obj, file, owner) {
  for (const key of Object.getOwnPropertyNames(obj)) {
    if (key === 'constructor') continue
    const d = Object.getOwnPropertyDescriptor(obj, key)
    if (d && typeof d.value === 'function' && d.writable && !isClass(d.value)) obj[key] = wrap(d.value, file, `${owner}.${key}`)
  }
}
for (const [id, mod] of Object.entries(require.cache)) {
  if (!id.startsWith(dist + path.sep)) continue
  const file = path.relative(dist, id)
  const ex = mod.exports
  for (const key of Object.keys(ex)) {
    const d = Object.getOwnPropertyDescriptor(ex, key)
    if (!d || !('value' in d)) continue // a re-export (a getter): wrapped where it is defined
    const v = d.value
    if (typeof v === 'function' && isClass(v)) { if (v.prototype) wrapMethods(v.prototype, file, key) }
    else if (typeof v === 'function' && d.writable) ex[key] = wrap(v, file, key)
    else if (v && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
      wrapMethods(v, file, key)
      for (const inner of Object.values(v)) if (inner && typeof inner === 'object' && !Array.isArray(inner)) wrapMethods(inner, file, key)
      const proto = Object.getPrototypeOf(v)
      if (proto && proto !== Object.prototype) wrapMethods(proto, file, key)
    }
  }
}

const serverCode = `
  const fastsock = require(${JSON.stringify(dist)})
  const server = fastsock.createServer(s => s.on('data', d => s.write(d)))
  server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'))
  process.stdin.on('end', () => process.exit(0)); process.stdin.resume()`

function firstData (port) {
  return new Promise((resolve, reject) => {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: [args.rung] })
    c.once('error', reject)
    c.once('connect', () => c.write('x'))
    c.once('data', () => resolve(c))
  })
}

async function main () {
  const server = spawn(process.execPath, ['-e', serverCode], { stdio: ['pipe', 'pipe', 'inherit'] })
  const port = await new Promise(resolve => server.stdout.once('data', d => resolve(Number(String(d)))))
  const session = new inspector.Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
  ;(await firstData(port)).destroy() // loads and warms every module on the way
  await session.post('Profiler.takePreciseCoverage') // resets the counters
  recording = true
  const c = await firstData(port)
  recording = false
  const { result } = await session.post('Profiler.takePreciseCoverage')
  c.destroy()
  server.stdin.end()

  const ran = result
    .filter(s => s.url.startsWith('file://' + dist + path.sep))
    .filter(s => s.functions.some(f => f.ranges[0].count > 0))
    .map(s => path.relative(dist, s.url.slice('file://'.length)))
  const walk = []
  for (const e of events) if (walk[walk.length - 1] !== e.file) walk.push(e.file)
  const climbs = events.filter(e => e.caller !== null && layerOf(e.caller) !== null && layerOf(e.file) > layerOf(e.caller))
  const tag = f => `${f} (L${layerOf(f) ?? '?'})`
  console.log(`connect() -> first 'data' on ${args.rung} (landed on ${c.transport}), client side, ${root}`)
  console.log(`walk (calls between files, in order, repeats folded): ${walk.length} steps over ${new Set(walk).size} files`)
  console.log('  ' + walk.map(f => tag(f)).join('\n  '))
  console.log(`climbs (a call from a lower layer up): ${climbs.length}`)
  for (const e of climbs) console.log(`  ${tag(e.caller)} -> ${tag(e.file)} ${e.name}`)
  console.log(`files that ran a function (V8 coverage): ${ran.length}`)
  console.log('  ' + ran.sort().join(', '))
}

main().catch(err => { console.error(err); process.exit(1) })
