'use strict'
// lib/mpi/store.ts across processes: clients in their own processes (test/fixtures/mpi/
// store-client.js); a SIGKILLed client is reported to the others as 'rankLost' (within 1 s to
// the test's own client), an
// exit without finalizing too, an orderly leave not; abort from one process reaches the others;
// the server's process dying is rankLost(0) everywhere.
const t = require('tap')
const path = require('path')
const readline = require('readline')
const { spawn } = require('child_process')
const { StoreServer, StoreClient } = require('../../dist/mpi/store.js')

const CHILD = path.join(__dirname, '..', 'fixtures', 'mpi', 'store-client.js')

/** A client process of rank `rank`; `next(pred, ms)` resolves with its next JSON event matching. */
function client (t, addr, rank) {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(addr), String(rank)], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const events = []
  let wake = () => {}
  readline.createInterface({ input: child.stdout }).on('line', line => {
    try { events.push(JSON.parse(line)) } catch { events.push({ event: 'junk', line }) }
    wake()
  })
  const next = (pred, ms = 5000) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rank ${rank}: no matching event in ${ms} ms; got ${JSON.stringify(events)}`)), ms)
    const look = () => {
      const i = events.findIndex(pred)
      if (i >= 0) { clearTimeout(timer); resolve(events.splice(i, 1)[0]) } else wake = look
    }
    look()
  })
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  return { child, next, exited, events, send: line => child.stdin.write(line + '\n') }
}

const isEvent = (name, extra = {}) => e => e.event === name && Object.entries(extra).every(([k, v]) => e[k] === v)

t.test('SIGKILL, exit and orderly leave of client processes', async t => {
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close({ graceMs: 0 }))
  const me = await StoreClient.connect(server.address, { rank: 0, timeoutMs: 5000 })
  t.teardown(() => me.close())
  const lostHere = []
  me.on('rankLost', r => lostHere.push(r))
  const c = [null, client(t, server.address, 1), client(t, server.address, 2), client(t, server.address, 3), client(t, server.address, 4)]
  for (let r = 1; r <= 4; r++) await c[r].next(isEvent('ready'), 10000)
  t.same(server.connectedRanks, [0, 1, 2, 3, 4])

  // SIGKILL rank 2: this process's client hears within 1 s (the bound); the client
  // processes too (their printing through a pipe on a busy machine gets more slack).
  const t0 = Date.now()
  const hereLost = new Promise(resolve => me.once('rankLost', r => resolve([r, Date.now() - t0])))
  c[2].child.kill('SIGKILL')
  const [lostRank, ms] = await hereLost
  t.equal(lostRank, 2)
  t.ok(ms < 1000, `lost rank 2 reported in ${ms} ms`)
  await Promise.all([1, 3, 4].map(r => c[r].next(isEvent('rankLost', { rank: 2 }), 5000)))
  t.same(lostHere, [2])

  // Exit without finalizing is a loss too.
  c[3].send('exit')
  await Promise.all([1, 4].map(r => c[r].next(isEvent('rankLost', { rank: 3 }), 5000)))

  // Orderly leave: nobody is told.
  c[4].send('finalize')
  await c[4].next(isEvent('closed'))
  t.same(await c[4].exited, { code: 0, signal: null })
  await new Promise(resolve => setTimeout(resolve, 300))
  t.notOk(c[1].events.some(isEvent('rankLost', { rank: 4 })), 'rank 4 finalized: not lost')
  t.same(lostHere, [2, 3])

  // Values set by a process are readable after it is gone.
  c[1].send('get up/4')
  t.match(await c[1].next(isEvent('value', { key: 'up/4' })), { value: /^\d+$/ })
  c[1].send('finalize')
  await c[1].exited
})

t.test('abort from one process reaches the others', async t => {
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => server.close({ graceMs: 0 }))
  const c = [null, client(t, server.address, 1), client(t, server.address, 2), client(t, server.address, 3)]
  for (let r = 1; r <= 3; r++) await c[r].next(isEvent('ready'), 10000)
  c[2].send('abort 9')
  t.match(await c[1].next(isEvent('abort')), { code: 9, from: 2 })
  t.match(await c[3].next(isEvent('abort')), { code: 9, from: 2 })
  t.same(await c[2].exited, { code: 9, signal: null })
  // The aborting rank's exit is no separate loss notice.
  await new Promise(resolve => setTimeout(resolve, 200))
  t.notOk(c[1].events.some(isEvent('rankLost')), 'no rankLost after abort')
})

t.test("the server's process dying is rankLost(0) in every client", async t => {
  // The server runs in a child process too (as rank 0 would).
  const srv = spawn(process.execPath, ['-e', `
    const { StoreServer } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi', 'store.js'))})
    StoreServer.listen({ host: '127.0.0.1', port: 0 }).then(s => console.log(s.address.port))`], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => srv.kill('SIGKILL'))
  const port = await new Promise(resolve => readline.createInterface({ input: srv.stdout }).once('line', l => resolve(Number(l))))
  const addr = { host: '127.0.0.1', port }
  const c = [null, client(t, addr, 1), client(t, addr, 2)]
  for (let r = 1; r <= 2; r++) await c[r].next(isEvent('ready'), 10000)
  srv.kill('SIGKILL')
  await Promise.all([1, 2].map(r => c[r].next(isEvent('rankLost', { rank: 0 }), 5000)))
  t.pass('both clients told')
})
