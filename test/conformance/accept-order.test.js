'use strict'
// Connections are accepted in the order they were opened: three clients opened in the same tick
// to `localhost` reach the server's 'connection' in their opening order over loopback TCP
// (the kernel's accept queue is FIFO), and applications and test suites assume it. On every
// rung: ROUNDS rounds of CLIENTS clients, the order of 'connection' on the server against the
// clients' opening order (matched by port: client.localPort === serverSocket.remotePort on every
// rung). The same rounds over Node's own net (plain TCP) in this run set the bar: a rung must be
// in order in at least as many rounds as TCP, minus MARGIN_ROUNDS. Before the fix, shm and unix
// were out of order in 20-29 of 30 rounds.
const t = require('tap')
const net = require('net')
const { fastsock, forEachRung, ALL_RUNGS } = require('../helpers/rungs')
const { within } = require('../helpers/util')

const ROUNDS = 30
const CLIENTS = 3
const MARGIN_ROUNDS = 3

/**
 * Runs the rounds against a server made by `createServer` with clients made by `connect(port)`;
 * resolves with the number of rounds whose 'connection' order was the opening order.
 */
async function roundsInOrder (createServer, connect) {
  let inOrder = 0
  for (let round = 0; round < ROUNDS; round++) {
    const accepted = []
    const server = createServer(s => { s.on('error', () => {}); accepted.push(s) })
    await new Promise(resolve => server.listen(0, 'localhost', resolve))
    const port = server.address().port
    const clients = []
    for (let i = 0; i < CLIENTS; i++) clients.push(connect(port))
    await within(Promise.all(clients.map(c => new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject)))), 10000, 'clients connected')
    await within(new Promise(resolve => { const check = () => accepted.length >= CLIENTS ? resolve() : setTimeout(check, 1); check() }), 10000, 'server connections')
    const order = accepted.map(s => clients.findIndex(c => c.localPort === s.remotePort))
    if (order.every((c, i) => c === i)) inOrder++
    for (const c of clients) c.destroy()
    for (const s of accepted) s.destroy()
    await new Promise(resolve => server.close(resolve))
  }
  return inOrder
}

let tcpInOrder = null
/** The rounds in order over Node's own net, measured once per run. */
async function tcpBar () {
  tcpInOrder ??= await roundsInOrder(net.createServer, port => net.connect(port, 'localhost'))
  return tcpInOrder
}

forEachRung(t, async (t, rung) => {
  if (rung === 'tcp') {
    // fastsock's tcp rung is Node's own connect: its order is the kernel's, as for net itself,
    // which varies here from 8 to 28 of 30 rounds between runs on a loaded machine: no bar.
    return t.skip('tcp: the order is Node\'s own connect\'s (the bar itself)')
  }
  const bar = await tcpBar()
  const got = await roundsInOrder(
    onConnection => fastsock.createServer({ transports: ALL_RUNGS }, onConnection),
    port => fastsock.connect({ port, host: 'localhost', transports: [rung] }))
  t.comment(`${rung}: in order in ${got} of ${ROUNDS} rounds (Node's net over TCP: ${bar})`)
  t.ok(got >= bar - MARGIN_ROUNDS, `${rung}: ${got} of ${ROUNDS} rounds in opening order, at least TCP's ${bar} - ${MARGIN_ROUNDS}`)
}, { loopback: true, timeout: 60000 })

t.test('a side-channel client that sends nothing does not hold back the ones after it', async t => {
  const { rungs } = require('../helpers/rungs')
  const sideRungs = rungs.filter(r => r === 'shm' || r === 'unix')
  if (sideRungs.length === 0) return t.skip('no side-channel rung here')
  const { native } = require('../../dist/native')
  const { channelName } = require('../../dist/sidechannel/names')
  for (const rung of sideRungs) {
    const accepted = []
    const server = fastsock.createServer({ transports: ALL_RUNGS, handshakeTimeoutMs: 20000 }, s => { s.on('error', () => {}); accepted.push(s) })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    const port = server.address().port
    // Accepted first, never sends HELLO: admission in accept order would hold the client below
    // until the silent one's handshake timeout (20 s) without the hold bound (50 ms).
    const silent = native.connectAbstract(channelName('127.0.0.1', port))
    t.ok(silent >= 0, 'the silent client is connected to the side channel')
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: [rung] })
    await within(new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject)), 5000, 'client connected')
    await within(new Promise(resolve => { const check = () => accepted.length >= 1 ? resolve() : setTimeout(check, 1); check() }), 5000, 'the server\'s \'connection\' for the client behind the silent one')
    t.equal(accepted[0].transport, rung, `${rung}: the server got the client behind the silent one`)
    native.closeFd(silent)
    c.destroy()
    for (const s of accepted) s.destroy()
    await new Promise(resolve => server.close(resolve))
  }
})
