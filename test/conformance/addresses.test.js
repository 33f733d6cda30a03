'use strict'
// Addresses: both ends report one consistent 4-tuple, with the same values (families,
// ::ffff: mapping on a dual-stack listener, IPv6) as plain net reports over loopback TCP for the
// same listen address and dialed host. Ports: the server's port on both ends, and the client's
// port as the server sees it.
const t = require('tap')
const net = require('net')
const { forEachRung, pair } = require('../helpers/rungs')
const { once, hasIPv6 } = require('../helpers/util')

// SMC-R reaches loopback through SMC-Rv2, which is IPv4 only: over IPv6 the kernel serves an
// AF_SMC connection over TCP (fallback), so the socket rightly reports 'tcp'.
const SMC_IPV6 = 'SMC-Rv2 (loopback SMC-R) is IPv4 only: an IPv6 dial falls back to TCP'

const configs = [
  { listen: '127.0.0.1', dial: '127.0.0.1' },
  { listen: '0.0.0.0', dial: '127.0.0.1' },
  { listen: '::', dial: '127.0.0.1', ipv6: true },
  { listen: '::', dial: '::ffff:127.0.0.1', ipv6: true },
  { listen: '::1', dial: '::1', ipv6: true },
  { listen: '::', dial: '::1', ipv6: true },
  { listen: '::', dial: '::1', ipv6: true, ipv6Only: true },
  { listen: '127.0.0.1', dial: 'localhost' }
]

/** The address fields of both ends, ports left out (they differ between connections). */
function shape (client, serverSocket) {
  const end = s => ({
    remoteAddress: s.remoteAddress,
    remoteFamily: s.remoteFamily,
    localAddress: s.localAddress,
    localFamily: s.localFamily,
    address: { address: s.address().address, family: s.address().family }
  })
  return { client: end(client), server: end(serverSocket) }
}

function checkPorts (t, port, client, serverSocket) {
  t.equal(client.remotePort, port, 'client.remotePort is the server port')
  t.equal(serverSocket.localPort, port, 'server-side localPort is the server port')
  t.equal(serverSocket.address().port, port, 'server-side address().port')
  t.type(client.localPort, 'number')
  t.ok(client.localPort > 0 && client.localPort < 65536, `client port ${client.localPort} is a port`)
  t.equal(serverSocket.remotePort, client.localPort, 'the server sees the client port the client reports')
  t.equal(client.address().port, client.localPort, 'client address().port')
}

async function netShape (c) {
  const server = net.createServer()
  const accepted = new Promise(resolve => server.once('connection', resolve))
  await new Promise((resolve, reject) => server.once('error', reject).listen({ port: 0, host: c.listen, ipv6Only: !!c.ipv6Only }, resolve))
  const port = server.address().port
  const client = net.connect({ port, host: c.dial })
  const [serverSocket] = await Promise.all([accepted, once(client, 'connect')])
  const s = shape(client, serverSocket)
  client.destroy()
  serverSocket.destroy()
  await new Promise(resolve => server.close(resolve))
  return s
}

t.test('addresses', async t => {
  const v6 = await hasIPv6()
  for (const c of configs) {
    const name = `listen ${c.listen}${c.ipv6Only ? ' (ipv6Only)' : ''}, dial ${c.dial}`
    t.test(name, c.ipv6 && !v6 ? { skip: 'no IPv6 loopback on this host' } : {}, async t => {
      const expected = await netShape(c)
      forEachRung(t, async (t, rung) => {
        const { client, serverSocket, port } = await pair(rung, {
          t, listenHost: c.listen, connectHost: c.dial, listenOptions: c.ipv6Only ? { ipv6Only: true } : undefined
        })
        t.same(shape(client, serverSocket), expected, 'same addresses and families as net over TCP')
        checkPorts(t, port, client, serverSocket)
      }, { loopback: true, skip: net.isIPv6(c.dial) ? { smc: SMC_IPV6 } : {} })
    })
  }
})
