'use strict'
// Connect-time validation and DNS as Node's connect does them (lookupAndConnect): bad `lookup`,
// `hints`, `autoSelectFamily` and `autoSelectFamilyAttemptTimeout` throw at once; a host name is
// resolved once per connect (the caller's lookup called once, dns.lookup queried once) whether a
// fast rung or TCP carries the connection; a bad lookup result is ERR_INVALID_IP_ADDRESS; with
// autoSelectFamily off only the first address is tried, with it on the addresses tried are in
// `autoSelectFamilyAttemptedAddresses`. The chain of each subtest is `[rung, 'tcp']`, so that
// what the rung cannot serve ends in Node's connect.
const t = require('tap')
const dns = require('dns')
const net = require('net')
const { forEachRung, fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { listen, once, within, hasIPv6, connectOutcome } = require('../helpers/util')

const HOST = 'fastsock-lookup-test.invalid'

/** A lookup function answering `addresses` (Node's shapes for all / not all), counting its calls. */
function mockLookup (...addresses) {
  const entries = addresses.map(address => ({ address, family: net.isIP(address) }))
  const lookup = (host, opts, cb) => {
    lookup.calls.push({ host, all: opts.all === true })
    process.nextTick(() => opts.all ? cb(null, entries) : cb(null, entries[0].address, entries[0].family))
  }
  lookup.calls = []
  return lookup
}

async function fastsockServer (t) {
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => {
    s.on('error', () => {})
    s.end('hi')
  })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  return server.address().port
}

forEachRung(t, async (t, rung) => {
  const chain = rung === 'tcp' ? ['tcp'] : [rung, 'tcp']

  t.test('bad options throw at once, with Node\'s codes', async t => {
    const bad = [
      [{ host: 'localhost', lookup: 'foobar' }, 'ERR_INVALID_ARG_TYPE'],
      [{ host: 'localhost', lookup: {} }, 'ERR_INVALID_ARG_TYPE'],
      [{ autoSelectFamily: 'INVALID' }, 'ERR_INVALID_ARG_TYPE'],
      [{ autoSelectFamily: true, autoSelectFamilyAttemptTimeout: 0 }, 'ERR_OUT_OF_RANGE'],
      [{ autoSelectFamily: true, autoSelectFamilyAttemptTimeout: -10 }, 'ERR_OUT_OF_RANGE'],
      [{ host: 'localhost', hints: (dns.ADDRCONFIG | dns.V4MAPPED | dns.ALL) + 42 }, 'ERR_INVALID_ARG_VALUE']
    ]
    for (const [opts, code] of bad) {
      t.throws(() => fastsock.connect({ port: 8080, transports: chain, ...opts }), { code }, JSON.stringify(opts))
    }
  })

  t.test('a host name is looked up once, on the rung', async t => {
    const port = await fastsockServer(t)
    const lookup = mockLookup('127.0.0.1')
    const c = fastsock.connect({ port, host: HOST, lookup, transports: chain })
    t.teardown(() => c.destroy())
    const lookups = []
    c.on('lookup', (...args) => lookups.push(args))
    await once(c, 'connect')
    t.equal(c.transport, rung)
    t.equal(lookup.calls.length, 1, 'the lookup function was called once')
    t.same(lookups, [[null, '127.0.0.1', 4, HOST]], "one 'lookup' event, with net's arguments")
  })

  t.test('one address asked for (family 4): on the rung', async t => {
    const port = await fastsockServer(t)
    const lookup = mockLookup('127.0.0.1')
    const c = fastsock.connect({ port, host: HOST, family: 4, lookup, transports: chain })
    t.teardown(() => c.destroy())
    await once(c, 'connect')
    t.equal(c.transport, rung)
    t.same(lookup.calls, [{ host: HOST, all: false }])
  })

  t.test('dns.lookup queried once when the connection falls back to TCP', async t => {
    const plain = net.createServer(s => s.end())
    await listen(plain, 0, '127.0.0.1')
    t.teardown(() => plain.close())
    const original = dns.lookup
    const calls = []
    dns.lookup = function (host, ...rest) {
      calls.push(host)
      return original.call(this, host, ...rest)
    }
    t.teardown(() => { dns.lookup = original })
    const c = fastsock.connect({ port: plain.address().port, host: 'localhost', family: 4, transports: chain })
    t.teardown(() => c.destroy())
    t.equal(await connectOutcome(c), null)
    t.equal(c.transport, 'tcp', 'a plain net server: TCP')
    t.same(calls, ['localhost'], 'one query for the name')
  })

  t.test('a failing lookup: its error, the lookup called once', async t => {
    const lookup = (host, opts, cb) => {
      lookup.calls++
      const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', syscall: 'getaddrinfo', hostname: host })
      cb(err) // synchronously, as test/common/dns.js's errorLookupMock does
    }
    lookup.calls = 0
    const c = fastsock.connect({ port: 80, host: HOST, lookup, transports: chain })
    c.on('connect', () => t.fail('connected'))
    const [err] = await once(c, 'error')
    t.equal(err.code, 'ENOTFOUND')
    t.equal(lookup.calls, 1)
  })

  t.test('a bad lookup result: ERR_INVALID_IP_ADDRESS', async t => {
    const lookup = (host, opts, cb) => opts.all ? cb(null, [{ address: undefined, family: 4 }]) : cb(null, undefined, 4)
    const c = fastsock.connect({ port: 80, host: HOST, lookup, transports: chain })
    const [err] = await once(c, 'error')
    t.equal(err.code, 'ERR_INVALID_IP_ADDRESS')
  })

  t.test('autoSelectFamily off: only the first address is tried', async t => {
    const port = await fastsockServer(t)
    const c = fastsock.connect({ port, host: HOST, lookup: mockLookup('::1', '127.0.0.1'), autoSelectFamily: false, transports: chain })
    t.teardown(() => c.destroy())
    const outcome = await within(connectOutcome(c), 5000, 'the outcome')
    t.ok(outcome instanceof Error, 'no connection to the second address')
    if (await hasIPv6()) t.equal(outcome.code, 'ECONNREFUSED')
    t.match(outcome.message, `::1:${port}`)
  })

  // smc: its kernel-fd connect walks the addresses natively and the list records only the first
  // (a known gap, issue 10's notes): skipped there until it reports each address it tried.
  t.test('autoSelectFamily on: the addresses tried', { skip: rung === 'smc' && 'smc records only the first address it tried (open)' }, async t => {
    const port = await fastsockServer(t)
    const c = fastsock.connect({ port, host: HOST, lookup: mockLookup('::1', '127.0.0.1'), autoSelectFamily: true, transports: chain })
    t.teardown(() => c.destroy())
    await once(c, 'ready')
    t.equal(c.transport, rung)
    t.same(c.autoSelectFamilyAttemptedAddresses, [`::1:${port}`, `127.0.0.1:${port}`])
  })
}, { loopback: true })
