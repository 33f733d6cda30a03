'use strict'
// HandshakeGate (lib/mpi/auth.ts), the bound on a listener's connections in
// handshake, over real kernel sockets: a flood of silent connections leaves at most `max`
// pending (the rest cut, oldest first), one that sent its HELLO is cut after every silent one,
// and a pending connection keeps no process alive.
const t = require('tap')
const net = require('net')
const { spawn } = require('child_process')
const path = require('path')
const { HandshakeGate } = require('../../dist/mpi/auth')

/** A listener whose accepted sockets go through `gate`; resolves { server, port, accepted }. */
async function listener (gate) {
  const accepted = []
  const server = net.createServer(s => { s.on('error', () => {}); accepted.push(s); gate.admit(s) })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return { server, port: server.address().port, accepted }
}

const connect = port => new Promise(resolve => {
  const c = net.connect(port, '127.0.0.1', () => resolve(c))
  c.on('error', () => {})
})
const until = async (pred) => { for (let i = 0; i < 500 && !pred(); i++) await new Promise(resolve => setTimeout(resolve, 10)) }

t.test('a flood of silent connections: at most max pending, the oldest cut', async t => {
  const gate = new HandshakeGate(16)
  const { server, port, accepted } = await listener(gate)
  t.teardown(() => { gate.closeAll(); server.close() })
  const clients = []
  const cut = []
  for (let i = 0; i < 60; i++) {
    const c = await connect(port)
    c.on('close', () => cut.push(i))
    clients.push(c)
  }
  await until(() => accepted.length === 60 && cut.length === 44)
  t.equal(gate.size, 16, 'pending: the bound')
  t.equal(gate.evicted, 44)
  t.same(cut.sort((a, b) => a - b), Array.from({ length: 44 }, (_v, i) => i), 'the 44 oldest were cut')
  for (const c of clients) c.destroy()
})

t.test('a connection that sent its HELLO is cut after the silent ones', async t => {
  const gate = new HandshakeGate(4)
  const { server, port, accepted } = await listener(gate)
  t.teardown(() => { gate.closeAll(); server.close() })
  const clients = []
  for (let i = 0; i < 4; i++) clients.push(await connect(port))
  await until(() => accepted.length === 4)
  gate.greeted(accepted[0]) // the oldest, but greeted
  for (let i = 0; i < 3; i++) clients.push(await connect(port))
  await until(() => accepted.length === 7 && gate.evicted === 3)
  t.equal(accepted[0].destroyed, false, 'the greeted one stays')
  t.same([1, 2, 3].map(i => accepted[i].destroyed), [true, true, true], 'the silent ones went first')
  gate.done(accepted[0])
  t.equal(gate.size, 3, 'done: it left the gate')
  gate.closeAll()
  t.equal(gate.size, 0)
  for (const c of clients) c.destroy()
})

t.test('a pending connection keeps no process alive', async t => {
  const code = `
const net = require('net')
const { HandshakeGate } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi', 'auth'))})
const gate = new HandshakeGate(8)
const server = net.createServer(s => { gate.admit(s); server.unref(); console.log('admitted') })
server.listen(0, '127.0.0.1', () => console.log(server.address().port))`
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  const port = await new Promise(resolve => child.stdout.on('data', d => { out += d; const m = /^(\d+)\n/.exec(out); if (m) resolve(Number(m[1])) }))
  const c = await connect(port) // silent, held open
  const guard = setTimeout(() => child.kill('SIGKILL'), 10000)
  const [exitCode, signal] = await new Promise(resolve => child.once('exit', (c2, s) => resolve([c2, s])))
  clearTimeout(guard)
  t.match(out, /admitted/)
  t.same([exitCode, signal], [0, null], 'the process exited by itself with the connection pending')
  c.destroy()
})
