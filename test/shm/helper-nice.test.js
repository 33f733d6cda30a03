'use strict'
// V8's platform worker threads go to nice 19 when a process's first busy-polling endpoint starts
// (csrc/helper_threads.cc, docs/polling.md "Where a millisecond round trip goes"); the main thread,
// worker_threads and libuv's pool keep theirs; FASTSOCK_HELPER_NICE=0 and a connection without
// polling (pollUs: 0) change nothing. Each case runs in a fresh process (the change is once per
// process), reading /proc/self/task before and after an shm connection to itself.
const t = require('tap')
const { execFileSync } = require('child_process')
const { rungs } = require('../helpers/rungs')

const skip = !rungs.includes('shm') && 'shm is not available here'

const CHILD = `
const fs = require('fs')
const { Worker } = require('worker_threads')
const fastsock = require(${JSON.stringify(require.resolve('../..'))})
const threads = () => Object.fromEntries(fs.readdirSync('/proc/self/task').map(tid => {
  const stat = fs.readFileSync('/proc/self/task/' + tid + '/stat', 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return [tid, { nice: Number(f[16]), comm: fs.readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim() }]
}))
// a worker_thread started before the connection: its threads must keep their nice value
const w = new Worker('setInterval(() => {}, 1000)', { eval: true })
w.on('online', () => {
  const before = threads()
  const pollUs = process.env.POLL_US === undefined ? undefined : Number(process.env.POLL_US)
  const srv = fastsock.createServer({ transports: ['shm'], pollUs }, s => s.pipe(s))
  srv.listen(0, '127.0.0.1', () => {
    const c = fastsock.connect({ port: srv.address().port, host: '127.0.0.1', transports: ['shm'], pollUs })
    c.on('connect', () => {
      const after = threads()
      process.stdout.write(JSON.stringify({ transport: c.transport, pid: process.pid, before, after }))
      c.destroy(); srv.close(); w.terminate()
    })
  })
})
`

/** The threads whose nice value changed across the connection (present before and after). */
const changedTids = r => Object.keys(r.after).filter(tid => r.before[tid] !== undefined && r.after[tid].nice !== r.before[tid].nice)

function run (env) {
  return JSON.parse(execFileSync(process.execPath, ['-e', CHILD], { env: { ...process.env, ...env }, timeout: 30000 }).toString())
}

t.test('the V8 workers go to nice 19, nothing else changes', { skip }, async t => {
  const r = run({})
  t.equal(r.transport, 'shm')
  const changed = changedTids(r)
  t.ok(changed.length >= 4, `at least Node's four V8 workers changed (${changed.length}: ${changed.map(x => r.after[x].comm).join(', ')})`)
  for (const tid of changed) t.equal(r.after[tid].nice, 19, `thread ${tid} (${r.after[tid].comm}) at nice 19`)
  t.equal(r.after[String(r.pid)].nice, r.before[String(r.pid)].nice, 'the main thread keeps its nice value')
  // Threads started after the platform's (the worker_thread's, libuv's pool) keep theirs: more
  // threads exist than changed, and none of them moved.
  const kept = Object.keys(r.before).filter(tid => tid !== String(r.pid) && !changed.includes(tid))
  t.ok(kept.length >= 1, `threads left alone: ${kept.length} (the worker_thread among them)`)
  for (const tid of kept) t.equal(r.after[tid]?.nice ?? r.before[tid].nice, r.before[tid].nice, `thread ${tid} (${r.before[tid].comm}) unchanged`)
})

t.test('FASTSOCK_HELPER_NICE=0, and a connection without polling, change nothing', { skip }, async t => {
  for (const env of [{ FASTSOCK_HELPER_NICE: '0' }, { POLL_US: '0' }]) {
    const r = run(env)
    t.equal(r.transport, 'shm')
    const changed = changedTids(r)
    t.same(changed, [], `${JSON.stringify(env)}: no thread changed`)
  }
})

t.test('FASTSOCK_HELPER_NICE sets the value', { skip }, async t => {
  const r = run({ FASTSOCK_HELPER_NICE: '7' })
  const changed = changedTids(r)
  t.ok(changed.length >= 4, `${changed.length} threads changed`)
  for (const tid of changed) t.equal(r.after[tid].nice, 7, `thread ${tid} at nice 7`)
})
