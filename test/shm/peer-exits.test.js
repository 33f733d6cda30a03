'use strict'
// A peer whose environment goes away normally (a worker terminated, a process exiting) closes
// its shm connections like the kernel closes TCP sockets: the survivor sees 'end' (a FIN), not
// an error; and an exception thrown by a handler on the shm path is an ordinary uncaught
// exception, not an abort.
const t = require('tap')
const { Worker } = require('worker_threads')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const fastsock = require('../..')

const skip = !rungs.includes('shm') && 'shm is not available here'

t.test('worker terminated: the client sees end', { skip }, async t => {
  const worker = new Worker(`
    const { parentPort } = require('worker_threads')
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    const server = fastsock.createServer({ transports: ['shm'] }, s => s.pipe(s))
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
  `, { eval: true })
  const port = await new Promise(resolve => worker.once('message', resolve))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(c, 'connect')
  c.write('x')
  await once(c, 'data')
  const errors = []
  c.on('error', e => errors.push(e))
  const ended = within(new Promise(resolve => c.once('end', resolve)), 5000, "'end'")
  await worker.terminate()
  await ended
  t.same(errors.map(e => e.code), [], 'no error')
  c.destroy()
})

t.test('process exits with an open connection: the peer sees end', { skip }, async t => {
  const peer = spawnNode(t, ['-e', `
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    const server = fastsock.createServer({ transports: ['shm'] }, s => { s.write('bye'); setTimeout(() => process.exit(0), 50) })
    server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })))
  `])
  const { port } = await peer.waitFor(m => m.port)
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  const errors = []
  c.on('error', e => errors.push(e))
  let got = ''
  c.on('data', d => { got += d })
  await within(new Promise(resolve => c.once('end', resolve)), 5000, "'end'")
  t.equal(got, 'bye')
  t.same(errors.map(e => e.code), [], 'no error')
})

t.test('a throwing handler on the shm path is an uncaught exception', { skip }, async t => {
  const child = spawnNode(t, ['-e', `
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    process.on('uncaughtException', e => { console.log(JSON.stringify({ caught: e.message })); process.exit(0) })
    const server = fastsock.createServer({ transports: ['shm'] }, s => s.on('data', () => { throw new Error('boom') }))
    server.listen(0, '127.0.0.1', () => {
      const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: ['shm'] }, () => c.write('x'))
    })
  `])
  const m = await peer(child)
  t.equal(m.caught, 'boom', "the handler's exception reached 'uncaughtException'")
  const { code, signal } = await child.exited
  t.equal(signal, null, 'no abort')
  t.equal(code, 0)
})

function peer (child) { return child.waitFor(m => m.caught) }
